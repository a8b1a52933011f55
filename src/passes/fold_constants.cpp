#include "passes/fold_constants.h"

#include <bit>
#include <cmath>
#include <string>
#include <limits>

#include "ir/fp8.h"
#include "ir/math_ops.h"

namespace tegula::passes {

using ir::OpKind;
using ir::Scalar;

namespace {

uint64_t width_mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

ConstantValue make_int(Scalar type, int64_t bits) { return ConstantValue{type, normalize_int(bits, type), 0.0}; }
ConstantValue make_float(Scalar type, double x) { return ConstantValue{type, 0, round_to_float_type(x, type)}; }
ConstantValue make_bool(bool b) { return ConstantValue{Scalar::I1, b ? 1 : 0, 0.0}; }

uint64_t as_unsigned(const ConstantValue& c) { return static_cast<uint64_t>(c.int_value); }

// --- f16 / bf16 ------------------------------------------------------------------
// Both are stored as doubles; these helpers round into them and move between
// a value and its 16-bit pattern (for bitcast).

struct HalfFormat {
  int precision;      // significand bits including the implicit one
  int min_exponent;   // exponent of the smallest normal number
  double max_finite;
};
constexpr HalfFormat kF16{11, -14, 65504.0};
constexpr HalfFormat kBF16{8, -126, 3.3895313892515355e38};

// Round to nearest, ties to even: scale so that one unit in the last place of
// the target is 1, round to an integer, scale back. The scalings are exact.
double round_to_half(double x, const HalfFormat& format) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  int exponent = std::max(std::ilogb(x), format.min_exponent);
  int quantum = exponent - (format.precision - 1);
  double rounded = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
  if (std::fabs(rounded) > format.max_finite) return std::copysign(INFINITY, x);
  return rounded;
}

double decode_f16(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

// `x` must be exactly representable in f16 and not NaN.
uint16_t encode_f16(double x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double magnitude = std::fabs(x);
  if (magnitude == 0.0) return sign;
  if (std::isinf(magnitude)) return sign | 0x7c00;
  if (magnitude < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::ldexp(magnitude, 24));
  int exponent = std::ilogb(magnitude);
  auto mantissa = static_cast<uint16_t>(std::ldexp(magnitude, 10 - exponent) - 1024);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | mantissa;
}

double decode_bf16(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
uint16_t encode_bf16(double x) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(x)) >> 16); }

// --- integers -------------------------------------------------------------------------

int64_t min_signed(int bits) { return static_cast<int64_t>(~uint64_t{0} << (bits - 1)); }

// Shift amounts are read as values of their type: negative or >= width is not folded.
std::optional<int> shift_amount(const ConstantValue& amount) {
  int width = ir::bit_width(amount.type);
  if (ir::is_signed(amount.type) && amount.int_value < 0) return std::nullopt;
  if (as_unsigned(amount) >= static_cast<uint64_t>(width)) return std::nullopt;
  return static_cast<int>(amount.int_value);
}

