// Constant folding against native C++ arithmetic on random operands: every
// integer type and op, f32/f64 arithmetic, float->int casts, and f16/bf16
// rounding against independent references.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

#include "ir/builder.h"
#include "passes/canonicalize.h"
#include "passes/fold_constants.h"

namespace tegula::passes {
namespace {

using ir::OpKind;
using ir::Scalar;

// Builds `print(kind(constants...))`, canonicalizes, and returns the printed
// value if it became a constant.
std::optional<ConstantValue> fold_via_ir(OpKind kind, const std::vector<ConstantValue>& operands, Scalar result,
                                         std::vector<ir::NamedAttr> attrs = {}) {
  ir::Function fn;
  ir::Builder b(fn);
  b.set_insertion_end(fn.body());
  std::vector<ir::ValueId> values;
  for (const ConstantValue& c : operands)
    values.push_back(b.create1(OpKind::Constant, {}, ir::Type::of(c.type), {{"value", c.to_attr()}}));
  ir::ValueId folded = b.create1(kind, values, ir::Type::of(result), std::move(attrs));
  ir::OpId print = b.create(OpKind::Print, {folded}, {}, {{"prefix", std::string()}});
  b.create(OpKind::Return, {}, {});
  canonicalize(fn);
  return constant_value(fn, fn.op(print).operands[0]);
}

template <class T>
constexpr Scalar scalar_of() {
  if constexpr (std::is_same_v<T, int8_t>) return Scalar::I8;
  if constexpr (std::is_same_v<T, int16_t>) return Scalar::I16;
  if constexpr (std::is_same_v<T, int32_t>) return Scalar::I32;
  if constexpr (std::is_same_v<T, int64_t>) return Scalar::I64;
  if constexpr (std::is_same_v<T, uint8_t>) return Scalar::U8;
  if constexpr (std::is_same_v<T, uint16_t>) return Scalar::U16;
  if constexpr (std::is_same_v<T, uint32_t>) return Scalar::U32;
  return Scalar::U64;
}

template <class T>
ConstantValue int_constant(T v) {
  return ConstantValue{scalar_of<T>(), static_cast<int64_t>(v), 0.0};
}

// Random values with the edges of the range over-represented.
template <class T>
T random_int(std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  switch (rng() % 8) {
    case 0: return L::min();
    case 1: return L::max();
    case 2: return static_cast<T>(rng() % 5) - static_cast<T>(2);
    case 3: return static_cast<T>(rng() % (sizeof(T) * 8 + 2));
    default: return static_cast<T>(rng());
  }
}

template <class T>
bool is_negative(T v) {
  if constexpr (std::is_signed_v<T>) return v < 0;
  return false;
}

// The native result of `kind`, or nothing where the folder must refuse.
template <class T>
std::optional<T> reference(OpKind kind, T a, T b) {
  using U = std::make_unsigned_t<T>;
  constexpr int kWidth = sizeof(T) * 8;
  bool overflowing_division = std::is_signed_v<T> && a == std::numeric_limits<T>::min() && b == static_cast<T>(-1);
  switch (kind) {
    case OpKind::Add: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case OpKind::Sub: return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    case OpKind::Mul: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case OpKind::Div:
      if (b == 0 || overflowing_division) return std::nullopt;
      return static_cast<T>(a / b);
    case OpKind::Rem:
      if (b == 0 || overflowing_division) return std::nullopt;
      return static_cast<T>(a % b);
    case OpKind::And: return static_cast<T>(a & b);
    case OpKind::Or: return static_cast<T>(a | b);
    case OpKind::Xor: return static_cast<T>(a ^ b);
    case OpKind::Shl:
      if (is_negative(b) || b >= kWidth) return std::nullopt;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) << b));
    case OpKind::Shr:
      if (is_negative(b) || b >= kWidth) return std::nullopt;
      return static_cast<T>(a >> b);
    case OpKind::Min: return std::min(a, b);
    case OpKind::Max: return std::max(a, b);
    case OpKind::UMulHi: {
      unsigned __int128 product = static_cast<unsigned __int128>(static_cast<U>(a)) * static_cast<U>(b);
      return static_cast<T>(static_cast<U>(product >> kWidth));
    }
    default: return std::nullopt;
  }
}

