// The helpers generated CPU code calls for `sort`, emitted after the prelude
// only by units that sort (so every other kernel's source stays as it was).
//
// A line is sorted as unsigned integer keys whose order is the sort order:
// unsigned values are their own keys, signed ones flip the sign bit, floats
// flip every bit of negatives and the sign bit of the others, and every NaN
// becomes the largest key, so NaN sorts above +inf (-0.0 sorts just below
// +0.0; the IR leaves their relative order open). Descending sorts complement
// the keys. The keys are sorted by a least-significant-digit radix sort on
// bytes (one counting pass per byte that is not the same in every key; a few
// times faster than std::sort on a 1024-element line), or by std::sort on
// short lines where the 256 counters would dominate.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

inline constexpr std::string_view kSortPrelude = R"PRELUDE(
// ---- sort ----
static inline uint16_t tg_key_f16(uint16_t h) {
  return (h & 0x7fffu) > 0x7c00u ? 0xffffu : (h >> 15) ? (uint16_t)~h : (uint16_t)(h | 0x8000u);
}
static inline uint16_t tg_key_bf16(uint16_t h) {
  return (h & 0x7fffu) > 0x7f80u ? 0xffffu : (h >> 15) ? (uint16_t)~h : (uint16_t)(h | 0x8000u);
}
static inline uint16_t tg_unkey_half(uint16_t k) { return (k >> 15) ? (uint16_t)(k & 0x7fffu) : (uint16_t)~k; }
static inline uint32_t tg_key_f32(float f) {
  uint32_t u = tg_f32_to_bits(f);
  return f != f ? 0xffffffffu : (u >> 31) ? ~u : (u | 0x80000000u);
}
static inline float tg_unkey_f32(uint32_t k) { return tg_bits_to_f32((k >> 31) ? (k & 0x7fffffffu) : ~k); }
static inline uint64_t tg_key_f64(double f) {
  uint64_t u = tg_bitcast<uint64_t>(f);
  return f != f ? ~0ull : (u >> 63) ? ~u : (u | (1ull << 63));
}
static inline double tg_unkey_f64(uint64_t k) { return tg_bitcast<double>((k >> 63) ? (k & ~(1ull << 63)) : ~k); }

// Sorts keys[0..n) ascending; temp holds n keys of scratch.
template <class K>
static void tg_sort_keys(K* keys, K* temp, int n) {
  if (n <= 64) {
    std::sort(keys, keys + n);
    return;
  }
  K* from = keys;
  K* to = temp;
  for (unsigned shift = 0; shift < 8 * sizeof(K); shift += 8) {
    int start[257] = {0};
    for (int i = 0; i < n; ++i) ++start[((from[i] >> shift) & 255u) + 1];
    if (start[((from[0] >> shift) & 255u) + 1] == n) continue;  // one digit everywhere: nothing moves
    for (int d = 0; d < 256; ++d) start[d + 1] += start[d];
    for (int i = 0; i < n; ++i) to[start[(from[i] >> shift) & 255u]++] = from[i];
    K* swap = from;
    from = to;
    to = swap;
  }
  if (from != keys) std::memcpy(keys, from, sizeof(K) * n);
}
)PRELUDE";

}  // namespace tegula::backends::cpu
