// Tile-level builtins (see builtins_tile.h): reductions (sum, max, min,
// argmax, argmin, reduce, xor_sum, softmax), tl.dot, and shape ops (reshape,
// trans, permute, expand_dims, broadcast_to, join, split, ravel).
#include <algorithm>
#include <functional>
#include <set>

#include "frontend/builtins_tile.h"
#include "frontend/builtins_math.h"
#include "frontend/combiner_region.h"
#include "frontend/lowering.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

ir::ValueId tile_arg(Lowerer& l, const BoundArgs& a, const char* name, const std::string& callee) {
  const Symbol& s = a.get(name);
  ir::ValueId v = l.to_value(s, a.loc(name), std::string("the ") + name + " of " + callee);
  if (l.type(v).is_pointer() && callee != "tl.reshape" && callee != "tl.trans" && callee != "tl.expand_dims" &&
      callee != "tl.broadcast_to" && callee != "tl.permute" && callee != "tl.view")
    error_at(a.loc(name), Diag::InvalidOperandType, callee + " is not defined for pointers");
  return v;
}

// Shape arguments given either as a tuple or as trailing positional ints.
std::vector<int64_t> shape_from_varargs(Lowerer& l, const CallArgs& c, size_t first, const std::string& kw,
                                        const std::string& what, bool check) {
  std::vector<Symbol> dims;
  for (size_t i = first; i < c.positional.size(); ++i) dims.push_back(c.positional[i]);
  for (const auto& [name, sym] : c.keywords)
    if (name == kw) dims.push_back(sym);
  if (dims.size() == 1 && dims[0].kind == Symbol::Kind::Tuple) dims = dims[0].elements;
  std::vector<int64_t> out;
  for (const Symbol& d : dims) out.push_back(l.to_int_const(d, c.loc, "each entry of " + what));
  if (check) l.check_shape(out, c.loc);
  return out;
}

// Reduces `inputs` (same shape) along `axis` (nullopt: all axes) with a
// scalar combiner built into the reduce region.
std::vector<ir::ValueId> reduce(Lowerer& l, std::vector<ir::ValueId> inputs, std::optional<int64_t> axis,
                                bool keep_dims, const Combiner& combine, const SourceLoc& loc) {
  ir::Function& fn = l.function();
  std::vector<int64_t> in_shape = l.type(inputs[0]).shape;
  if (in_shape.empty()) return inputs;  // reducing a scalar is the scalar
  int64_t ax;
  if (!axis) {
    int64_t numel = l.type(inputs[0]).numel();
    for (ir::ValueId& v : inputs)
      if (l.type(v).rank() != 1) v = l.create(OpKind::Reshape, {v}, l.type(v).with_shape({numel}), loc);
    ax = 0;
  } else {
    ax = *axis;
  }
  std::vector<int64_t> out_shape = l.type(inputs[0]).shape;
  out_shape.erase(out_shape.begin() + ax);
  std::vector<ir::Type> result_types;
  for (ir::ValueId v : inputs) result_types.push_back(l.type(v).with_shape(out_shape));

  ir::BlockId region = build_combiner_region(l, inputs, combine, "reduced", loc);
  ir::OpId op = l.create_op(OpKind::Reduce, inputs, result_types, loc, {{"axis", ir::Attr{ax}}});
  fn.op(op).regions = {region};
  fn.block(region).parent = op;
  std::vector<ir::ValueId> results = fn.op(op).results;
  if (keep_dims) {
    for (ir::ValueId& r : results) {
      if (!axis) {
        std::vector<int64_t> ones(in_shape.size(), 1);
        r = l.broadcast_to(r, {}, loc);
        r = l.create(OpKind::Splat, {r}, l.type(r).with_shape(ones), loc);
      } else if (l.type(r).shape.empty()) {
        // A 1-D tile reduced along its axis is a scalar, which has no axis to
        // expand: keeping the dimension makes it a tile of one element.
        r = l.create(OpKind::Splat, {r}, l.type(r).with_shape({1}), loc);
      } else {
        std::vector<int64_t> s = l.type(r).shape;
        s.insert(s.begin() + ax, 1);
        r = l.create(OpKind::ExpandDims, {r}, l.type(r).with_shape(s), loc, {{"axis", ir::Attr{ax}}});
      }
    }
  }
  return results;
}

}  // namespace

int64_t wrap_axis(int64_t axis, int64_t rank, const SourceLoc& loc, const std::string& problem) {
  if (axis < -rank || axis >= rank)
    error_at(loc, Diag::ArgumentOutOfRange,
             problem + " (invalid axis " + std::to_string(axis) + ", expected " + std::to_string(-rank) +
                 " <= axis < " + std::to_string(rank) + ")");
  return axis < 0 ? axis + rank : axis;
}

