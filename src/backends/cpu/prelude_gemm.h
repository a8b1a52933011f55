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

// ---- dot: bf16 x bf16 on AMX tiles ----
// tg_dot_bf16_amx<M, N, K>(a, b, c, packed): c[M x N] += a[M x K] * b[K x N]
// (bf16, row-major) on the AMX tile unit, when the host has one, Linux lets
// this process use it, and the shape is whole 32 x 32 blocks of c and 32-deep
// slices of k; otherwise it returns false and does nothing. Each tdpbf16ps
// adds, for each element of c, 32 exact bf16 products in pairs (k, k + 1)
// into the float accumulator, rounding to nearest even and with subnormal
// inputs and results taken as zero: the order and the flushing differ from
// the one-FMA-per-product loop of tg_dot_f32, the precision (fp32
// accumulation of exact products) does not. `packed` (K * N elements)
// receives b in the layout the tiles read: each pair of rows k, k + 1
// interleaved element by element.
#if defined(__x86_64__) && defined(__linux__) && defined(__AMX_TILE__) && defined(__AMX_BF16__) && \
    defined(__AVX512BW__)
#include <sys/syscall.h>
#include <unistd.h>
#define TG_HAS_AMX_BF16 1
// Linux hands out the (8 KB) tile register state only to processes that ask
// (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); asked once per process.
static inline bool tg_amx_usable() {
  static const bool usable = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  return usable;
}

struct alignas(64) tg_amx_config {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

template <int N, int K>
static inline void tg_pack_bf16_pairs(const uint16_t* __restrict b, uint16_t* __restrict packed) {
  // 32 columns of rows k, k + 1 become 64 interleaved elements.
  const __m512i low = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6,
                                       37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i high = _mm512_add_epi16(low, _mm512_set1_epi16(16));
  for (int k = 0; k < K; k += 2)
    for (int n = 0; n < N; n += 32) {
      const __m512i even = _mm512_loadu_si512(b + k * N + n), odd = _mm512_loadu_si512(b + (k + 1) * N + n);
      _mm512_storeu_si512(packed + k * N + 2 * n, _mm512_permutex2var_epi16(even, low, odd));
      _mm512_storeu_si512(packed + k * N + 2 * n + 32, _mm512_permutex2var_epi16(even, high, odd));
    }
}
#endif

template <int M, int N, int K>
static inline bool tg_dot_bf16_amx(const uint16_t* a, const uint16_t* b, float* c, uint16_t* packed) {
#ifdef TG_HAS_AMX_BF16
  if constexpr (M % 32 == 0 && N % 32 == 0 && K % 32 == 0) {
    if (!tg_amx_usable()) return false;
    tg_pack_bf16_pairs<N, K>(b, packed);
    // Tiles 0-3: a 32 x 32 block of c (2 x 2 tiles of 16 x 16 floats);
    // 4, 5: its 32 rows of a, 32 deep; 6, 7: 16 pairs of rows of packed b,
    // 16 columns each. Every tile is 16 rows of 64 bytes.
    tg_amx_config config;
    for (int t = 0; t < 8; ++t) config.rows[t] = 16, config.bytes_per_row[t] = 64;
    _tile_loadconfig(&config);
    for (int i = 0; i < M; i += 32)
      for (int j = 0; j < N; j += 32) {
        float* const block = c + i * N + j;
        _tile_loadd(0, block, N * 4);
        _tile_loadd(1, block + 16, N * 4);
        _tile_loadd(2, block + 16 * N, N * 4);
        _tile_loadd(3, block + 16 * N + 16, N * 4);
        for (int k = 0; k < K; k += 32) {
          _tile_loadd(4, a + i * K + k, K * 2);
          _tile_loadd(5, a + (i + 16) * K + k, K * 2);
          _tile_loadd(6, packed + k * N + 2 * j, N * 4);
          _tile_loadd(7, packed + k * N + 2 * j + 32, N * 4);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, block, N * 4);
        _tile_stored(1, block + 16, N * 4);
        _tile_stored(2, block + 16 * N, N * 4);
        _tile_stored(3, block + 16 * N + 16, N * 4);
      }
    _tile_release();
    return true;
  }
#endif
  (void)a, (void)b, (void)c, (void)packed;
  return false;
}
)PRELUDE";

}  // namespace tegula::backends::cpu
