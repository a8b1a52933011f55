// The helpers a dot of half-precision tiles calls, emitted after the prelude
// only by units with such a dot (every other kernel's source, and its golden
// text, stays as it was).
//
// A f16/bf16 dot widens each operand tile to float once (codegen_dot.cpp),
// then runs the float micro-kernel. Widening one element at a time through
// the prelude's bit-exact scalar conversions is as slow as the product
// itself for f16 (g++ does not turn the shifts, selects and scaling of
// tg_f16_to_f32 into vcvtph2ps), so whole tiles are widened here with the
// host's conversion instructions: kernels are compiled on the machine that
// runs them at -march=native, so the preprocessor knows which exist.
// vcvtph2ps is exact for every f16 value (subnormals, infinities, NaNs keep
// their meaning; a signalling NaN comes out quiet, which a product would do
// anyway); bf16 -> float is a 16-bit shift. Elements past the last whole
// vector take the scalar conversion.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

inline constexpr std::string_view kGemmPrelude = R"PRELUDE(
// ---- dot: widening half-precision tiles ----
#if defined(__x86_64__)
#include <immintrin.h>
#endif
static inline void tg_widen_f16(const uint16_t* __restrict src, float* __restrict dst, int n) {
  int i = 0;
#if defined(__x86_64__) && defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__x86_64__) && defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = tg_f16_to_f32(src[i]);
}

static inline void tg_widen_bf16(const uint16_t* __restrict src, float* __restrict dst, int n) {
  TG_IVDEP
  for (int i = 0; i < n; ++i) dst[i] = tg_bits_to_f32((uint32_t)src[i] << 16);
}
)PRELUDE";

}  // namespace tegula::backends::cpu