std::optional<ConstantValue> fold_int_binary(OpKind kind, const ConstantValue& a, const ConstantValue& b) {
  Scalar t = a.type;
  bool is_signed = ir::is_signed(t);
  int width = ir::bit_width(t);
  uint64_t ua = as_unsigned(a), ub = as_unsigned(b);
  int64_t sa = a.int_value, sb = b.int_value;
  switch (kind) {
    case OpKind::Add: return make_int(t, static_cast<int64_t>(ua + ub));
    case OpKind::Sub: return make_int(t, static_cast<int64_t>(ua - ub));
    case OpKind::Mul: return make_int(t, static_cast<int64_t>(ua * ub));
    case OpKind::And: return make_int(t, static_cast<int64_t>(ua & ub));
    case OpKind::Or: return make_int(t, static_cast<int64_t>(ua | ub));
    case OpKind::Xor: return make_int(t, static_cast<int64_t>(ua ^ ub));
    case OpKind::Div:
    case OpKind::Rem: {
      if (ub == 0) return std::nullopt;
      if (is_signed) {
        if (sa == min_signed(width) && sb == -1) return std::nullopt;  // overflows: the target may trap
        return make_int(t, kind == OpKind::Div ? sa / sb : sa % sb);
      }
      return make_int(t, static_cast<int64_t>(kind == OpKind::Div ? ua / ub : ua % ub));
    }
    case OpKind::Shl:
    case OpKind::Shr: {
      std::optional<int> amount = shift_amount(b);
      if (!amount) return std::nullopt;
      if (kind == OpKind::Shl) return make_int(t, static_cast<int64_t>(ua << *amount));
      return make_int(t, is_signed ? sa >> *amount : static_cast<int64_t>(ua >> *amount));
    }
    case OpKind::Min:
    case OpKind::Max: {
      bool a_less = is_signed ? sa < sb : ua < ub;
      bool pick_a = (kind == OpKind::Min) == a_less;
      return pick_a ? a : b;
    }
    case OpKind::UMulHi: {
      unsigned __int128 product = static_cast<unsigned __int128>(ua & width_mask(width)) * (ub & width_mask(width));
      return make_int(t, static_cast<int64_t>(static_cast<uint64_t>(product >> width)));
    }
    default: return std::nullopt;
  }
}

std::optional<ConstantValue> fold_int_unary(OpKind kind, const ConstantValue& a) {
  switch (kind) {
    case OpKind::Neg: return make_int(a.type, static_cast<int64_t>(0 - as_unsigned(a)));
    case OpKind::Not: return make_int(a.type, static_cast<int64_t>(~as_unsigned(a)));
    case OpKind::Abs:
      if (ir::is_signed(a.type) && a.int_value < 0) return make_int(a.type, static_cast<int64_t>(0 - as_unsigned(a)));
      return a;
    default: return std::nullopt;
  }
}

// --- floats -----------------------------------------------------------------------------
// + - * / and sqrt of two values of a type with p significand bits, computed
// in double (53 >= 2p + 2 for f32, f16 and bf16) and rounded once to the type,
// equal the correctly rounded result in the type itself.

std::optional<ConstantValue> fold_float_binary(OpKind kind, const ConstantValue& a, const ConstantValue& b) {
  Scalar t = a.type;
  double x = a.float_value, y = b.float_value;
  switch (kind) {
    case OpKind::Add: return make_float(t, x + y);
    case OpKind::Sub: return make_float(t, x - y);
    case OpKind::Mul: return make_float(t, x * y);
    case OpKind::Div:
      if (y == 0.0) return std::nullopt;
      return make_float(t, x / y);
    case OpKind::Rem:
      if (y == 0.0) return std::nullopt;
      return make_float(t, std::fmod(x, y));  // exact
    case OpKind::Min:
    case OpKind::Max:
      // NaN handling and the sign of min(-0, +0) are target-defined: leave them.
      if (std::isnan(x) || std::isnan(y) || (x == 0.0 && y == 0.0 && std::signbit(x) != std::signbit(y)))
        return std::nullopt;
      return make_float(t, kind == OpKind::Min ? std::min(x, y) : std::max(x, y));
    case OpKind::Pow:
      if (t == Scalar::F32) return make_float(t, powf(static_cast<float>(x), static_cast<float>(y)));
      if (t == Scalar::F64) return make_float(t, std::pow(x, y));
      return std::nullopt;
    default: return std::nullopt;
  }
}