namespace {

std::optional<int64_t> optional_axis(Lowerer& l, const BoundArgs& a, int rank, const std::string& callee) {
  if (!a.has("axis")) return std::nullopt;
  int64_t axis = l.to_int_const(a.get("axis"), a.loc("axis"), "the axis of " + callee);
  return wrap_axis(axis, rank, a.loc("axis"),
                   "axis " + std::to_string(axis) + " is out of range for a tile of rank " + std::to_string(rank));
}

bool flag(Lowerer& l, const BoundArgs& a, const char* name) {
  return a.has(name) && l.to_const(a.get(name), a.loc(name), std::string("`") + name + "`").truthy();
}

Combiner binary_combiner(Lowerer& l, OpKind kind, const SourceLoc& loc, std::vector<ir::NamedAttr> attrs = {}) {
  return [&l, kind, loc, attrs](const std::vector<ir::ValueId>& acc, const std::vector<ir::ValueId>& next) {
    return std::vector<ir::ValueId>{l.create(kind, {acc[0], next[0]}, l.type(acc[0]), loc, attrs)};
  };
}

// argmax/argmin combiner on (value, index). It picks the first element of a
// total order, so every reduction tree (the CPU's loop, the GPU's shuffles)
// gives the same answer: a larger (argmin: smaller) value wins; a NaN loses
// to every number, as in tl.max, unless `nan_wins` (propagate_nan=ALL), where
// it beats every number, as in NumPy's argmax; equal values, and NaNs among
// themselves, go to the smaller index.
Combiner arg_combiner(Lowerer& l, bool is_max, bool nan_wins, const SourceLoc& loc) {
  return [&l, is_max, nan_wins, loc](const std::vector<ir::ValueId>& acc, const std::vector<ir::ValueId>& next) {
    ir::Type b = ir::Type::of(Scalar::I1);
    auto cmp = [&](ir::ValueId x, ir::ValueId y, const char* pred) {
      return l.create(OpKind::Cmp, {x, y}, b, loc, {{"pred", ir::Attr{std::string(pred)}}});
    };
    auto both = [&](ir::ValueId x, ir::ValueId y) { return l.create(OpKind::And, {x, y}, b, loc); };
    auto either = [&](ir::ValueId x, ir::ValueId y) { return l.create(OpKind::Or, {x, y}, b, loc); };
    ir::ValueId better = cmp(next[0], acc[0], is_max ? "gt" : "lt");
    ir::ValueId same = cmp(next[0], acc[0], "eq");
    if (ir::is_float(l.type(acc[0]).scalar)) {
      // A NaN compares false with everything, so neither test above holds
      // for one; these say where NaNs rank.
      ir::ValueId next_nan = cmp(next[0], next[0], "ne");
      ir::ValueId acc_nan = cmp(acc[0], acc[0], "ne");
      ir::ValueId one_nan = l.create(OpKind::Xor, {next_nan, acc_nan}, b, loc);
      better = either(better, both(nan_wins ? next_nan : acc_nan, one_nan));
      same = either(same, both(next_nan, acc_nan));
    }
    ir::ValueId take = either(better, both(same, cmp(next[1], acc[1], "lt")));
    return std::vector<ir::ValueId>{l.create(OpKind::Select, {take, next[0], acc[0]}, l.type(acc[0]), loc),
                                    l.create(OpKind::Select, {take, next[1], acc[1]}, l.type(acc[1]), loc)};
  };
}

ir::ValueId index_tile(Lowerer& l, const ir::Type& t, int64_t axis, const SourceLoc& loc) {
  int64_t len = t.shape[static_cast<size_t>(axis)];
  ir::ValueId idx = l.create(OpKind::Arange, {}, ir::Type::tile(Scalar::I32, {len}), loc,
                             {{"start", ir::Attr{int64_t{0}}}, {"end", ir::Attr{len}}});
  std::vector<int64_t> shape(t.shape.size(), 1);
  shape[static_cast<size_t>(axis)] = len;
  if (t.rank() > 1) idx = l.create(OpKind::Reshape, {idx}, l.type(idx).with_shape(shape), loc);
  return l.broadcast_to(idx, t.shape, loc);
}

}  // namespace

Symbol lower_sum(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "?axis", "?keep_dims", "?dtype"}, c);
  ir::ValueId x = tile_arg(l, a, "input", "tl." + n);
  Scalar s = l.type(x).scalar;
  Scalar acc_type = s;
  if (a.has("dtype")) acc_type = l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype of tl.sum");
  else if (ir::is_integer(s) && ir::bit_width(s) < 32) acc_type = ir::is_signed(s) || s == Scalar::I1 ? Scalar::I32 : Scalar::U32;
  else if (s == Scalar::F16 || s == Scalar::BF16) acc_type = Scalar::F32;
  if (n == "xor_sum" && ir::is_float(s)) error_at(c.loc, Diag::NotInteger, "tl.xor_sum needs integers");
  if (n == "xor_sum") acc_type = s;
  x = l.cast(x, acc_type, c.loc);
  auto axis = optional_axis(l, a, l.type(x).rank(), "tl." + n);
  ir::ValueId sum = reduce(l, {x}, axis, flag(l, a, "keep_dims"),
                           binary_combiner(l, n == "xor_sum" ? OpKind::Xor : OpKind::Add, c.loc), c.loc)[0];
  // Triton's sum of float16 / bfloat16 is of that type (it adds in it); this adds in float32 and rounds once.
  if (!a.has("dtype") && (s == Scalar::F16 || s == Scalar::BF16)) sum = l.cast(sum, s, c.loc);
  return Symbol::of(sum);
}

