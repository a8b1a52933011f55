// The helpers generated CPU code calls for the libdevice ops (ops.def's LIB
// rows, and casts in a directed rounding), emitted after the prelude only by
// units that have such an op (so every other kernel's source stays as it
// was). docs/backend-cpu.md, "libdevice", states their accuracy.
//
// Directed rounding runs the one IEEE operation with the hardware's rounding
// mode set for it (fesetround) and restored after. The compiler assumes
// round-to-nearest (no -frounding-math), so empty asm statements that read
// and write the operands and the result through memory keep it from folding
// the operation or moving it out of the region where the mode holds.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

inline constexpr std::string_view kLibdevicePrelude = R"PRELUDE(
// ---- libdevice ----
#include <cfenv>
#include <chrono>
#include <sched.h>

template <class T> static inline void tg_opaque(T& x) { __asm__ volatile("" : "+m"(x) : : "memory"); }
struct tg_rounding_scope {
  int saved;
  explicit tg_rounding_scope(int mode) : saved(std::fegetround()) { std::fesetround(mode); }
  ~tg_rounding_scope() { std::fesetround(saved); }
};

// To nearest even is the mode kernels run in; -ffp-contract=off keeps a
// product from fusing with the sum it feeds.
template <class T> static inline T tg_add_rn(T a, T b) { return a + b; }
template <class T> static inline T tg_sub_rn(T a, T b) { return a - b; }
template <class T> static inline T tg_mul_rn(T a, T b) { return a * b; }
template <class T> static inline T tg_div_rn(T a, T b) { return a / b; }
template <class T> static inline T tg_fma_rn(T a, T b, T c) { return std::fma(a, b, c); }
template <class T> static inline T tg_sqrt_rn(T a) { return std::sqrt(a); }

#define TG_DIRECTED1(name, m, MODE, expr)          \
  template <class T> static inline T name##_##m(T a) { \
    tg_rounding_scope scope(MODE);                  \
    tg_opaque(a);                                   \
    T r = expr;                                     \
    tg_opaque(r);                                   \
    return r;                                       \
  }
#define TG_DIRECTED2(name, m, MODE, expr)               \
  template <class T> static inline T name##_##m(T a, T b) { \
    tg_rounding_scope scope(MODE);                       \
    tg_opaque(a);                                        \
    tg_opaque(b);                                        \
    T r = expr;                                          \
    tg_opaque(r);                                        \
    return r;                                            \
  }
#define TG_DIRECTED(m, MODE)                                                 \
  TG_DIRECTED2(tg_add, m, MODE, a + b)                                       \
  TG_DIRECTED2(tg_sub, m, MODE, a - b)                                       \
  TG_DIRECTED2(tg_mul, m, MODE, a * b)                                       \
  TG_DIRECTED2(tg_div, m, MODE, a / b)                                       \
  TG_DIRECTED1(tg_sqrt, m, MODE, std::sqrt(a))                               \
  template <class T> static inline T tg_fma_##m(T a, T b, T c) {             \
    tg_rounding_scope scope(MODE);                                           \
    tg_opaque(a);                                                            \
    tg_opaque(b);                                                            \
    tg_opaque(c);                                                            \
    T r = std::fma(a, b, c);                                                 \
    tg_opaque(r);                                                            \
    return r;                                                                \
  }                                                                          \
  template <class D, class S> static inline D tg_cvt_##m(S x) {              \
    tg_rounding_scope scope(MODE);                                           \
    tg_opaque(x);                                                            \
    D r = (D)x;                                                              \
    tg_opaque(r);                                                            \
    return r;                                                                \
  }
TG_DIRECTED(rz, FE_TOWARDZERO)
TG_DIRECTED(rd, FE_DOWNWARD)
TG_DIRECTED(ru, FE_UPWARD)
#undef TG_DIRECTED
#undef TG_DIRECTED1
#undef TG_DIRECTED2

