#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__clang__)
#define TG_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TG_IVDEP _Pragma("GCC ivdep")
#else
#define TG_IVDEP
#endif

// The blocks of a fused loop in blocks (prefetching, streaming or
// accumulating a reduce block by block): left rolled so that each block
// stays one vectorized loop between what it does per block.
#if defined(__clang__)
#define TG_NO_UNROLL _Pragma("clang loop unroll(disable)")
#elif defined(__GNUC__)
#define TG_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define TG_NO_UNROLL
#endif

// With TEGULA_VECTOR_MATH (set by the toolchain when SLEEF's GNU-ABI library
// links), g++ learns that vector versions of these libm functions exist
// (_ZGVeN16v_expf...), so loops calling them vectorize. SLEEF's versions are
// within 1 ulp.
#if defined(TEGULA_VECTOR_MATH) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TG_SIMD __attribute__((simd("notinbranch")))
extern "C" {
float expf(float) TG_SIMD; float exp2f(float) TG_SIMD; float logf(float) TG_SIMD; float log2f(float) TG_SIMD;
float sinf(float) TG_SIMD; float cosf(float) TG_SIMD; float tanhf(float) TG_SIMD; float erff(float) TG_SIMD;
float powf(float, float) TG_SIMD;
double exp(double) TG_SIMD; double exp2(double) TG_SIMD; double log(double) TG_SIMD; double log2(double) TG_SIMD;
double sin(double) TG_SIMD; double cos(double) TG_SIMD; double tanh(double) TG_SIMD; double erf(double) TG_SIMD;
double pow(double, double) TG_SIMD;
// The `math` op's functions (ir/math_ops.h) that are not single instructions.
float tanf(float) TG_SIMD; float atanf(float) TG_SIMD; float asinf(float) TG_SIMD; float acosf(float) TG_SIMD;
float sinhf(float) TG_SIMD; float coshf(float) TG_SIMD; float asinhf(float) TG_SIMD; float acoshf(float) TG_SIMD;
float atanhf(float) TG_SIMD; float erfcf(float) TG_SIMD; float exp10f(float) TG_SIMD; float expm1f(float) TG_SIMD;
float log10f(float) TG_SIMD; float log1pf(float) TG_SIMD; float cbrtf(float) TG_SIMD;
float atan2f(float, float) TG_SIMD; float hypotf(float, float) TG_SIMD;
double tan(double) TG_SIMD; double atan(double) TG_SIMD; double asin(double) TG_SIMD; double acos(double) TG_SIMD;
double sinh(double) TG_SIMD; double cosh(double) TG_SIMD; double asinh(double) TG_SIMD; double acosh(double) TG_SIMD;
double atanh(double) TG_SIMD; double erfc(double) TG_SIMD; double exp10(double) TG_SIMD; double expm1(double) TG_SIMD;
double log10(double) TG_SIMD; double log1p(double) TG_SIMD; double cbrt(double) TG_SIMD;
double atan2(double, double) TG_SIMD; double hypot(double, double) TG_SIMD;
}
#endif

// The 16-lane expf that loops on 512-bit vectors call, defined here under
// SLEEF's symbol so that it binds before the library's: SLEEF's u10
// algorithm (rounded x log2 e, a two-part ln 2, the same polynomial), with
// vscalefps for the scaling by 2^q. Its results equal SLEEF's on every one
// of the 2^32 inputs (NaN payloads aside; tests/cpp/test_cpu_fast_paths.cpp),
// in fewer instructions than the library's, and without a call through
// the PLT: softmax spends most of its compute in it.
#if defined(TEGULA_VECTOR_MATH) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__AVX512F__)
#include <immintrin.h>
static __m512 tg_expf_16(__m512 x) __asm__("_ZGVeN16v_expf") __attribute__((used));
static __m512 tg_expf_16(__m512 x) {
  const __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.442695040888963407359924681001892137f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 s = _mm512_fnmadd_ps(q, _mm512_set1_ps(0.693145751953125f), x);
  s = _mm512_fnmadd_ps(q, _mm512_set1_ps(1.428606765330187045e-06f), s);
  __m512 u = _mm512_set1_ps(0.000198527617612853646278381f);
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.00139304355252534151077271f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.00833336077630519866943359f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.0416664853692054748535156f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.166666671633720397949219f));
  u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.5f));
  u = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s));
  u = _mm512_scalef_ps(u, q);
  // Where the reduction loses meaning (infinities): SLEEF's limits.
  u = _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(x, _mm512_set1_ps(100.0f), _CMP_GT_OQ),
                            _mm512_set1_ps(__builtin_inff()));
}
#endif

