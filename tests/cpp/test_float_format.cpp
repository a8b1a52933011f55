// The float formats of ir/float_format.h against the host's own float
// conversions: every 16- and 8-bit pattern decodes to the value it means and
// encodes back, and rounding random doubles agrees with the host's float
// and _Float16 conversions (round to nearest even, overflow to inf).
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
