// The device helpers generated CUDA code calls for `atomic_rmw` and
// `atomic_cas`, emitted after the prelude only by units that use atomics.
// Like the prelude: no #include, every name prefixed `tg_`.
//
// Each helper takes the memory order S (tg_relaxed ... tg_acq_rel) and scope
// C (tg_cta, tg_gpu, tg_sys) as template arguments and issues one PTX
// `atom.global.<scope>.<sem>.<op>` (`atom.global.<sem>.<scope>.cas`; sm_70+),
// so the order and scope are the instruction's own. Where PTX has no instruction for the element type
// (integer max/min on floats, 16-bit max/min/xchg, bf16 add before sm_90)
// the helper is built from native ones:
//  * f32/f64 max/min: a non-negative value (sign bit clear) orders like its
//    bits read as a signed integer, so `atom.max.s32` does it; a negative
//    one orders in reverse of its bits read as unsigned, so `atom.min.u32`
//    does. Together that is IEEE totalOrder (-NaN < -inf < ... < -0.0 <
//    +0.0 < ... < +inf < +NaN), one instruction, no loop.
//  * the rest: a loop of relaxed `atom.cas` on the bits between a release
//    fence and an acquire fence as the order asks (a CAS that fails only
//    reads, so the fences carry the order).
// Floating-point adds are PTX's: `atom.add.f32` rounds to nearest even and
// flushes subnormal inputs and results to zero (as CUDA's atomicAdd does);
// f64, f16 and bf16 adds keep subnormals.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

inline constexpr std::string_view kAtomicPrelude = R"PRELUDE(
// ---- atomics ----
enum { tg_relaxed = 0, tg_acquire = 1, tg_release = 2, tg_acq_rel = 3 };  // memory order S
enum { tg_cta = 0, tg_gpu = 1, tg_sys = 2 };                              // scope C