static inline float tg_bits_to_f32(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
static inline uint32_t tg_f32_to_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

template <class To, class From>
static inline To tg_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between different widths");
  To r;
  std::memcpy(&r, &x, sizeof r);
  return r;
}

// --- f16 / bf16 (stored as uint16_t, computed in float) ---------------------
// f16 -> f32 is exact. Moving exponent+mantissa to float position and scaling
// by 2^112 rebiases normals and turns f16 subnormals (float subnormals after
// the shift) into the right normal floats; inf/NaN keep an all-ones exponent.
static inline float tg_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  uint32_t scaled = tg_f32_to_bits(tg_bits_to_f32(em << 13) * 0x1p112f);
  uint32_t bits = em >= 0x7c00u ? ((em << 13) | 0x7f800000u) : scaled;
  return tg_bits_to_f32(sign | bits);
}

// f32 -> f16, round to nearest even; NaN stays NaN (quiet, top payload kept).
static inline uint16_t tg_f32_to_f16(float f) {
  uint32_t bits = tg_f32_to_bits(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t a = bits & 0x7fffffffu;
  uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  // Below 2^-14 the result is subnormal: adding 0.5f makes the FPU round the
  // value at 2^-24 granularity, which is exactly the f16 subnormal step.
  uint32_t tiny = tg_f32_to_bits(tg_bits_to_f32(a) + 0.5f) - 0x3f000000u;
  // Rebias the exponent (127 -> 15) and round half to even on bit 13; a carry
  // out of the mantissa correctly bumps the exponent.
  uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  uint32_t r = a > 0x7f800000u ? nan : a >= 0x477ff000u ? 0x7c00u : a < 0x38800000u ? tiny : normal;
  return (uint16_t)(sign | r);
}

// The same two conversions by the host's F16C instructions, for element
// loops that stay scalar (codegen_fusion.cpp: they gather or scatter 16-bit
// elements, which no x86 vector instruction does). Such a loop declares
// these objects under the names above, so that each conversion in it is one
// instruction instead of a dozen; every other loop keeps the code above,
// which g++ vectorizes and the intrinsics are not. Equal bits for every
// input, except that a signalling NaN widens to a quiet one (IEEE 754's
// conversion; tests/cpp/test_cpu_fast_paths.cpp checks both directions).
#if defined(__x86_64__) && defined(__F16C__)
#include <immintrin.h>
#endif
struct tg_scalar_f16_to_f32 {
  float operator()(uint16_t h) const {
#if defined(__x86_64__) && defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return ::tg_f16_to_f32(h);
#endif
  }
};
struct tg_scalar_f32_to_f16 {
  uint16_t operator()(float f) const {
#if defined(__x86_64__) && defined(__F16C__)
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    return ::tg_f32_to_f16(f);
#endif
  }
};

static inline float tg_bf16_to_f32(uint16_t h) { return tg_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t tg_f32_to_bf16(float f) {
  uint32_t bits = tg_f32_to_bits(f);
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t nan = (bits >> 16) | 0x40u;
  return (uint16_t)((bits & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// Round toward zero (tl.cast(..., fp_downcast_rounding="rtz")): the mantissa
// is truncated, so a finite value never becomes inf (f16 saturates at 65504);
// NaN stays NaN. f16 subnormals: the value scaled by 2^24 (exact) and
// truncated by the integer conversion.
static inline uint16_t tg_f32_to_f16_rtz(float f) {
  uint32_t bits = tg_f32_to_bits(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t a = bits & 0x7fffffffu;
  uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t tiny = (uint32_t)(tg_bits_to_f32(a) * 0x1p24f);
  uint32_t normal = (a - 0x38000000u) >> 13;
  uint32_t r = a > 0x7f800000u ? nan : a == 0x7f800000u ? 0x7c00u : a >= 0x47800000u ? 0x7bffu
             : a < 0x38800000u ? tiny : normal;
  return (uint16_t)(sign | r);
}
static inline uint16_t tg_f32_to_bf16_rtz(float f) {
  uint32_t bits = tg_f32_to_bits(f);
  return (uint16_t)((bits & 0x7fffffffu) > 0x7f800000u ? (bits >> 16) | 0x40u : bits >> 16);
}
static inline float tg_f64_to_f32_rtz(double d) {
  float r = (float)d;
  if (r != r || (double)r == d || std::fabs((double)r) < std::fabs(d)) return r;
  uint32_t b = tg_f32_to_bits(r) - 1;  // rounded away from zero (maybe to inf): one step back
  return tg_bits_to_f32(b);
}

// Narrowing through float twice could round twice. Rounding the first step
// to odd (truncate, then set the last bit when inexact) keeps the information
// the second, round-to-nearest-even step needs: float has >= 2 spare bits
// over f16 and bf16.
static inline float tg_f64_to_f32_odd(double d) {
  float r = (float)d;
  if (r != r || (double)r == d) return r;
  uint32_t b = tg_f32_to_bits(r);
  if (std::fabs((double)r) > std::fabs(d)) b -= 1;
  return tg_bits_to_f32(b | 1u);
}
static inline float tg_u64_to_f32_odd(uint64_t m) {
  if (m < (1ull << 24)) return (float)m;
  int shift = 40 - __builtin_clzll(m);  // keep the 24 leading bits
  uint64_t kept = (m >> shift) | (uint64_t)((m & ((1ull << shift) - 1)) != 0);
  return std::ldexp((float)kept, shift);
}
static inline float tg_i64_to_f32_odd(int64_t v) {
  float f = tg_u64_to_f32_odd(v < 0 ? 0ull - (uint64_t)v : (uint64_t)v);
  return v < 0 ? -f : f;
}
static inline uint16_t tg_f64_to_f16(double d) { return tg_f32_to_f16(tg_f64_to_f32_odd(d)); }
static inline uint16_t tg_f64_to_bf16(double d) { return tg_f32_to_bf16(tg_f64_to_f32_odd(d)); }

// --- integers: wrapping, never undefined -------------------------------------
// Arithmetic runs in an unsigned type of at least 32 bits (narrower unsigned
// types would promote to int and could overflow), then converts back, which
// wraps modulo 2^bits.
template <class T>
using tg_uint = typename std::conditional<(sizeof(T) < 4), uint32_t, typename std::make_unsigned<T>::type>::type;

template <class T> static inline T tg_add(T a, T b) { return (T)((tg_uint<T>)a + (tg_uint<T>)b); }
template <class T> static inline T tg_sub(T a, T b) { return (T)((tg_uint<T>)a - (tg_uint<T>)b); }
template <class T> static inline T tg_mul(T a, T b) { return (T)((tg_uint<T>)a * (tg_uint<T>)b); }
template <class T> static inline T tg_neg(T a) { return (T)((tg_uint<T>)0 - (tg_uint<T>)a); }
template <class T> static inline T tg_abs(T a) { return a < 0 ? tg_neg(a) : a; }

// x / 0 == 0 and x % 0 == x (so x == (x / y) * y + x % y still holds);
// MIN / -1 wraps to MIN and MIN % -1 == 0.
template <class T> static inline T tg_div(T a, T b) {
  if (b == 0) return 0;
  if (std::is_signed<T>::value && b == (T)-1) return tg_neg(a);
  return (T)(a / b);
}
template <class T> static inline T tg_rem(T a, T b) {
  if (b == 0) return a;
  if (std::is_signed<T>::value && b == (T)-1) return 0;
  return (T)(a % b);
}

// Shift amounts are read as unsigned; amounts >= the bit width shift every
// bit out: 0, or all sign bits for an arithmetic right shift.
template <class T> static inline T tg_shl(T a, T b) {
  tg_uint<T> s = (tg_uint<T>)(typename std::make_unsigned<T>::type)b;
  return s >= 8 * sizeof(T) ? (T)0 : (T)((tg_uint<T>)a << s);
}
template <class T> static inline T tg_shr(T a, T b) {
  tg_uint<T> s = (tg_uint<T>)(typename std::make_unsigned<T>::type)b;
  T fill = (std::is_signed<T>::value && a < 0) ? (T)-1 : (T)0;
  return s >= 8 * sizeof(T) ? fill : (T)(a >> s);
}

// Integer minimum and maximum. 8- and 16-bit ones compare in int32: g++ 12
// (-O2 and above, AVX-512BW) dies with "unrecognizable insn" on a vector
// min or max of 8- or 16-bit lanes merged under a mask (`m ? min(a, b) :
// 0`, what a masked tile's reduction computes); in int32 it compiles, and
// the values are the same.
template <class T> static inline T tg_min(T a, T b) {
  if constexpr (sizeof(T) < 4) return (T)std::min<int32_t>(a, b);
  else return std::min(a, b);
}
template <class T> static inline T tg_max(T a, T b) {
  if constexpr (sizeof(T) < 4) return (T)std::max<int32_t>(a, b);
  else return std::max(a, b);
}

// The high half of the unsigned product. For 16-bit types the product is
// hidden from the vectorizer: GCC 12 at -O2 and above turns the high half of
// a 16-bit product converted to int16 into a signed high multiply (pmulhw),
// wrong whenever an operand is negative; the empty asm keeps it scalar.
template <class T> static inline T tg_umulhi(T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  if constexpr (sizeof(T) == 8) {
    return (T)(uint64_t)(((unsigned __int128)(U)a * (U)b) >> 64);
  } else {
    uint64_t product = (uint64_t)(U)a * (uint64_t)(U)b;
    if constexpr (sizeof(T) == 2) __asm__("" : "+r"(product));
    return (T)(U)(product >> (8 * sizeof(T)));
  }
}

// Integer power by squaring, wrapping; negative exponents give 0 except for
// bases 1 and -1.
template <class T> static inline T tg_ipow(T base, T exp) {
  if (std::is_signed<T>::value && exp < 0)
    return base == 1 ? (T)1 : base == (T)-1 ? ((exp & 1) ? (T)-1 : (T)1) : (T)0;
  T r = 1;
  while (exp != 0) {
    if (exp & 1) r = tg_mul(r, base);
    base = tg_mul(base, base);
    exp = (T)((typename std::make_unsigned<T>::type)exp >> 1);
  }
  return r;
}

// --- floats --------------------------------------------------------------------
// min/max return the non-NaN operand (IEEE minNum/maxNum); the _nan variants
// propagate NaN.
// `a < b ? a : b` is x86's minps exactly (b when either is NaN or both are
// zeros), so written as its own value g++ emits one instruction and a fix-up
// for the one operand whose NaN must not win, where the nested form cost three
// compares and a blend per vector (a tenth of softmax's compute).
template <class F> static inline F tg_fmin(F a, F b) { const F m = a < b ? a : b; return b != b ? a : m; }
template <class F> static inline F tg_fmax(F a, F b) { const F m = a > b ? a : b; return b != b ? a : m; }
// With NaN propagated: a NaN `a` is the result; a NaN `b` already is `m`.
template <class F> static inline F tg_fmin_nan(F a, F b) { const F m = a < b ? a : b; return a != a ? a : m; }
template <class F> static inline F tg_fmax_nan(F a, F b) { const F m = a > b ? a : b; return a != a ? a : m; }

static constexpr double tg_pow2(int n) { return n == 0 ? 1.0 : 2.0 * tg_pow2(n - 1); }

// float -> integer truncates toward zero and saturates; NaN gives 0. The value
// converted is clamped first so no conversion is ever out of range.
template <class D, class F> static inline D tg_float_to_int(F x) {
  const F hi = (F)tg_pow2(std::is_signed<D>::value ? 8 * (int)sizeof(D) - 1 : 8 * (int)sizeof(D));
  const F lo = std::is_signed<D>::value ? -hi : (F)0;
  F safe = (x != x || x >= hi) ? (F)0 : (x < lo ? lo : x);
  D r = (D)safe;
  r = x >= hi ? std::numeric_limits<D>::max() : r;
  return r;
}

// ptr + off (in elements), computed on addresses: masked-off lanes may hold
// pointers far outside any object, which C++ pointer arithmetic forbids.
template <class T, class I> static inline T* tg_addptr(T* p, I off) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + (uintptr_t)(int64_t)off * sizeof(T));
}

// c ? a : b as a blend of their bits, both evaluated: a select computed
// again from loaded tiles (codegen_fusion.cpp). g++ turns `c ? x[i] - m : 0`
// into a branch (the subtraction may trap, so it is not computed where c is
// false), which keeps the loop scalar on AVX2; a blend vectorizes.
template <size_t Bytes> struct tg_bits_of;
template <> struct tg_bits_of<1> { using type = uint8_t; };
template <> struct tg_bits_of<2> { using type = uint16_t; };
template <> struct tg_bits_of<4> { using type = uint32_t; };
template <> struct tg_bits_of<8> { using type = uint64_t; };
template <class T> struct tg_type_of { using type = T; };
template <class T> static inline T tg_select(bool c, T a, typename tg_type_of<T>::type b) {  // b converts to a's type
  using U = typename tg_bits_of<sizeof(T)>::type;
  U x, y;
  std::memcpy(&x, &a, sizeof(T)), std::memcpy(&y, &b, sizeof(T));
  const U take_a = (U)0 - (U)c;
  const U bits = (U)((x & take_a) | (y & (U)~take_a));
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}

// Whether bytes [a, a + a_bytes) and [b, b + b_bytes) overlap, on addresses
// (the two need not lie in one object).
static inline bool tg_overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + (uintptr_t)b_bytes && y < x + (uintptr_t)a_bytes;
}

// --- loops ---------------------------------------------------------------------
// Iterations of `for iv in range(lb, ub, step)`, computed without overflow; a
// zero step runs no iterations.
template <class T> static inline uint64_t tg_trip_count(T lb, T ub, T step) {
  __int128 l = lb, u = ub, s = step;
  if (s > 0) return u > l ? (uint64_t)((u - l + s - 1) / s) : 0;
  if (s < 0) return l > u ? (uint64_t)((l - u - s - 1) / -s) : 0;
  return 0;
}
template <class T> static inline T tg_induction(T lb, uint64_t k, T step) {
  return (T)((tg_uint<T>)lb + (tg_uint<T>)k * (tg_uint<T>)step);
}

// --- dot: register-blocked float matrix product ---------------------------------
// tg_dot_f32<M, N, K>(a, b, c): c[M x N] += a[M x K] * b[K x N], row-major
// floats, c not overlapping a or b. Every element of c gets one fused
// multiply-add per product in k order, exactly like the plain loop nest, so
// the blocking below changes speed, never bits. A block of MR rows x NV
// vectors of c stays in registers while k runs: per k, NV vectors of a row
// of b are loaded and each of the MR elements a[i][k] is broadcast against
// them. MR is as large as the vector registers allow (accumulators, the NV
// b vectors, a broadcast, a spare). Columns past the last whole vector take
// the scalar loop.
template <int M, int N, int K>
static inline void tg_dot_f32_columns(const float* a, const float* b, float* c, int first_column) {
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      const float x = a[i * K + k];
      TG_IVDEP
      for (int j = first_column; j < N; ++j) c[i * N + j] = std::fma(x, b[k * N + j], c[i * N + j]);
    }
}

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#define TG_VLANES 16
#define TG_VREGS 32
#define TG_DOT_MAX_NV 4
typedef __m512 tg_vfloat;
static inline tg_vfloat tg_vload(const float* p) { return _mm512_loadu_ps(p); }
static inline void tg_vstore(float* p, tg_vfloat v) { _mm512_storeu_ps(p, v); }
static inline tg_vfloat tg_vsplat(float x) { return _mm512_set1_ps(x); }
static inline tg_vfloat tg_vfma(tg_vfloat a, tg_vfloat b, tg_vfloat c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TG_VLANES 8
#define TG_VREGS 16
#define TG_DOT_MAX_NV 2
typedef __m256 tg_vfloat;
static inline tg_vfloat tg_vload(const float* p) { return _mm256_loadu_ps(p); }
static inline void tg_vstore(float* p, tg_vfloat v) { _mm256_storeu_ps(p, v); }
static inline tg_vfloat tg_vsplat(float x) { return _mm256_set1_ps(x); }
static inline tg_vfloat tg_vfma(tg_vfloat a, tg_vfloat b, tg_vfloat c) { return _mm256_fmadd_ps(a, b, c); }
#endif

#ifdef TG_VLANES
// c[MR x NV vectors] += a[MR x K] * b[K x NV vectors]; a, b, c point at the
// block's first element, rows K (a) and N (b, c) elements apart.
template <int MR, int NV, int N, int K>
static inline void tg_dot_f32_block(const float* __restrict a, const float* __restrict b, float* __restrict c) {
  tg_vfloat acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = tg_vload(c + i * N + v * TG_VLANES);
  for (int k = 0; k < K; ++k) {
    tg_vfloat row[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) row[v] = tg_vload(b + k * N + v * TG_VLANES);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const tg_vfloat x = tg_vsplat(a[i * K + k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = tg_vfma(x, row[v], acc[i][v]);
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) tg_vstore(c + i * N + v * TG_VLANES, acc[i][v]);
}

// One panel of NV vectors of columns, all M rows: blocks of MR rows, then
// one block of the rows left.
template <int M, int NV, int N, int K>
static inline void tg_dot_f32_panel(const float* a, const float* b, float* c) {
  constexpr int most_rows = (TG_VREGS - NV - 2) / NV;
  constexpr int MR = M < most_rows ? M : most_rows;
  constexpr int full = M / MR * MR;
  for (int i = 0; i < full; i += MR) tg_dot_f32_block<MR, NV, N, K>(a + i * K, b, c + i * N);
  if constexpr (full < M) tg_dot_f32_block<M - full, NV, N, K>(a + full * K, b, c + full * N);
}

template <int M, int N, int K, int J = 0>
static inline void tg_dot_f32_panels(const float* a, const float* b, float* c) {
  constexpr int vectors_left = (N - J) / TG_VLANES;
  if constexpr (vectors_left > 0) {
    constexpr int NV = vectors_left < TG_DOT_MAX_NV ? vectors_left : TG_DOT_MAX_NV;
    tg_dot_f32_panel<M, NV, N, K>(a, b + J, c + J);
    tg_dot_f32_panels<M, N, K, J + NV * TG_VLANES>(a, b, c);
  } else if constexpr (J < N) {
    tg_dot_f32_columns<M, N, K>(a, b, c, J);
  }
}
#endif

template <int M, int N, int K>
static inline void tg_dot_f32(const float* a, const float* b, float* c) {
#ifdef TG_VLANES
  tg_dot_f32_panels<M, N, K>(a, b, c);
#else
  tg_dot_f32_columns<M, N, K>(a, b, c, 0);
#endif
}

// --- scratch memory for large tiles ---------------------------------------------
// One buffer per thread, grown on demand and reused by every program the
// thread runs, so large tiles never sit on the stack and never cost a malloc
// per program.
struct tg_scratch_buffer {
  unsigned char* data = nullptr;
  size_t size = 0;
  ~tg_scratch_buffer() { std::free(data); }
};
static unsigned char* tg_scratch(size_t bytes) {
  static thread_local tg_scratch_buffer buffer;
  if (buffer.size < bytes) {
    std::free(buffer.data);
    buffer.data = static_cast<unsigned char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    buffer.size = buffer.data != nullptr ? bytes : 0;
  }
  return buffer.data;
}
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <unistd.h>

// The bytes of the highest-level data cache of CPU 0, as sysfs gives it
// (its `size` reads "32768K"); 0 when sysfs has none.
static inline long tg_sysfs_last_level_cache() {
  long bytes = 0;
  int best = 0;
  for (int index = 0; index < 16; ++index) {
    char path[96], text[32] = {};
    auto read = [&](const char* name) {
      std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, name);
      FILE* f = std::fopen(path, "r");
      if (f == nullptr) return false;
      bool ok = std::fgets(text, sizeof text, f) != nullptr;
      std::fclose(f);
      return ok;
    };
    if (!read("type") || std::strncmp(text, "Instruction", 11) == 0 || !read("level")) continue;
    int level = std::atoi(text);
    if (level <= best || !read("size")) continue;
    char* unit = nullptr;
    long size = std::strtol(text, &unit, 10);
    long scale = *unit == 'K' ? 1024L : *unit == 'M' ? 1024L * 1024 : *unit == 'G' ? 1024L * 1024 * 1024 : 1;
    if (size > 0) bytes = size * scale, best = level;
  }
  return bytes;
}

// Launches moving more bytes than this stream their stores: the last-level
// cache a core shares. sysfs first: glibc's sysconf may report a whole
// socket's L3 instead (384 MB on a two-vCPU EPYC whose cores share 32 MB),
// which kept launches of up to 384 MB from streaming.
static inline double tg_stream_threshold() {
  static const double threshold = [] {
    if (const char* forced = std::getenv("TEGULA_STREAM_STORES")) {
      if (forced[0] == '0' && forced[1] == '\0') return __builtin_inf();
      if (forced[0] == '1' && forced[1] == '\0') return 0.0;
    }
    long llc = tg_sysfs_last_level_cache();
#if defined(_SC_LEVEL3_CACHE_SIZE)
    if (llc <= 0) llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return llc > 0 ? (double)llc : 32.0 * 1024 * 1024;
  }();
  return threshold;
}

// Whether this launch streams: its programs together move more than the cache.
static inline bool tg_streams(const int32_t* grid, int64_t program_bytes) {
  return (double)grid[0] * grid[1] * grid[2] * (double)program_bytes > tg_stream_threshold();
}

// Writes the 64-byte line at `d` (line-aligned) from `s` without reading it.
static inline void tg_stream_line(unsigned char* d, const unsigned char* s) {
#if defined(__AVX512F__)
  _mm512_stream_si512(reinterpret_cast<__m512i*>(d), _mm512_loadu_si512(s));
#elif defined(__AVX__)
  _mm256_stream_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32)));
#elif defined(__SSE2__)
  for (int k = 0; k < 64; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)));