// Transcendental functions are folded with the host's libm in the op's own
// precision, and only for f32/f64.
std::optional<double> eval_math(OpKind kind, double x, Scalar t) {
  if (t == Scalar::F32) {
    auto f = static_cast<float>(x);
    switch (kind) {
      case OpKind::Exp: return expf(f);
      case OpKind::Exp2: return exp2f(f);
      case OpKind::Log: return logf(f);
      case OpKind::Log2: return log2f(f);
      case OpKind::Sqrt: return sqrtf(f);
      case OpKind::Rsqrt: return 1.0f / sqrtf(f);
      case OpKind::Sin: return sinf(f);
      case OpKind::Cos: return cosf(f);
      case OpKind::Tanh: return tanhf(f);
      case OpKind::Erf: return erff(f);
      default: return std::nullopt;
    }
  }
  if (t == Scalar::F64) {
    switch (kind) {
      case OpKind::Exp: return std::exp(x);
      case OpKind::Exp2: return std::exp2(x);
      case OpKind::Log: return std::log(x);
      case OpKind::Log2: return std::log2(x);
      case OpKind::Sqrt: return std::sqrt(x);
      case OpKind::Rsqrt: return 1.0 / std::sqrt(x);
      case OpKind::Sin: return std::sin(x);
      case OpKind::Cos: return std::cos(x);
      case OpKind::Tanh: return std::tanh(x);
      case OpKind::Erf: return std::erf(x);
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<ConstantValue> fold_float_unary(OpKind kind, const ConstantValue& a) {
  double x = a.float_value;
  switch (kind) {
    // Exact in every float type.
    case OpKind::Neg: return make_float(a.type, -x);
    case OpKind::Abs: return make_float(a.type, std::fabs(x));
    case OpKind::Floor: return make_float(a.type, std::floor(x));
    case OpKind::Ceil: return make_float(a.type, std::ceil(x));
    default: break;
  }
  std::optional<double> result = eval_math(kind, x, a.type);
  if (!result) return std::nullopt;
  return make_float(a.type, *result);
}

// `math` ops fold like the transcendental ops above: host libm, f32/f64 only.
std::optional<ConstantValue> fold_math(const ir::Op& op, const std::vector<ConstantValue>& operands) {
  const ir::Attr* name = op.attr("fn");
  const auto* text = name ? std::get_if<std::string>(name) : nullptr;
  const ir::MathFunction* f = text ? ir::find_math_function(*text) : nullptr;
  if (f == nullptr || static_cast<int>(operands.size()) != f->arity || !operands[0].is_float()) return std::nullopt;
  Scalar t = operands[0].type;
  double x = operands[0].float_value, y = f->arity == 2 ? operands[1].float_value : 0.0;
  if (t == Scalar::F32) {
    std::optional<float> r = ir::evaluate_math(f->fn, static_cast<float>(x), static_cast<float>(y));
    return r ? std::optional(make_float(t, *r)) : std::nullopt;
  }
  if (t == Scalar::F64) {
    std::optional<double> r = ir::evaluate_math(f->fn, x, y);
    return r ? std::optional(make_float(t, *r)) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<ConstantValue> fold_fma(const ConstantValue& a, const ConstantValue& b, const ConstantValue& c) {
  // One rounding: only f32/f64 have a host fma of their own precision.
  if (a.type == Scalar::F32)
    return make_float(a.type, fmaf(static_cast<float>(a.float_value), static_cast<float>(b.float_value),
                                   static_cast<float>(c.float_value)));
  if (a.type == Scalar::F64) return make_float(a.type, std::fma(a.float_value, b.float_value, c.float_value));
  return std::nullopt;
}

// --- comparisons and conversions ----------------------------------------------------------

template <class T>
bool compare(Predicate p, T x, T y) {
  switch (p) {
    case Predicate::Eq: return x == y;
    case Predicate::Ne: return x != y;  // true for NaN: the only ordered-false exception
    case Predicate::Lt: return x < y;
    case Predicate::Le: return x <= y;
    case Predicate::Gt: return x > y;
    case Predicate::Ge: return x >= y;
  }
  return false;
}

ConstantValue fold_cmp(Predicate p, const ConstantValue& a, const ConstantValue& b) {
  if (a.is_float()) return make_bool(compare(p, a.float_value, b.float_value));
  if (ir::is_signed(a.type)) return make_bool(compare(p, a.int_value, b.int_value));
  return make_bool(compare(p, as_unsigned(a), as_unsigned(b)));
}

std::optional<ConstantValue> int_to_float(const ConstantValue& a, Scalar to) {
  bool is_signed = ir::is_signed(a.type);
  // Conversions the host does in one rounding: straight to f32/f64.
  if (to == Scalar::F32)
    return make_float(to, is_signed ? static_cast<float>(a.int_value) : static_cast<float>(as_unsigned(a)));
  if (to == Scalar::F64)
    return make_float(to, is_signed ? static_cast<double>(a.int_value) : static_cast<double>(as_unsigned(a)));
  // f16/bf16 go through double, which is exact only up to 2^53.
  constexpr uint64_t kExactInDouble = uint64_t{1} << 53;
  uint64_t magnitude = is_signed && a.int_value < 0 ? 0 - as_unsigned(a) : as_unsigned(a);
  if (magnitude > kExactInDouble) return std::nullopt;
  double exact = is_signed ? static_cast<double>(a.int_value) : static_cast<double>(as_unsigned(a));
  return make_float(to, exact);
}

std::optional<ConstantValue> float_to_int(const ConstantValue& a, Scalar to) {
  double x = a.float_value;
  if (std::isnan(x) || std::isinf(x)) return std::nullopt;
  double truncated = std::trunc(x);
  int width = ir::bit_width(to);
  if (ir::is_signed(to)) {
    double low = std::ldexp(-1.0, width - 1), high = std::ldexp(1.0, width - 1);
    if (truncated < low || truncated >= high) return std::nullopt;
    return make_int(to, static_cast<int64_t>(truncated));
  }
  if (truncated < 0.0 || truncated >= std::ldexp(1.0, width)) return std::nullopt;
  return make_int(to, static_cast<int64_t>(static_cast<uint64_t>(truncated)));
}

std::optional<ConstantValue> fold_cast(const ConstantValue& a, Scalar to) {
  if (to == Scalar::I1) {
    if (!a.is_float()) return make_bool(a.int_value != 0);
    if (std::isnan(a.float_value)) return std::nullopt;
    return make_bool(a.float_value != 0.0);
  }
  bool from_float = a.is_float(), to_float = ir::is_float(to);
  if (!from_float && !to_float) return make_int(to, a.int_value);  // truncates or extends by the source's sign
  if (!from_float) return int_to_float(a, to);
  if (!to_float) return float_to_int(a, to);
  return make_float(to, a.float_value);
}

// The bit pattern of a constant, or nothing for NaN (its payload is not kept).
std::optional<uint64_t> bits_of(const ConstantValue& a) {
  if (!a.is_float()) return as_unsigned(a) & width_mask(ir::bit_width(a.type));
  if (std::isnan(a.float_value)) return std::nullopt;
  switch (a.type) {
    case Scalar::F16: return encode_f16(a.float_value);
    case Scalar::BF16: return encode_bf16(a.float_value);
    case Scalar::F8E4M3:
    case Scalar::F8E5M2: return ir::encode_fp8(a.float_value, a.type);
    case Scalar::F32: return std::bit_cast<uint32_t>(static_cast<float>(a.float_value));
    default: return std::bit_cast<uint64_t>(a.float_value);
  }
}

std::optional<ConstantValue> from_bits(uint64_t bits, Scalar to) {
  if (!ir::is_float(to)) return make_int(to, static_cast<int64_t>(bits));
  double x = 0.0;
  switch (to) {
    case Scalar::F16: x = decode_f16(static_cast<uint16_t>(bits)); break;
    case Scalar::BF16: x = decode_bf16(static_cast<uint16_t>(bits)); break;
    case Scalar::F8E4M3:
    case Scalar::F8E5M2: x = ir::decode_fp8(static_cast<uint8_t>(bits), to); break;
    case Scalar::F32: x = std::bit_cast<float>(static_cast<uint32_t>(bits)); break;
    default: x = std::bit_cast<double>(bits); break;
  }
  if (std::isnan(x)) return std::nullopt;
  return make_float(to, x);
}

std::optional<ConstantValue> fold_bitcast(const ConstantValue& a, Scalar to) {
  if (ir::bit_width(a.type) != ir::bit_width(to)) return std::nullopt;
  std::optional<uint64_t> bits = bits_of(a);
  if (!bits) return std::nullopt;
  return from_bits(*bits, to);
}

}  // namespace

ir::Attr ConstantValue::to_attr() const {
  if (is_float()) return ir::Attr{float_value};
  return ir::Attr{int_value};
}

int64_t normalize_int(int64_t bits, Scalar type) {
  int width = ir::bit_width(type);
  uint64_t value = static_cast<uint64_t>(bits) & width_mask(width);
  if (ir::is_signed(type) && width < 64 && ((value >> (width - 1)) & 1)) value |= ~width_mask(width);
  return static_cast<int64_t>(value);
}

double round_to_float_type(double x, Scalar type) {
  switch (type) {
    case Scalar::F16: return round_to_half(x, kF16);
    case Scalar::BF16: return round_to_half(x, kBF16);
    case Scalar::F8E4M3:
    case Scalar::F8E5M2: return ir::round_to_fp8(x, type);
    case Scalar::F32: return static_cast<float>(x);
    default: return x;
  }
}

std::optional<ConstantValue> constant_value(const ir::Function& fn, ir::ValueId v) {
  const ir::Value& value = fn.value(v);
  if (!value.def.valid() || value.type.is_pointer()) return std::nullopt;
  const ir::Op& def = fn.op(value.def);
  if (def.kind != OpKind::Constant) return std::nullopt;
  const ir::Attr* attr = def.attr("value");
  if (attr == nullptr) return std::nullopt;
  Scalar t = value.type.scalar;
  if (ir::is_float(t)) {
    if (const auto* i = std::get_if<int64_t>(attr)) return make_float(t, static_cast<double>(*i));
    if (const auto* d = std::get_if<double>(attr)) return make_float(t, *d);
    return std::nullopt;
  }
  if (const auto* i = std::get_if<int64_t>(attr)) return make_int(t, *i);
  return std::nullopt;
}

std::optional<Predicate> predicate_of(const ir::Op& op) {
  const ir::Attr* attr = op.attr("pred");
  const auto* text = attr ? std::get_if<std::string>(attr) : nullptr;
  if (text == nullptr) return std::nullopt;
  static constexpr std::pair<const char*, Predicate> kNames[] = {
      {"eq", Predicate::Eq}, {"ne", Predicate::Ne}, {"lt", Predicate::Lt},
      {"le", Predicate::Le}, {"gt", Predicate::Gt}, {"ge", Predicate::Ge},
  };
  for (const auto& [name, pred] : kNames)
    if (*text == name) return pred;
  return std::nullopt;
}

std::optional<ConstantValue> fold_elementwise(const ir::Op& op, const std::vector<ConstantValue>& operands,
                                              Scalar result) {
  if (operands.empty()) return std::nullopt;
  const ConstantValue& a = operands[0];
  switch (op.kind) {
    case OpKind::Cast: {
      // Only the default rounding (to nearest even) is folded.
      const ir::Attr* rounding = op.attr("rounding");
      const auto* mode = rounding ? std::get_if<std::string>(rounding) : nullptr;
      if (rounding && !(mode && *mode == "rtne")) return std::nullopt;
      return fold_cast(a, result);
    }
    case OpKind::Bitcast: return fold_bitcast(a, result);
    case OpKind::Cmp: {
      std::optional<Predicate> pred = predicate_of(op);
      if (!pred || operands.size() != 2) return std::nullopt;
      return fold_cmp(*pred, a, operands[1]);
    }
    case OpKind::Fma:
      if (operands.size() != 3 || !a.is_float()) return std::nullopt;
      return fold_fma(a, operands[1], operands[2]);
    case OpKind::Math: return fold_math(op, operands);
    case OpKind::Hint: return std::nullopt;  // kept: its facts are what it is for
    default: break;
  }
  for (const ConstantValue& c : operands)
    if (c.type != a.type) return std::nullopt;  // ill-typed: leave it to the verifier
  if (operands.size() == 1) return a.is_float() ? fold_float_unary(op.kind, a) : fold_int_unary(op.kind, a);
  if (operands.size() == 2)
    return a.is_float() ? fold_float_binary(op.kind, a, operands[1]) : fold_int_binary(op.kind, a, operands[1]);
  return std::nullopt;
}

}  // namespace tegula::passes
