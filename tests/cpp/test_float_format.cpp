// The float formats of ir/float_format.h against the host's own float
// conversions and the fp8 formats' definitions: every 16- and 8-bit pattern
// decodes to the value it means and encodes back, and rounding random doubles
// agrees with the host's float and _Float16 conversions (round to nearest
// even, overflow to inf).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "ir/float_format.h"

using namespace tegula::ir;

namespace {

// Equal values, or both NaN; -0.0 and +0.0 are told apart.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

TEST(FloatFormat, SixteenBitPatternsDecodeAndEncodeBack) {
  for (uint32_t b = 0; b < 65536; ++b) {
    double bf16 = std::bit_cast<float>(b << 16);
    ASSERT_TRUE(same(decode_float(b, Scalar::BF16), bf16)) << std::hex << b;
#ifdef __FLT16_MAX__
    double f16 = static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(b)));
    ASSERT_TRUE(same(decode_float(b, Scalar::F16), f16)) << std::hex << b;
#endif
    for (Scalar s : {Scalar::F16, Scalar::BF16}) {
      double x = decode_float(b, s);
      if (std::isnan(x)) continue;
      ASSERT_EQ(encode_float(x, s), b) << to_string(s) << " " << std::hex << b;
    }
  }
}

TEST(FloatFormat, Fp8PatternsDecodeAndEncodeBack) {
  for (uint32_t b = 0; b < 256; ++b)
    for (Scalar s : {Scalar::F8E4M3, Scalar::F8E5M2}) {
      double x = decode_float(b, s);
      if (std::isnan(x) || std::isinf(x)) continue;  // fp8 encoding saturates infinities
      ASSERT_EQ(encode_float(x, s), b) << to_string(s) << " " << std::hex << b;
    }
  // e4m3fn: no infinities, NaN only at S.1111.111, 448 the largest.
  EXPECT_EQ(decode_float(0x7e, Scalar::F8E4M3), 448.0);
  EXPECT_TRUE(std::isnan(decode_float(0x7f, Scalar::F8E4M3)));
  EXPECT_EQ(decode_float(0x78, Scalar::F8E4M3), 256.0);
  EXPECT_EQ(encode_float(1.0, Scalar::F8E4M3), 0x38u);
  EXPECT_EQ(encode_float(-INFINITY, Scalar::F8E4M3), 0xfeu);
  EXPECT_EQ(encode_float(1e9, Scalar::F8E4M3), 0x7eu);
  // e5m2: IEEE-style specials, 57344 the largest; conversion saturates.
  EXPECT_EQ(decode_float(0x7c, Scalar::F8E5M2), INFINITY);
  EXPECT_TRUE(std::isnan(decode_float(0x7d, Scalar::F8E5M2)));
  EXPECT_EQ(encode_float(INFINITY, Scalar::F8E5M2), 0x7bu);
  EXPECT_EQ(encode_float(1.0, Scalar::F8E5M2), 0x3cu);
  EXPECT_EQ(encode_float(NAN, Scalar::F8E5M2), 0x7fu);
  EXPECT_EQ(encode_float(NAN, Scalar::F8E4M3), 0x7fu);
  // Ties go to even: 1 + 2^-4 lies halfway between e4m3's 1.0 and 1.125.
  EXPECT_EQ(round_to_float(1.0625, Scalar::F8E4M3), 1.0);
  EXPECT_EQ(round_to_float(1.1875, Scalar::F8E4M3), 1.25);
}

TEST(FloatFormat, Fp8E4b15IsF16sBitsWithTiesAwayAndSaturationAt175) {
  for (uint32_t b = 0; b < 256; ++b) {
    double x = decode_float(b, Scalar::F8E4B15);
    ASSERT_TRUE(std::isfinite(x)) << std::hex << b;  // no infinities, no NaN
    // The value of the f16 whose bits are the code's, shifted below the sign.
    ASSERT_TRUE(same(x, decode_float(((b & 0x80u) << 8) | ((b & 0x7fu) << 7), Scalar::F16))) << std::hex << b;
    uint64_t back = (b & 0x7fu) == 0x7fu ? b - 1 : b;  // 1.875 saturates to 1.75
    ASSERT_EQ(encode_float(x, Scalar::F8E4B15), back) << std::hex << b;
  }
  EXPECT_EQ(decode_float(0x78, Scalar::F8E4B15), 1.0);
  EXPECT_EQ(decode_float(0x01, Scalar::F8E4B15), std::ldexp(1.0, -17));
  EXPECT_EQ(encode_float(INFINITY, Scalar::F8E4B15), 0x7eu);
  EXPECT_EQ(encode_float(-1e9, Scalar::F8E4B15), 0xfeu);
  EXPECT_EQ(encode_float(1.85, Scalar::F8E4B15), 0x7eu);
  EXPECT_EQ(encode_float(NAN, Scalar::F8E4B15), 0x7eu);
  EXPECT_EQ(encode_float(-NAN, Scalar::F8E4B15), 0x7eu);  // Triton's f32 -> f16 step drops a NaN's sign
  EXPECT_EQ(encode_float(-1e-9, Scalar::F8E4B15), 0x80u);
  // Ties go away from zero: 1 + 2^-4 lies halfway between 1.0 and 1.125.
  EXPECT_EQ(round_to_float(1.0625, Scalar::F8E4B15), 1.125);
  EXPECT_EQ(round_to_float(-1.0625, Scalar::F8E4B15), -1.125);
  EXPECT_EQ(round_to_float(std::ldexp(1.0, -18), Scalar::F8E4B15), std::ldexp(1.0, -17));
  EXPECT_EQ(round_to_float(std::nextafter(std::ldexp(1.0, -18), 0.0), Scalar::F8E4B15), 0.0);
}