#else
  std::memcpy(d, s, 64);
#endif
}

// Streams `lines` whole lines from `s` to the line-aligned `d`. NumPy's large
// arrays start 16 bytes past a line, so a tile staged in an aligned buffer
// is read 16 bytes off its lines, and each line's load would straddle two
// (a third of a streamed softmax's compute on a Zen 4). Where `s` is 4-byte
// aligned, each aligned line of the source is loaded once and two of them
// are merged into the one to write; the bytes are the same.
static inline void tg_stream_lines(unsigned char* d, const unsigned char* s, int64_t lines) {
#if defined(__AVX512F__)
  const uintptr_t offset = reinterpret_cast<uintptr_t>(s) & 63;
  if (lines > 0 && offset != 0 && offset % 4 == 0) {
    const unsigned char* aligned = s - offset;  // every line read holds bytes of s
    const __m512i pick = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32((int)(offset / 4)));
    __m512i low = _mm512_load_si512(reinterpret_cast<const __m512i*>(aligned));
    for (int64_t k = 0; k < lines; ++k) {
      const __m512i high = _mm512_load_si512(reinterpret_cast<const __m512i*>(aligned + 64 * (k + 1)));
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64 * k), _mm512_permutex2var_epi32(low, pick, high));
      low = high;
    }
    return;
  }