// 1/sqrt(x) rounded once. The double quotient is within 2^-50 of the exact
// value; only near a midpoint m of two floats can that pick the wrong one,
// and there the sign of m^2 x - 1 decides (m^2 is exact in double, and the
// fma rounds the exact m^2 x - 1 once, which keeps its sign; it is never 0,
// as 1/sqrt(x) of a float is never such a midpoint).
static inline float tg_rsqrt_rn(float x) {
  double d = 1.0 / std::sqrt((double)x);
  float r = (float)d;
  if (!(x > 0) || std::isinf(x) || std::isinf(r)) return r;
  float n = std::nextafter(r, d > (double)r ? INFINITY : 0.0f);
  double m = ((double)r + (double)n) * 0.5;
  if (std::fabs(d - m) > std::ldexp(m, -40)) return r;
  bool below_m = std::fma(m * m, (double)x, -1.0) > 0;
  return below_m ? std::min(r, n) : std::max(r, n);
}

// sin(pi x) and cos(pi x): x mod 2 is exact, and so is its split into a
// multiple of 1/2 and a rest f in [-1/4, 1/4]; only sin or cos of pi f
// rounds (in double). Zeros: sinpi(n) has the sign of n, cospi(n + 1/2) = +0.
template <class T> static inline T tg_sincospi(T x, bool cosine) {
  if (!std::isfinite(x)) return x - x;
  T r = std::fmod(x, (T)2);
  T n = std::nearbyint(r * 2);
  T f = r - n * (T)0.5;
  int q = ((int)n + (cosine ? 1 : 0)) & 3;
  double a = 3.14159265358979323846 * (double)f;
  double v = (q & 1) ? std::cos(a) : std::sin(a);
  if (q & 2) v = -v;
  if (v == 0) return cosine ? (T)0 : std::copysign((T)0, x);
  return (T)v;
}
template <class T> static inline T tg_sinpi(T x) { return tg_sincospi(x, false); }
template <class T> static inline T tg_cospi(T x) { return tg_sincospi(x, true); }

// The inverse error functions: M. Giles' single-precision approximation
// ("Approximating the erfinv function", GPU Computing Gems, 2011) as the
// start, then Newton steps in double, each squaring the relative error.
// erfcinv steps on erfc itself, in a form that stays finite where exp(-x^2)
// underflows, so its tail reaches the smallest doubles.
static inline double tg_erfinv_start(double x, double w) {  // w = -log((1 - x)(1 + x))
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * x;
}
// x > 0 with erfc(x) = c, for c in (0, 0.1].
static inline double tg_erfcinv_positive(double c) {
  double w = -std::log(c * (2 - c));
  double x;
  if (w < 16) {
    x = tg_erfinv_start(1 - c, w);
  } else {  // erfc(x) ~ exp(-x^2) / (x sqrt(pi))
    double t = -std::log(c);
    x = std::sqrt(t - std::log(std::sqrt(3.14159265358979323846 * t)));
  }
  for (int i = 0; i < 5; ++i)
    x += (std::erfc(x) / c - 1) * std::exp(std::log(c) + x * x) * 0.88622692545275801365;  // sqrt(pi) / 2
  return x;
}
static inline double tg_erfinv_d(double y) {
  double a = std::fabs(y);
  if (!(a <= 1)) return NAN;
  if (a == 1) return std::copysign(INFINITY, y);
  if (a > 0.9) return std::copysign(tg_erfcinv_positive(1 - a), y);
  double x = tg_erfinv_start(a, -std::log((1 - a) * (1 + a)));
  for (int i = 0; i < 3; ++i) x -= (std::erf(x) - a) / (1.12837916709551257390 * std::exp(-x * x));
  return std::copysign(x, y);
}
static inline double tg_erfcinv_d(double c) {
  if (!(c >= 0 && c <= 2)) return NAN;
  if (c == 0) return INFINITY;
  if (c == 2) return -INFINITY;
  // Near 1 the result is near 0, and erfinv of the exact 1 - c keeps its relative accuracy.
  if (c >= 0.1 && c <= 1.9) return tg_erfinv_d(1 - c);
  if (c > 1) return -tg_erfcinv_positive(2 - c);
  return tg_erfcinv_positive(c);
}
template <class T> static inline T tg_erfinv(T x) { return (T)tg_erfinv_d((double)x); }
template <class T> static inline T tg_erfcinv(T x) { return (T)tg_erfcinv_d((double)x); }
// The standard normal distribution and its inverse, through erfc.
template <class T> static inline T tg_normcdf(T x) {
  return (T)(0.5 * std::erfc(-(double)x * 0.70710678118654752440));
}
template <class T> static inline T tg_normcdfinv(T p) {
  return (T)(-1.41421356237309504880 * tg_erfcinv_d(2 * (double)p));
}

