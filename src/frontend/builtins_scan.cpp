// Scans, sorting and indexing by value: tl.cumsum, tl.cumprod,
// tl.associative_scan (the `scan` op, its combiner region inlined from the
// user's @jit function like tl.reduce's), tl.sort and tl.topk (`sort`),
// tl.gather and tl.flip (`gather`), tl.histogram (`histogram`).
//
// Result types follow Triton: cumsum widens integers below 32 bits to
// int32/uint32 (bool to int32, as tl.sum does here) and bfloat16 to float32,
// and keeps float16; cumprod widens bfloat16 (and bool) only.
#include "frontend/builtins_scan.h"

#include <functional>
#include <optional>
#include <tuple>

#include "frontend/builtins_tile.h"
#include "frontend/combiner_region.h"
#include "frontend/type_rules.h"
#include "ir/scan_ops.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

// The tile argument `name` of `callee`: numbers only.
ir::ValueId tile_input(Lowerer& l, const BoundArgs& a, const char* name, const std::string& callee) {
  const Symbol& s = a.get(name);
  ir::ValueId v = l.to_value(s, a.loc(name), std::string("the ") + name + " of " + callee);
  const ir::Type& t = l.type(v);
  if (!t.is_tile())
    error_at(a.loc(name), Diag::WrongRank, callee + " needs a tile, but its " + name + " is " + l.describe(s),
             "build one with tl.arange, tl.load or tl.full");
  if (t.is_pointer()) error_at(a.loc(name), Diag::InvalidOperandType, callee + " is not defined for pointers");
  return v;
}

// A compile-time axis of a tile of `rank`; negative counts from the end. An
// absent (or None) argument is `fallback`.
int64_t axis_arg(Lowerer& l, const BoundArgs& a, const char* name, int rank, const std::string& callee,
                 int64_t fallback) {
  if (!a.has(name)) return fallback;
  int64_t axis = l.to_int_const(a.get(name), a.loc(name), std::string("the ") + name + " of " + callee);
  return wrap_axis(axis, rank, a.loc(name),
                   std::string("the ") + name + " of " + callee + " is " + std::to_string(axis) +
                       ", out of range for a tile of rank " + std::to_string(rank));
}

// Scans and gather need an axis: None (numpy's "flatten first") is refused
// rather than read as the default.
void refuse_none_axis(const CallArgs& c, size_t position, const std::string& callee) {
  bool none = c.positional.size() > position && c.positional[position].is_none();
  SourceLoc where = none ? c.positional_locs[position] : c.loc;
  for (size_t k = 0; k < c.keywords.size(); ++k)
    if (c.keywords[k].first == "axis" && c.keywords[k].second.is_none()) {
      none = true;
      where = c.keyword_locs[k];
    }
  if (none)
    error_at(where, Diag::WrongArgumentKind, callee + " needs an integer axis, not None",
             "flatten the tile first if that is meant: x.ravel() or tl.reshape(x, (x.numel,))");
}

bool flag_arg(Lowerer& l, const BoundArgs& a, const char* name) {
  return a.has(name) && l.to_const(a.get(name), a.loc(name), std::string("`") + name + "`").truthy();
}

// The coordinate along `axis` of every element of a tile of `shape` (i32).
ir::ValueId axis_coordinate(Lowerer& l, const std::vector<int64_t>& shape, int64_t axis, bool reversed,
                            const SourceLoc& loc) {
  int64_t n = shape[static_cast<size_t>(axis)];
  ir::Type line = ir::Type::tile(Scalar::I32, {n});
  ir::ValueId idx = l.create(OpKind::Arange, {}, line, loc, {{"start", ir::Attr{int64_t{0}}}, {"end", ir::Attr{n}}});
  if (reversed) {
    ir::ValueId last = l.broadcast_to(l.constant(ConstValue::integer(n - 1), ir::Type::of(Scalar::I32), loc), {n}, loc);
    idx = l.create(OpKind::Sub, {last, idx}, line, loc);
  }
  if (shape.size() > 1) {
    std::vector<int64_t> along(shape.size(), 1);
    along[static_cast<size_t>(axis)] = n;
    idx = l.create(OpKind::Reshape, {idx}, line.with_shape(along), loc);
  }
  return l.broadcast_to(idx, shape, loc);
}

