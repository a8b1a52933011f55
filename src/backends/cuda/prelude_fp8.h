// The fp8 types and conversions generated CUDA code uses, emitted after the
// prelude only by units with fp8 values (every other kernel's source stays as
// it was). Rules of ir/fp8.h: to fp8 rounds to nearest even and saturates to
// the largest finite value (infinities too), NaN stays NaN; from fp8 is exact.
// On sm_89 and newer one cvt instruction does each conversion (the
// `.satfinite` forms implement exactly these rules); older GPUs run the bit
// manipulation the CPU backend runs too (c_family::kSoftFp8). A double first rounds
// to float to odd, which keeps the one correct rounding.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

// Before c_family::kSoftFp8: the types and the bit access it uses.
inline constexpr std::string_view kFp8Types = R"PRELUDE(typedef unsigned char tg_f8e4m3;  // fp8 E4M3 (bias 7, no inf, NaN = S.1111.111), as its bits
typedef unsigned char tg_f8e5m2;  // fp8 E5M2 (bias 15, IEEE-style inf and NaN), as its bits
TG_DEVICE unsigned tg_f32_to_bits(float f) { return __float_as_uint(f); }
)PRELUDE";

// Units with f8e4b15 values add its type, then c_family::kSoftFp8E4b15 (its
// software conversions, the CPU backend's too: no GPU converts it natively).
inline constexpr std::string_view kFp8E4b15Types = R"PRELUDE(typedef unsigned char tg_f8e4b15;  // fp8 E4M3 with bias 15 (no inf, no NaN), as its bits
)PRELUDE";

// Units with f8e4b8 or f8e5b16 values add their types and the bit access
// c_family::kSoftFp8Fnuz uses, then it (software conversions, the CPU
// backend's too: no NVIDIA GPU converts the fnuz formats).
inline constexpr std::string_view kFp8FnuzTypes = R"PRELUDE(typedef unsigned char tg_f8e4b8;   // fp8 E4M3 "fnuz" (bias 8, no inf, no -0, NaN = 0x80), as its bits
typedef unsigned char tg_f8e5b16;  // fp8 E5M2 "fnuz" (bias 16, no inf, no -0, NaN = 0x80), as its bits
TG_DEVICE float tg_bits_to_f32(unsigned b) { return __uint_as_float(b); }
)PRELUDE";

// After c_family::kSoftFp8.
inline constexpr std::string_view kFp8Prelude = R"PRELUDE(TG_DEVICE tg_f8e4m3 tg_f32_to_f8e4m3(float f) {
#if __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  return (tg_f8e4m3)(pair & 0xffu);
#else
  return tg_f32_to_f8(f, 3, 7, 0x7eu);
#endif
}
TG_DEVICE tg_f8e5m2 tg_f32_to_f8e5m2(float f) {
#if __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  return (tg_f8e5m2)(pair & 0xffu);
#else
  return tg_f32_to_f8(f, 2, 15, 0x7bu);
#endif
}
TG_DEVICE tg_f8e4m3 tg_f64_to_f8e4m3(double d) { return tg_f32_to_f8e4m3(tg_f64_to_f32_odd(d)); }
TG_DEVICE tg_f8e5m2 tg_f64_to_f8e5m2(double d) { return tg_f32_to_f8e5m2(tg_f64_to_f32_odd(d)); }
TG_DEVICE float tg_f8e4m3_to_f32(tg_f8e4m3 h) {
#if __CUDA_ARCH__ >= 890
  unsigned pair;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(pair) : "h"((unsigned short)h));
  return tg_f16_to_f32((tg_f16)(pair & 0xffffu));
#else
  unsigned sign = (unsigned)(h & 0x80u) << 24, em = h & 0x7fu;
  if (em == 0x7fu) return __uint_as_float(sign | 0x7fc00000u);
  if (em < 0x08u) return __uint_as_float(sign | __float_as_uint((float)em * 0x1p-9f));
  return __uint_as_float(sign | ((em + (120u << 3)) << 20));
#endif
}
TG_DEVICE float tg_f8e5m2_to_f32(tg_f8e5m2 h) {
  // e5m2 is the upper byte of an f16.
  return tg_f16_to_f32((tg_f16)((unsigned)h << 8));
}
)PRELUDE";

}  // namespace tegula::backends::cuda
