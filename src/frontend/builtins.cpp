// The functions of the tile language (tl.*, tl.math.*, tegula.cdiv, and the
// Python builtins kernels use), each a small handler from call arguments to a
// symbol, and the one registry of every name a kernel can call (builtins.h),
// the handlers of the other builtins_*.cpp files included.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>

#include "frontend/builtins.h"
#include "frontend/builtins_block_ptr.h"
#include "frontend/builtins_hints.h"
#include "frontend/builtins_dot_scaled.h"
#include "frontend/builtins_experimental_descriptor.h"
#include "frontend/builtins_libdevice.h"
#include "frontend/builtins_math.h"
#include "frontend/builtins_operators.h"
#include "frontend/builtins_types.h"
#include "frontend/builtins_pointer.h"
#include "frontend/builtins_python.h"
#include "frontend/builtins_random.h"
#include "frontend/builtins_scan.h"
#include "frontend/builtins_target_info.h"
#include "frontend/builtins_target.h"
#include "frontend/builtins_tile.h"
#include "frontend/lowering.h"
#include "frontend/python_format.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"
#include "support/spelling.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

// --- argument binding ----------------------------------------------------------

std::string parameters_hint(const std::string& callee, const std::string& keyword,
                            const std::vector<std::string>& params) {
  std::string hint = did_you_mean(keyword, params);
  if (!hint.empty()) hint += " ";
  if (params.empty()) return hint + "`" + callee + "` takes no arguments";
  hint += "`" + callee + "` takes ";
  for (size_t i = 0; i < params.size(); ++i) hint += (i == 0 ? "" : ", ") + params[i];
  return hint;
}

BoundArgs::BoundArgs(const std::string& callee, const std::vector<std::string>& params, const CallArgs& args)
    : callee_(callee), call_loc_(args.loc) {
  std::vector<std::string> names;
  std::vector<bool> optional;
  for (const std::string& p : params) {
    bool opt = !p.empty() && p[0] == '?';
    names.push_back(opt ? p.substr(1) : p);
    optional.push_back(opt);
  }
  if (args.positional.size() > names.size())
    error_at(args.loc, Diag::WrongArgumentCount,
             "`" + callee + "` takes at most " + std::to_string(names.size()) + " arguments but " +
                           std::to_string(args.positional.size()) + " were given");
  for (size_t i = 0; i < args.positional.size(); ++i)
    bound_[names[i]] = {args.positional[i], args.positional_locs[i]};
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const std::string& n = args.keywords[k].first;
    bool known = false;
    for (const std::string& p : names) known |= p == n;
    if (!known) error_at(args.keyword_locs[k], Diag::UnknownKeywordArgument,
                         "`" + callee + "` got an unexpected keyword argument `" + n + "`", parameters_hint(callee, n, names));
    if (bound_.count(n)) error_at(args.keyword_locs[k], Diag::DuplicateArgument,
                                  "`" + callee + "` got multiple values for `" + n + "`");
    bound_[n] = {args.keywords[k].second, args.keyword_locs[k]};
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (!optional[i] && !bound_.count(names[i]))
      error_at(args.loc, Diag::WrongArgumentCount, "`" + callee + "` is missing the argument `" + names[i] + "`");
}

bool BoundArgs::has(const std::string& name) const {
  auto it = bound_.find(name);
  return it != bound_.end() && !it->second.first.is_none();
}

const Symbol& BoundArgs::get(const std::string& name) const {
  auto it = bound_.find(name);
  TEGULA_ASSERT(it != bound_.end(), "argument not bound: " + name);
  return it->second.first;
}

SourceLoc BoundArgs::loc(const std::string& name) const {
  auto it = bound_.find(name);
  return it == bound_.end() ? call_loc_ : it->second.second;
}

// --- handlers --------------------------------------------------------------------

// The attributes of a min/max op for the `propagate_nan` argument of
// tl.minimum, tl.maximum, tl.clamp and the reductions max, min, argmax and
// argmin (tl.PropagateNan.ALL: a NaN operand makes the result NaN).
std::vector<ir::NamedAttr> nan_propagation(const BoundArgs& a) {
  std::vector<ir::NamedAttr> attrs;
  if (a.has("propagate_nan")) {
    const Symbol& p = a.get("propagate_nan");
    if (p.is_const() && p.constant.kind == ConstValue::Kind::Str && (p.constant.s == "all" || p.constant.s == "ALL"))
      attrs.push_back({"propagate_nan", ir::Attr{int64_t{1}}});
  }
  return attrs;
}

ir::ValueId as_condition(Lowerer& l, ir::ValueId v, const SourceLoc& loc, const std::string& what,
                         bool floats_too) {
  const ir::Type& t = l.type(v);
  if (t.is_pointer()) error_at(loc, Diag::NotBoolean, what + " must be boolean, not a pointer");
  if (ir::is_float(t.scalar) && !floats_too)
    error_at(loc, Diag::NotBoolean,
             what + " must be boolean, but it is " + l.describe(Symbol::of(v)), "compare it, e.g. `x != 0`");
  return l.truth_of(v, loc);
}

ir::ValueId as_mask(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& callee) {
  std::string what = "the mask of " + callee;
  ir::ValueId m = l.to_value(s, loc, what);
  const ir::Type& t = l.type(m);
  if (t.is_pointer() || t.scalar != Scalar::I1)
    error_at(loc, Diag::NotBoolean,
             "Mask must have boolean scalar type, but " + what + " is " + l.describe(s.is_const() ? s : Symbol::of(m)),
             "compare it, e.g. `offs < n`, or `m != 0` for an integer mask");
  return m;
}

void refuse_nul(const std::string& text, const SourceLoc& loc, const std::string& what) {
  if (text.find('\0') != std::string::npos)
    error_at(loc, Diag::InvalidOption, what + " cannot hold a NUL character (it would end the text there)",
             "remove the \\x00 from the string");
}

namespace {

Symbol ok(ir::ValueId v) { return Symbol::of(v); }

Symbol program_id(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a = n == "program_id" ? BoundArgs(n, {"axis", "?bitwidth"}, c) : BoundArgs(n, {"axis"}, c);
  int64_t axis = l.to_int_const(a.get("axis"), a.loc("axis"), "the axis of tl." + n);
  if (axis < 0 || axis > 2) error_at(a.loc("axis"), Diag::ArgumentOutOfRange,
                                     "tl." + n + " axis must be 0, 1, or 2 but got " + std::to_string(axis));
  // tl.program_id(axis, bitwidth=64): the id as an int64 (Triton's newer keyword); 32 (the default) an int32.
  int64_t bits = a.has("bitwidth") ? l.to_int_const(a.get("bitwidth"), a.loc("bitwidth"), "the bitwidth of tl." + n)
                                   : 32;
  if (bits != 32 && bits != 64)
    error_at(a.loc("bitwidth"), Diag::ArgumentOutOfRange,
             "the bitwidth of tl." + n + " must be 32 or 64 but got " + std::to_string(bits));
  ir::ValueId id = l.create(n == "program_id" ? OpKind::ProgramId : OpKind::NumPrograms, {},
                            ir::Type::of(Scalar::I32), c.loc, {{"axis", ir::Attr{axis}}});
  return ok(bits == 64 ? l.cast(id, Scalar::I64, c.loc) : id);
}

Symbol arange(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"start", "end"}, c);
  auto bound = [&](const char* which) {
    const Symbol& s = a.get(which);
    if (!s.is_const())
      error_at(a.loc(which), Diag::NotConstexpr,
               std::string("the ") + which + " of tl.arange must be a compile-time constant, but it is " +
                                 l.describe(s),
               "tile sizes are static: use a constexpr block size (e.g. `BLOCK: tl.constexpr`) and a mask for the tail");
    return l.to_int_const(s, a.loc(which), std::string("the ") + which + " of tl.arange");
  };
  int64_t start = bound("start"), end = bound("end");
  if (end <= start) error_at(c.loc, Diag::EmptyRange,
                             "tl.arange needs end > start, got [" + std::to_string(start) + ", " + std::to_string(end) + ")");
  // Its values are int32 (Triton's rule too): past that, the IR verifier
  // refused the op as an internal error. Checked before `end - start`,
  // which could overflow int64.
  if (start < INT32_MIN || end - 1 > INT32_MAX)
    error_at(c.loc, Diag::ArgumentOutOfRange,
             "tl.arange must fit in int32, but [" + std::to_string(start) + ", " + std::to_string(end) +
                 ") holds values outside [-2147483648, 2147483647]",
             "offset the range instead: `base + tl.arange(0, BLOCK)` with `base` an int64 if it is large");
  int64_t len = end - start;
  if ((len & (len - 1)) != 0)
    error_at(c.loc, Diag::SizeNotPowerOfTwo,
             "tl.arange range length must be a power of two, but it is " + std::to_string(len),
             "use tl.arange(0, BLOCK) with BLOCK = tegula.next_power_of_2(n) and mask with `offs < n`");
  if (len > ir::kMaxTileElements) error_at(c.loc, Diag::TileTooLarge, "tl.arange range is longer than 2^20");
  return ok(l.create(OpKind::Arange, {}, ir::Type::tile(Scalar::I32, {len}), c.loc,
                     {{"start", ir::Attr{start}}, {"end", ir::Attr{end}}}));
}