// --- scans -------------------------------------------------------------------------

// The scan op over `inputs` (tiles of one shape), its combiner region built
// by `combine` on scalar block arguments.
std::vector<ir::ValueId> build_scan(Lowerer& l, const std::vector<ir::ValueId>& inputs, int64_t axis, bool reverse,
                                    const Combiner& combine, const SourceLoc& loc) {
  ir::Function& fn = l.function();
  ir::BlockId region = build_combiner_region(l, inputs, combine, "scanned", loc);
  std::vector<ir::Type> types;
  for (ir::ValueId v : inputs) types.push_back(l.type(v));
  ir::OpId op = l.create_op(OpKind::Scan, inputs, types, loc,
                            {{"axis", ir::Attr{axis}}, {"reverse", ir::Attr{int64_t{reverse ? 1 : 0}}}});
  fn.op(op).regions = {region};
  fn.block(region).parent = op;
  return fn.op(op).results;
}

// cumsum's accumulation type when no dtype is given.
Scalar cumsum_type(Scalar s) {
  if (s == Scalar::BF16) return Scalar::F32;
  if (ir::is_integer(s) && ir::bit_width(s) < 32) return ir::is_signed(s) || s == Scalar::I1 ? Scalar::I32 : Scalar::U32;
  return s;
}

Symbol cumulative(Lowerer& l, const CallArgs& c, const std::string& n) {
  bool is_sum = n == "cumsum";
  std::string callee = "tl." + n;
  BoundArgs a = is_sum ? BoundArgs(n, {"input", "?axis", "?reverse", "?dtype"}, c)
                       : BoundArgs(n, {"input", "?axis", "?reverse"}, c);
  refuse_none_axis(c, 1, callee);
  ir::ValueId x = tile_input(l, a, "input", callee);
  Scalar s = l.type(x).scalar;
  Scalar acc;
  if (is_sum && a.has("dtype")) acc = l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype of tl.cumsum");
  else if (is_sum) acc = cumsum_type(s);
  else acc = s == Scalar::BF16 ? Scalar::F32 : s == Scalar::I1 ? Scalar::I32 : s;
  x = l.cast(x, acc, c.loc);
  int64_t axis = axis_arg(l, a, "axis", l.type(x).rank(), callee, 0);
  OpKind kind = is_sum ? OpKind::Add : OpKind::Mul;
  Combiner combine = [&](const std::vector<ir::ValueId>& before, const std::vector<ir::ValueId>& next) {
    return std::vector<ir::ValueId>{l.create(kind, {before[0], next[0]}, l.type(before[0]), c.loc)};
  };
  return Symbol::of(build_scan(l, {x}, axis, flag_arg(l, a, "reverse"), combine, c.loc)[0]);
}