// The native instructions (and tg_fence below). TG_EMU_ATOMS:
// tests/python/cuda_emulator.py runs generated code on the host and supplies
// these functions itself; the rest of this file is built from them and runs
// as it is.
#ifndef TG_EMU_ATOMS
// One asm statement per order and scope (their qualifiers are part of the
// instruction text); S and C are constants, so one case survives. Q spells
// the qualifiers: read-modify-write puts the scope first, compare-and-swap
// the order (both orders are PTX's; these are the ones Triton's kernels
// carry, which tests written for Triton look for in the PTX).
#define TG_RMW_QUALIFIERS(SEM, SCOPE) "atom.global." #SCOPE "." #SEM "."
#define TG_CAS_QUALIFIERS(SEM, SCOPE) "atom.global." #SEM "." #SCOPE "."
#define TG_ATOM_AS(Q, S, C, INSTR, OUT, ...)                                             \
  switch ((S) * 3 + (C)) {                                                               \
    case 0: asm volatile(Q(relaxed, cta) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 1: asm volatile(Q(relaxed, gpu) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 2: asm volatile(Q(relaxed, sys) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 3: asm volatile(Q(acquire, cta) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 4: asm volatile(Q(acquire, gpu) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 5: asm volatile(Q(acquire, sys) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 6: asm volatile(Q(release, cta) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 7: asm volatile(Q(release, gpu) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 8: asm volatile(Q(release, sys) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 9: asm volatile(Q(acq_rel, cta) INSTR : OUT : __VA_ARGS__ : "memory"); break;   \
    case 10: asm volatile(Q(acq_rel, gpu) INSTR : OUT : __VA_ARGS__ : "memory"); break;  \
    default: asm volatile(Q(acq_rel, sys) INSTR : OUT : __VA_ARGS__ : "memory"); break;  \
  }
#define TG_ATOM(S, C, INSTR, OUT, ...) TG_ATOM_AS(TG_RMW_QUALIFIERS, S, C, INSTR, OUT, __VA_ARGS__)
#define TG_ATOM_ORDERED(S, C, INSTR, OUT, ...) TG_ATOM_AS(TG_CAS_QUALIFIERS, S, C, INSTR, OUT, __VA_ARGS__)

// NAME<S, C>(p, v): old = *p; *p = old OP v; R is the register constraint of T.
#define TG_ATOM_RMW(NAME, T, OP_TYPE, R)                                                                  \
  template <int S, int C> TG_DEVICE T NAME(T* p, T v) {                                                   \
    T old;                                                                                                \
    TG_ATOM(S, C, OP_TYPE " %0, [%1], %2;", "=" R(old), "l"(p), R(v))                                     \
    return old;                                                                                           \
  }
#define TG_ATOM_CAS(T, B, R)                                                                              \
  template <int S, int C> TG_DEVICE T tg_atom_cas(T* p, T cmp, T v) {                                     \
    T old;                                                                                                \
    TG_ATOM_ORDERED(S, C, "cas." B " %0, [%1], %2, %3;", "=" R(old), "l"(p), R(cmp), R(v))                        \
    return old;                                                                                           \
  }

TG_ATOM_RMW(tg_atom_add, int, "add.u32", "r")
TG_ATOM_RMW(tg_atom_add, unsigned, "add.u32", "r")
TG_ATOM_RMW(tg_atom_add, long long, "add.u64", "l")
TG_ATOM_RMW(tg_atom_add, unsigned long long, "add.u64", "l")
TG_ATOM_RMW(tg_atom_add, float, "add.f32", "f")
TG_ATOM_RMW(tg_atom_add, double, "add.f64", "d")
TG_ATOM_RMW(tg_atom_add_f16, tg_f16, "add.noftz.f16", "h")
TG_ATOM_RMW(tg_atom_max, int, "max.s32", "r")
TG_ATOM_RMW(tg_atom_max, unsigned, "max.u32", "r")
TG_ATOM_RMW(tg_atom_max, long long, "max.s64", "l")
TG_ATOM_RMW(tg_atom_max, unsigned long long, "max.u64", "l")
TG_ATOM_RMW(tg_atom_min, int, "min.s32", "r")
TG_ATOM_RMW(tg_atom_min, unsigned, "min.u32", "r")
TG_ATOM_RMW(tg_atom_min, long long, "min.s64", "l")
TG_ATOM_RMW(tg_atom_min, unsigned long long, "min.u64", "l")
TG_ATOM_RMW(tg_atom_and, int, "and.b32", "r")
TG_ATOM_RMW(tg_atom_and, unsigned, "and.b32", "r")
TG_ATOM_RMW(tg_atom_and, long long, "and.b64", "l")
TG_ATOM_RMW(tg_atom_and, unsigned long long, "and.b64", "l")
TG_ATOM_RMW(tg_atom_or, int, "or.b32", "r")
TG_ATOM_RMW(tg_atom_or, unsigned, "or.b32", "r")
TG_ATOM_RMW(tg_atom_or, long long, "or.b64", "l")
TG_ATOM_RMW(tg_atom_or, unsigned long long, "or.b64", "l")
TG_ATOM_RMW(tg_atom_xor, int, "xor.b32", "r")
TG_ATOM_RMW(tg_atom_xor, unsigned, "xor.b32", "r")
TG_ATOM_RMW(tg_atom_xor, long long, "xor.b64", "l")
TG_ATOM_RMW(tg_atom_xor, unsigned long long, "xor.b64", "l")
TG_ATOM_RMW(tg_atom_xchg, int, "exch.b32", "r")
TG_ATOM_RMW(tg_atom_xchg, unsigned, "exch.b32", "r")
TG_ATOM_RMW(tg_atom_xchg, long long, "exch.b64", "l")
TG_ATOM_RMW(tg_atom_xchg, unsigned long long, "exch.b64", "l")
TG_ATOM_CAS(unsigned short, "b16", "h")
TG_ATOM_CAS(int, "b32", "r")
TG_ATOM_CAS(unsigned, "b32", "r")
TG_ATOM_CAS(long long, "b64", "l")
TG_ATOM_CAS(unsigned long long, "b64", "l")
#endif  // TG_EMU_ATOMS

// Floats exchange and compare-and-swap as their bits.
template <int S, int C> TG_DEVICE float tg_atom_xchg(float* p, float v) {
  return __uint_as_float(tg_atom_xchg<S, C>((unsigned*)p, __float_as_uint(v)));
}
template <int S, int C> TG_DEVICE double tg_atom_xchg(double* p, double v) {
  return __longlong_as_double(tg_atom_xchg<S, C>((long long*)p, __double_as_longlong(v)));
}
template <int S, int C> TG_DEVICE float tg_atom_cas(float* p, float cmp, float v) {
  return __uint_as_float(tg_atom_cas<S, C>((unsigned*)p, __float_as_uint(cmp), __float_as_uint(v)));
}
template <int S, int C> TG_DEVICE double tg_atom_cas(double* p, double cmp, double v) {
  return __longlong_as_double(tg_atom_cas<S, C>((long long*)p, __double_as_longlong(cmp), __double_as_longlong(v)));
}

// Float max/min in IEEE totalOrder through integer max/min (see above).
template <int S, int C> TG_DEVICE float tg_atom_fmax(float* p, float v) {
  int bits = __float_as_int(v);
  return bits >= 0 ? __int_as_float(tg_atom_max<S, C>((int*)p, bits))
                   : __uint_as_float(tg_atom_min<S, C>((unsigned*)p, (unsigned)bits));
}
template <int S, int C> TG_DEVICE float tg_atom_fmin(float* p, float v) {
  int bits = __float_as_int(v);
  return bits >= 0 ? __int_as_float(tg_atom_min<S, C>((int*)p, bits))
                   : __uint_as_float(tg_atom_max<S, C>((unsigned*)p, (unsigned)bits));
}
template <int S, int C> TG_DEVICE double tg_atom_fmax(double* p, double v) {
  long long bits = __double_as_longlong(v);
  return bits >= 0 ? __longlong_as_double(tg_atom_max<S, C>((long long*)p, bits))
                   : __longlong_as_double((long long)tg_atom_min<S, C>((unsigned long long*)p, (unsigned long long)bits));
}
template <int S, int C> TG_DEVICE double tg_atom_fmin(double* p, double v) {
  long long bits = __double_as_longlong(v);
  return bits >= 0 ? __longlong_as_double(tg_atom_min<S, C>((long long*)p, bits))
                   : __longlong_as_double((long long)tg_atom_max<S, C>((unsigned long long*)p, (unsigned long long)bits));
}

// --- compare-and-swap loops -------------------------------------------------------
#ifndef TG_EMU_ATOMS
template <int C> TG_DEVICE void tg_fence() {
  if (C == tg_cta) asm volatile("fence.acq_rel.cta;" ::: "memory");
  else if (C == tg_gpu) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  else asm volatile("fence.acq_rel.sys;" ::: "memory");
}
#endif

// Replaces the 16-bit *p by next(*p) in one step; returns the old bits.
template <int S, int C, class Next> TG_DEVICE unsigned short tg_atom_update16(unsigned short* p, Next next) {
  if (S == tg_release || S == tg_acq_rel) tg_fence<C>();
  unsigned short old = *(volatile unsigned short*)p;
  for (;;) {
    unsigned short seen = tg_atom_cas<tg_relaxed, C>(p, old, next(old));
    if (seen == old) break;
    old = seen;
  }
  if (S == tg_acquire || S == tg_acq_rel) tg_fence<C>();
  return old;
}

// IEEE totalOrder of 16-bit float bits as an int: negative values have their
// magnitude bits flipped, so larger magnitudes sort lower.
TG_DEVICE int tg_total_order_key16(unsigned short bits) {
  int s = (short)bits;
  return s < 0 ? s ^ 0x7fff : s;
}
template <int S, int C> TG_DEVICE unsigned short tg_atom_fmax16(unsigned short* p, unsigned short v) {
  return tg_atom_update16<S, C>(p, [v](unsigned short x) {
    return tg_total_order_key16(x) < tg_total_order_key16(v) ? v : x;
  });
}
template <int S, int C> TG_DEVICE unsigned short tg_atom_fmin16(unsigned short* p, unsigned short v) {
  return tg_atom_update16<S, C>(p, [v](unsigned short x) {
    return tg_total_order_key16(v) < tg_total_order_key16(x) ? v : x;
  });
}
template <int S, int C> TG_DEVICE unsigned short tg_atom_xchg16(unsigned short* p, unsigned short v) {
  return tg_atom_update16<S, C>(p, [v](unsigned short) { return v; });
}
// bf16 add is native from sm_90 on (the emulator brings its own).
#ifndef TG_EMU_ATOMS
#if __CUDA_ARCH__ >= 900
TG_ATOM_RMW(tg_atom_add_bf16, tg_bf16, "add.noftz.bf16", "h")
#else
template <int S, int C> TG_DEVICE tg_bf16 tg_atom_add_bf16(tg_bf16* p, tg_bf16 v) {
  return tg_atom_update16<S, C>(p, [v](unsigned short x) { return tg_f32_to_bf16(tg_bf16_to_f32(x) + tg_bf16_to_f32(v)); });
}
#endif
#endif  // TG_EMU_ATOMS

// sm_90's vector reductions: N (2 or 4) float adds into consecutive words,
// 4N-byte aligned, in one `red` whose old values nobody reads; relaxed or
// release only (`red` has no acquire). Elsewhere, and in the emulator, one
// add per element.
template <int S, int C> TG_DEVICE void tg_red_add_f32x2(float* p, float a, float b) {
#if !defined(TG_EMU_ATOMS) && __CUDA_ARCH__ >= 900
  static_assert(S == tg_relaxed || S == tg_release, "red takes relaxed or release");
  switch ((S == tg_release) * 3 + C) {
    case 0: asm volatile("red.relaxed.cta.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory"); break;
    case 1: asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory"); break;
    case 2: asm volatile("red.relaxed.sys.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory"); break;
    case 3: asm volatile("red.release.cta.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory"); break;
    case 4: asm volatile("red.release.gpu.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory"); break;
    default: asm volatile("red.release.sys.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory"); break;
  }
#else
  tg_atom_add<S, C>(p, a);
  tg_atom_add<S, C>(p + 1, b);
#endif
}
template <int S, int C> TG_DEVICE void tg_red_add_f32x4(float* p, float a, float b, float c, float d) {
#if !defined(TG_EMU_ATOMS) && __CUDA_ARCH__ >= 900
  static_assert(S == tg_relaxed || S == tg_release, "red takes relaxed or release");
#define TG_RED_V4(Q) asm volatile("red." Q ".global.add.v4.f32 [%0], {%1, %2, %3, %4};" \
                                  ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory")
  switch ((S == tg_release) * 3 + C) {
    case 0: TG_RED_V4("relaxed.cta"); break;
    case 1: TG_RED_V4("relaxed.gpu"); break;
    case 2: TG_RED_V4("relaxed.sys"); break;
    case 3: TG_RED_V4("release.cta"); break;
    case 4: TG_RED_V4("release.gpu"); break;
    default: TG_RED_V4("release.sys"); break;
  }
#undef TG_RED_V4
#else
  tg_atom_add<S, C>(p, a);
  tg_atom_add<S, C>(p + 1, b);
  tg_atom_add<S, C>(p + 2, c);
  tg_atom_add<S, C>(p + 3, d);
#endif
}
#undef TG_ATOM_RMW
#undef TG_ATOM_CAS
#undef TG_ATOM
#undef TG_ATOM_ORDERED
#undef TG_ATOM_AS
#undef TG_RMW_QUALIFIERS
#undef TG_CAS_QUALIFIERS
)PRELUDE";

}  // namespace tegula::backends::cuda
