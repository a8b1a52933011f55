// The float functions of the language (see builtins_math.h).
//
// They take float operands (an integer operand is an error, as Triton's
// libdevice has no integer versions; floor and ceil of an integer are the
// integer), and compute f16/bf16 in f32 and round back. nextafter is the
// exception: the next f32 after an f16 value rounds back to the value
// itself, so it takes f32 and f64 only.
#include <cmath>
#include <optional>

#include "frontend/builtins_math.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

// The elementwise float op that `name` calls: the op of that name (a row of
// ir/ops.def with type rule Floats), or one it is another name of. sqrt_rn
// is sqrt, which rounds to nearest already; nearbyint is rint: they differ
// only in raising the inexact exception, which kernels cannot see.
OpKind op_named(const std::string& name) {
  std::string op = name == "sqrt_rn" ? "sqrt" : name == "nearbyint" ? "rint" : name;
  OpKind kind = OpKind::Sqrt;
  bool found = ir::parse_op_kind(op, &kind);
  TEGULA_ASSERT(found && ir::info(kind).rule == ir::TypeRule::Floats, "not a float function: " + name);
  return kind;
}

bool is_half(Scalar s) { return s == Scalar::F16 || s == Scalar::BF16; }

}  // namespace

std::vector<ir::ValueId> operands_of(Lowerer& l, const CallArgs& c, const std::string& name, int arity) {
  if (arity == 1) {
    BoundArgs a(name, {"x"}, c);
    return {l.to_value(a.get("x"), a.loc("x"), "the operand of tl." + name)};
  }
  // norm3d and norm4d take three and four: the first is promoted against
  // each other, then each against the first's final type and shape.
  static const char* const kNames[] = {"x", "y", "z", "w"};
  std::vector<std::string> params(kNames, kNames + arity);
  BoundArgs a(name, params, c);
  std::string text = "tl." + name;
  if (arity == 2) {
    auto [x, y] = l.arith_operands(a.get("x"), a.get("y"), false, c.loc, text.c_str());
    return {x, y};
  }
  Symbol first = a.get("x");
  for (int i = 1; i < arity; ++i)
    first = Symbol::of(l.arith_operands(first, a.get(params[i]), false, c.loc, text.c_str()).first);
  std::vector<ir::ValueId> xs = {first.value};
  for (int i = 1; i < arity; ++i)
    xs.push_back(l.arith_operands(first, a.get(params[i]), false, c.loc, text.c_str()).second);
  return xs;
}

namespace {

void require_float(Lowerer& l, ir::ValueId x, const SourceLoc& loc, const std::string& name, int arity) {
  if (!l.type(x).is_pointer() && ir::is_float(l.type(x).scalar)) return;
  error_at(loc, Diag::NotFloatingPoint,
           "tl." + name + (arity == 1 ? " needs a floating-point operand, but it is "
                                      : " needs floating-point operands, but one is ") +
               l.describe(Symbol::of(x)),
           "convert it first, e.g. x.to(tl.float32)");
}

std::vector<ir::ValueId> float_operands(Lowerer& l, const CallArgs& c, const std::string& name, int arity) {
  std::vector<ir::ValueId> xs = operands_of(l, c, name, arity);
  require_float(l, xs[0], c.loc, name, arity);
  return xs;
}

// `kind` applied to `xs`; f16/bf16 operands are computed in f32 and the
// result rounded back.
Symbol compute(Lowerer& l, OpKind kind, std::vector<ir::ValueId> xs, const SourceLoc& loc,
               std::vector<ir::NamedAttr> attrs = {}) {
  Scalar s = l.type(xs[0]).scalar;
  if (is_half(s))
    for (ir::ValueId& x : xs) x = l.cast(x, Scalar::F32, loc);
  ir::ValueId r = l.create(kind, xs, l.type(xs[0]), loc, std::move(attrs));
  return Symbol::of(is_half(s) ? l.cast(r, s, loc) : r);
}

}  // namespace

ir::NamedAttr approx_attr() { return {"approx", ir::Attr{int64_t{1}}}; }

bool ieee_rounding(const BoundArgs& a, const std::string& fn) {
  if (!a.has("ieee_rounding")) return false;
  const Symbol& r = a.get("ieee_rounding");
  if (!r.is_const() || !r.constant.is_numeric())
    error_at(a.loc("ieee_rounding"), Diag::NotConstexpr, fn + "'s ieee_rounding must be a constant bool",
             "pass True or False");
  return r.constant.kind == ConstValue::Kind::Float ? r.constant.f != 0 : r.constant.i != 0;
}