Symbol associative_scan(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "axis", "combine_fn", "?reverse"}, c);
  refuse_none_axis(c, 1, "tl.associative_scan");
  const Symbol& in = a.get("input");
  bool is_tuple = in.kind == Symbol::Kind::Tuple;
  std::vector<ir::ValueId> inputs;
  if (is_tuple) {
    if (in.elements.empty()) error_at(a.loc("input"), Diag::WrongArgumentCount,
                                      "tl.associative_scan needs at least one input");
    for (const Symbol& e : in.elements) {
      ir::ValueId v = l.to_value(e, a.loc("input"), "an input of tl.associative_scan");
      if (l.type(v).is_pointer()) error_at(a.loc("input"), Diag::InvalidOperandType,
                                           "tl.associative_scan is not defined for pointers");
      inputs.push_back(v);
    }
  } else {
    inputs.push_back(tile_input(l, a, "input", "tl.associative_scan"));
  }
  for (size_t i = 1; i < inputs.size(); ++i) std::tie(inputs[0], inputs[i]) = l.broadcast_pair(inputs[0], inputs[i], a.loc("input"));
  for (size_t i = 1; i < inputs.size(); ++i) inputs[i] = l.broadcast_to(inputs[i], l.type(inputs[0]).shape, a.loc("input"));
  if (!l.type(inputs[0]).is_tile())
    error_at(a.loc("input"), Diag::WrongRank, "tl.associative_scan needs tiles, but the inputs are scalars");
  const Symbol& fn = a.get("combine_fn");
  if (fn.kind != Symbol::Kind::JitFunction && fn.kind != Symbol::Kind::Lambda)
    error_at(a.loc("combine_fn"), Diag::WrongArgumentKind,
             "the combine_fn of tl.associative_scan must be a @jit function or a lambda, but it is " +
                                      l.describe(fn));
  int64_t axis = axis_arg(l, a, "axis", l.type(inputs[0]).rank(), "tl.associative_scan", 0);
  Combiner combine = [&](const std::vector<ir::ValueId>& before, const std::vector<ir::ValueId>& next) {
    CallArgs args;
    args.loc = c.loc;
    for (ir::ValueId v : before) args.positional.push_back(Symbol::of(v));
    for (ir::ValueId v : next) args.positional.push_back(Symbol::of(v));
    args.positional_locs.assign(args.positional.size(), c.loc);
    Symbol r = l.call(fn, args);
    std::vector<Symbol> parts = r.kind == Symbol::Kind::Tuple ? r.elements : std::vector<Symbol>{r};
    std::vector<ir::ValueId> out;
    for (const Symbol& p : parts) out.push_back(l.to_value(p, c.loc, "a result of the combine function"));
    return out;
  };
  std::vector<ir::ValueId> r = build_scan(l, inputs, axis, flag_arg(l, a, "reverse"), combine, c.loc);
  if (!is_tuple) return Symbol::of(r[0]);
  std::vector<Symbol> out;
  for (ir::ValueId v : r) out.push_back(Symbol::of(v));
  return Symbol::tuple(std::move(out));
}

// --- sorting ---------------------------------------------------------------------

ir::ValueId sort_along(Lowerer& l, ir::ValueId x, int64_t axis, bool descending, const SourceLoc& loc) {
  if (l.type(x).shape[static_cast<size_t>(axis)] == 1) return x;
  return l.create(OpKind::Sort, {x}, l.type(x), loc,
                  {{"axis", ir::Attr{axis}}, {"descending", ir::Attr{int64_t{descending ? 1 : 0}}}});
}

ir::ValueId gather_along(Lowerer& l, ir::ValueId src, ir::ValueId index, int64_t axis, const SourceLoc& loc) {
  return l.create(OpKind::Gather, {src, index}, l.type(src).with_shape(l.type(index).shape), loc,
                  {{"axis", ir::Attr{axis}}});
}

Symbol sort(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::string callee = "tl." + n;
  bool topk = n == "topk";
  BoundArgs a = topk ? BoundArgs(n, {"x", "k", "?dim", "?descending"}, c)
                     : BoundArgs(n, {"x", "?dim", "?descending"}, c);
  ir::ValueId x = tile_input(l, a, "x", callee);
  int rank = l.type(x).rank();
  int64_t dim = axis_arg(l, a, "dim", rank, callee, rank - 1);
  if (!topk) return Symbol::of(sort_along(l, x, dim, flag_arg(l, a, "descending"), c.loc));
  int64_t size = l.type(x).shape[static_cast<size_t>(dim)];
  int64_t k = l.to_int_const(a.get("k"), a.loc("k"), "the k of tl.topk");
  if (k < 1 || k > size || (k & (k - 1)) != 0)
    error_at(a.loc("k"), Diag::SizeNotPowerOfTwo,
             "the k of tl.topk must be a power of two from 1 to " + std::to_string(size) + ", not " +
                             std::to_string(k),
             "tile sizes are powers of two; take a larger k and mask what you do not need");
  // descending=False: the k smallest, smallest first.
  bool largest = !a.has("descending") || flag_arg(l, a, "descending");
  ir::ValueId sorted = sort_along(l, x, dim, largest, c.loc);
  if (k == size) return Symbol::of(sorted);
  std::vector<int64_t> shape = l.type(x).shape;
  shape[static_cast<size_t>(dim)] = k;
  return Symbol::of(gather_along(l, sorted, axis_coordinate(l, shape, dim, false, c.loc), dim, c.loc));
}