// reduce_or(input, axis, keep_dims): the bitwise OR of integers along an axis,
// in the input's own type (Triton's standard library reduces with `x | y`).
Symbol lower_reduce_or(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "axis", "?keep_dims"}, c);
  ir::ValueId x = tile_arg(l, a, "input", "tl." + n);
  if (!ir::is_integer(l.type(x).scalar)) error_at(c.loc, Diag::NotInteger, "tl.reduce_or needs integers");
  auto axis = optional_axis(l, a, l.type(x).rank(), "tl." + n);
  return Symbol::of(reduce(l, {x}, axis, flag(l, a, "keep_dims"), binary_combiner(l, OpKind::Or, c.loc), c.loc)[0]);
}

// x.item(): the element of a one-element tile as a scalar (a scalar is its
// own item). Reducing all axes of one element yields that element unchanged.
Symbol lower_item(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input"}, c);
  ir::ValueId x = l.to_value(a.get("input"), a.loc("input"), "the input of ." + n + "()");
  if (!l.type(x).is_tile()) return Symbol::of(x);
  if (l.type(x).numel() != 1)
    error_at(c.loc, Diag::ShapeMismatch,
             ".item() needs a tile of one element, but it is " + ir::to_string(l.type(x)),
             "reduce it first, e.g. tl.sum(x) or tl.max(x)");
  return Symbol::of(only_element(l, x, c.loc));
}

ir::ValueId only_element(Lowerer& l, ir::ValueId x, const SourceLoc& loc) {
  TEGULA_ASSERT(l.type(x).is_tile() && l.type(x).numel() == 1, "only_element of a tile of one element");
  return reduce(l, {x}, std::nullopt, false, binary_combiner(l, OpKind::Max, loc), loc)[0];
}

Symbol lower_max_min(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "?axis", "?return_indices", "?return_indices_tie_break_left", "?keep_dims",
                  "?propagate_nan"}, c);
  ir::ValueId x = tile_arg(l, a, "input", "tl." + n);
  auto axis = optional_axis(l, a, l.type(x).rank(), "tl." + n);
  bool keep = flag(l, a, "keep_dims");
  std::vector<ir::NamedAttr> nan_attrs = nan_propagation(a);
  bool indices = flag(l, a, "return_indices");
  // Triton's types: bfloat16 becomes float32; without indices every type narrower than 32 bits widens, a
  // float to float32 and an integer (bool and unsigned ones too) to int32.
  Scalar s = l.type(x).scalar;
  if (s == Scalar::BF16 || (!indices && ir::bit_width(s) < 32))
    x = l.cast(x, ir::is_float(s) ? Scalar::F32 : Scalar::I32, c.loc);
  if (indices) {
    int64_t ax = axis ? *axis : 0;
    if (!axis && l.type(x).rank() != 1) x = l.create(OpKind::Reshape, {x}, l.type(x).with_shape({l.type(x).numel()}), c.loc);
    ir::ValueId idx = index_tile(l, l.type(x), ax, c.loc);
    auto r = reduce(l, {x, idx}, ax, keep, arg_combiner(l, n == "max", !nan_attrs.empty(), c.loc), c.loc);
    return Symbol::tuple({Symbol::of(r[0]), Symbol::of(r[1])});
  }
  return Symbol::of(reduce(l, {x}, axis, keep,
                           binary_combiner(l, n == "max" ? OpKind::Max : OpKind::Min, c.loc, nan_attrs), c.loc)[0]);
}

Symbol lower_argmax_min(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "axis", "?tie_break_left", "?keep_dims", "?propagate_nan"}, c);
  ir::ValueId x = tile_arg(l, a, "input", "tl." + n);
  auto axis = optional_axis(l, a, l.type(x).rank(), "tl." + n);
  int64_t ax = axis ? *axis : 0;
  if (!axis && l.type(x).rank() != 1) x = l.create(OpKind::Reshape, {x}, l.type(x).with_shape({l.type(x).numel()}), c.loc);
  ir::ValueId idx = index_tile(l, l.type(x), ax, c.loc);
  auto r = reduce(l, {x, idx}, ax, flag(l, a, "keep_dims"),
                  arg_combiner(l, n == "argmax", !nan_propagation(a).empty(), c.loc), c.loc);
  return Symbol::of(r[1]);
}