Symbol full_like_impl(Lowerer& l, const std::vector<int64_t>& shape, const Symbol& value, Scalar dtype,
                      const SourceLoc& loc) {
  ir::ValueId v = value.is_const() ? l.constant(value.constant, ir::Type::of(dtype), loc, "the fill value")
                                   : l.cast(l.to_value(value, loc, "the fill value"), dtype, loc);
  if (l.type(v).is_tile()) error_at(loc, Diag::WrongArgumentKind, "the fill value must be a scalar");
  return ok(l.broadcast_to(v, shape, loc));
}

Symbol zeros(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"shape", "?dtype"}, c);
  auto shape = l.to_shape(a.get("shape"), a.loc("shape"), "the shape of tl.zeros");
  Scalar dt = a.has("dtype") ? l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype of tl.zeros") : Scalar::F32;
  return full_like_impl(l, shape, Symbol::of(ConstValue::integer(0)), dt, c.loc);
}

Symbol full(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"shape", "value", "?dtype"}, c);
  auto shape = l.to_shape(a.get("shape"), a.loc("shape"), "the shape of tl.full");
  const Symbol& value = a.get("value");
  Scalar dt;
  if (a.has("dtype")) dt = l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype of tl.full");
  else if (value.is_const()) dt = literal_type(value.constant);
  else dt = l.type(l.to_value(value, a.loc("value"), "the value of tl.full")).scalar;
  return full_like_impl(l, shape, value, dt, c.loc);
}

Symbol zeros_like(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "?dtype"}, c);
  ir::ValueId x = l.to_value(a.get("input"), a.loc("input"), "the input of tl." + n);
  Scalar dt = a.has("dtype") ? l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype") : l.type(x).scalar;
  return full_like_impl(l, l.type(x).shape, Symbol::of(ConstValue::integer(0)), dt, c.loc);
}

Symbol full_like(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "fill_value", "?dtype"}, c);
  ir::ValueId x = l.to_value(a.get("input"), a.loc("input"), "the input of tl." + n);
  Scalar dt = a.has("dtype") ? l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype") : l.type(x).scalar;
  return full_like_impl(l, l.type(x).shape, a.get("fill_value"), dt, c.loc);
}

ir::ValueId pointer_arg(Lowerer& l, const BoundArgs& a, const std::string& callee) {
  const Symbol& p = a.get("pointer");
  if (!p.is_value() || !l.type(p.value).is_pointer())
    error_at(a.loc("pointer"), Diag::WrongArgumentKind,
             "the pointer of " + callee + " must be a pointer or a tile of pointers, but it is " +
                                   l.describe(p),
             "pass an array argument, offset with `ptr + offsets`");
  for (const char* block_only : {"boundary_check", "padding_option"}) {
    if (!a.has(block_only)) continue;
    const Symbol& b = a.get(block_only);
    bool empty = (b.kind == Symbol::Kind::Tuple && b.elements.empty()) ||
                 (b.is_const() && b.constant.kind == ConstValue::Kind::Str && b.constant.s.empty());
    if (!empty)
      error_at(a.loc(block_only), Diag::ArgumentWithoutEffect,
               std::string("`") + block_only + "` applies to block pointers, not to " +
                                      l.describe(p),
               "mask a pointer tile with mask=..., other=...; or make a block pointer with tl.make_block_ptr");
  }
  return p.value;
}

std::vector<ir::NamedAttr> memory_hints(Lowerer& l, const BoundArgs& a, bool is_load) {
  std::vector<ir::NamedAttr> attrs;
  auto str = [&](const char* name, std::initializer_list<const char*> allowed) {
    if (!a.has(name)) return;
    ConstValue v = l.to_const(a.get(name), a.loc(name), std::string("`") + name + "`");
    if (v.kind != ConstValue::Kind::Str) error_at(a.loc(name), Diag::InvalidOption,
                                                  std::string("`") + name + "` must be a string");
    bool good = false;
    std::string options;
    for (const char* s : allowed) {
      good |= v.s == s;
      options += std::string(options.empty() ? "" : ", ") + "\"" + s + "\"";
    }
    if (!good) error_at(a.loc(name), Diag::InvalidOption,
                        "invalid " + std::string(name) + " \"" + v.s + "\"", "use one of " + options);
    if (!v.s.empty()) attrs.push_back({name, ir::Attr{v.s}});
  };
  if (is_load) str("cache_modifier", {"", ".ca", ".cg", ".cs", ".cv"});
  else str("cache_modifier", {"", ".wb", ".cg", ".cs", ".wt"});
  str("eviction_policy", {"", "evict_first", "evict_last", "evict_normal"});
  return attrs;
}

Symbol load(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"pointer", "?mask", "?other", "?boundary_check", "?padding_option", "?cache_modifier",
                  "?eviction_policy", "?volatile"}, c);
  std::vector<ir::NamedAttr> attrs = memory_hints(l, a, true);
  if (a.has("volatile") && l.to_const(a.get("volatile"), a.loc("volatile"), "`volatile`").truthy())
    attrs.push_back({"volatile", ir::Attr{int64_t{1}}});
  if (is_block_access(a.get("pointer"))) return lower_block_load(l, a, c.loc, std::move(attrs));
  ir::ValueId ptr = pointer_arg(l, a, "tl.load");
  std::vector<ir::ValueId> operands = {ptr};
  if (a.has("mask")) {
    ir::ValueId m = as_mask(l, a.get("mask"), a.loc("mask"), "tl.load");
    auto [p2, m2] = l.broadcast_pair(ptr, m, a.loc("mask"));
    operands = {p2, m2};
    if (a.has("other")) {
      ir::Type elem = l.type(p2).with_scalar(l.type(p2).scalar);
      const Symbol& o = a.get("other");
      ir::ValueId ov = o.is_const() ? l.constant(o.constant, ir::Type::of(elem.scalar), a.loc("other"), "`other` of tl.load")
                                    : l.cast(l.to_value(o, a.loc("other"), "`other` of tl.load"), elem.scalar, a.loc("other"));
      if (l.type(ov).is_tile() && !l.type(p2).is_tile())
        error_at(a.loc("other"), Diag::WrongRank, "`other` is a tile but the pointer is a scalar");
      operands.push_back(l.broadcast_to(ov, l.type(p2).shape, a.loc("other")));
    }
  } else if (a.has("other")) {
    error_at(a.loc("other"), Diag::ArgumentWithoutEffect,
             "`other` has no effect without `mask`", "pass mask=... or drop `other`");
  }
  ir::Type result = l.type(operands[0]).with_scalar(l.type(operands[0]).scalar);
  return ok(l.create(OpKind::Load, operands, result, c.loc, attrs));
}

Symbol store(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"pointer", "value", "?mask", "?boundary_check", "?cache_modifier", "?eviction_policy"}, c);
  std::vector<ir::NamedAttr> attrs = memory_hints(l, a, false);
  if (is_block_access(a.get("pointer"))) return lower_block_store(l, a, c.loc, std::move(attrs));
  ir::ValueId ptr = pointer_arg(l, a, "tl.store");
  Scalar elem = l.type(ptr).scalar;
  const Symbol& v = a.get("value");
  ir::ValueId value = v.is_const() ? l.constant(v.constant, ir::Type::of(elem), a.loc("value"), "the value of tl.store")
                                   : l.to_value(v, a.loc("value"), "the value of tl.store");
  if (l.type(value).is_pointer()) {
    // As Triton's: a pointer goes in as its address (or, into bool elements, whether it is not null).
    if (elem != Scalar::I64 && elem != Scalar::U64 && elem != Scalar::I1)
      error_at(a.loc("value"), Diag::PointerConversion,
               "a pointer is stored as its address into tl.int64 or tl.uint64 elements (or into tl.int1 as "
               "not null), not into " + triton_name(elem) + " elements",
               "store the pointers into an int64 array; read them back with .to(tl.pointer_type(...))");
    value = l.create(OpKind::Cast, {value}, l.type(value).with_scalar(elem), a.loc("value"));
  }
  value = l.cast(value, elem, a.loc("value"));
  if (l.type(value).is_tile() && !l.type(ptr).is_tile()) {
    auto [p2, v2] = l.broadcast_pair(ptr, value, a.loc("value"));
    ptr = p2;
    value = v2;
  } else {
    value = l.broadcast_to(value, l.type(ptr).shape, a.loc("value"));
  }
  std::vector<ir::ValueId> operands = {ptr, value};
  if (a.has("mask")) {
    ir::ValueId m = as_mask(l, a.get("mask"), a.loc("mask"), "tl.store");
    if (l.type(m).is_tile() && l.type(m).shape != l.type(ptr).shape) {
      auto [p2, m2] = l.broadcast_pair(ptr, m, a.loc("mask"));
      operands = {p2, l.broadcast_to(value, l.type(p2).shape, a.loc("value")), m2};
    } else {
      operands.push_back(l.broadcast_to(m, l.type(ptr).shape, a.loc("mask")));
    }
  }
  l.builder().set_loc(c.loc);
  l.builder().create(OpKind::Store, operands, {}, attrs);
  return Symbol::of(ConstValue::none());
}