#endif
  for (int64_t k = 0; k < lines; ++k) tg_stream_line(d + 64 * k, s + 64 * k);
}

// Copies `bytes` from `src` to `dst` with non-temporal stores for the whole
// 64-byte lines of dst (ordinary stores for a partial line at either end).
static inline void tg_stream_store(void* dst, const void* src, int64_t bytes) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  int64_t head = (int64_t)((64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  if (head > bytes) head = bytes;
  std::memcpy(d, s, (size_t)head);
  d += head, s += head, bytes -= head;
  tg_stream_lines(d, s, bytes / 64);
  d += bytes / 64 * 64, s += bytes / 64 * 64;
  std::memcpy(d, s, (size_t)(bytes % 64));
}

// The partial line at the end of a streamed tile, held back for the next
// program of the thread: NumPy's large arrays start 16 bytes past a line,
// so consecutive programs' tiles share a line at each boundary, and two
// ordinary partial writes of it read the line from memory first. Held
// here, the next program's head completes it and it is streamed whole.
// What is still held when the entry returns is written by the destructor
// (before the entry's fence).
struct tg_line_carry {
  unsigned char* line = nullptr;  // the held line; null when nothing is held
  int64_t filled = 0;             // its bytes [0, filled) are held
  alignas(64) unsigned char bytes[64];

  tg_line_carry() = default;
  tg_line_carry(const tg_line_carry&) = delete;
  tg_line_carry& operator=(const tg_line_carry&) = delete;
  ~tg_line_carry() { flush(); }
  void flush() {
    if (line != nullptr) std::memcpy(line, bytes, (size_t)filled);
    line = nullptr;
  }
  // Before the program reads or writes `size` bytes at `p`: the held bytes
  // go to memory first if `p` lies in the held line.
  void flush_if_holds(const void* p, size_t size) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p), start = reinterpret_cast<uintptr_t>(line);
    if (line != nullptr && first < start + 64 && first + size > start) flush();
  }
};