template <class T>
class FoldIntegers : public ::testing::Test {};
using IntegerTypes = ::testing::Types<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
TYPED_TEST_SUITE(FoldIntegers, IntegerTypes);

TYPED_TEST(FoldIntegers, BinaryOpsMatchNativeArithmetic) {
  using T = TypeParam;
  std::mt19937_64 rng(1234 + sizeof(T));
  const OpKind kinds[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Rem, OpKind::And,
                          OpKind::Or,  OpKind::Xor, OpKind::Shl, OpKind::Shr, OpKind::Min, OpKind::Max,
                          OpKind::UMulHi};
  for (OpKind kind : kinds) {
    for (int i = 0; i < 200; ++i) {
      T a = random_int<T>(rng), b = random_int<T>(rng);
      std::optional<T> expected = reference(kind, a, b);
      std::optional<ConstantValue> folded = fold_via_ir(kind, {int_constant(a), int_constant(b)}, scalar_of<T>());
      SCOPED_TRACE(std::string(ir::name(kind)) + " " + std::to_string(a) + " " + std::to_string(b));
      ASSERT_EQ(folded.has_value(), expected.has_value());
      if (expected) {
        EXPECT_EQ(folded->int_value, int_constant(*expected).int_value);
      }
    }
  }
}

TYPED_TEST(FoldIntegers, ComparisonsMatchNativeComparisons) {
  using T = TypeParam;
  std::mt19937_64 rng(99 + sizeof(T));
  const std::pair<const char*, bool (*)(T, T)> preds[] = {
      {"eq", [](T a, T b) { return a == b; }}, {"ne", [](T a, T b) { return a != b; }},
      {"lt", [](T a, T b) { return a < b; }},  {"le", [](T a, T b) { return a <= b; }},
      {"gt", [](T a, T b) { return a > b; }},  {"ge", [](T a, T b) { return a >= b; }},
  };
  for (const auto& [pred, op] : preds) {
    for (int i = 0; i < 100; ++i) {
      T a = random_int<T>(rng), b = random_int<T>(rng);
      std::optional<ConstantValue> folded =
          fold_via_ir(OpKind::Cmp, {int_constant(a), int_constant(b)}, Scalar::I1, {{"pred", std::string(pred)}});
      ASSERT_TRUE(folded.has_value());
      EXPECT_EQ(folded->int_value, op(a, b) ? 1 : 0) << pred << " " << +a << " " << +b;
    }
  }
}

TYPED_TEST(FoldIntegers, CastsToEveryIntegerTypeMatchCConversions) {
  using T = TypeParam;
  std::mt19937_64 rng(7 + sizeof(T));
  for (int i = 0; i < 200; ++i) {
    T a = random_int<T>(rng);
    auto check = [&](auto target) {
      using R = decltype(target);
      std::optional<ConstantValue> folded = fold_via_ir(OpKind::Cast, {int_constant(a)}, scalar_of<R>());
      ASSERT_TRUE(folded.has_value());
      EXPECT_EQ(folded->int_value, int_constant(static_cast<R>(a)).int_value) << +a;
    };
    check(int8_t{}), check(int16_t{}), check(int32_t{}), check(int64_t{});
    check(uint8_t{}), check(uint16_t{}), check(uint32_t{}), check(uint64_t{});
  }
}