// bitonic_merge(x, dim=None, descending=False): the last stage of a bitonic
// sort along the last axis, as Triton's standard library builds it: for
// strides n/2, n/4, ..., 1, every element meets the one `stride` away
// (coordinate p ^ stride); the left one keeps the smaller, the right one the
// larger (swapped when descending). A bitonic sequence comes out sorted; any
// other input goes through the same compare-and-swap network.
Symbol bitonic_merge(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "?dim", "?descending"}, c);
  ir::ValueId x = tile_input(l, a, "x", "tl.bitonic_merge");
  ir::Type t = l.type(x);
  int rank = t.rank();
  int64_t dim = axis_arg(l, a, "dim", rank, "tl.bitonic_merge", rank - 1);
  if (dim != rank - 1)
    error_at(a.loc("dim"), Diag::ArgumentOutOfRange, "tl.bitonic_merge works along the last dimension only",
             "move the axis last with tl.permute");
  bool descending = flag_arg(l, a, "descending");
  ir::Type flags = t.with_scalar(Scalar::I1);
  ir::ValueId coordinate = axis_coordinate(l, t.shape, dim, false, c.loc);
  auto splat_i32 = [&](int64_t v) {
    return l.broadcast_to(l.constant(ConstValue::integer(v), ir::Type::of(Scalar::I32), c.loc), t.shape, c.loc);
  };
  ir::ValueId flip = l.broadcast_to(l.constant(ConstValue::boolean(descending), ir::Type::of(Scalar::I1), c.loc),
                                    t.shape, c.loc);
  ir::Type coords = l.type(coordinate);
  for (int64_t stride = t.shape[static_cast<size_t>(dim)] / 2; stride >= 1; stride /= 2) {
    ir::ValueId s = splat_i32(stride);
    ir::ValueId partner = l.create(OpKind::Xor, {coordinate, s}, coords, c.loc);
    ir::ValueId y = gather_along(l, x, partner, dim, c.loc);
    ir::ValueId bit = l.create(OpKind::And, {coordinate, s}, coords, c.loc);
    ir::ValueId is_right =
        l.create(OpKind::Cmp, {bit, splat_i32(0)}, flags, c.loc, {{"pred", ir::Attr{std::string("ne")}}});
    ir::ValueId greater = l.create(OpKind::Cmp, {x, y}, flags, c.loc, {{"pred", ir::Attr{std::string("gt")}}});
    ir::ValueId keep_larger = l.create(OpKind::Xor, {is_right, flip}, flags, c.loc);
    ir::ValueId take_partner = l.create(OpKind::Xor, {greater, keep_larger}, flags, c.loc);
    x = l.create(OpKind::Select, {take_partner, y, x}, t, c.loc);
  }
  return Symbol::of(x);
}

}  // namespace

Symbol lower_bitonic_merge(Lowerer& l, const CallArgs& c, const std::string& name) {
  return bitonic_merge(l, c, name);
}

Symbol lower_scan(Lowerer& l, const CallArgs& c, const std::string& name) {
  return name == "associative_scan" ? associative_scan(l, c, name) : cumulative(l, c, name);
}

Symbol lower_sort(Lowerer& l, const CallArgs& c, const std::string& name) { return sort(l, c, name); }

Symbol lower_flip(Lowerer& l, const CallArgs& c, const std::string& name) {
  BoundArgs a(name, {"x", "?dim"}, c);
  ir::ValueId x = tile_input(l, a, "x", "tl.flip");
  int rank = l.type(x).rank();
  int64_t dim = axis_arg(l, a, "dim", rank, "tl.flip", rank - 1);
  if (l.type(x).shape[static_cast<size_t>(dim)] == 1) return Symbol::of(x);
  return Symbol::of(gather_along(l, x, axis_coordinate(l, l.type(x).shape, dim, true, c.loc), dim, c.loc));
}

// --- indexing by value ---------------------------------------------------------------

