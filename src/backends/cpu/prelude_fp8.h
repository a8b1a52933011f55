// The fp8 conversions generated CPU code calls, emitted after the prelude only
// by units with fp8 values (so every other kernel's source stays as it was).
// The formats and rounding rules are those of ir/fp8.h: to fp8 rounds to
// nearest even and saturates to the largest finite value (infinities too),
// NaN becomes 0x7f; from fp8 is exact. Every fp8 value is a float, so the
// conversions go through float; a double first rounds to float to odd, which
// keeps the one correct rounding (float has far more than the 2 extra bits
// that needs).
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

inline constexpr std::string_view kFp8Prelude = R"PRELUDE(
// ---- fp8 ----
// f32 -> fp8 with `m` mantissa bits and exponent bias `bias`; `max_code` is the
// largest finite magnitude.
static inline uint8_t tg_f32_to_f8(float f, int m, int bias, uint32_t max_code) {
  uint32_t b = tg_f32_to_bits(f);
  uint32_t sign = (b >> 24) & 0x80u, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  int e = (int)(a >> 23) - 127;
  if (e > 16) return (uint8_t)(sign | max_code);          // also inf
  if (e < -bias - m) return (uint8_t)sign;                  // below half the smallest step (f32 zeros, subnormals)
  int binade = e < 1 - bias ? 1 - bias : e;                 // fp8 subnormals step like the smallest binade
  int shift = 23 - m + (binade - e);                        // 20..24
  uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  uint32_t steps = mant >> shift, rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (steps & 1u))) ++steps;
  uint32_t code = ((uint32_t)(binade + bias - 1) << m) + steps;  // a carry moves to the next binade
  return (uint8_t)(sign | (code > max_code ? max_code : code));
}
static inline uint8_t tg_f32_to_f8e4m3(float f) { return tg_f32_to_f8(f, 3, 7, 0x7eu); }
static inline uint8_t tg_f32_to_f8e5m2(float f) { return tg_f32_to_f8(f, 2, 15, 0x7bu); }
static inline uint8_t tg_f64_to_f8e4m3(double d) { return tg_f32_to_f8e4m3(tg_f64_to_f32_odd(d)); }
static inline uint8_t tg_f64_to_f8e5m2(double d) { return tg_f32_to_f8e5m2(tg_f64_to_f32_odd(d)); }
static inline float tg_f8e4m3_to_f32(uint8_t h) {
  uint32_t sign = (uint32_t)(h & 0x80u) << 24, em = h & 0x7fu;
  if (em == 0x7fu) return tg_bits_to_f32(sign | 0x7fc00000u);
  if (em < 0x08u) return tg_bits_to_f32(sign | tg_f32_to_bits((float)em * 0x1p-9f));
  return tg_bits_to_f32(sign | ((em + (120u << 3)) << 20));
}
static inline float tg_f8e5m2_to_f32(uint8_t h) {
  uint32_t sign = (uint32_t)(h & 0x80u) << 24, em = h & 0x7fu;
  if (em >= 0x7cu) return tg_bits_to_f32(sign | (em == 0x7cu ? 0x7f800000u : 0x7fc00000u));
  if (em < 0x04u) return tg_bits_to_f32(sign | tg_f32_to_bits((float)em * 0x1p-16f));
  return tg_bits_to_f32(sign | ((em + (112u << 2)) << 21));
}
)PRELUDE";

}  // namespace tegula::backends::cpu