Symbol where(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"condition", "x", "y"}, c);
  const Symbol& condition = a.get("condition");
  // A float condition too, as Triton's cast to int1: x != 0, unordered (a NaN selects x).
  ir::ValueId cond = as_condition(l, l.to_value(condition, a.loc("condition"), "the condition of tl.where"),
                                  a.loc("condition"), "the condition of tl.where", /*floats_too=*/true);
  if (condition.is_value() && l.type(condition.value).scalar != Scalar::I1)
    l.warn_at(a.loc("condition"),
              "tl.where with a non-boolean condition (" + l.describe(condition) +
                  ") selects x where it is nonzero; Triton deprecates such conditions and will refuse them",
              "compare explicitly, e.g. tl.where(c != 0, x, y)");
  ir::ValueId x, y;
  const Symbol& sx = a.get("x");
  const Symbol& sy = a.get("y");
  bool px = sx.is_value() && l.type(sx.value).is_pointer(), py = sy.is_value() && l.type(sy.value).is_pointer();
  if (px || py) {
    if (!(px && py)) error_at(c.loc, Diag::InvalidOperandType, "tl.where cannot mix pointers and numbers");
    std::tie(x, y) = l.broadcast_pair(sx.value, sy.value, c.loc);
  } else {
    std::tie(x, y) = l.arith_operands(sx, sy, false, c.loc, "tl.where");
  }
  auto [cb, xb] = l.broadcast_pair(cond, x, c.loc);
  auto [cb2, yb] = l.broadcast_pair(cb, y, c.loc);
  auto [xb2, yb2] = l.broadcast_pair(xb, yb, c.loc);
  return ok(l.create(OpKind::Select, {cb2, xb2, yb2}, l.type(xb2), c.loc));
}

// Triton's tl.minimum, tl.maximum and tl.clamp make bfloat16 operands float32 before the usual promotion
// (a number beside one is then float32 too, not rounded to bfloat16), and return float32.
Symbol bf16_as_f32(Lowerer& l, const Symbol& s, const SourceLoc& loc) {
  if (!s.is_value() || l.type(s.value).scalar != Scalar::BF16) return s;
  return Symbol::of(l.cast(s.value, Scalar::F32, loc));
}

Symbol min_max(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "y", "?propagate_nan"}, c);
  auto [x, y] = l.arith_operands(bf16_as_f32(l, a.get("x"), c.loc), bf16_as_f32(l, a.get("y"), c.loc), false,
                                 c.loc, n.c_str());
  return ok(l.create(n == "minimum" ? OpKind::Min : OpKind::Max, {x, y}, l.type(x), c.loc, nan_propagation(a)));
}

Symbol abs_fn(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x"}, c);
  const Symbol& s = a.get("x");
  if (s.is_const() && s.constant.is_numeric()) return Symbol::of(const_abs(s.constant, c.loc));
  ir::ValueId x = l.to_value(s, a.loc("x"), "the operand of abs");
  if (l.type(x).is_pointer()) error_at(c.loc, Diag::InvalidOperandType, "abs is not defined for pointers");
  if (!ir::is_signed(l.type(x).scalar) && !ir::is_float(l.type(x).scalar)) return ok(x);
  if (l.type(x).scalar == Scalar::F8E4B15) {
    // Triton clears the sign bit: 1.875 stays itself, where a round trip
    // through f32 would saturate it to 1.75.
    ir::Type bits = l.type(x).with_scalar(Scalar::U8);
    ir::ValueId b = l.create(OpKind::Bitcast, {x}, bits, c.loc);
    ir::ValueId m = l.create(OpKind::And, {b, l.constant(ConstValue::integer(0x7f), bits, c.loc)}, bits, c.loc);
    return ok(l.create(OpKind::Bitcast, {m}, l.type(x), c.loc));
  }
  return ok(l.create(OpKind::Abs, {x}, l.type(x), c.loc));
}

Symbol sigmoid(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the operand of tl.sigmoid");
  Scalar s = l.type(x).scalar;
  if (!ir::is_float(s) || l.type(x).is_pointer()) error_at(c.loc, Diag::NotFloatingPoint,
                                                           "tl.sigmoid needs a floating-point operand");
  ir::ValueId w = (s == Scalar::F16 || s == Scalar::BF16) ? l.cast(x, Scalar::F32, c.loc) : x;
  ir::Type t = l.type(w);
  // sigmoid(x) = 1 / (1 + exp(-x)), a math function of a few ulp like tl.exp:
  // the quotient may be approximate (docs/ir.md, `approx`). IEEE division's
  // slow path is a call, and in a 64-element epilogue the registers kept
  // live around those calls cost a matmul half its occupancy.
  ir::ValueId e = l.create(OpKind::Exp, {l.create(OpKind::Neg, {w}, t, c.loc)}, t, c.loc,
                           {approx_attr()});  // tl.exp's, as Triton's sigmoid calls it
  ir::ValueId one = l.broadcast_to(l.constant(ConstValue::real(1.0), t.element(), c.loc), t.shape, c.loc);
  ir::ValueId r = l.create(OpKind::Div, {one, l.create(OpKind::Add, {one, e}, t, c.loc)}, t, c.loc,
                           {approx_attr()});
  return ok(l.cast(r, s, c.loc));
}

Symbol fma_fn(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "y", "z"}, c);
  // Promote pairwise so all three end with one type and one shape.
  auto [x, y] = l.arith_operands(a.get("x"), a.get("y"), false, c.loc, "tl.fma");
  auto [x2, z] = l.arith_operands(Symbol::of(x), a.get("z"), false, c.loc, "tl.fma");
  auto [y2, z2] = l.arith_operands(Symbol::of(y), Symbol::of(z), false, c.loc, "tl.fma");
  if (!ir::is_float(l.type(z2).scalar)) error_at(c.loc, Diag::NotFloatingPoint, "tl.fma needs floating-point operands");
  return ok(l.create(OpKind::Fma, {x2, y2, z2}, l.type(z2), c.loc));
}

// div_rn: IEEE division. fdiv(x, y, ieee_rounding=False): Triton's fast
// division, approximate (`approx`) unless ieee_rounding is a true constant.
Symbol div_fn(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "y", "?ieee_rounding"}, c);
  auto [x, y] = l.arith_operands(a.get("x"), a.get("y"), false, c.loc, n.c_str());
  if (!ir::is_float(l.type(x).scalar)) error_at(c.loc, Diag::NotFloatingPoint,
                                                "tl." + n + " needs floating-point operands");
  bool ieee = n != "fdiv" || ieee_rounding(a, "tl.fdiv");
  std::vector<ir::NamedAttr> attrs;
  if (!ieee) attrs.push_back(approx_attr());
  return ok(l.create(OpKind::Div, {x, y}, l.type(x), c.loc, attrs));
}

Symbol umulhi(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "y"}, c);
  auto [x, y] = l.arith_operands(a.get("x"), a.get("y"), false, c.loc, "tl.umulhi");
  if (!ir::is_integer(l.type(x).scalar)) error_at(c.loc, Diag::NotInteger, "tl.umulhi needs integer operands");
  return ok(l.create(OpKind::UMulHi, {x, y}, l.type(x), c.loc));
}

Symbol clamp(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "min", "max", "?propagate_nan"}, c);
  auto [x, lo] = l.arith_operands(bf16_as_f32(l, a.get("x"), c.loc), bf16_as_f32(l, a.get("min"), c.loc), false,
                                  c.loc, "tl.clamp");
  auto [x2, hi] = l.arith_operands(Symbol::of(x), bf16_as_f32(l, a.get("max"), c.loc), false, c.loc, "tl.clamp");
  lo = l.broadcast_to(lo, l.type(x2).shape, c.loc);
  ir::ValueId m = l.create(OpKind::Max, {x2, lo}, l.type(x2), c.loc, nan_propagation(a));
  return ok(l.create(OpKind::Min, {m, hi}, l.type(x2), c.loc, nan_propagation(a)));
}

Symbol cdiv(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "div"}, c);
  // cdiv(x, d) = (x + d - 1) // d
  Symbol one = Symbol::of(ConstValue::integer(1));
  Symbol num = l.binary(ast::BinaryOp::Sub, l.binary(ast::BinaryOp::Add, a.get("x"), a.get("div"), c.loc), one, c.loc);
  return l.binary(ast::BinaryOp::FloorDiv, num, a.get("div"), c.loc);
}