Symbol lower_gather(Lowerer& l, const CallArgs& c, const std::string& name) {
  BoundArgs a(name, {"src", "index", "axis"}, c);
  refuse_none_axis(c, 2, "tl.gather");
  ir::ValueId src = tile_input(l, a, "src", "tl.gather");
  ir::ValueId index = tile_input(l, a, "index", "tl.gather");
  const ir::Type& ts = l.type(src);
  const ir::Type& ti = l.type(index);
  if (!ir::is_integer(ti.scalar) || ti.scalar == Scalar::I1)
    error_at(a.loc("index"), Diag::NotInteger,
             "the index of tl.gather must be a tile of integers, but it is " + l.describe(Symbol::of(index)));
  if (ti.rank() != ts.rank())
    error_at(c.loc, Diag::WrongRank,
             "tl.gather needs src and index of the same rank, got " + ir::to_string(ts) + " and " +
                        ir::to_string(ti));
  int64_t axis = axis_arg(l, a, "axis", ts.rank(), "tl.gather", 0);
  for (int d = 0; d < ts.rank(); ++d)
    if (d != axis && ti.shape[static_cast<size_t>(d)] != ts.shape[static_cast<size_t>(d)])
      error_at(c.loc, Diag::ShapeMismatch,
               "tl.gather needs index to match src in every dimension but axis " + std::to_string(axis) +
                          ": got " + ir::to_string(ts) + " and " + ir::to_string(ti));
  if (l.debug()) {
    // Debug mode: an index outside [0, n) is a located error (without it, the
    // IR reads index mod n).
    int64_t n = ts.shape[static_cast<size_t>(axis)];
    ir::Type elem = ti.element();
    ir::Type flags = ti.with_scalar(Scalar::I1);
    auto compare = [&](int64_t bound, const char* pred) {
      ir::ValueId b = l.broadcast_to(l.constant(ConstValue::integer(bound), elem, c.loc), ti.shape, c.loc);
      return l.create(OpKind::Cmp, {index, b}, flags, c.loc, {{"pred", ir::Attr{std::string(pred)}}});
    };
    int bits = ir::bit_width(ti.scalar);
    bool n_fits = bits == 64 || (n - 1) <= ((int64_t{1} << (ir::is_signed(ti.scalar) ? bits - 1 : bits)) - 1);
    std::optional<ir::ValueId> ok;
    if (ir::is_signed(ti.scalar)) ok = compare(0, "ge");
    if (n_fits) {
      ir::ValueId below = compare(n, "lt");
      ok = ok ? l.create(OpKind::And, {*ok, below}, flags, c.loc) : below;
    }
    if (ok) {
      l.builder().set_loc(c.loc);
      l.builder().create(OpKind::Assert, {*ok}, {},
                         {{"message", ir::Attr{"tl.gather index out of range [0, " + std::to_string(n) +
                                               ") along axis " + std::to_string(axis)}}});
    }
  }
  return Symbol::of(gather_along(l, src, index, axis, c.loc));
}

Symbol lower_histogram(Lowerer& l, const CallArgs& c, const std::string& name) {
  BoundArgs a(name, {"input", "num_bins", "?mask"}, c);
  ir::ValueId x = tile_input(l, a, "input", "tl.histogram");
  const ir::Type& t = l.type(x);
  if (!ir::is_integer(t.scalar) || t.scalar == Scalar::I1)
    error_at(a.loc("input"), Diag::NotInteger,
             "tl.histogram counts integers, but its input is " + l.describe(Symbol::of(x)),
             "convert it first, e.g. x.to(tl.int32)");
  int64_t bins = l.to_int_const(a.get("num_bins"), a.loc("num_bins"), "the num_bins of tl.histogram");
  if (bins < 1 || bins > ir::kMaxTileElements || (bins & (bins - 1)) != 0)
    error_at(a.loc("num_bins"), Diag::SizeNotPowerOfTwo,
             "the num_bins of tl.histogram must be a power of two of at most " +
                 std::to_string(ir::kMaxTileElements) + " (it is the result's size, a tile), not " +
                 std::to_string(bins));
  std::vector<ir::ValueId> operands = {x};
  if (a.has("mask")) {
    ir::ValueId m = l.to_value(a.get("mask"), a.loc("mask"), "the mask of tl.histogram");
    if (l.type(m).is_pointer() || l.type(m).scalar != Scalar::I1)
      error_at(a.loc("mask"), Diag::NotBoolean,
               "the mask of tl.histogram must be boolean, but it is " + l.describe(Symbol::of(m)),
               "compare something, e.g. `offs < n`");
    operands.push_back(l.broadcast_to(m, t.shape, a.loc("mask")));
  }
  return Symbol::of(l.create(OpKind::Histogram, operands, ir::Type::tile(Scalar::I32, {bins}), c.loc));
}

}  // namespace tegula::frontend