Symbol lower_reduce(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "axis", "combine_fn", "?keep_dims"}, c);
  const Symbol& in = a.get("input");
  std::vector<ir::ValueId> inputs;
  bool is_tuple = in.kind == Symbol::Kind::Tuple;
  if (is_tuple) {
    for (const Symbol& e : in.elements) inputs.push_back(l.to_value(e, a.loc("input"), "an input of tl.reduce"));
  } else {
    inputs.push_back(tile_arg(l, a, "input", "tl.reduce"));
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    auto [x, y] = l.broadcast_pair(inputs[0], inputs[i], a.loc("input"));
    inputs[0] = x;
    inputs[i] = y;
  }
  const Symbol& fn = a.get("combine_fn");
  if (fn.kind != Symbol::Kind::JitFunction && fn.kind != Symbol::Kind::Lambda)
    error_at(a.loc("combine_fn"), Diag::WrongArgumentKind,
             "the combine_fn of tl.reduce must be a @jit function or a lambda, but it is " + l.describe(fn));
  auto axis = optional_axis(l, a, l.type(inputs[0]).rank(), "tl.reduce");
  Combiner combine = [&](const std::vector<ir::ValueId>& acc, const std::vector<ir::ValueId>& next) {
    CallArgs args;
    args.loc = c.loc;
    for (ir::ValueId v : acc) args.positional.push_back(Symbol::of(v));
    for (ir::ValueId v : next) args.positional.push_back(Symbol::of(v));
    args.positional_locs.assign(args.positional.size(), c.loc);
    Symbol r = l.call(fn, args);
    std::vector<ir::ValueId> out;
    if (r.kind == Symbol::Kind::Tuple) {
      for (size_t i = 0; i < r.elements.size(); ++i)
        out.push_back(l.to_value(r.elements[i], c.loc, "a result of the combine function"));
    } else {
      out.push_back(l.to_value(r, c.loc, "the result of the combine function"));
    }
    for (size_t i = 0; i < out.size() && i < acc.size(); ++i)
      if (!l.type(out[i]).is_tile() && l.type(out[i]).scalar != l.type(acc[i]).scalar)
        out[i] = l.cast(out[i], l.type(acc[i]).scalar, c.loc);
    return out;
  };
  auto r = reduce(l, inputs, axis, flag(l, a, "keep_dims"), combine, c.loc);
  if (!is_tuple) return Symbol::of(r[0]);
  std::vector<Symbol> out;
  for (ir::ValueId v : r) out.push_back(Symbol::of(v));
  return Symbol::tuple(std::move(out));
}

Symbol lower_softmax(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "?dim", "?keep_dims", "?ieee_rounding"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the input of tl.softmax");
  if (!ir::is_float(l.type(x).scalar)) error_at(c.loc, Diag::NotFloatingPoint,
                                                "tl.softmax needs a floating-point tile");
  int64_t dim = a.has("dim") ? l.to_int_const(a.get("dim"), a.loc("dim"), "the dim of tl.softmax") : 0;
  if (dim < 0) dim += l.type(x).rank();
  // softmax(x) = exp(x - max(x)) / sum(exp(x - max(x))), with tl.exp's exp and tl.fdiv's quotient
  // (approximate unless ieee_rounding is a true constant), as Triton's standard library writes it. Its
  // max(x) is float32 for floats narrower than 32 bits, so from x - max(x) on it all runs in float32.
  if (ir::bit_width(l.type(x).scalar) < 32) x = l.cast(x, Scalar::F32, c.loc);
  ir::Type t = l.type(x);
  bool ieee = ieee_rounding(a, "tl.softmax");
  ir::ValueId m = reduce(l, {x}, dim, true, binary_combiner(l, OpKind::Max, c.loc), c.loc)[0];
  ir::ValueId z = l.create(OpKind::Sub, {x, l.broadcast_to(m, t.shape, c.loc)}, t, c.loc);
  ir::ValueId e = l.create(OpKind::Exp, {z}, t, c.loc, {approx_attr()});
  ir::ValueId s = reduce(l, {e}, dim, true, binary_combiner(l, OpKind::Add, c.loc), c.loc)[0];
  return Symbol::of(l.create(OpKind::Div, {e, l.broadcast_to(s, t.shape, c.loc)}, t, c.loc,
                             ieee ? std::vector<ir::NamedAttr>{} : std::vector<ir::NamedAttr>{approx_attr()}));
}

