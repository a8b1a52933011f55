// The float library functions beyond the core ones (see builtins_math.h).
//
// Like the core math functions, they take float operands (an integer
// operand is an error, as Triton's libdevice has no integer versions), and
// compute f16/bf16 in f32 and round back. nextafter is the exception: the
// next f32 after an f16 value rounds back to the value itself, so it takes
// f32 and f64 only.
#include <cmath>
#include <optional>

#include "frontend/builtins_math.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

// The library functions that are an op each (ir/ops.def), called by the
// op's name: tl.tan is op `tan`.
constexpr OpKind kLibraryFunctions[] = {
    OpKind::Tan,   OpKind::Atan,  OpKind::Asin,  OpKind::Acos,  OpKind::Sinh,  OpKind::Cosh,     OpKind::Asinh,
    OpKind::Acosh, OpKind::Atanh, OpKind::Erfc,  OpKind::Exp10, OpKind::Expm1, OpKind::Log10,    OpKind::Log1p,
    OpKind::Cbrt,  OpKind::Rint,  OpKind::Round, OpKind::Trunc, OpKind::Atan2, OpKind::Hypot,    OpKind::Copysign,
    OpKind::Nextafter,
};

// The op a kernel name means. nearbyint is rint: they differ only in raising
// the inexact exception, which kernels cannot see.
std::optional<OpKind> library_function(const std::string& name) {
  OpKind kind;
  if (!ir::parse_op_kind(name == "nearbyint" ? "rint" : name, &kind)) return std::nullopt;
  for (OpKind f : kLibraryFunctions)
    if (f == kind) return kind;
  return std::nullopt;
}

bool is_half(Scalar s) { return s == Scalar::F16 || s == Scalar::BF16; }

void require_float(Lowerer& l, ir::ValueId x, const SourceLoc& loc, const std::string& name) {
  const ir::Type t = l.type(x);
  if (t.is_pointer() || !ir::is_float(t.scalar))
    error_at(loc, Diag::NotFloatingPoint,
             "tl." + name + " needs floating-point operands, but one is " + l.describe(Symbol::of(x)),
             "convert it first, e.g. x.to(tl.float32)");
}

// The operands of a one- or two-operand function, promoted and broadcast
// to one type and shape like the operands of `+`.
std::vector<ir::ValueId> float_operands(Lowerer& l, const CallArgs& c, const std::string& name, int arity) {
  std::vector<ir::ValueId> xs;
  if (arity == 1) {
    BoundArgs a(name, {"x"}, c);
    xs.push_back(l.to_value(a.get("x"), a.loc("x"), "the operand of tl." + name));
  } else {
    BoundArgs a(name, {"x", "y"}, c);
    std::string text = "tl." + name;
    auto [x, y] = l.arith_operands(a.get("x"), a.get("y"), false, c.loc, text.c_str());
    xs = {x, y};
  }
  require_float(l, xs[0], c.loc, name);
  return xs;
}

// `kind` (with `attrs`) applied to `xs`; f16/bf16 operands are computed in
// f32 and the result rounded back.
Symbol compute(Lowerer& l, OpKind kind, std::vector<ir::ValueId> xs, const SourceLoc& loc,
               std::vector<ir::NamedAttr> attrs = {}) {
  Scalar s = l.type(xs[0]).scalar;
  if (is_half(s))
    for (ir::ValueId& x : xs) x = l.cast(x, Scalar::F32, loc);
  ir::ValueId r = l.create(kind, xs, l.type(xs[0]), loc, std::move(attrs));
  return Symbol::of(is_half(s) ? l.cast(r, s, loc) : r);
}

Symbol math_function_call(Lowerer& l, const CallArgs& c, const std::string& n) {
  OpKind kind = *library_function(n);
  std::vector<ir::ValueId> xs = float_operands(l, c, n, ir::info(kind).min_operands);
  Scalar s = l.type(xs[0]).scalar;
  if (kind == OpKind::Nextafter && is_half(s))
    error_at(c.loc, Diag::UnsupportedElementType,
             "tl.nextafter takes float32 or float64 operands, not " + triton_name(s),
             "convert them with .to(tl.float32); the next float32 is not a " + triton_name(s) + " value");
  return compute(l, kind, std::move(xs), c.loc);
}

// fmod(x, y): the float remainder with the sign of x, which is `%` on floats.
// It is exact, so computing f16/bf16 in f32 and rounding back loses nothing.
Symbol fmod_call(Lowerer& l, const CallArgs& c, const std::string& n) {
  return compute(l, OpKind::Rem, float_operands(l, c, n, 2), c.loc);
}

// pow(x, y) is x ** y for a float x; an integer exponent converts to x's type.
Symbol pow_call(Lowerer& l, const CallArgs& c, const std::string& n) {
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
Symbol classify_call(Lowerer& l, const CallArgs& c, const std::string& n) {
  ir::ValueId x = float_operands(l, c, n, 1)[0];
  const ir::Type t = l.type(x);
  ir::Type flags = t.with_scalar(Scalar::I1);
  auto compare = [&](ir::ValueId a, ir::ValueId b, const char* pred) {
    return l.create(OpKind::Cmp, {a, b}, flags, c.loc, {{"pred", ir::Attr{std::string(pred)}}});
  };
  if (n == "isnan") return Symbol::of(compare(x, x, "ne"));
  if (n == "signbit") {
    Scalar bits = ir::bit_width(t.scalar) == 16 ? Scalar::I16 : ir::bit_width(t.scalar) == 32 ? Scalar::I32 : Scalar::I64;
    ir::ValueId b = l.create(OpKind::Bitcast, {x}, t.with_scalar(bits), c.loc);
    ir::ValueId zero = l.broadcast_to(l.constant(ConstValue::integer(0), ir::Type::of(bits), c.loc), t.shape, c.loc);
    return Symbol::of(l.cast(compare(b, zero, "lt"), Scalar::I32, c.loc));
  }
  ir::ValueId inf = l.broadcast_to(l.constant(ConstValue::real(INFINITY), t.element(), c.loc), t.shape, c.loc);
  ir::ValueId magnitude = l.create(OpKind::Abs, {x}, t, c.loc);
  return Symbol::of(compare(magnitude, inf, n == "isinf" ? "eq" : "lt"));
}

bool is_classification(const std::string& n) {
  return n == "isnan" || n == "isinf" || n == "isfinite" || n == "finitef" || n == "isfinited" || n == "signbit";
}

}  // namespace

bool is_math_builtin(const std::string& name) {
  return library_function(name).has_value() || name == "fmod" || name == "pow" || is_classification(name);
}

Symbol lower_math_builtin(Lowerer& l, const CallArgs& c, const std::string& name) {
  if (library_function(name)) return math_function_call(l, c, name);
  if (name == "fmod") return fmod_call(l, c, name);
  if (name == "pow") return pow_call(l, c, name);
  TEGULA_ASSERT(is_classification(name), "not a math builtin: " + name);
  // finitef and isfinited are libdevice's spellings of isfinite.
  return classify_call(l, c, name == "finitef" || name == "isfinited" ? std::string("isfinite") : name);
}

}  // namespace tegula::frontend