Symbol next_power_of_2(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"n"}, c);
  int64_t v = l.to_int_const(a.get("n"), a.loc("n"), "the argument of next_power_of_2");
  int64_t p = 1;
  while (p < v) p <<= 1;
  return Symbol::of(ConstValue::integer(p));
}

Symbol to(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "dtype", "?fp_downcast_rounding", "?bitcast"}, c);
  if (converts_pointer(l, a)) return lower_pointer_cast(l, a, c.loc);
  Scalar dt = l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype of ." + n + "()");
  const Symbol& in = a.get("input");
  bool bitcast = a.has("bitcast") && l.to_const(a.get("bitcast"), a.loc("bitcast"), "`bitcast`").truthy();
  std::string rounding;
  if (a.has("fp_downcast_rounding")) {
    ConstValue r = l.to_const(a.get("fp_downcast_rounding"), a.loc("fp_downcast_rounding"), "fp_downcast_rounding");
    if (r.kind != ConstValue::Kind::Str || (r.s != "rtne" && r.s != "rtz"))
      error_at(a.loc("fp_downcast_rounding"), Diag::InvalidOption, "fp_downcast_rounding must be \"rtne\" or \"rtz\"");
    rounding = r.s;
  }
  if (in.is_const() && !bitcast)
    return ok(l.constant(in.constant, ir::Type::of(dt), c.loc, "the input of ." + n + "()"));
  ir::ValueId x = l.to_value(in, a.loc("input"), "the input of ." + n + "()");
  if (l.type(x).is_pointer()) error_at(c.loc, Diag::PointerConversion, "converting pointers is not supported");
  if (bitcast) {
    if (ir::bit_width(dt) != ir::bit_width(l.type(x).scalar))
      error_at(c.loc, Diag::BitcastWidthMismatch,
               "bitcast needs types of the same width: " + triton_name(l.type(x).scalar) + " is " +
                          std::to_string(ir::bit_width(l.type(x).scalar)) + " bits, " + triton_name(dt) + " is " +
                          std::to_string(ir::bit_width(dt)));
    if (dt == l.type(x).scalar) return ok(x);
    return ok(l.create(OpKind::Bitcast, {x}, l.type(x).with_scalar(dt), c.loc));
  }
  if (!rounding.empty() && rounding != "rtne") {
    Scalar from = l.type(x).scalar;
    if (!ir::is_float(from) || !ir::is_float(dt) || ir::bit_width(dt) >= ir::bit_width(from))
      error_at(a.loc("fp_downcast_rounding"), Diag::ArgumentWithoutEffect,
               "fp_downcast_rounding applies to float downcasts only, not " +
                                                  triton_name(from) + " -> " + triton_name(dt));
    // float8e5 (e5m2) truncates as Triton's does: it is float16 with its low
    // mantissa byte dropped. Triton ignores the mode for float8e4b15 (its
    // conversion truncates to f16, then rounds ties away) and has none for
    // e4m3; Tegula refuses both.
    if (ir::is_fp8(dt) && dt != Scalar::F8E5M2)
      error_at(a.loc("fp_downcast_rounding"), Diag::UnsupportedElementType,
               "fp_downcast_rounding=\"rtz\" is not supported for " + triton_name(dt) + " results",
               dt == Scalar::F8E4B15 ? "conversions to float8e4b15 round to nearest, ties away from zero (and "
                                       "saturate at 1.75), as Triton's do; drop the argument"
                                     : "of the fp8 types only float8e5 rounds toward zero (as in Triton); other "
                                       "conversions to fp8 round to nearest even (and saturate): drop the argument");
    return ok(l.create(OpKind::Cast, {x}, l.type(x).with_scalar(dt), c.loc, {{"rounding", ir::Attr{rounding}}}));
  }
  return ok(l.cast(x, dt, c.loc));
}

Symbol constexpr_fn(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"value"}, c);
  // Triton's tl.constexpr(x) wraps whatever it is given: of a tensor it makes a
  // constexpr whose operators with tensors act on the tensor (xformers' split-K
  // kernel builds its causal diagonal so). Such a value stands for itself here.
  if (a.get("value").is_value()) return a.get("value");
  return Symbol::of(l.to_const(a.get("value"), a.loc("value"), "the argument of tl.constexpr"));
}

std::string format_for_print(Lowerer& l, const Symbol& s) {
  if (s.is_const()) return s.constant.kind == ConstValue::Kind::Str ? s.constant.s : to_string(s.constant);
  if (s.is_value()) return ir::to_string(l.type(s.value));
  return l.describe(s);
}

namespace {

// A value as Triton's str() shows it: a tensor as its dtype and shape
// (`int32[constexpr[128]]`, a scalar `fp32[]`), a dtype by its name (`fp16`,
// `pointer<int32>`), a constant as Python prints it, a tuple as Python
// prints one (its elements' repr()s: `(16, 'x')`).
std::string triton_text(Lowerer& l, const Symbol& s, bool repr = false) {
  auto dtype_name = [](ir::Scalar scalar, bool pointer) {
    std::string name = ir::scalar_info(scalar).short_name;
    return pointer ? "pointer<" + name + ">" : name;
  };
  if (s.is_value()) {
    const ir::Type& t = l.type(s.value);
    std::string dims;
    for (int64_t d : t.shape) dims += (dims.empty() ? "constexpr[" : ", constexpr[") + std::to_string(d) + "]";
    return dtype_name(t.scalar, t.is_pointer()) + "[" + dims + "]";
  }
  if (s.kind == Symbol::Kind::Tuple) {  // a shape, a tuple of tensors: its elements, as Python prints a tuple
    std::string text;
    for (const Symbol& e : s.elements) text += (text.empty() ? "" : ", ") + triton_text(l, e, true);
    if (s.written_as_list) return "[" + text + "]";
    return "(" + text + (s.elements.size() == 1 ? ",)" : ")");
  }
  if (!s.is_const()) return l.describe(s);
  return repr ? python_repr(s.constant) : python_str(s.constant);
}

}  // namespace

// Triton's static_print is Python's print at compile time: to stdout, values
// as str() shows them, `sep` and `end` as print takes them.
Symbol static_print(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::string sep = " ", end = "\n";
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    const auto& [keyword, value] = c.keywords[k];
    if (keyword == "file" || keyword == "flush") continue;
    if (keyword != "sep" && keyword != "end")
      error_at(c.keyword_locs[k], Diag::UnknownKeywordArgument, "tl.static_print has no keyword `" + keyword + "`");
    if (!value.is_const() || value.constant.kind != ConstValue::Kind::Str)
      error_at(c.keyword_locs[k], Diag::NotConstexpr,
               "tl.static_print's " + keyword + " must be a compile-time string, but it is " + l.describe(value));
    (keyword == "sep" ? sep : end) = value.constant.s;
  }
  std::string line;
  for (size_t i = 0; i < c.positional.size(); ++i) line += (i ? sep : "") + triton_text(l, c.positional[i]);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fwrite(end.data(), 1, end.size(), stdout);
  std::fflush(stdout);
  return Symbol::of(ConstValue::none());
}

Symbol static_assert_fn(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"cond", "?msg"}, c);
  bool truth;
  if (!l.truth_constant(a.get("cond"), a.loc("cond"), &truth))
    error_at(a.loc("cond"), Diag::NotConstexpr,
             "tl.static_assert needs a compile-time condition, but it is " + l.describe(a.get("cond")),
             "use tl.device_assert for runtime checks");
  if (!truth) {
    std::string msg = a.has("msg") ? format_for_print(l, a.get("msg")) : "";
    error_at(c.loc, Diag::AssertionFailsAtCompileTime,
             "static assertion failed" + (msg.empty() ? std::string() : ": " + msg));
  }
  return Symbol::of(ConstValue::none());
}

// The unsigned integer of `s`'s width, whose digits hex printing shows (a float's bits); bool as uint8.
Scalar hex_scalar(Scalar s) {
  switch (ir::scalar_info(s).bits) {
    case 1:
    case 8: return Scalar::U8;
    case 16: return Scalar::U16;
    case 32: return Scalar::U32;
    default: return Scalar::U64;
  }
}