namespace {

// Triton's result type of tl.dot: int8 operands accumulate in int32, fp32
// and bf16 in fp32, fp64 in fp64, whatever out_dtype says; fp16 (and fp8,
// run as fp16) give out_dtype. `requested` is out_dtype, else the acc's
// type, else fp32.
Scalar dot_result_type(Scalar operands, Scalar requested, const SourceLoc& loc) {
  if (ir::is_integer(operands)) return Scalar::I32;
  if (requested == Scalar::BF16)
    error_at(loc, Diag::UnsupportedElementType, "tl.dot does not accumulate in bf16 (out_dtype=tl.bfloat16)",
             "use out_dtype=tl.float32 (or tl.float16) and convert the result with .to(tl.bfloat16)");
  if (operands == Scalar::F32 || operands == Scalar::BF16) return Scalar::F32;
  if (operands == Scalar::F64) return Scalar::F64;
  return requested;
}

// The input_precision of a dot of `operands` (Triton's spellings, any case).
// Only fp32 operands have a choice; the backends read the attribute. Given
// both, input_precision wins (Triton refuses the pair).
std::string dot_precision(Lowerer& l, const BoundArgs& a, Scalar operands) {
  std::string precision = "tf32";
  if (a.has("allow_tf32") && !flag(l, a, "allow_tf32")) precision = "ieee";
  if (a.has("input_precision")) {
    ConstValue p = l.to_const(a.get("input_precision"), a.loc("input_precision"), "input_precision");
    std::string lower = p.s;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const std::set<std::string> known = {"tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"};
    if (p.kind != ConstValue::Kind::Str || !known.count(lower))
      error_at(a.loc("input_precision"), Diag::InvalidOption,
               "input_precision must be \"tf32\", \"tf32x3\", \"bf16x3\", \"bf16x6\" or \"ieee\"");
    precision = lower;
  }
  return operands == Scalar::F32 ? precision : "ieee";
}

// Tiles of `t` (rank 3: [B, R, C]) one per batch entry, in batch order, each
// [R, C]. Built from shape ops only: the batch dim moves last and is halved
// by split until one entry is left (split takes even entries one way, odd
// ones the other).
std::vector<ir::ValueId> unbatch(Lowerer& l, ir::ValueId t, const SourceLoc& loc) {
  const ir::Type ty = l.type(t);
  int64_t b = ty.shape[0], r = ty.shape[1], c = ty.shape[2];
  ir::ValueId last = l.create(OpKind::Trans, {t}, ty.with_shape({r, c, b}), loc, {{"perm", ir::Attr{std::vector<int64_t>{1, 2, 0}}}});
  std::function<std::vector<ir::ValueId>(ir::ValueId)> entries = [&](ir::ValueId v) -> std::vector<ir::ValueId> {
    int64_t n = l.type(v).shape[2];
    if (n == 1) return {l.create(OpKind::Reshape, {v}, ty.with_shape({r, c}), loc)};
    ir::ValueId pairs = l.create(OpKind::Reshape, {v}, ty.with_shape({r, c, n / 2, 2}), loc);
    ir::OpId split = l.create_op(OpKind::Split, {pairs}, {ty.with_shape({r, c, n / 2}), ty.with_shape({r, c, n / 2})}, loc);
    std::vector<ir::ValueId> even = entries(l.function().op(split).results[0]);
    std::vector<ir::ValueId> odd = entries(l.function().op(split).results[1]);
    std::vector<ir::ValueId> out;
    for (size_t i = 0; i < even.size(); ++i) {
      out.push_back(even[i]);
      out.push_back(odd[i]);
    }
    return out;
  };
  return entries(last);
}

// The inverse of unbatch: [R, C] tiles in batch order -> [B, R, C].
ir::ValueId rebatch(Lowerer& l, const std::vector<ir::ValueId>& parts, const SourceLoc& loc) {
  const ir::Type ty = l.type(parts[0]);
  int64_t r = ty.shape[0], c = ty.shape[1];
  std::function<ir::ValueId(const std::vector<ir::ValueId>&)> stack = [&](const std::vector<ir::ValueId>& vs) {
    if (vs.size() == 1) return l.create(OpKind::Reshape, {vs[0]}, ty.with_shape({r, c, 1}), loc);
    std::vector<ir::ValueId> even, odd;
    for (size_t i = 0; i < vs.size(); ++i) (i % 2 ? odd : even).push_back(vs[i]);
    int64_t half = static_cast<int64_t>(vs.size() / 2);
    ir::ValueId pairs = l.create(OpKind::Join, {stack(even), stack(odd)}, ty.with_shape({r, c, half, 2}), loc);
    return l.create(OpKind::Reshape, {pairs}, ty.with_shape({r, c, 2 * half}), loc);
  };
  int64_t b = static_cast<int64_t>(parts.size());
  return l.create(OpKind::Trans, {stack(parts)}, ty.with_shape({b, r, c}), loc, {{"perm", ir::Attr{std::vector<int64_t>{2, 0, 1}}}});
}

}  // namespace