// The same copy in parts, as a loop fills `src`: once bytes [0, to) of it
// are final, streams the whole lines of dst that end past `from` and by
// `to`, so each line goes out once, as soon as it is complete, and the
// writes overlap the loop's work instead of following it as a burst. The
// call with `to` == `bytes` also writes the partial lines at either end:
// with a `carry`, the head completes the line the thread's last tile left
// there, and the tail is held for the next tile.
static inline void tg_stream_store_part(void* dst, const void* src, int64_t bytes, int64_t from, int64_t to,
                                        tg_line_carry* carry) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  const int64_t to_boundary = (int64_t)((64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  const int64_t head = to_boundary > bytes ? bytes : to_boundary;
  // The whole lines start at head + 64 k; the first to write ends past `from`.
  int64_t line = from - 63 - head <= 0 ? head : head + (from - 63 - head + 63) / 64 * 64;
  if (line + 64 <= to) tg_stream_lines(d + line, s + line, (to - line) / 64);
  if (to < bytes) return;
  const int64_t tail = head + (bytes - head) / 64 * 64;
  if (carry == nullptr) {
    std::memcpy(d, s, (size_t)head);
    std::memcpy(d + tail, s + tail, (size_t)(bytes - tail));
    return;
  }
  if (head > 0) {
    unsigned char* head_line = d + head - 64;
    if (head == to_boundary && carry->line == head_line && carry->filled == 64 - head) {
      std::memcpy(carry->bytes + carry->filled, s, (size_t)head);
      tg_stream_line(head_line, carry->bytes);
      carry->line = nullptr;
    } else {
      carry->flush();  // first, in case it holds bytes of this same line
      std::memcpy(d, s, (size_t)head);
    }
  }
  if (tail < bytes) {
    carry->flush();
    carry->line = d + tail;
    carry->filled = bytes - tail;
    std::memcpy(carry->bytes, s + tail, (size_t)carry->filled);
  }
}

// Next tiles (codegen_fusion.cpp): a program that reads a row in place
// waits for it in its first loop and then computes from cache with no
// memory traffic, so time per row is memory time plus compute time, and
// the hardware prefetcher, which stops at 4 KB pages, does not fetch the
// next row. Programs of one thread run in order, so the row the next one
// reads is predicted from the last two this thread read (`last`, kept by
// the entry), and later loops fetch it into L2 while they compute.
// Only a launch that streams does this; a prediction that misses (the
// first program of a chunk) costs a few prefetches, which never fault.
static inline const char* tg_next_tile(const char*& last, const void* now, bool streams) {
  const char* here = static_cast<const char*>(now);
  const char* next = nullptr;
  if (streams && last != nullptr)  // in integers: the guess may lie outside every array
    next = reinterpret_cast<const char*>(2 * reinterpret_cast<uintptr_t>(here) - reinterpret_cast<uintptr_t>(last));
  last = here;
  return next;
}

// Fetches `bytes` (whole lines) from `offset` on of `tile` into L2; a null
// tile does nothing. Forced inline: g++ does not inline it into a program
// compiled under another target pragma, and then drops the call, which has
// no effect it can see.
__attribute__((always_inline)) static inline void tg_prefetch(const char* tile, int64_t offset, int64_t bytes) {
  if (tile == nullptr) return;
  for (int64_t k = offset; k < offset + bytes; k += 64) __builtin_prefetch(tile + k, 0, 2);
}


// Makes this thread's streamed stores visible to every thread when it goes.
struct tg_stream_fence {
  tg_stream_fence() = default;
  tg_stream_fence(const tg_stream_fence&) = delete;
  tg_stream_fence& operator=(const tg_stream_fence&) = delete;
  ~tg_stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
  }
};

