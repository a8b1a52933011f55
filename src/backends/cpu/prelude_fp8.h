// The fp8 conversions generated CPU code calls, emitted after the prelude only
// by units with fp8 values (so every other kernel's source stays as it was),
// after c_family::kSoftFp8 (the rounding to fp8, shared with the CUDA backend).
// The formats and rounding rules are those of ir/fp8.h: to fp8 rounds to
// nearest even and saturates to the largest finite value (infinities too),
// NaN becomes 0x7f; from fp8 is exact. Every fp8 value is a float, so the
// conversions go through float; a double first rounds to float to odd, which
// keeps the one correct rounding (float has far more than the 2 extra bits
// that needs). Units with f8e4b15 values add c_family::kSoftFp8E4b15, its
// conversions in both backends (Triton's rules, ir/fp8.h), and units with
// f8e4b8 or f8e5b16 values c_family::kSoftFp8Fnuz, the fnuz formats'.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

// After c_family::kSoftFp8.
inline constexpr std::string_view kFp8Prelude = R"PRELUDE(static inline uint8_t tg_f32_to_f8e4m3(float f) { return tg_f32_to_f8(f, 3, 7, 0x7eu); }
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