// tl.dot of 2-D tiles, or batched over the leading dims of 3-D (and wider)
// tiles as Triton does: [..., M, K] x [..., K, N] -> [..., M, N]. The IR's
// dot is 2-D; a batch of B is B dots of its entries (see unbatch).
Symbol lower_dot(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "other", "?acc", "?input_precision", "?allow_tf32", "?max_num_imprecise_acc", "?out_dtype"}, c);
  ir::ValueId x = tile_arg(l, a, "input", "tl.dot");
  ir::ValueId y = tile_arg(l, a, "other", "tl.dot");
  bool fp8 = ir::is_fp8(l.type(x).scalar) && ir::is_fp8(l.type(y).scalar);
  // Every fp8 value is exact in f16: fp8 operands (either format, also mixed)
  // run as an f16 dot, on tensor cores on CUDA, accumulating in f32.
  if (ir::is_fp8(l.type(x).scalar)) x = l.cast(x, Scalar::F16, c.loc);
  if (ir::is_fp8(l.type(y).scalar)) y = l.cast(y, Scalar::F16, c.loc);
  const ir::Type tx = l.type(x);
  const ir::Type ty = l.type(y);
  if (tx.rank() < 2 || tx.rank() != ty.rank())
    error_at(c.loc, Diag::WrongRank,
             "tl.dot needs two 2-D tiles, or two tiles of one rank above 2 (a batch), got " + ir::to_string(tx) +
                 " and " + ir::to_string(ty));
  size_t rank = tx.shape.size();
  std::vector<int64_t> batch(tx.shape.begin(), tx.shape.end() - 2);
  if (!std::equal(batch.begin(), batch.end(), ty.shape.begin()))
    error_at(c.loc, Diag::ShapeMismatch,
             "tl.dot batch dimensions differ: " + ir::to_string(tx) + " @ " + ir::to_string(ty));
  int64_t m = tx.shape[rank - 2], k = tx.shape[rank - 1], nn = ty.shape[rank - 1];
  if (ty.shape[rank - 2] != k)
    error_at(c.loc, Diag::ShapeMismatch,
             "tl.dot inner dimensions differ: " + ir::to_string(tx) + " @ " + ir::to_string(ty),
             "the first operand is [M, K] and the second [K, N]");
  // max_num_imprecise_acc bounds how many products of an fp8 dot add up in reduced precision before a
  // full-precision add; Tegula's fp8 dots accumulate in f32 throughout, so any valid bound holds. Past K
  // it is a mistake Triton refuses, and so does Tegula.
  if (fp8 && a.has("max_num_imprecise_acc")) {
    ConstValue bound = l.to_const(a.get("max_num_imprecise_acc"), a.loc("max_num_imprecise_acc"),
                                  "the max_num_imprecise_acc of tl.dot");
    if (bound.kind != ConstValue::Kind::Int || bound.i > k)
      error_at(a.loc("max_num_imprecise_acc"), Diag::ArgumentOutOfRange,
               "max_num_imprecise_acc (" + to_string(bound) + ") must be <= K (" + std::to_string(k) + ")",
               "pass at most the dot's inner dimension, or leave it out");
  }
  auto supported = [](Scalar s) {
    return s == Scalar::F16 || s == Scalar::BF16 || s == Scalar::F32 || s == Scalar::F64 || s == Scalar::I8;
  };
  if (!supported(tx.scalar) || !supported(ty.scalar))
    error_at(c.loc, Diag::UnsupportedElementType,
             "tl.dot supports fp16, bf16, fp32, fp64 and int8 operands, got " + triton_name(tx.scalar) + " and " +
                        triton_name(ty.scalar));
  if (tx.scalar != ty.scalar)
    error_at(c.loc, Diag::DtypeMismatch,
             "tl.dot operands must have the same dtype, got " + triton_name(tx.scalar) + " and " + triton_name(ty.scalar),
             "convert one with .to(...)");
  std::vector<int64_t> shape = batch;
  shape.insert(shape.end(), {m, nn});
  bool has_acc = a.has("acc"), has_out = a.has("out_dtype");
  ir::ValueId acc = has_acc ? l.to_value(a.get("acc"), a.loc("acc"), "the acc of tl.dot") : ir::ValueId{};
  Scalar requested = has_out ? l.to_dtype(a.get("out_dtype"), a.loc("out_dtype"), "the out_dtype of tl.dot")
                     : has_acc ? l.type(acc).scalar
                               : Scalar::F32;
  Scalar out = dot_result_type(tx.scalar, requested, c.loc);
  if (has_acc) {
    if (l.type(acc).shape != shape || l.type(acc).scalar != out)
      error_at(a.loc("acc"), l.type(acc).shape != shape ? Diag::ShapeMismatch : Diag::DtypeMismatch,
               "the acc of tl.dot must be " + ir::to_string(ir::Type::tile(out, shape)) + ", but it is " +
                   ir::to_string(l.type(acc)),
               ir::is_integer(tx.scalar) ? "int8 dots accumulate in int32" : "pass out_dtype= the acc's type");
  } else {
    acc = l.broadcast_to(l.constant(ConstValue::integer(0), ir::Type::of(out), c.loc), shape, c.loc);
  }
  std::vector<ir::NamedAttr> attrs = {{"precision", ir::Attr{dot_precision(l, a, tx.scalar)}}};
  if (rank == 2) return Symbol::of(l.create(OpKind::Dot, {x, y, acc}, ir::Type::tile(out, shape), c.loc, attrs));
  // A batch: flattened to one leading dim, a dot per entry, reshaped back.
  int64_t entries = 1;
  for (int64_t d : batch) entries *= d;
  auto flat = [&](ir::ValueId v, int64_t rows, int64_t cols) {
    return rank == 3 ? v : l.create(OpKind::Reshape, {v}, l.type(v).with_shape({entries, rows, cols}), c.loc);
  };
  std::vector<ir::ValueId> xs = unbatch(l, flat(x, m, k), c.loc), ys = unbatch(l, flat(y, k, nn), c.loc),
                           accs = unbatch(l, flat(acc, m, nn), c.loc), results;
  for (size_t i = 0; i < xs.size(); ++i)
    results.push_back(l.create(OpKind::Dot, {xs[i], ys[i], accs[i]}, ir::Type::tile(out, {m, nn}), c.loc, attrs));
  ir::ValueId r = rebatch(l, results, c.loc);
  return Symbol::of(rank == 3 ? r : l.create(OpKind::Reshape, {r}, ir::Type::tile(out, shape), c.loc));
}