Symbol lower_math_function(Lowerer& l, const CallArgs& c, const std::string& name) {
  // "libdevice.exp" is exp without `approx`; every other name is its op's.
  bool libdevice = name.starts_with("libdevice.");
  const std::string n = libdevice ? name.substr(name.find('.') + 1) : name;
  OpKind kind = op_named(n);
  int arity = ir::info(kind).min_operands;
  std::vector<ir::ValueId> xs = operands_of(l, c, n, arity);
  const ir::Type t = l.type(xs[0]);
  if ((kind == OpKind::Floor || kind == OpKind::Ceil) && !t.is_pointer() && ir::is_integer(t.scalar))
    return Symbol::of(xs[0]);
  require_float(l, xs[0], c.loc, n, arity);
  Scalar s = l.type(xs[0]).scalar;
  if (kind == OpKind::Nextafter && is_half(s))
    error_at(c.loc, Diag::UnsupportedElementType,
             "tl.nextafter takes float32 or float64 operands, not " + triton_name(s),
             "convert them with .to(tl.float32); the next float32 is not a " + triton_name(s) + " value");
  std::vector<ir::NamedAttr> attrs;
  if (kind == OpKind::Exp && !libdevice) attrs.push_back(approx_attr());
  return compute(l, kind, std::move(xs), c.loc, std::move(attrs));
}

// fmod(x, y): the float remainder with the sign of x, which is `%` on floats.
// It is exact, so computing f16/bf16 in f32 and rounding back loses nothing.
Symbol lower_fmod(Lowerer& l, const CallArgs& c, const std::string& n) {
  return compute(l, OpKind::Rem, float_operands(l, c, n, 2), c.loc);
}

// pow(x, y) is x ** y for a float x; an integer exponent converts to x's type.
Symbol lower_pow(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "y"}, c);
  const Symbol& x = a.get("x");
  bool float_base = x.is_const() ? x.constant.kind == ConstValue::Kind::Float
                                 : x.is_value() && !l.type(x.value).is_pointer() && ir::is_float(l.type(x.value).scalar);
  if (!float_base)
    error_at(a.loc("x"), Diag::NotFloatingPoint, "tl." + n + " needs a floating-point base, but it is " + l.describe(x),
             "convert it first, e.g. x.to(tl.float32)");
  return l.binary(ast::BinaryOp::Pow, x, a.get("y"), c.loc);
}

// isnan, isinf, isfinite -> i1, signbit -> i32 (as Triton's libdevice). All
// exact comparisons: NaN is the one value unequal to itself, |x| == inf
// finds both infinities, and the sign bit is the sign of x's bits read as a
// signed integer (so it is set for -0.0 and negative NaNs too).
Symbol lower_classification(Lowerer& l, const CallArgs& c, const std::string& n) {
  // finitef and isfinited are libdevice's spellings of isfinite.
  std::string name = n == "finitef" || n == "isfinited" ? std::string("isfinite") : n;
  ir::ValueId x = float_operands(l, c, name, 1)[0];
  const ir::Type t = l.type(x);
  ir::Type flags = t.with_scalar(Scalar::I1);
  auto compare = [&](ir::ValueId a, ir::ValueId b, const char* pred) {
    return l.create(OpKind::Cmp, {a, b}, flags, c.loc, {{"pred", ir::Attr{std::string(pred)}}});
  };
  if (name == "isnan") return Symbol::of(compare(x, x, "ne"));
  if (name == "signbit") {
    Scalar bits = ir::bit_width(t.scalar) == 16 ? Scalar::I16 : ir::bit_width(t.scalar) == 32 ? Scalar::I32 : Scalar::I64;
    ir::ValueId b = l.create(OpKind::Bitcast, {x}, t.with_scalar(bits), c.loc);
    ir::ValueId zero = l.broadcast_to(l.constant(ConstValue::integer(0), ir::Type::of(bits), c.loc), t.shape, c.loc);
    return Symbol::of(l.cast(compare(b, zero, "lt"), Scalar::I32, c.loc));
  }
  ir::ValueId inf = l.broadcast_to(l.constant(ConstValue::real(INFINITY), t.element(), c.loc), t.shape, c.loc);
  ir::ValueId magnitude = l.create(OpKind::Abs, {x}, t, c.loc);
  return Symbol::of(compare(magnitude, inf, name == "isinf" ? "eq" : "lt"));
}

}  // namespace tegula::frontend