// The fnuz formats (AMD's e4m3fnuz and e5m2fnuz): no infinities, no -0, the
// code of -0 (0x80) their one NaN. Conversions round to nearest even,
// saturate finite values at the top code and make infinities NaN.
TEST(FloatFormat, FnuzFormatsHaveOneNanAndNoNegativeZero) {
  struct Case {
    Scalar s;
    int mantissa, bias;
    double largest;
  };
  for (Case c : {Case{Scalar::F8E4B8, 3, 8, 240.0}, Case{Scalar::F8E5B16, 2, 16, 57344.0}}) {
    SCOPED_TRACE(to_string(c.s));
    for (uint32_t b = 0; b < 256; ++b) {
      double x = decode_float(b, c.s);
      if (b == 0x80) {
        ASSERT_TRUE(std::isnan(x));
        continue;
      }
      ASSERT_TRUE(std::isfinite(x)) << std::hex << b;
      // Every other code is a number: (2^M + m) * 2^(e - bias - M), or m * 2^(1 - bias - M) for e = 0.
      uint32_t e = (b & 0x7fu) >> c.mantissa, m = b & ((1u << c.mantissa) - 1u);
      double magnitude = e == 0 ? std::ldexp(m, 1 - c.bias - c.mantissa)
                                : std::ldexp(m + (1u << c.mantissa), static_cast<int>(e) - c.bias - c.mantissa);
      ASSERT_TRUE(same(x, b & 0x80u ? -magnitude : magnitude)) << std::hex << b;
      ASSERT_EQ(encode_float(x, c.s), b) << std::hex << b;
    }
    EXPECT_EQ(decode_float(0x7f, c.s), c.largest);
    EXPECT_EQ(decode_float(0xff, c.s), -c.largest);
    EXPECT_EQ(encode_float(1.0, c.s), static_cast<uint64_t>(c.bias) << c.mantissa);
    // No -0: -0 and negative values that round to zero are +0.
    EXPECT_EQ(encode_float(-0.0, c.s), 0x00u);
    EXPECT_EQ(encode_float(-std::ldexp(1.0, -c.bias - c.mantissa - 2), c.s), 0x00u);
    EXPECT_EQ(encode_float(-std::ldexp(1.0, 1 - c.bias - c.mantissa), c.s), 0x81u);
    // NaN and the infinities, which the formats lack, are the NaN; finite values saturate.
    EXPECT_EQ(encode_float(NAN, c.s), 0x80u);
    EXPECT_EQ(encode_float(-NAN, c.s), 0x80u);
    EXPECT_EQ(encode_float(INFINITY, c.s), 0x80u);
    EXPECT_EQ(encode_float(-INFINITY, c.s), 0x80u);
    EXPECT_EQ(encode_float(c.largest * 1.25, c.s), 0x7fu);
    EXPECT_EQ(encode_float(-1e300, c.s), 0xffu);
    EXPECT_TRUE(same(round_to_float(-0.0, c.s), 0.0));
  }
  // Ties go to even: 1 + 2^-4 lies halfway between e4b8's 1.0 and 1.125,
  // 1.1875 between 1.125 and 1.25; 248 between 240 and 256, past the top.
  EXPECT_EQ(round_to_float(1.0625, Scalar::F8E4B8), 1.0);
  EXPECT_EQ(round_to_float(1.1875, Scalar::F8E4B8), 1.25);
  EXPECT_EQ(round_to_float(248.0, Scalar::F8E4B8), 240.0);
  EXPECT_EQ(round_to_float(std::ldexp(1.0, -11), Scalar::F8E4B8), 0.0);  // half the smallest subnormal
  EXPECT_EQ(round_to_float(std::ldexp(3.0, -12), Scalar::F8E4B8), std::ldexp(1.0, -10));
  EXPECT_EQ(round_to_float(61440.0, Scalar::F8E5B16), 57344.0);
  EXPECT_EQ(round_to_float(std::ldexp(1.0, -17), Scalar::F8E5B16), std::ldexp(1.0, -17));
}

TEST(FloatFormat, RoundingRandomDoublesMatchesTheHost) {
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-160, 140);
  for (int i = 0; i < 200000; ++i) {
    double x = std::ldexp(mantissa(rng), exponent(rng)) * (rng() & 1 ? -1.0 : 1.0);
    if (i % 7 == 0) x = std::nextafter(static_cast<double>(static_cast<float>(x)), 0.0);  // near float values
    ASSERT_TRUE(same(round_to_float(x, Scalar::F32), static_cast<float>(x))) << x;
    ASSERT_EQ(encode_float(x, Scalar::F32), std::bit_cast<uint32_t>(static_cast<float>(x))) << x;
#ifdef __FLT16_MAX__
    ASSERT_TRUE(same(round_to_float(x, Scalar::F16), static_cast<double>(static_cast<_Float16>(x)))) << x;
#endif
    ASSERT_EQ(encode_float(x, Scalar::F64), std::bit_cast<uint64_t>(x)) << x;
    ASSERT_TRUE(same(decode_float(std::bit_cast<uint64_t>(x), Scalar::F64), x)) << x;
  }
}