TEST(FoldFloats, F32AndF64ArithmeticMatchNativeArithmetic) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  const OpKind kinds[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Rem};
  for (OpKind kind : kinds) {
    for (int i = 0; i < 300; ++i) {
      double x = std::ldexp(mantissa(rng), exponent(rng)), y = std::ldexp(mantissa(rng), exponent(rng));
      auto fx = static_cast<float>(x), fy = static_cast<float>(y);
      float want32 = kind == OpKind::Add   ? fx + fy
                     : kind == OpKind::Sub ? fx - fy
                     : kind == OpKind::Mul ? fx * fy
                     : kind == OpKind::Div ? fx / fy
                                           : std::fmod(fx, fy);
      double want64 = kind == OpKind::Add   ? x + y
                      : kind == OpKind::Sub ? x - y
                      : kind == OpKind::Mul ? x * y
                      : kind == OpKind::Div ? x / y
                                            : std::fmod(x, y);
      std::optional<ConstantValue> got32 =
          fold_via_ir(kind, {{Scalar::F32, 0, fx}, {Scalar::F32, 0, fy}}, Scalar::F32);
      std::optional<ConstantValue> got64 = fold_via_ir(kind, {{Scalar::F64, 0, x}, {Scalar::F64, 0, y}}, Scalar::F64);
      ASSERT_TRUE(got32 && got64);
      EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(got32->float_value)), std::bit_cast<uint32_t>(want32))
          << ir::name(kind) << " " << fx << " " << fy;
      EXPECT_EQ(std::bit_cast<uint64_t>(got64->float_value), std::bit_cast<uint64_t>(want64))
          << ir::name(kind) << " " << x << " " << y;
    }
  }
}

TEST(FoldFloats, FloatToIntCastsFoldOnlyInRange) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> value(-5e9, 5e9);
  for (int i = 0; i < 500; ++i) {
    double x = i % 2 ? value(rng) : value(rng) / 1e6;
    std::optional<ConstantValue> to_i32 = fold_via_ir(OpKind::Cast, {{Scalar::F64, 0, x}}, Scalar::I32);
    std::optional<ConstantValue> to_u32 = fold_via_ir(OpKind::Cast, {{Scalar::F64, 0, x}}, Scalar::U32);
    double t = std::trunc(x);
    bool fits_i32 = t >= -2147483648.0 && t <= 2147483647.0;
    bool fits_u32 = t >= 0.0 && t <= 4294967295.0;
    ASSERT_EQ(to_i32.has_value(), fits_i32) << x;
    ASSERT_EQ(to_u32.has_value(), fits_u32) << x;
    if (fits_i32) {
      EXPECT_EQ(to_i32->int_value, static_cast<int32_t>(x));
    }
    if (fits_u32) {
      EXPECT_EQ(to_u32->int_value, static_cast<int64_t>(static_cast<uint32_t>(x)));
    }
  }
}

// bf16 reference: round the f32 bit pattern to its top 16 bits, ties to even.
float bf16_reference(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits += 0x7fff + ((bits >> 16) & 1);
  return std::bit_cast<float>(bits & 0xffff0000u);
}

TEST(FoldFloats, Bf16RoundingMatchesBitPatternRounding) {
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) continue;
    double got = round_to_float_type(x, Scalar::BF16);
    EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(got)), std::bit_cast<uint32_t>(bf16_reference(x))) << x;
  }
}

#if defined(__FLT16_MANT_DIG__)
TEST(FoldFloats, F16RoundingMatchesTheCompilersHalfType) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-27, 17);
  for (int i = 0; i < 20000; ++i) {
    double x = std::ldexp(mantissa(rng), exponent(rng));
    double want = static_cast<double>(static_cast<_Float16>(x));
    double got = round_to_float_type(x, Scalar::F16);
    EXPECT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want)) << x;
  }
}

TEST(FoldFloats, F16ArithmeticMatchesTheCompilersHalfType) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> value(-100.0, 100.0);
  for (int i = 0; i < 2000; ++i) {
    auto a = static_cast<_Float16>(value(rng)), b = static_cast<_Float16>(value(rng));
    ConstantValue ca{Scalar::F16, 0, static_cast<double>(a)}, cb{Scalar::F16, 0, static_cast<double>(b)};
    std::optional<ConstantValue> sum = fold_via_ir(OpKind::Add, {ca, cb}, Scalar::F16);
    std::optional<ConstantValue> product = fold_via_ir(OpKind::Mul, {ca, cb}, Scalar::F16);
    ASSERT_TRUE(sum && product);
    EXPECT_EQ(sum->float_value, static_cast<double>(static_cast<_Float16>(a + b)));
    EXPECT_EQ(product->float_value, static_cast<double>(static_cast<_Float16>(a * b)));
  }
}
#endif

}  // namespace
}  // namespace tegula::passes