Symbol lower_reshape(Lowerer& l, const CallArgs& c, const std::string& n) {
  if (c.positional.empty()) error_at(c.loc, Diag::WrongArgumentCount, "tl." + n + " needs an input");
  ir::ValueId x = l.to_value(c.positional[0], c.positional_locs[0], "the input of tl." + n);
  std::vector<int64_t> shape = shape_from_varargs(l, c, 1, "shape", "the shape of tl." + n, true);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel != l.type(x).numel())
    error_at(c.loc, Diag::ShapeMismatch,
             "cannot reshape " + ir::to_string(l.type(x)) + " (" + std::to_string(l.type(x).numel()) +
                        " elements) to " + std::to_string(numel) + " elements");
  if (shape == l.type(x).shape) return Symbol::of(x);
  if (shape.empty())
    error_at(c.loc, Diag::WrongRank, "tl." + n + " cannot make a scalar: tiles have at least one dimension",
             "a tile of one element becomes a scalar by reducing it, e.g. tl.sum(x)");
  // A scalar is one element: reshaping it makes a tile of one element.
  if (!l.type(x).is_tile()) return Symbol::of(l.create(OpKind::Splat, {x}, l.type(x).with_shape(shape), c.loc));
  return Symbol::of(l.create(OpKind::Reshape, {x}, l.type(x).with_shape(shape), c.loc));
}

// squeeze(x, dim) drops a dimension of size 1; unsqueeze(x, dim) inserts one
// (Triton's standard library: reshapes; negative dims count from the end).
Symbol lower_squeeze(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "dim"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the input of tl." + n);
  std::vector<int64_t> shape = l.type(x).shape;
  bool squeeze = n == "squeeze";
  int64_t rank = static_cast<int64_t>(shape.size()) + (squeeze ? 0 : 1);
  int64_t dim = l.to_int_const(a.get("dim"), a.loc("dim"), "the dim of tl." + n);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank)
    error_at(a.loc("dim"), Diag::ArgumentOutOfRange,
             "dim " + std::to_string(dim) + " is out of range for tl." + n + " of " + ir::to_string(l.type(x)));
  if (squeeze) {
    if (shape[static_cast<size_t>(dim)] != 1)
      error_at(a.loc("dim"), Diag::ShapeMismatch,
               "tl.squeeze needs dimension " + std::to_string(dim) + " of size 1, but " + ir::to_string(l.type(x)) +
                                      " has " + std::to_string(shape[static_cast<size_t>(dim)]));
    shape.erase(shape.begin() + dim);
    if (shape.empty())  // a tile of one element becomes a scalar, as .item() does
      return Symbol::of(reduce(l, {x}, std::nullopt, false, binary_combiner(l, OpKind::Max, c.loc), c.loc)[0]);
    return Symbol::of(l.create(OpKind::Reshape, {x}, l.type(x).with_shape(shape), c.loc));
  }
  shape.insert(shape.begin() + dim, 1);
  if (!l.type(x).is_tile()) return Symbol::of(l.broadcast_to(x, shape, c.loc));
  return Symbol::of(l.create(OpKind::ExpandDims, {x}, l.type(x).with_shape(shape), c.loc, {{"axis", ir::Attr{dim}}}));
}

Symbol lower_ravel(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "?can_reorder"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the input of tl.ravel");
  if (l.type(x).rank() == 1) return Symbol::of(x);
  OpKind kind = l.type(x).is_tile() ? OpKind::Reshape : OpKind::Splat;
  return Symbol::of(l.create(kind, {x}, l.type(x).with_shape({l.type(x).numel()}), c.loc));
}

Symbol lower_permute(Lowerer& l, const CallArgs& c, const std::string& n) {
  if (c.positional.empty()) error_at(c.loc, Diag::WrongArgumentCount, "tl." + n + " needs an input");
  ir::ValueId x = l.to_value(c.positional[0], c.positional_locs[0], "the input of tl." + n);
  std::vector<int64_t> perm = shape_from_varargs(l, c, 1, "dims", "the dims of tl." + n, false);
  int rank = l.type(x).rank();
  if (perm.empty()) {  // Triton's: swap the last two dims (a batched 2-D transpose)
    if (rank < 2) error_at(c.loc, Diag::WrongRank,
                           "tl.trans without dims needs a tile of 2 or more dims, got " + ir::to_string(l.type(x)));
    for (int d = 0; d < rank - 2; ++d) perm.push_back(d);
    perm.push_back(rank - 1);
    perm.push_back(rank - 2);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < static_cast<int>(sorted.size()); ++i)
    if (sorted[static_cast<size_t>(i)] != i || static_cast<int>(perm.size()) != rank)
      error_at(c.loc, Diag::ArgumentOutOfRange,
               "the dims of tl." + n + " must be a permutation of 0.." + std::to_string(rank - 1));
  std::vector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(l.type(x).shape[static_cast<size_t>(p)]);
  return Symbol::of(l.create(OpKind::Trans, {x}, l.type(x).with_shape(shape), c.loc, {{"perm", ir::Attr{perm}}}));
}