Symbol device_print(Lowerer& l, const CallArgs& c, const std::string& n) {
  // tl.device_print's one keyword is hex: each value's bits in hexadecimal, zero-padded to its width
  // (0x0007 for an int16, 0x3f800000 for a float32 1.0). Python's print takes sep/end/file/flush, which
  // a kernel's line has no use for.
  bool hex = false;
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    const std::string& keyword = c.keywords[k].first;
    bool python = n == "py.print" && (keyword == "sep" || keyword == "end" || keyword == "file" || keyword == "flush");
    if (python) continue;
    if (keyword == "hex" && n != "py.print") {
      if (!l.truth_constant(c.keywords[k].second, c.keyword_locs[k], &hex))
        error_at(c.keyword_locs[k], Diag::NotConstexpr,
                 "tl.device_print's hex needs a compile-time True or False, but it is " +
                     l.describe(c.keywords[k].second));
      continue;
    }
    error_at(c.keyword_locs[k], Diag::UnknownKeywordArgument,
             std::string(n == "py.print" ? "print" : "tl.device_print") + " has no keyword `" + keyword + "`");
  }
  std::string prefix;
  std::vector<ir::ValueId> values;
  for (size_t i = 0; i < c.positional.size(); ++i) {
    const Symbol& s = c.positional[i];
    if (s.is_const() && s.constant.kind == ConstValue::Kind::Str) {
      refuse_nul(s.constant.s, c.positional_locs[i], "a printed string");
      prefix += s.constant.s;
      continue;
    }
    ir::ValueId v = l.to_value(s, c.positional_locs[i], "a printed value");
    const ir::Type& t = l.type(v);
    if (hex && !t.is_pointer() && t.scalar != hex_scalar(t.scalar)) {  // pointers print as addresses either way
      Scalar bits = hex_scalar(t.scalar);
      v = t.scalar == Scalar::I1 ? l.create(OpKind::Cast, {v}, t.with_scalar(bits), c.positional_locs[i])
                                 : l.create(OpKind::Bitcast, {v}, t.with_scalar(bits), c.positional_locs[i]);
    }
    values.push_back(v);
  }
  // Triton's rule, so lines read as Triton prints them: before values the prefix ends in ": " ("x",
  // "x " and "x: " all become " x: ", "" becomes ": "), and a prefix longer than two characters starts
  // with a space. The backends print it right after the coordinates.
  if (!values.empty()) {
    if (prefix.empty() || prefix.back() != ' ') prefix += ' ';
    if (prefix.size() < 2 || prefix.compare(prefix.size() - 2, 2, ": ") != 0) prefix.insert(prefix.size() - 1, ":");
  }
  if (prefix.size() > 2 && prefix.front() != ' ') prefix.insert(0, " ");
  l.builder().set_loc(c.loc);
  std::vector<ir::NamedAttr> attrs = {{"prefix", ir::Attr{prefix}}};
  if (hex) attrs.push_back({"hex", ir::Attr{int64_t{1}}});
  l.builder().create(OpKind::Print, values, {}, attrs);
  return Symbol::of(ConstValue::none());
}

Symbol device_assert(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"cond", "?msg", "?mask"}, c);
  bool truth;
  // A constant true condition is dropped. A constant false one fails when it is
  // reached, as Triton's: device_assert(False, ...) marks a path that must not
  // run (xformers' sequence-parallel kernel times out so inside a spin loop).
  if (l.truth_constant(a.get("cond"), a.loc("cond"), &truth) && truth) return Symbol::of(ConstValue::none());
  std::string msg = a.has("msg") ? format_for_print(l, a.get("msg")) : "device assertion failed";
  refuse_nul(msg, a.loc("msg"), "the message of tl.device_assert");  // in debug builds or not
  if (!l.debug()) return Symbol::of(ConstValue::none());
  ir::ValueId cond = as_condition(l, l.to_value(a.get("cond"), a.loc("cond"), "the condition"), a.loc("cond"), "the condition");
  l.builder().set_loc(c.loc);
  l.builder().create(OpKind::Assert, {cond}, {}, {{"message", ir::Attr{msg}}});
  return Symbol::of(ConstValue::none());
}

Symbol no_op(Lowerer& l, const CallArgs& c, const std::string& n) { return Symbol::of(ConstValue::none()); }

// --- Python builtins -------------------------------------------------------------------

Symbol py_min_max(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::vector<Symbol> items = c.positional;
  if (items.size() == 1 && items[0].kind == Symbol::Kind::Tuple) items = items[0].elements;
  if (items.empty()) error_at(c.loc, Diag::WrongArgumentCount, n.substr(3) + "() needs at least one argument");
  bool is_min = n == "py.min";
  bool all_const = true;
  for (const Symbol& s : items) all_const = all_const && s.is_const();
  if (!all_const) {
    // Like Triton, min()/max() of tensors are tl.minimum/tl.maximum, folded left.
    Symbol acc = items[0];
    for (size_t i = 1; i < items.size(); ++i) {
      auto [x, y] = l.arith_operands(acc, items[i], false, c.loc, is_min ? "min" : "max");
      acc = Symbol::of(l.create(is_min ? OpKind::Min : OpKind::Max, {x, y}, l.type(x), c.loc));
    }
    return acc;
  }
  // Python's min/max of a NaN or of zeros of both signs depends on the argument
  // order, unlike tl.minimum/maximum: refused, as Triton does. A number Triton
  // holds as a tensor (`assigned`) goes through tl.minimum there instead.
  bool constexprs = std::none_of(items.begin(), items.end(), [](const Symbol& s) { return s.assigned; });
  for (const Symbol& s : items) {
    if (!constexprs || s.constant.kind != ConstValue::Kind::Float) continue;
    if (std::isnan(s.constant.f) || (s.constant.f == 0.0 && std::signbit(s.constant.f)))
      error_at(c.loc, Diag::ConstantArithmetic,
               n.substr(3) + "() of compile-time numbers does not take " +
                   (std::isnan(s.constant.f) ? "NaN" : "negative zero") +
                   ": Python's answer then depends on the order of the arguments",
               "test for the value first (x != x is true for NaN), or compute with tensors: tl.minimum/tl.maximum "
               "take propagate_nan=");
  }
  Symbol best = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    auto lt = const_compare(ast::CmpOp::Lt, items[i].constant, best.constant);
    if (!lt) error_at(c.loc, Diag::InvalidOperandType, "cannot compare these constants");
    if (lt->truthy() == is_min && !(items[i].constant == best.constant)) best = items[i];
    if (!is_min) {
      auto gt = const_compare(ast::CmpOp::Gt, items[i].constant, best.constant);
      if (gt && gt->truthy()) best = items[i];
    }
  }
  return constexprs ? best : best.mark_assigned();
}

Symbol py_len(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a("len", {"obj"}, c);
  const Symbol& s = a.get("obj");
  if (s.kind == Symbol::Kind::Tuple) return Symbol::of(ConstValue::integer(static_cast<int64_t>(s.elements.size())));
  if (s.is_value() && l.type(s.value).is_tile()) return Symbol::of(ConstValue::integer(l.type(s.value).shape[0]));
  if (s.is_const() && s.constant.kind == ConstValue::Kind::Str)
    return Symbol::of(ConstValue::integer(static_cast<int64_t>(s.constant.s.size())));
  error_at(c.loc, Diag::BuiltinOutsideContext, "len() of " + l.describe(s) + " is not defined");
}

Symbol py_convert(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n.substr(3), {"x"}, c);
  const Symbol& s = a.get("x");
  if (n == "py.float" && s.is_const() && s.constant.kind == ConstValue::Kind::Str) {
    // float("inf"), float("-inf"), float("nan") and numeric strings, as Python.
    std::string t = s.constant.s;
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (t == "inf" || t == "+inf" || t == "infinity") return Symbol::of(ConstValue::real(INFINITY));
    if (t == "-inf" || t == "-infinity") return Symbol::of(ConstValue::real(-INFINITY));
    if (t == "nan" || t == "+nan" || t == "-nan") return Symbol::of(ConstValue::real(NAN));
    char* end = nullptr;
    double v = std::strtod(s.constant.s.c_str(), &end);
    if (end && *end == '\0' && !s.constant.s.empty()) return Symbol::of(ConstValue::real(v));
    error_at(c.loc, Diag::ConstantArithmetic, "could not convert string to float: '" + s.constant.s + "'");
  }
  if (!s.is_const() || !s.constant.is_numeric())
    error_at(c.loc, Diag::NotConstexpr,
             n.substr(3) + "() works on constants inside kernels", "use .to(tl.<dtype>) for tiles");
  if (n == "py.int") return Symbol::of(const_to_int(s.constant, c.loc));
  if (n == "py.float") return Symbol::of(ConstValue::real(s.constant.as_double()));
  return Symbol::of(ConstValue::boolean(s.constant.truthy()));
}

Symbol py_range(Lowerer& l, const CallArgs& c, const std::string& n) {
  error_at(c.loc, Diag::BuiltinOutsideContext, "range(...) can only be used as the iterable of a `for` loop");
}

}  // namespace

