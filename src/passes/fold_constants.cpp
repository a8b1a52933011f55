#include "passes/fold_constants.h"

#include <cmath>
#include <iterator>
#include <limits>
#include <string>

#include "ir/float_format.h"

namespace tegula::passes {

using ir::OpKind;
using ir::Scalar;

namespace {

uint64_t width_mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

ConstantValue make_int(Scalar type, int64_t bits) { return ConstantValue{type, normalize_int(bits, type), 0.0}; }
ConstantValue make_float(Scalar type, double x) { return ConstantValue{type, 0, round_to_float_type(x, type)}; }
ConstantValue make_bool(bool b) { return ConstantValue{Scalar::I1, b ? 1 : 0, 0.0}; }

uint64_t as_unsigned(const ConstantValue& c) { return static_cast<uint64_t>(c.int_value); }

// --- the named evaluators of ops.def's fold columns ----------------------------------
// Each gets the op (for its attributes), its constant operands (all of one
// type, as many as the op takes) and the result's element type.

using Operands = std::vector<ConstantValue>;
using Evaluator = std::optional<ConstantValue> (*)(const ir::Op& op, const Operands& c, Scalar result);

int64_t min_signed(int bits) { return static_cast<int64_t>(~uint64_t{0} << (bits - 1)); }

// Integer division and remainder: by zero, or MIN / -1 (which traps on some
// targets), are not folded.
std::optional<ConstantValue> divide(const Operands& c, bool remainder) {
  Scalar t = c[0].type;
  uint64_t ua = as_unsigned(c[0]), ub = as_unsigned(c[1]);
  int64_t sa = c[0].int_value, sb = c[1].int_value;
  if (ub == 0) return std::nullopt;
  if (ir::is_signed(t)) {
    if (sa == min_signed(ir::bit_width(t)) && sb == -1) return std::nullopt;
    return make_int(t, remainder ? sa % sb : sa / sb);
  }
  return make_int(t, static_cast<int64_t>(remainder ? ua % ub : ua / ub));
}

std::optional<ConstantValue> fold_int_div(const ir::Op&, const Operands& c, Scalar) { return divide(c, false); }
std::optional<ConstantValue> fold_int_rem(const ir::Op&, const Operands& c, Scalar) { return divide(c, true); }

// Shift amounts are read as values of their type: negative or >= width is not folded.
std::optional<int> shift_amount(const ConstantValue& amount) {
  int width = ir::bit_width(amount.type);
  if (ir::is_signed(amount.type) && amount.int_value < 0) return std::nullopt;
  if (as_unsigned(amount) >= static_cast<uint64_t>(width)) return std::nullopt;
  return static_cast<int>(amount.int_value);
}

std::optional<ConstantValue> fold_shl(const ir::Op&, const Operands& c, Scalar) {
  std::optional<int> amount = shift_amount(c[1]);
  if (!amount) return std::nullopt;
  return make_int(c[0].type, static_cast<int64_t>(as_unsigned(c[0]) << *amount));
}

std::optional<ConstantValue> fold_shr(const ir::Op&, const Operands& c, Scalar) {
  std::optional<int> amount = shift_amount(c[1]);
  if (!amount) return std::nullopt;
  if (ir::is_signed(c[0].type)) return make_int(c[0].type, c[0].int_value >> *amount);
  return make_int(c[0].type, static_cast<int64_t>(as_unsigned(c[0]) >> *amount));
}

bool int_less(const ConstantValue& a, const ConstantValue& b) {
  return ir::is_signed(a.type) ? a.int_value < b.int_value : as_unsigned(a) < as_unsigned(b);
}

std::optional<ConstantValue> fold_int_min(const ir::Op&, const Operands& c, Scalar) {
  return int_less(c[1], c[0]) ? c[1] : c[0];
}
std::optional<ConstantValue> fold_int_max(const ir::Op&, const Operands& c, Scalar) {
  return int_less(c[0], c[1]) ? c[1] : c[0];
}

std::optional<ConstantValue> fold_umulhi(const ir::Op&, const Operands& c, Scalar) {
  int width = ir::bit_width(c[0].type);
  unsigned __int128 product =
      static_cast<unsigned __int128>(as_unsigned(c[0]) & width_mask(width)) * (as_unsigned(c[1]) & width_mask(width));
  return make_int(c[0].type, static_cast<int64_t>(static_cast<uint64_t>(product >> width)));
}

std::optional<ConstantValue> fold_int_abs(const ir::Op&, const Operands& c, Scalar) {
  if (ir::is_signed(c[0].type) && c[0].int_value < 0)
    return make_int(c[0].type, static_cast<int64_t>(0 - as_unsigned(c[0])));
  return c[0];
}

std::optional<ConstantValue> fold_float_div(const ir::Op&, const Operands& c, Scalar) {
  if (c[1].float_value == 0.0) return std::nullopt;
  return make_float(c[0].type, c[0].float_value / c[1].float_value);
}

std::optional<ConstantValue> fold_float_rem(const ir::Op&, const Operands& c, Scalar) {
  if (c[1].float_value == 0.0) return std::nullopt;
  return make_float(c[0].type, std::fmod(c[0].float_value, c[1].float_value));  // exact
}

// NaN handling and the sign of min(-0, +0) are target-defined: leave them.
bool min_max_is_target_defined(double x, double y) {
  return std::isnan(x) || std::isnan(y) || (x == 0.0 && y == 0.0 && std::signbit(x) != std::signbit(y));
}

std::optional<ConstantValue> fold_float_min(const ir::Op&, const Operands& c, Scalar) {
  double x = c[0].float_value, y = c[1].float_value;
  if (min_max_is_target_defined(x, y)) return std::nullopt;
  return make_float(c[0].type, std::min(x, y));
}

std::optional<ConstantValue> fold_float_max(const ir::Op&, const Operands& c, Scalar) {
  double x = c[0].float_value, y = c[1].float_value;
  if (min_max_is_target_defined(x, y)) return std::nullopt;
  return make_float(c[0].type, std::max(x, y));
}

// Transcendental and library functions (and fma, pow) are folded with the
// host's libm in the op's own precision, and only for f32/f64.
template <class Function>
std::optional<ConstantValue> in_host_precision(const Operands& c, Function f) {
  Scalar t = c[0].type;
  auto at = [&](size_t i) { return i < c.size() ? c[i].float_value : 0.0; };
  if (t == Scalar::F32)
    return make_float(t, f(static_cast<float>(at(0)), static_cast<float>(at(1)), static_cast<float>(at(2))));
  if (t == Scalar::F64) return make_float(t, f(at(0), at(1), at(2)));
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

std::optional<ConstantValue> fold_cmp(const ir::Op& op, const Operands& c, Scalar) {
  std::optional<Predicate> p = predicate_of(op);
  if (!p) return std::nullopt;
  if (c[0].is_float()) return make_bool(compare(*p, c[0].float_value, c[1].float_value));
  if (ir::is_signed(c[0].type)) return make_bool(compare(*p, c[0].int_value, c[1].int_value));
  return make_bool(compare(*p, as_unsigned(c[0]), as_unsigned(c[1])));
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

std::optional<ConstantValue> convert(const ConstantValue& a, Scalar to) {
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

std::optional<ConstantValue> fold_cast(const ir::Op& op, const Operands& c, Scalar result) {
  // Only the default rounding (to nearest even) is folded.
  const ir::Attr* rounding = op.attr("rounding");
  const auto* mode = rounding ? std::get_if<std::string>(rounding) : nullptr;
  if (rounding && !(mode && *mode == "rtne")) return std::nullopt;
  return convert(c[0], result);
}

// The bit pattern of a constant, or nothing for NaN (its payload is not kept).
std::optional<uint64_t> bits_of(const ConstantValue& a) {
  if (!a.is_float()) return as_unsigned(a) & width_mask(ir::bit_width(a.type));
  if (std::isnan(a.float_value)) return std::nullopt;
  return ir::encode_float(a.float_value, a.type);
}

std::optional<ConstantValue> from_bits(uint64_t bits, Scalar to) {
  if (!ir::is_float(to)) return make_int(to, static_cast<int64_t>(bits));
  double x = ir::decode_float(bits, to);
  if (std::isnan(x)) return std::nullopt;
  return make_float(to, x);
}

std::optional<ConstantValue> fold_bitcast(const ir::Op&, const Operands& c, Scalar result) {
  if (ir::bit_width(c[0].type) != ir::bit_width(result)) return std::nullopt;
  std::optional<uint64_t> bits = bits_of(c[0]);
  if (!bits) return std::nullopt;
  return from_bits(*bits, result);
}

// --- the fold columns of ops.def ------------------------------------------------------------
// The column vocabulary (explained at the top of ops.def) as evaluators.

struct Folds {
  Evaluator on_ints;
  Evaluator on_floats;
};

uint64_t bits_at(const Operands& c, size_t i) { return i < c.size() ? as_unsigned(c[i]) : 0; }
double value_at(const Operands& c, size_t i) { return i < c.size() ? c[i].float_value : 0.0; }

#define NONE nullptr
#define WRAP(e)                                                                         \
  [](const ir::Op&, const Operands& c, Scalar) -> std::optional<ConstantValue> {        \
    [[maybe_unused]] uint64_t a = bits_at(c, 0), b = bits_at(c, 1);                     \
    return make_int(c[0].type, static_cast<int64_t>(e));                                \
  }
#define ROUNDED(e)                                                                      \
  [](const ir::Op&, const Operands& c, Scalar) -> std::optional<ConstantValue> {        \
    [[maybe_unused]] double x = value_at(c, 0), y = value_at(c, 1);                     \
    return make_float(c[0].type, e);                                                    \
  }
#define LIBM(e)                                                                         \
  [](const ir::Op&, const Operands& c, Scalar) {                                        \
    return in_host_precision(                                                           \
        c, []([[maybe_unused]] auto x, [[maybe_unused]] auto y, [[maybe_unused]] auto z) { return e; }); \
  }

constexpr Folds kFolds[] = {
#define OP(name, text, flags, operands, max_operands, results, regions, rule, fold_int, fold_float) \
  {fold_int, fold_float},
#include "ir/ops.def"
#undef OP
};
static_assert(std::size(kFolds) == ir::kNumOpKinds);

#undef NONE
#undef WRAP
#undef ROUNDED
#undef LIBM

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

double round_to_float_type(double x, Scalar type) { return ir::round_to_float(x, type); }

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
  const ir::OpInfo& row = ir::info(op.kind);
  int count = static_cast<int>(operands.size());
  if (count == 0 || count < row.min_operands || (row.max_operands != ir::kAnyCount && count > row.max_operands))
    return std::nullopt;
  for (const ConstantValue& c : operands)
    if (c.type != operands[0].type) return std::nullopt;  // ill-typed: leave it to the verifier
  const Folds& folds = kFolds[static_cast<int>(op.kind)];
  Evaluator evaluate = operands[0].is_float() ? folds.on_floats : folds.on_ints;
  if (evaluate == nullptr) return std::nullopt;
  return evaluate(op, operands, result);
}

}  // namespace tegula::passes
