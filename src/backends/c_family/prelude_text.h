// Device text both dialects emit word for word: the debug-mode record and
// extent checks, and the software fp8 rounding. It is written in the C both
// compile (`int` and `long long` are 32 and 64 bits on every target Tegula
// has) with TG_FN for a function's qualifiers, which the dialect defines
// first (kCpuFunctions, kCudaFunctions), and tg_f32_to_bits, which both
// base preludes define.
#pragma once

#include <string_view>

namespace tegula::backends::c_family {

inline constexpr std::string_view kCpuFunctions = "\n#define TG_FN static inline\n";
inline constexpr std::string_view kCudaFunctions = "\n#define TG_FN TG_DEVICE\n";

// The error record the runtime reads after a debug launch (its layout is
// backends/kernel_abi.h's DebugRecord) and the extent test of one access.
inline constexpr std::string_view kDebugRecord = R"PRELUDE(// ---- debug mode: bounds checks and the error record (docs/debug-mode.md) ----
// Filled by the first failing program (the smallest linear program id wins,
// then the earliest site, then the smallest element index); read by the
// runtime after the launch.
struct TgDebugRecord {
  int lock;            // a spin lock around the fields below
  int reported;        // 1 once an error is recorded
  long long program;   // linear program id
  int site;            // the check that failed (the kernel's table of debug sites)
  int param;           // the parameter whose array was left (-1 for asserts)
  int pid[3];
  int unused;
  long long offset;    // element offset from the array's first byte
  long long size;      // the array's size in elements
  long long index;     // linear index of the failing element in its tile
};
static_assert(sizeof(TgDebugRecord) == 64, "the runtime reads this layout");
// One pointer parameter's array: accesses must stay in [base, base + bytes).
struct TgExtent {
  unsigned long long base;
  unsigned long long bytes;
};

// Whether `size` bytes at `p` lie inside the array `e`. Below the base the
// unsigned difference wraps to a huge value, which is outside too.
TG_FN bool tg_inside(const TgExtent& e, const void* p, unsigned long long size) {
  unsigned long long from_base = (unsigned long long)p - e.base;
  return e.bytes >= size && from_base <= e.bytes - size;
}

// How far `size` bytes at `p` reach out of the array `e`, in bytes.
TG_FN unsigned long long tg_outside_by(const TgExtent& e, const void* p, unsigned long long size) {
  unsigned long long address = (unsigned long long)p;
  if (address < e.base) return e.base - address;
  return address + size - e.base - e.bytes;
}
)PRELUDE";

// f32 -> fp8 by bit manipulation (ir/fp8.h's rules: round to nearest even,
// saturate to the largest finite value, infinities too; NaN becomes 0x7f).
// The fnuz conversions (kSoftFp8Fnuz) build on it.
inline constexpr std::string_view kSoftFp8 = R"PRELUDE(// ---- fp8 ----
// f32 -> fp8 with `m` mantissa bits and exponent bias `bias`; `max_code` is the
// largest finite magnitude.
TG_FN unsigned char tg_f32_to_f8(float f, int m, int bias, unsigned max_code) {
  unsigned b = tg_f32_to_bits(f);
  unsigned sign = (b >> 24) & 0x80u, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  int e = (int)(a >> 23) - 127;
  if (e > 16) return (unsigned char)(sign | max_code);      // also inf
  if (e < -bias - m) return (unsigned char)sign;             // below half the smallest step (zeros, subnormals)
  int binade = e < 1 - bias ? 1 - bias : e;                  // fp8 subnormals step like the smallest binade
  int shift = 23 - m + (binade - e);                         // 20..24
  unsigned mant = (a & 0x7fffffu) | 0x800000u;
  unsigned steps = mant >> shift, rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (steps & 1u))) ++steps;
  unsigned code = ((unsigned)(binade + bias - 1) << m) + steps;  // a carry moves to the next binade
  return (unsigned char)(sign | (code > max_code ? max_code : code));
}
)PRELUDE";