Symbol lower_expand_dims(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "axis"}, c);
  ir::ValueId x = l.to_value(a.get("input"), a.loc("input"), "the input of tl.expand_dims");
  std::vector<int64_t> axes;
  const Symbol& ax = a.get("axis");
  if (ax.kind == Symbol::Kind::Tuple) {
    for (const Symbol& e : ax.elements) axes.push_back(l.to_int_const(e, a.loc("axis"), "an axis"));
  } else {
    axes.push_back(l.to_int_const(ax, a.loc("axis"), "the axis of tl.expand_dims"));
  }
  int64_t new_rank = l.type(x).rank() + static_cast<int64_t>(axes.size());
  for (int64_t& v : axes) v = wrap_axis(v, new_rank, a.loc("axis"), "axis out of range for tl.expand_dims");
  std::string listed;
  for (int64_t v : axes) listed += (listed.empty() ? "" : ", ") + std::to_string(v);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    error_at(a.loc("axis"), Diag::ArgumentOutOfRange,
             "duplicate axes, normalized axes = [" + listed + "] (tl.expand_dims inserts each axis once)");
  for (int64_t v : axes) {
    std::vector<int64_t> shape = l.type(x).shape;
    shape.insert(shape.begin() + v, 1);
    // A scalar has no dimension to insert beside: it becomes a tile of one
    // element, as in Triton.
    x = l.type(x).is_tile()
            ? l.create(OpKind::ExpandDims, {x}, l.type(x).with_shape(shape), c.loc, {{"axis", ir::Attr{v}}})
            : l.create(OpKind::Splat, {x}, l.type(x).with_shape(shape), c.loc);
  }
  return Symbol::of(x);
}

Symbol lower_broadcast_to(Lowerer& l, const CallArgs& c, const std::string& n) {
  if (c.positional.empty()) error_at(c.loc, Diag::WrongArgumentCount, "tl.broadcast_to needs an input");
  ir::ValueId x = l.to_value(c.positional[0], c.positional_locs[0], "the input of tl.broadcast_to");
  std::vector<int64_t> shape = shape_from_varargs(l, c, 1, "shape", "the shape of tl.broadcast_to", true);
  return Symbol::of(l.broadcast_to(x, shape, c.loc));
}

Symbol lower_broadcast(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "other"}, c);
  auto [x, y] = l.broadcast_pair(l.to_value(a.get("input"), a.loc("input"), "the input"),
                                 l.to_value(a.get("other"), a.loc("other"), "the other"), c.loc);
  return Symbol::tuple({Symbol::of(x), Symbol::of(y)});
}

// join(a, b): shape + [2]. Two scalars join to a tile of 2, as in Triton
// (through tiles of one element: the IR's join takes tiles).
Symbol lower_join(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"a", "b"}, c);
  auto [x, y] = l.arith_operands(a.get("a"), a.get("b"), false, c.loc, "tl.join");
  bool scalars = !l.type(x).is_tile();
  if (scalars) {
    x = l.create(OpKind::Splat, {x}, l.type(x).with_shape({1}), c.loc);
    y = l.create(OpKind::Splat, {y}, l.type(y).with_shape({1}), c.loc);
  }
  std::vector<int64_t> shape = l.type(x).shape;
  shape.push_back(2);
  ir::ValueId joined = l.create(OpKind::Join, {x, y}, l.type(x).with_shape(shape), c.loc);
  if (scalars) joined = l.create(OpKind::Reshape, {joined}, l.type(x).with_shape({2}), c.loc);
  return Symbol::of(joined);
}

Symbol lower_split(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"a"}, c);
  ir::ValueId x = l.to_value(a.get("a"), a.loc("a"), "the input of tl.split");
  const ir::Type& t = l.type(x);
  if (!t.is_tile() || t.shape.back() != 2)
    error_at(c.loc, Diag::ShapeMismatch, "tl.split needs a tile whose last dimension is 2, got " + ir::to_string(t));
  std::vector<int64_t> shape(t.shape.begin(), t.shape.end() - 1);
  ir::Type r = t.with_shape(shape);
  ir::OpId op = l.create_op(OpKind::Split, {x}, {r, r}, c.loc);
  return Symbol::tuple({Symbol::of(l.function().op(op).results[0]), Symbol::of(l.function().op(op).results[1])});
}


}  // namespace tegula::frontend