// exp(x^2) erfc(x): x^2 split exactly into hi + lo; from 26 on, where erfc
// underflows, the continued fraction erfc(x) = exp(-x^2)/sqrt(pi) /
// (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), which converges fast there.
static inline double tg_erfcx_d(double x) {
  if (x != x) return x;
  if (x < 26) {
    double hi = x * x, lo = std::fma(x, x, -hi);
    return std::exp(hi) * (1 + lo) * std::erfc(x);
  }
  double t = x;
  for (int k = 24; k >= 1; --k) t = x + (0.5 * k) / t;
  return 0.56418958354775628695 / t;  // 1 / sqrt(pi)
}
template <class T> static inline T tg_erfcx(T x) { return (T)tg_erfcx_d((double)x); }

// The modified Bessel functions of the first kind, by the C++17 special
// functions (defined for x >= 0: I0 is even, I1 odd).
template <class T> static inline T tg_bessel_i0(T x) { return (T)std::cyl_bessel_i(0.0, std::fabs((double)x)); }
template <class T> static inline T tg_bessel_i1(T x) {
  return (T)std::copysign(std::cyl_bessel_i(1.0, std::fabs((double)x)), (double)x);
}

// Reciprocals and norms: float in double (one final rounding of a value
// within a few double ulps), double with hypot's scaling against overflow.
template <class T> static inline T tg_rcbrt(T x) { return (T)(1.0 / std::cbrt((double)x)); }
template <class T> static inline T tg_rhypot(T x, T y) { return (T)(1.0 / std::hypot((double)x, (double)y)); }
// An infinite operand gives +inf even beside a NaN (as hypot; C++17's
// three-operand std::hypot would give NaN).
static inline double tg_norm3d_d(double x, double y, double z) {
  if (std::isinf(x) || std::isinf(y) || std::isinf(z)) return INFINITY;
  return std::hypot(x, y, z);
}
template <class T> static inline T tg_norm3d(T x, T y, T z) { return (T)tg_norm3d_d(x, y, z); }
template <class T> static inline T tg_rnorm3d(T x, T y, T z) { return (T)(1.0 / tg_norm3d_d(x, y, z)); }
template <class T> static inline T tg_norm4d(T x, T y, T z, T w) {
  return (T)std::hypot(std::hypot((double)x, (double)y), std::hypot((double)z, (double)w));
}
template <class T> static inline T tg_rnorm4d(T x, T y, T z, T w) {
  return (T)(1.0 / tg_norm4d((double)x, (double)y, (double)z, (double)w));
}

// Clamped to [0, 1]; NaN gives 0.
template <class T> static inline T tg_saturate(T x) { return x > 0 ? (x < 1 ? x : (T)1) : (T)0; }
// The reciprocal CUDA approximates to about 20 bits, here exact.
static inline double tg_rcp64h(double x) { return 1.0 / x; }

// tl.extra.cuda: a monotonic nanosecond clock, and the core the program
// runs on (a CPU's analogue of the multiprocessor).
static inline int64_t tg_globaltimer() {
  return (int64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}
static inline int32_t tg_smid() {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : cpu;
}

// Bits of 32- and 64-bit integers, counted in the operand's own type.
template <class T> static inline T tg_popc(T x) {
  return (T)__builtin_popcountll((unsigned long long)(typename std::make_unsigned<T>::type)x);
}
template <class T> static inline T tg_clz(T x) {
  unsigned long long u = (unsigned long long)(typename std::make_unsigned<T>::type)x;
  return u == 0 ? (T)(8 * sizeof(T)) : (T)(__builtin_clzll(u) - (64 - 8 * (int)sizeof(T)));
}
template <class T> static inline T tg_brev(T x) {
  uint64_t v = (uint64_t)(typename std::make_unsigned<T>::type)x;
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
  v = __builtin_bswap64(v);
  return (T)(typename std::make_unsigned<T>::type)(v >> (64 - 8 * sizeof(T)));
}
)PRELUDE";

}  // namespace tegula::backends::cpu