// f8e4b15 (tl.float8e4b15), emitted after kSoftFp8 only by units with values
// of it. Its rules are Triton's (ir/fp8.h): to it rounds to nearest with
// ties away from zero and saturates at 1.75 (infinities too, by their sign;
// NaN becomes +1.75 whatever its sign, as the f32 -> f16 step of Triton's
// code makes it); from it is exact.
inline constexpr std::string_view kSoftFp8E4b15 = R"PRELUDE(// ---- fp8 e4b15 ----
TG_FN unsigned char tg_f32_to_f8e4b15(float f) {
  unsigned b = tg_f32_to_bits(f);
  unsigned sign = (b >> 24) & 0x80u, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7eu;                            // NaN
  if (a >= 0x3fe00000u) return (unsigned char)(sign | 0x7eu);  // 1.75 and beyond, inf
  if (a < 0x38800000u) {                                        // below 2^-14: steps of 2^-17
    float x = (f < 0.0f ? -f : f) * 0x1p17f, whole = (float)(unsigned)x;
    return (unsigned char)(sign | ((unsigned)whole + (x - whole >= 0.5f ? 1u : 0u)));
  }
  // The top 8 bits below the sign, rebiased from 127 to 15; adding half a
  // step first rounds ties away from zero, and a carry moves to the next binade.
  return (unsigned char)(sign | (((a + 0x80000u) >> 20) - (112u << 3)));
}
TG_FN unsigned char tg_f64_to_f8e4b15(double d) { return tg_f32_to_f8e4b15(tg_f64_to_f32_odd(d)); }
// (8 + m) * 2^(e - 18), or m * 2^-17 for e = 0: every factor and product exact.
TG_FN float tg_f8e4b15_to_f32(unsigned char h) {
  unsigned e = (h >> 3) & 0xfu, m = h & 0x7u;
  float v = (float)(e ? (m | 8u) : m) * 0x1p-17f * (float)(1u << (e ? e - 1u : 0u));
  return (h & 0x80u) ? -v : v;
}
)PRELUDE";

// The fnuz formats f8e4b8 and f8e5b16 (tl.float8e4b8, tl.float8e5b16: no
// infinities, no -0, 0x80 the one NaN), emitted after kSoftFp8 only by units
// with values of them; they use tg_bits_to_f32, which the CPU prelude and the
// CUDA backend's kFp8FnuzTypes define. Their rules are ir/fp8.h's: to them
// rounds to nearest even (kSoftFp8's tg_f32_to_f8, which saturates at the top
// code 0x7f), NaN and the infinities become 0x80, and a zero result is +0
// whatever the sign; from them is exact. No GPU Tegula targets converts
// them natively.
inline constexpr std::string_view kSoftFp8Fnuz = R"PRELUDE(// ---- fp8 fnuz (e4b8, e5b16) ----
TG_FN unsigned char tg_f32_to_f8fnuz(float f, int m, int bias) {
  if ((tg_f32_to_bits(f) & 0x7fffffffu) >= 0x7f800000u) return 0x80u;  // NaN and inf: the NaN
  unsigned char code = tg_f32_to_f8(f, m, bias, 0x7fu);
  return code == 0x80u ? 0u : code;                                     // no -0
}
// Normal codes move their exponent from bias `bias` to f32's 127;
// subnormals are m-bit steps of 2^(1 - bias - m), a float product that is exact.
TG_FN float tg_f8fnuz_to_f32(unsigned char h, int m, int bias) {
  unsigned sign = (unsigned)(h & 0x80u) << 24, magnitude = h & 0x7fu;
  if (h == 0x80u) return tg_bits_to_f32(0x7fc00000u);
  if ((magnitude >> m) == 0)
    return tg_bits_to_f32(sign | tg_f32_to_bits((float)magnitude * tg_bits_to_f32((unsigned)(128 - bias - m) << 23)));
  return tg_bits_to_f32(sign | ((magnitude + ((unsigned)(127 - bias) << m)) << (23 - m)));
}
TG_FN unsigned char tg_f32_to_f8e4b8(float f) { return tg_f32_to_f8fnuz(f, 3, 8); }
TG_FN unsigned char tg_f32_to_f8e5b16(float f) { return tg_f32_to_f8fnuz(f, 2, 16); }
TG_FN unsigned char tg_f64_to_f8e4b8(double d) { return tg_f32_to_f8e4b8(tg_f64_to_f32_odd(d)); }
TG_FN unsigned char tg_f64_to_f8e5b16(double d) { return tg_f32_to_f8e5b16(tg_f64_to_f32_odd(d)); }
TG_FN float tg_f8e4b8_to_f32(unsigned char h) { return tg_f8fnuz_to_f32(h, 3, 8); }
TG_FN float tg_f8e5b16_to_f32(unsigned char h) { return tg_f8fnuz_to_f32(h, 2, 16); }
)PRELUDE";

}  // namespace tegula::backends::c_family