// Defined in builtins_atomic.cpp: tl.atomic_* (all but cas) and tl.atomic_cas.
Symbol lower_atomic_rmw(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_atomic_cas(Lowerer& l, const CallArgs& c, const std::string& name);

// --- the registry ------------------------------------------------------------------

namespace {

constexpr uint8_t TL = kLanguage;
constexpr uint8_t METHOD = kMethod;
constexpr uint8_t NAMED = 0;  // reached by its prefixed name only (builtins.h)

// Every name a kernel can call, grouped as docs/language.md groups them. A
// row without a handler is a triton.language name Tegula does not implement
// yet: calling it is a clear error rather than an unknown name.
constexpr Builtin kBuiltins[] = {
    // program and grid
    {"program_id", program_id, TL},                 {"num_programs", program_id, TL},
    // creation
    {"arange", arange, TL},                         {"zeros", zeros, TL},
    {"zeros_like", zeros_like, TL},                 {"full", full, TL},
    {"full_like", full_like, TL},                   {"cat", lower_cat, TL},
    {"to_tensor", lower_to_tensor, TL},
    // memory, block pointers and tensor descriptors
    {"load", load, TL},                             {"store", store, TL},
    {"make_block_ptr", lower_make_block_ptr, TL},   {"advance", lower_advance, TL},
    {"make_tensor_descriptor", lower_make_tensor_descriptor, TL},
    {"load_tensor_descriptor", lower_descriptor_load, TL},
    {"store_tensor_descriptor", lower_descriptor_store, TL},
    {"tensor_descriptor.atomic_add", lower_descriptor_atomic, NAMED},
    {"tensor_descriptor.atomic_min", lower_descriptor_atomic, NAMED},
    {"tensor_descriptor.atomic_max", lower_descriptor_atomic, NAMED},
    {"tensor_descriptor.atomic_and", lower_descriptor_atomic, NAMED},
    {"tensor_descriptor.atomic_or", lower_descriptor_atomic, NAMED},
    {"tensor_descriptor.atomic_xor", lower_descriptor_atomic, NAMED},
    {"tensor_descriptor.gather", lower_descriptor_gather, NAMED},
    {"tensor_descriptor.scatter", lower_descriptor_scatter, NAMED},
    // Triton 3.2/3.3's experimental names (builtins_experimental_descriptor.h)
    {"_experimental_make_tensor_descriptor", lower_make_tensor_descriptor, TL},
    {"_experimental_descriptor_load", lower_experimental_descriptor_load, TL},
    {"_experimental_descriptor_store", lower_experimental_descriptor_store, TL},
    {"experimental_device_tensormap_create1d", lower_experimental_tensormap_create, TL},
    {"experimental_device_tensormap_create2d", lower_experimental_tensormap_create, TL},
    {"experimental_tensormap_fenceproxy_acquire", lower_experimental_tensormap_fence, TL},
    // shape
    {"reshape", lower_reshape, TL | METHOD},        {"view", lower_reshape, TL | METHOD},
    {"ravel", lower_ravel, TL | METHOD},            {"trans", lower_permute, TL | METHOD},
    {"permute", lower_permute, TL | METHOD},        {"expand_dims", lower_expand_dims, TL | METHOD},
    {"broadcast_to", lower_broadcast_to, TL | METHOD}, {"broadcast", lower_broadcast, TL},
    {"join", lower_join, TL | METHOD},              {"split", lower_split, TL | METHOD},
    {"interleave", lower_interleave, TL | METHOD},  {"squeeze", lower_squeeze, TL | METHOD},
    {"unsqueeze", lower_squeeze, TL | METHOD},      {"item", lower_item, METHOD},
    // conversions
    {"cast", to, TL | METHOD},                      {"to", to, METHOD},
    {"pointer_type", lower_pointer_type, TL},
    // Triton 3.2/3.3's host TMA descriptor type: host code tests for the name; no kernel calls it
    {"nv_tma_desc_type", nullptr, TL},
    // type objects: isinstance() and annotations (builtins_types.h)
    {"dtype", lower_dtype_class, TL},               {"block_type", lower_block_type, TL},
    {"get_int_dtype", lower_get_int_dtype, TL},   {"_unwrap_if_constexpr", lower_unwrap_if_constexpr, TL},
    {"tensor", lower_type_class, TL},               {"const", lower_type_class, TL},
    {"constexpr_type", lower_type_class, TL},       {"slice", lower_type_class, TL},
    {"tensor_descriptor", lower_type_class, TL},
    {"tuple", lower_tuple, TL},                     {"tuple_type", lower_tuple_type, TL},
    // methods of type objects (`x.dtype.is_fp16()`)
    {"dtype.is_floating", lower_dtype_method, NAMED}, {"dtype.is_standard_floating", lower_dtype_method, NAMED},
    {"dtype.is_fp8", lower_dtype_method, NAMED},    {"dtype.is_int", lower_dtype_method, NAMED},
    {"dtype.is_int_signed", lower_dtype_method, NAMED}, {"dtype.is_int_unsigned", lower_dtype_method, NAMED},
    {"dtype.is_bool", lower_dtype_method, NAMED},   {"dtype.is_ptr", lower_dtype_method, NAMED},
    {"dtype.is_block", lower_dtype_method, NAMED},  {"dtype.is_void", lower_dtype_method, NAMED},
    {"dtype.is_const", lower_dtype_method, NAMED},  {"dtype.get_int_max_value", lower_dtype_method, NAMED},
    {"dtype.get_int_min_value", lower_dtype_method, NAMED}, {"dtype.is_int1", lower_dtype_method, NAMED},
    {"dtype.is_int8", lower_dtype_method, NAMED},   {"dtype.is_int16", lower_dtype_method, NAMED},
    {"dtype.is_int32", lower_dtype_method, NAMED},  {"dtype.is_int64", lower_dtype_method, NAMED},
    {"dtype.is_uint8", lower_dtype_method, NAMED},  {"dtype.is_uint16", lower_dtype_method, NAMED},
    {"dtype.is_uint32", lower_dtype_method, NAMED}, {"dtype.is_uint64", lower_dtype_method, NAMED},
    {"dtype.is_fp16", lower_dtype_method, NAMED},   {"dtype.is_bf16", lower_dtype_method, NAMED},
    {"dtype.is_fp32", lower_dtype_method, NAMED},   {"dtype.is_fp64", lower_dtype_method, NAMED},
    {"dtype.is_fp8e4nv", lower_dtype_method, NAMED}, {"dtype.is_fp8e5", lower_dtype_method, NAMED},
    {"dtype.is_fp8e4b15", lower_dtype_method, NAMED}, {"dtype.is_fp8e4b8", lower_dtype_method, NAMED},
    {"dtype.is_fp8e5b16", lower_dtype_method, NAMED},
    // elementwise
    {"where", where, TL},                           {"minimum", min_max, TL},
    {"maximum", min_max, TL},                       {"clamp", clamp, TL},
    {"abs", abs_fn, TL | METHOD},                   {"sigmoid", sigmoid, TL | METHOD},
    {"fma", fma_fn, TL},                            {"div_rn", div_fn, TL},
    {"fdiv", div_fn, TL},                           {"umulhi", umulhi, TL},
    {"cdiv", cdiv, TL | METHOD},                    {"inline_asm_elementwise", lower_inline_asm, TL},
    {"map_elementwise", lower_map_elementwise, TL},
    {"add", lower_operator_function, TL},           {"sub", lower_operator_function, TL},
    {"mul", lower_operator_function, TL},           {"expect_zero", lower_expect_zero, TL},
    // math functions: an op of ir/ops.def each, called by its name
    {"exp", lower_math_function, TL | METHOD},      {"exp2", lower_math_function, TL | METHOD},
    {"log", lower_math_function, TL | METHOD},      {"log2", lower_math_function, TL | METHOD},
    {"sqrt", lower_math_function, TL | METHOD},     {"sqrt_rn", lower_math_function, TL},
    {"rsqrt", lower_math_function, TL | METHOD},    {"sin", lower_math_function, TL | METHOD},
    {"cos", lower_math_function, TL | METHOD},      {"tanh", lower_math_function, TL | METHOD},
    {"erf", lower_math_function, TL | METHOD},      {"floor", lower_math_function, TL | METHOD},
    {"ceil", lower_math_function, TL | METHOD},     {"tan", lower_math_function, TL},
    {"atan", lower_math_function, TL},              {"asin", lower_math_function, TL},
    {"acos", lower_math_function, TL},              {"sinh", lower_math_function, TL},
    {"cosh", lower_math_function, TL},              {"asinh", lower_math_function, TL},
    {"acosh", lower_math_function, TL},             {"atanh", lower_math_function, TL},
    {"erfc", lower_math_function, TL},              {"exp10", lower_math_function, TL},
    {"expm1", lower_math_function, TL},             {"log10", lower_math_function, TL},
    {"log1p", lower_math_function, TL},             {"cbrt", lower_math_function, TL},
    {"rint", lower_math_function, TL},              {"nearbyint", lower_math_function, TL},
    {"round", lower_math_function, TL},             {"trunc", lower_math_function, TL},
    {"atan2", lower_math_function, TL},             {"hypot", lower_math_function, TL},
    {"copysign", lower_math_function, TL},          {"nextafter", lower_math_function, TL},
    {"lgamma", lower_math_function, TL},
    {"fmod", lower_fmod, TL},                       {"pow", lower_pow, TL},
    {"isnan", lower_classification, TL},            {"isinf", lower_classification, TL},
    {"isfinite", lower_classification, TL},         {"finitef", lower_classification, TL},
    {"isfinited", lower_classification, TL},        {"signbit", lower_classification, TL},
    // tl.extra.libdevice (builtins_libdevice.h): directed roundings, conversions,
    // integer bits, reinterpretations, and the float functions of its ops
    {"add_rn", lower_rounded, TL},                  {"add_rz", lower_rounded, TL},
    {"add_rd", lower_rounded, TL},                  {"add_ru", lower_rounded, TL},
    {"sub_rn", lower_rounded, TL},                  {"sub_rz", lower_rounded, TL},
    {"sub_rd", lower_rounded, TL},                  {"sub_ru", lower_rounded, TL},
    {"mul_rn", lower_rounded, TL},                  {"mul_rz", lower_rounded, TL},
    {"mul_rd", lower_rounded, TL},                  {"mul_ru", lower_rounded, TL},
    {"fma_rn", lower_rounded, TL},                  {"fma_rz", lower_rounded, TL},
    {"fma_rd", lower_rounded, TL},                  {"fma_ru", lower_rounded, TL},
    {"rcp_rn", lower_rounded, TL},                  {"rcp_rz", lower_rounded, TL},
    {"rcp_rd", lower_rounded, TL},                  {"rcp_ru", lower_rounded, TL},
    {"div_rz", lower_rounded, TL},                  {"div_rd", lower_rounded, TL},
    {"div_ru", lower_rounded, TL},                  {"sqrt_rz", lower_rounded, TL},
    {"sqrt_rd", lower_rounded, TL},                 {"sqrt_ru", lower_rounded, TL},
    {"float2int_rn", lower_conversion, TL},         {"float2int_rz", lower_conversion, TL},
    {"float2int_rd", lower_conversion, TL},         {"float2int_ru", lower_conversion, TL},
    {"float2uint_rn", lower_conversion, TL},        {"float2uint_rz", lower_conversion, TL},
    {"float2uint_rd", lower_conversion, TL},        {"float2uint_ru", lower_conversion, TL},
    {"float2ll_rn", lower_conversion, TL},          {"float2ll_rz", lower_conversion, TL},
    {"float2ll_rd", lower_conversion, TL},          {"float2ll_ru", lower_conversion, TL},
    {"float2ull_rn", lower_conversion, TL},         {"float2ull_rz", lower_conversion, TL},
    {"float2ull_rd", lower_conversion, TL},         {"float2ull_ru", lower_conversion, TL},
    {"double2float_rn", lower_conversion, TL},      {"double2float_rz", lower_conversion, TL},
    {"double2float_rd", lower_conversion, TL},      {"double2float_ru", lower_conversion, TL},
    {"double2int_rn", lower_conversion, TL},        {"double2int_rz", lower_conversion, TL},
    {"double2int_rd", lower_conversion, TL},        {"double2int_ru", lower_conversion, TL},
    {"double2uint_rn", lower_conversion, TL},       {"double2uint_rz", lower_conversion, TL},
    {"double2uint_rd", lower_conversion, TL},       {"double2uint_ru", lower_conversion, TL},
    {"double2ll_rn", lower_conversion, TL},         {"double2ll_rz", lower_conversion, TL},
    {"double2ll_rd", lower_conversion, TL},         {"double2ll_ru", lower_conversion, TL},
    {"double2ull_rn", lower_conversion, TL},        {"double2ull_rz", lower_conversion, TL},
    {"double2ull_rd", lower_conversion, TL},        {"double2ull_ru", lower_conversion, TL},
    {"int2float_rn", lower_conversion, TL},         {"int2float_rz", lower_conversion, TL},
    {"int2float_rd", lower_conversion, TL},         {"int2float_ru", lower_conversion, TL},
    {"uint2float_rn", lower_conversion, TL},        {"uint2float_rz", lower_conversion, TL},
    {"uint2float_rd", lower_conversion, TL},        {"uint2float_ru", lower_conversion, TL},
    {"ll2float_rn", lower_conversion, TL},          {"ll2float_rz", lower_conversion, TL},
    {"ll2float_rd", lower_conversion, TL},          {"ll2float_ru", lower_conversion, TL},
    {"ll2double_rn", lower_conversion, TL},         {"ll2double_rz", lower_conversion, TL},
    {"ll2double_rd", lower_conversion, TL},         {"ll2double_ru", lower_conversion, TL},
    {"ull2float_rn", lower_conversion, TL},         {"ull2float_rz", lower_conversion, TL},
    {"ull2float_rd", lower_conversion, TL},         {"ull2float_ru", lower_conversion, TL},
    {"ull2double_rn", lower_conversion, TL},        {"ull2double_rz", lower_conversion, TL},
    {"ull2double_rd", lower_conversion, TL},        {"ull2double_ru", lower_conversion, TL},
    {"int2double_rn", lower_conversion, TL},        {"uint2double_rn", lower_conversion, TL},
    {"clz", lower_integer_bits, TL},                {"popc", lower_integer_bits, TL},
    {"brev", lower_integer_bits, TL},               {"ffs", lower_integer_bits, TL},
    {"byte_perm", lower_integer_bits, TL},          {"mulhi", lower_integer_bits, TL},
    {"mul24", lower_integer_bits, TL},              {"hadd", lower_integer_bits, TL},
    {"rhadd", lower_integer_bits, TL},              {"sad", lower_integer_bits, TL},
    {"float_as_int", lower_reinterpret, TL},        {"float_as_uint", lower_reinterpret, TL},
    {"int_as_float", lower_reinterpret, TL},        {"uint_as_float", lower_reinterpret, TL},
    {"double_as_longlong", lower_reinterpret, TL},  {"longlong_as_double", lower_reinterpret, TL},
    {"double2hiint", lower_reinterpret, TL},        {"double2loint", lower_reinterpret, TL},
    {"hiloint2double", lower_reinterpret, TL},      {"llrint", lower_float_to_integer, TL},
    {"llround", lower_float_to_integer, TL},        {"ilogb", lower_float_to_integer, TL},
    {"ldexp", lower_float_and_int, TL},             {"scalbn", lower_float_and_int, TL},
    {"jn", lower_float_and_int, TL},                {"yn", lower_float_and_int, TL},
    {"rsqrt_rn", lower_libdevice_function, TL},     {"sinpi", lower_libdevice_function, TL},
    {"cospi", lower_libdevice_function, TL},        {"erfinv", lower_libdevice_function, TL},
    {"erfcinv", lower_libdevice_function, TL},      {"erfcx", lower_libdevice_function, TL},
    {"normcdf", lower_libdevice_function, TL},      {"normcdfinv", lower_libdevice_function, TL},
    {"tgamma", lower_libdevice_function, TL},       {"j0", lower_libdevice_function, TL},
    {"j1", lower_libdevice_function, TL},           {"y0", lower_libdevice_function, TL},
    {"y1", lower_libdevice_function, TL},           {"cyl_bessel_i0", lower_libdevice_function, TL},
    {"cyl_bessel_i1", lower_libdevice_function, TL},{"rcbrt", lower_libdevice_function, TL},
    {"logb", lower_libdevice_function, TL},         {"saturatef", lower_libdevice_function, TL},
    {"rcp64h", lower_libdevice_function, TL},       {"fdim", lower_libdevice_function, TL},
    {"remainder", lower_libdevice_function, TL},    {"rhypot", lower_libdevice_function, TL},
    {"norm3d", lower_libdevice_function, TL},       {"rnorm3d", lower_libdevice_function, TL},
    {"norm4d", lower_libdevice_function, TL},       {"rnorm4d", lower_libdevice_function, TL},
    {"fast_expf", lower_libdevice_function, TL},    {"fast_exp10f", lower_libdevice_function, TL},
    {"fast_logf", lower_libdevice_function, TL},    {"fast_log2f", lower_libdevice_function, TL},
    {"fast_log10f", lower_libdevice_function, TL},  {"fast_sinf", lower_libdevice_function, TL},
    {"fast_cosf", lower_libdevice_function, TL},    {"fast_tanf", lower_libdevice_function, TL},
    {"fast_powf", lower_libdevice_function, TL},    {"fast_dividef", lower_libdevice_function, TL},
    // tl.extra.cuda (builtins_target.h)
    {"num_warps", lower_target_query, TL},          {"num_threads", lower_target_query, TL},
    {"globaltimer", lower_target_query, TL},        {"smid", lower_target_query, TL},
    {"gdc_wait", lower_target_query, TL},           {"gdc_launch_dependents", lower_target_query, TL},
    // reductions, scans, sorting
    {"sum", lower_sum, TL | METHOD},                {"xor_sum", lower_sum, TL | METHOD},
    {"max", lower_max_min, TL | METHOD},            {"min", lower_max_min, TL | METHOD},
    {"argmax", lower_argmax_min, TL | METHOD},      {"argmin", lower_argmax_min, TL | METHOD},
    {"reduce", lower_reduce, TL | METHOD},          {"reduce_or", lower_reduce_or, TL | METHOD},
    {"softmax", lower_softmax, TL | METHOD},        {"cumsum", lower_scan, TL | METHOD},
    {"cumprod", lower_scan, TL | METHOD},           {"associative_scan", lower_scan, TL | METHOD},
    {"sort", lower_sort, TL | METHOD},              {"topk", lower_sort, TL | METHOD},
    {"bitonic_merge", lower_bitonic_merge, TL},                 {"flip", lower_flip, TL | METHOD},
    {"gather", lower_gather, TL | METHOD},          {"histogram", lower_histogram, TL | METHOD},
    {"swizzle2d", lower_swizzle2d, TL},
    // linear algebra
    {"dot", lower_dot, TL},                         {"dot_scaled", lower_dot_scaled, TL},
    // atomics
    {"atomic_add", lower_atomic_rmw, TL | METHOD},  {"atomic_max", lower_atomic_rmw, TL | METHOD},
    {"atomic_min", lower_atomic_rmw, TL | METHOD},  {"atomic_and", lower_atomic_rmw, TL | METHOD},
    {"atomic_or", lower_atomic_rmw, TL | METHOD},   {"atomic_xor", lower_atomic_rmw, TL | METHOD},
    {"atomic_xchg", lower_atomic_rmw, TL | METHOD}, {"atomic_cas", lower_atomic_cas, TL | METHOD},
    {"atomic_poll", nullptr, TL},
    // random numbers
    {"philox", lower_philox, TL},                   {"philox_impl", lower_philox, TL},
    {"randint", lower_randint, TL},                 {"randint4x", lower_randint, TL},
    {"rand", lower_rand, TL},                       {"rand4x", lower_rand, TL},
    {"randn", lower_rand, TL},                      {"randn4x", lower_rand, TL},
    {"uint_to_uniform_float", lower_uint_to_uniform_float, TL},
    {"pair_uniform_to_normal", lower_pair_uniform_to_normal, TL},
    // compile time, hints, loops, debugging
    {"constexpr", constexpr_fn, TL},                {"static_print", static_print, TL},
    {"static_assert", static_assert_fn, TL},        {"device_print", device_print, TL},
    {"device_assert", device_assert, TL},           {"debug_barrier", no_op, TL},
    {"multiple_of", lower_hint, TL},                {"max_contiguous", lower_hint, TL},
    {"max_constancy", lower_hint, TL},              {"assume", lower_assume, TL},
    {"range", py_range, TL},                        {"static_range", py_range, TL},
    {"condition", lower_condition, TL},             {"async_task", lower_async_task, TL},
    {"aggregate_replace", lower_aggregate_replace, TL},
    // tl.target_info.*
    // libdevice.exp is expf, while tl.exp may approximate (builtins_math.h).
    {"libdevice.exp", lower_math_function, NAMED},
    {"target_info.is_cuda", lower_target_info, NAMED},
    {"target_info.cuda_capability_geq", lower_target_info, NAMED},
    {"target_info.is_hip", lower_target_info, NAMED},
    {"target_info.is_hip_cdna3", lower_target_info, NAMED},
    {"target_info.is_hip_cdna4", lower_target_info, NAMED},
    {"target_info.is_hip_gfx1250", lower_target_info, NAMED},
    // tegula.* (and triton.*)
    {"tegula.cdiv", cdiv, NAMED},                   {"tegula.next_power_of_2", next_power_of_2, NAMED},
    // Python builtins kernels use
    {"py.min", py_min_max, NAMED},                  {"py.max", py_min_max, NAMED},
    {"py.len", py_len, NAMED},                      {"py.int", py_convert, NAMED},
    {"py.float", py_convert, NAMED},                {"py.bool", py_convert, NAMED},
    {"py.print", device_print, NAMED},              {"py.abs", abs_fn, NAMED},
    {"py.range", py_range, NAMED},                  {"py.isinstance", lower_isinstance, NAMED},
    {"py.tuple", lower_tuple, NAMED},
    {"py.getattr", py_getattr, NAMED},              {"py.hasattr", py_hasattr, NAMED},
    {"py.list", py_list, NAMED},                    {"py.str", nullptr, NAMED},
    // Triton's tensor has these only as methods: its operators by name
    {"logical_and", lower_operator_method, METHOD}, {"logical_or", lower_operator_method, METHOD},
    {"__add__", lower_operator_method, METHOD},     {"__radd__", lower_operator_method, METHOD},
    {"__sub__", lower_operator_method, METHOD},     {"__rsub__", lower_operator_method, METHOD},
    {"__mul__", lower_operator_method, METHOD},     {"__rmul__", lower_operator_method, METHOD},
    {"__truediv__", lower_operator_method, METHOD}, {"__rtruediv__", lower_operator_method, METHOD},
    {"__floordiv__", lower_operator_method, METHOD}, {"__rfloordiv__", lower_operator_method, METHOD},
    {"__mod__", lower_operator_method, METHOD},     {"__rmod__", lower_operator_method, METHOD},
    {"__and__", lower_operator_method, METHOD},     {"__rand__", lower_operator_method, METHOD},
    {"__or__", lower_operator_method, METHOD},      {"__ror__", lower_operator_method, METHOD},
    {"__xor__", lower_operator_method, METHOD},     {"__rxor__", lower_operator_method, METHOD},
    {"__lshift__", lower_operator_method, METHOD},  {"__rlshift__", lower_operator_method, METHOD},
    {"__rshift__", lower_operator_method, METHOD},  {"__rrshift__", lower_operator_method, METHOD},
    {"__eq__", lower_operator_method, METHOD},      {"__req__", lower_operator_method, METHOD},
    {"__ne__", lower_operator_method, METHOD},      {"__rne__", lower_operator_method, METHOD},
    {"__lt__", lower_operator_method, METHOD},      {"__rlt__", lower_operator_method, METHOD},
    {"__le__", lower_operator_method, METHOD},      {"__rle__", lower_operator_method, METHOD},
    {"__gt__", lower_operator_method, METHOD},      {"__rgt__", lower_operator_method, METHOD},
    {"__ge__", lower_operator_method, METHOD},      {"__rge__", lower_operator_method, METHOD},
    {"__neg__", lower_operator_method, METHOD},     {"__invert__", lower_operator_method, METHOD},
    {"__not__", lower_operator_method, METHOD},     {"__pos__", lower_operator_method, METHOD},
};

}  // namespace

const Builtin* find_builtin(std::string_view name) {
  for (const Builtin& b : kBuiltins)
    if (name == b.name) return &b;
  return nullptr;
}

std::span<const Builtin> builtin_registry() { return kBuiltins; }

std::vector<std::string> language_names() {
  std::vector<std::string> names;
  for (const Builtin& b : kBuiltins)
    if ((b.forms & kLanguage) != 0) names.push_back(b.name);
  for (int i = 0; i < ir::kNumScalars; ++i) names.push_back(ir::scalar_info(static_cast<Scalar>(i)).tl_name);
  for (const char* name : {"constexpr", "tensor", "dtype", "PropagateNan", "math", "extra", "core", "void"})
    names.push_back(name);
  return names;
}

std::vector<std::string> tile_attribute_names() {
  std::vector<std::string> names = {"dtype", "shape", "numel", "type", "T"};
  for (const Builtin& b : kBuiltins) {
    std::string_view name = b.name;
    if ((b.forms & kMethod) != 0 && !name.starts_with("__")) names.push_back(b.name);
  }
  return names;
}

bool Lowerer::is_language_builtin(const std::string& name) {
  const Builtin* b = find_builtin(name);
  return b != nullptr && (b->forms & kLanguage) != 0;
}

Symbol Lowerer::call_builtin(const std::string& name, const CallArgs& args) {
  const Builtin* b = find_builtin(name);
  if (b != nullptr && b->lower != nullptr) return b->lower(*this, args, name);
  if (b != nullptr && name.rfind("py.", 0) == 0)
    if (auto refused = refused_python_builtin(name.substr(3)))
      error_at(args.loc, Diag::UnsupportedLanguageName, refused->first, refused->second);
  if (b == nullptr || name.rfind("py.", 0) == 0)
    error_at(args.loc, Diag::UnsupportedLanguageName,
             "`" + (b == nullptr ? name : name.substr(3)) + "` cannot be called inside a kernel");
  error_at(args.loc, Diag::UnsupportedLanguageName,
           "`tl." + name + "` is not supported by Tegula yet", "docs/language.md lists what is supported");
}

}  // namespace tegula::frontend
