#define TG_DEVICE __device__ __forceinline__

typedef unsigned short tg_f16;   // IEEE binary16, as its bits
typedef unsigned short tg_bf16;  // bfloat16, as its bits

// --- integer traits -------------------------------------------------------------
// tg_uint<T>::type: the unsigned type arithmetic on T wraps in (at least 32
// bits: narrower unsigned types would promote to int and could overflow).
template <class T> struct tg_uint { typedef unsigned type; };
template <> struct tg_uint<long long> { typedef unsigned long long type; };
template <> struct tg_uint<unsigned long long> { typedef unsigned long long type; };
// tg_unsigned<T>::type: the unsigned type of T's width (shift amounts).
template <class T> struct tg_unsigned { typedef T type; };
template <> struct tg_unsigned<signed char> { typedef unsigned char type; };
template <> struct tg_unsigned<short> { typedef unsigned short type; };
template <> struct tg_unsigned<int> { typedef unsigned type; };
template <> struct tg_unsigned<long long> { typedef unsigned long long type; };
template <class T> struct tg_signed { static const bool value = T(-1) < T(0); };

// --- wrapping integer arithmetic, never undefined -------------------------------
template <class T> TG_DEVICE T tg_add(T a, T b) { return (T)((typename tg_uint<T>::type)a + (typename tg_uint<T>::type)b); }
template <class T> TG_DEVICE T tg_sub(T a, T b) { return (T)((typename tg_uint<T>::type)a - (typename tg_uint<T>::type)b); }
template <class T> TG_DEVICE T tg_mul(T a, T b) { return (T)((typename tg_uint<T>::type)a * (typename tg_uint<T>::type)b); }
template <class T> TG_DEVICE T tg_neg(T a) { return (T)((typename tg_uint<T>::type)0 - (typename tg_uint<T>::type)a); }
template <class T> TG_DEVICE T tg_abs(T a) { return a < T(0) ? tg_neg(a) : a; }

// x / 0 == 0 and x % 0 == x (so x == (x / y) * y + x % y still holds);
// MIN / -1 wraps to MIN and MIN % -1 == 0.
template <class T> TG_DEVICE T tg_div(T a, T b) {
  if (b == T(0)) return T(0);
  if (tg_signed<T>::value && b == T(-1)) return tg_neg(a);
  return (T)(a / b);
}
template <class T> TG_DEVICE T tg_rem(T a, T b) {
  if (b == T(0)) return a;
  if (tg_signed<T>::value && b == T(-1)) return T(0);
  return (T)(a % b);
}

// Shift amounts are read as unsigned; amounts >= the bit width shift every
// bit out: 0, or all sign bits for an arithmetic right shift.
template <class T> TG_DEVICE T tg_shl(T a, T b) {
  typename tg_uint<T>::type s = (typename tg_unsigned<T>::type)b;
  return s >= 8 * sizeof(T) ? T(0) : (T)((typename tg_uint<T>::type)a << s);
}
template <class T> TG_DEVICE T tg_shr(T a, T b) {
  typename tg_uint<T>::type s = (typename tg_unsigned<T>::type)b;
  T fill = (tg_signed<T>::value && a < T(0)) ? T(-1) : T(0);
  return s >= 8 * sizeof(T) ? fill : (T)(a >> s);
}

// The high half of the product of the operands read as unsigned.
template <class T> TG_DEVICE T tg_umulhi(T a, T b) {
  typedef typename tg_unsigned<T>::type U;
  return (T)(((unsigned long long)(U)a * (unsigned long long)(U)b) >> (8 * sizeof(T)));
}
TG_DEVICE long long tg_umulhi(long long a, long long b) { return (long long)__umul64hi((unsigned long long)a, (unsigned long long)b); }
TG_DEVICE unsigned long long tg_umulhi(unsigned long long a, unsigned long long b) { return __umul64hi(a, b); }

// Integer power by squaring, wrapping; negative exponents give 0 except for
// bases 1 and -1.
template <class T> TG_DEVICE T tg_ipow(T base, T exp) {
  if (tg_signed<T>::value && exp < T(0))
    return base == T(1) ? T(1) : base == T(-1) ? ((exp & 1) ? T(-1) : T(1)) : T(0);
  T r = 1;
  while (exp != T(0)) {
    if (exp & 1) r = tg_mul(r, base);
    base = tg_mul(base, base);
    exp = (T)((typename tg_unsigned<T>::type)exp >> 1);
  }
  return r;
}

// --- floats -------------------------------------------------------------------------
// min/max return the non-NaN operand (IEEE minNum/maxNum); the _nan variants
// propagate NaN.
TG_DEVICE float tg_fmin(float a, float b) { return fminf(a, b); }
TG_DEVICE float tg_fmax(float a, float b) { return fmaxf(a, b); }
TG_DEVICE double tg_fmin(double a, double b) { return fmin(a, b); }
TG_DEVICE double tg_fmax(double a, double b) { return fmax(a, b); }
template <class F> TG_DEVICE F tg_fmin_nan(F a, F b) { return a != a ? a : b != b ? b : tg_fmin(a, b); }
template <class F> TG_DEVICE F tg_fmax_nan(F a, F b) { return a != a ? a : b != b ? b : tg_fmax(a, b); }

// f16 / bf16 <-> f32, round to nearest even (or toward zero, _rz).
TG_DEVICE float tg_f16_to_f32(tg_f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
TG_DEVICE tg_f16 tg_f32_to_f16(float f) { tg_f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
TG_DEVICE tg_f16 tg_f32_to_f16_rz(float f) { tg_f16 h; asm("cvt.rz.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
TG_DEVICE float tg_bf16_to_f32(tg_bf16 h) { return __uint_as_float((unsigned)h << 16); }
TG_DEVICE tg_bf16 tg_f32_to_bf16(float f) { tg_bf16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
TG_DEVICE tg_bf16 tg_f32_to_bf16_rz(float f) { tg_bf16 h; asm("cvt.rz.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }

// Narrowing in two steps could round twice. Rounding the first step to odd
// (truncate, then set the last bit when inexact) keeps what the second,
// round-to-nearest-even step needs: f32 has >= 2 spare bits over f16/bf16.
TG_DEVICE float tg_odd(float truncated, bool exact) {
  return exact ? truncated : __uint_as_float(__float_as_uint(truncated) | 1u);
}
TG_DEVICE float tg_f64_to_f32_odd(double d) {
  float r = __double2float_rz(d);
  return d != d ? r : tg_odd(r, (double)r == d);
}
TG_DEVICE float tg_i64_to_f32_odd(long long x) { float r = __ll2float_rz(x); return tg_odd(r, __float2ll_rz(r) == x); }
TG_DEVICE float tg_u64_to_f32_odd(unsigned long long x) { float r = __ull2float_rz(x); return tg_odd(r, __float2ull_rz(r) == x); }
TG_DEVICE tg_f16 tg_f64_to_f16(double d) { return tg_f32_to_f16(tg_f64_to_f32_odd(d)); }
TG_DEVICE tg_bf16 tg_f64_to_bf16(double d) { return tg_f32_to_bf16(tg_f64_to_f32_odd(d)); }

// float -> integer truncates toward zero and saturates; NaN gives 0 (what
// PTX cvt.rzi does for 32-bit results from f32; from f64, and for 64-bit
// results, the H200 gives MIN for NaN, so NaN is tested there; narrower
// results are clamped).
TG_DEVICE int tg_f2i(float x) { return __float2int_rz(x); }
TG_DEVICE int tg_f2i(double x) { return x != x ? 0 : __double2int_rz(x); }
TG_DEVICE unsigned tg_f2u(float x) { return __float2uint_rz(x); }
TG_DEVICE unsigned tg_f2u(double x) { return x != x ? 0 : __double2uint_rz(x); }
TG_DEVICE long long tg_f2ll(float x) { return x != x ? 0 : __float2ll_rz(x); }
TG_DEVICE long long tg_f2ll(double x) { return x != x ? 0 : __double2ll_rz(x); }
TG_DEVICE unsigned long long tg_f2ull(float x) { return x != x ? 0 : __float2ull_rz(x); }
TG_DEVICE unsigned long long tg_f2ull(double x) { return x != x ? 0 : __double2ull_rz(x); }
template <class F> TG_DEVICE int tg_f2i_clamp(F x, int lo, int hi) { int v = tg_f2i(x); return v < lo ? lo : v > hi ? hi : v; }
template <class F> TG_DEVICE unsigned tg_f2u_clamp(F x, unsigned hi) { unsigned v = tg_f2u(x); return v > hi ? hi : v; }

// --- loops ------------------------------------------------------------------------------
// Iterations of `for iv in range(lb, ub, step)`, without overflow; a zero step
// runs none. Differences are taken modulo 2^64, where they are exact.
template <class T> TG_DEVICE unsigned long long tg_trip_count(T lb, T ub, T step) {
  if (step > T(0)) {
    if (!(ub > lb)) return 0;
    unsigned long long span = (unsigned long long)ub - (unsigned long long)lb;
    return (span - 1) / (unsigned long long)step + 1;
  }
  if (step < T(0)) {
    if (!(lb > ub)) return 0;
    unsigned long long span = (unsigned long long)lb - (unsigned long long)ub;
    return (span - 1) / (0ull - (unsigned long long)step) + 1;
  }
  return 0;
}
template <class T> TG_DEVICE T tg_induction(T lb, unsigned long long k, T step) {
  typedef typename tg_uint<T>::type U;
  return (T)((U)lb + (U)k * (U)step);
}

// exp2 in f32 is the hardware's ex2 (2 ulp) with subnormal results flushed
// to zero, as Triton lowers tl.exp2: exp2f's fix-up for results below 2^-126
// costs a compare and two multiplies per element, a fifth of an attention
// loop's instructions. f64 keeps exp2.
TG_DEVICE float tg_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TG_DEVICE double tg_exp2(double x) { return exp2(x); }
// The IR's `approx` exp (tl.exp): ex2 of x * log2(e) in f32, as Triton
// lowers tl.exp on f32, so every normal result has Triton's bits. Results
// below 2^-126 flush to zero as tg_exp2's do (Triton keeps them subnormal):
// the subnormal-keeping ex2 costs a compare and two selects per element, and
// a softmax with it took a stack frame. The error grows with |x| (the
// product's rounding is scaled by the result), a few ulp up to about 2^-18
// relative at the ends of the range; expf's range reduction costs about 40%
// more instructions in an elementwise kernel. f64 and libdevice.exp (no
// `approx`) keep exp/expf.
TG_DEVICE float tg_exp_approx(float x) { return tg_exp2(x * 1.4426950408889634f); }  // nothing to contract with
// An approximate quotient (the IR's `approx` division: tl.sigmoid, tl.fdiv):
// div.full.f32, within 2 ulp over the full range, with no call to IEEE
// division's slow path (whose live registers can halve a kernel's occupancy).
TG_DEVICE float tg_div_full(float a, float b) {
  float q;
  asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
  return q;
}

// --- warps, memory ------------------------------------------------------------------------
// The warp's index, read through a shuffle from lane 0 so the compiler knows
// every lane holds the same value: what is computed from it (matrix
// descriptors, shared-memory bases) lives in uniform registers.
TG_DEVICE int tg_warp_index() { return __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 5), 0); }
TG_DEVICE float tg_shfl_xor(float x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
TG_DEVICE double tg_shfl_xor(double x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
TG_DEVICE int tg_shfl_xor(int x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
TG_DEVICE unsigned tg_shfl_xor(unsigned x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
TG_DEVICE long long tg_shfl_xor(long long x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
TG_DEVICE unsigned long long tg_shfl_xor(unsigned long long x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
TG_DEVICE bool tg_shfl_xor(bool x, int m) { return __shfl_xor_sync(0xffffffffu, (int)x, m) != 0; }
TG_DEVICE signed char tg_shfl_xor(signed char x, int m) { return (signed char)__shfl_xor_sync(0xffffffffu, (int)x, m); }
TG_DEVICE unsigned char tg_shfl_xor(unsigned char x, int m) { return (unsigned char)__shfl_xor_sync(0xffffffffu, (unsigned)x, m); }
TG_DEVICE short tg_shfl_xor(short x, int m) { return (short)__shfl_xor_sync(0xffffffffu, (int)x, m); }
TG_DEVICE unsigned short tg_shfl_xor(unsigned short x, int m) { return (unsigned short)__shfl_xor_sync(0xffffffffu, (unsigned)x, m); }

// N consecutive elements moved as one access of sizeof(T) * N bytes (<= 16);
// the generator uses it only where axis info proves the alignment.
template <class T, int N> struct alignas(sizeof(T) * N) tg_vec { T v[N]; };

// 16- and 8-byte global stores of words as one st.global.v4/v2, optionally
// predicated: NVVM splits a C++ vector store whose address it cannot prove
// aligned (one built through 64-bit integer arithmetic), even of a uint4.
// Told the alignment, it keeps the store whole (st.global.v4.u32, the
// default write-back policy, spelled as Triton's kernels spell it), keeps
// constant address offsets in the instruction and orders it like any store,
// which inline asm would not. The generator uses them only where axis info
// proves the alignment.
TG_DEVICE void tg_st16(void* p, uint4 v) { *static_cast<uint4*>(__builtin_assume_aligned(p, 16)) = v; }
TG_DEVICE void tg_st8(void* p, uint2 v) { *static_cast<uint2*>(__builtin_assume_aligned(p, 8)) = v; }
TG_DEVICE void tg_st16_if(bool m, void* p, uint4 v) { if (m) tg_st16(p, v); }
TG_DEVICE void tg_st8_if(bool m, void* p, uint2 v) { if (m) tg_st8(p, v); }

// Global loads with a PTX cache qualifier, for tl.load's cache_modifier and
// eviction_policy: tg_ld<bytes>_<q>(address) for each access size and
// qualifier (ca, cg, cv, ef = L1::evict_first, el = L1::evict_last).
// Volatile asm so they keep their order with the kernel's stores.
template <class To, class From> TG_DEVICE To tg_bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "tg_bit_cast between sizes");
  union { From from; To to; } u;
  u.from = f;
  return u.to;
}
// 16-byte global accesses of two 64-bit elements, spelled .v2.b64 as
// Triton's kernels spell them (NVVM writes .v2.f64 or .v2.u64 for a C++
// vector). Volatile asm so they keep their order with the other accesses.
template <class T> TG_DEVICE tg_vec<T, 2> tg_ld16_b64(const void* p) {
  unsigned long long x, y;
  asm volatile("ld.global.v2.b64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(p));
  return tg_vec<T, 2>{{tg_bit_cast<T>(x), tg_bit_cast<T>(y)}};
}
template <class T> TG_DEVICE void tg_st16_b64(void* p, const tg_vec<T, 2>& v) {
  asm volatile("st.global.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(tg_bit_cast<unsigned long long>(v.v[0])),
               "l"(tg_bit_cast<unsigned long long>(v.v[1])) : "memory");
}
// Emulated builds give TG_HOOK(op, args...) a body (the tests' CUDA emulator);
// here it is nothing and the asm does the access.
#ifndef TG_HOOK
#define TG_HOOK(...)
#endif
#define TG_QUALIFIED_LOADS(NAME, Q)                                                                     \
  TG_DEVICE unsigned char tg_ld1_##NAME(const void* p) {                                                \
    TG_HOOK(load_bits<unsigned char>, p);                                                               \
    unsigned r; asm volatile("ld.global" Q ".u8 %0, [%1];" : "=r"(r) : "l"(p)); return (unsigned char)r; \
  }                                                                                                     \
  TG_DEVICE unsigned short tg_ld2_##NAME(const void* p) {                                               \
    TG_HOOK(load_bits<unsigned short>, p);                                                              \
    unsigned short r; asm volatile("ld.global" Q ".u16 %0, [%1];" : "=h"(r) : "l"(p)); return r;         \
  }                                                                                                     \
  TG_DEVICE unsigned tg_ld4_##NAME(const void* p) {                                                     \
    TG_HOOK(load_bits<unsigned>, p);                                                                    \
    unsigned r; asm volatile("ld.global" Q ".u32 %0, [%1];" : "=r"(r) : "l"(p)); return r;               \
  }                                                                                                     \
  TG_DEVICE unsigned long long tg_ld8_##NAME(const void* p) {                                           \
    TG_HOOK(load_bits<unsigned long long>, p);                                                          \
    unsigned long long r; asm volatile("ld.global" Q ".u64 %0, [%1];" : "=l"(r) : "l"(p)); return r;     \
  }                                                                                                     \
  TG_DEVICE uint4 tg_ld16_##NAME(const void* p) {                                                       \
    TG_HOOK(load_bits<uint4>, p);                                                                       \
    uint4 r;                                                                                            \
    asm volatile("ld.global" Q ".v4.u32 {%0, %1, %2, %3}, [%4];"                                        \
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));                                \
    return r;                                                                                           \
  }
TG_QUALIFIED_LOADS(ca, ".ca")
TG_QUALIFIED_LOADS(cg, ".cg")
TG_QUALIFIED_LOADS(cs, ".cs")
TG_QUALIFIED_LOADS(cv, ".cv")
TG_QUALIFIED_LOADS(ef, ".L1::evict_first")
TG_QUALIFIED_LOADS(el, ".L1::evict_last")
#undef TG_QUALIFIED_LOADS

// Global stores for tl.store's cache_modifier (wb, cg, cs, wt: st.global.<q>)
// and eviction_policy (ef, el: an L2 cache hint whose policy createpolicy
// makes, where stored lines go first or last): tg_st<bytes>_<q>(address,
// bits) for one element of 1, 2, 4 or 8 bytes, tg_stv8_<q> and tg_stv16_<q>
// for 8 and 16 bytes of words. Volatile asm with a memory clobber, so they
// keep their order with the kernel's other accesses.
#define TG_QUALIFIED_STORES(NAME, PRE, Q, POST)                                                        \
  TG_DEVICE void tg_st1_##NAME(void* p, unsigned char v) {                                              \
    TG_HOOK(store_bits, p, &v, sizeof v);                                                          \
    asm volatile(PRE "st.global" Q ".u8 [%0], %1" POST ::"l"(p), "r"((unsigned)v) : "memory");      \
  }                                                                                                     \
  TG_DEVICE void tg_st2_##NAME(void* p, unsigned short v) {                                             \
    TG_HOOK(store_bits, p, &v, sizeof v);                                                          \
    asm volatile(PRE "st.global" Q ".u16 [%0], %1" POST ::"l"(p), "h"(v) : "memory");                \
  }                                                                                                     \
  TG_DEVICE void tg_st4_##NAME(void* p, unsigned v) {                                                   \
    TG_HOOK(store_bits, p, &v, sizeof v);                                                          \
    asm volatile(PRE "st.global" Q ".u32 [%0], %1" POST ::"l"(p), "r"(v) : "memory");                \
  }                                                                                                     \
  TG_DEVICE void tg_st8_##NAME(void* p, unsigned long long v) {                                         \
    TG_HOOK(store_bits, p, &v, sizeof v);                                                          \
    asm volatile(PRE "st.global" Q ".u64 [%0], %1" POST ::"l"(p), "l"(v) : "memory");                \
  }                                                                                                     \
  TG_DEVICE void tg_stv8_##NAME(void* p, uint2 v) {                                                     \
    TG_HOOK(store_bits, p, &v, sizeof v);                                                          \
    asm volatile(PRE "st.global" Q ".v2.u32 [%0], {%1, %2}" POST ::"l"(p), "r"(v.x), "r"(v.y)       \
                 : "memory");                                                                           \
  }                                                                                                     \
  TG_DEVICE void tg_stv16_##NAME(void* p, uint4 v) {                                                    \
    TG_HOOK(store_bits, p, &v, sizeof v);                                                          \
    asm volatile(PRE "st.global" Q ".v4.u32 [%0], {%1, %2, %3, %4}" POST ::"l"(p), "r"(v.x),        \
                 "r"(v.y), "r"(v.z), "r"(v.w) : "memory");                                              \
  }
TG_QUALIFIED_STORES(wb, "", ".wb", ";")
TG_QUALIFIED_STORES(cg, "", ".cg", ";")
TG_QUALIFIED_STORES(cs, "", ".cs", ";")
TG_QUALIFIED_STORES(wt, "", ".wt", ";")
TG_QUALIFIED_STORES(ef, "{ .reg .b64 tg_pol; createpolicy.fractional.L2::evict_first.b64 tg_pol, 1.0; ",
                    ".L2::cache_hint", ", tg_pol; }")
TG_QUALIFIED_STORES(el, "{ .reg .b64 tg_pol; createpolicy.fractional.L2::evict_last.b64 tg_pol, 1.0; ",
                    ".L2::cache_hint", ", tg_pol; }")
#undef TG_QUALIFIED_STORES

// --- tensor cores ---------------------------------------------------------------------
// The shared-state-space address of a pointer into shared memory.
TG_DEVICE unsigned tg_shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile whose rows are
// cut into blocks of BLOCK_BYTES (block j of all rows at j * BLOCK_STRIDE):
// PER_PHASE consecutive rows share one 128-byte line when blocks are
// shorter, and MAX_PHASE phases XOR the chunk index in turn.
template <unsigned BLOCK_BYTES, unsigned PER_PHASE, unsigned MAX_PHASE, unsigned BLOCK_STRIDE>
TG_DEVICE unsigned tg_swizzle(unsigned row, unsigned chunk) {
  const unsigned chunks = BLOCK_BYTES / 16;
  return (chunk / chunks) * BLOCK_STRIDE + row * BLOCK_BYTES + (((chunk % chunks) ^ ((row / PER_PHASE) % MAX_PHASE)) << 4);
}

TG_DEVICE void tg_ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(address));
}
TG_DEVICE void tg_ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(address));
}

// One 32-bit word of shared memory, for fragments ldmatrix cannot gather
// (32- and 8-bit tiles whose rows run along M or N).
TG_DEVICE unsigned tg_lds32(unsigned address) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r) : "r"(address));
  return r;
}
TG_DEVICE unsigned tg_lds8(unsigned address) {
  unsigned short r;
  asm volatile("ld.shared.b8 %0, [%1];" : "=h"(r) : "r"(address));
  return r & 0xffu;
}

// cp.async: BYTES (4, 8 or 16) from global `src` to shared address `dst`,
// the bytes past `src_bytes` zero-filled (0: nothing is read, so a masked
// chunk may point anywhere). 16-byte copies bypass L1 (.cg). One commit
// group per pipeline stage; wait_group<N> waits until at most N are pending.
template <int BYTES>
TG_DEVICE void tg_cp_async(unsigned dst, const void* src, int src_bytes) {
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(dst), "l"(src), "n"(BYTES), "r"(src_bytes)
                 : "memory");
}
TG_DEVICE void tg_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
TG_DEVICE void tg_cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// f32 bits rounded to tf32 (nearest, ties away), what mma .tf32 reads.
TG_DEVICE unsigned tg_to_tf32(unsigned x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}

// An f32 (bits) as the sum of two tf32 (hi + lo, hi rounded to nearest):
// the operands of the three products of input precision "tf32x3".
TG_DEVICE void tg_split_tf32(unsigned x, unsigned& hi, unsigned& lo) {
  hi = tg_to_tf32(x);
  lo = tg_to_tf32(__float_as_uint(__uint_as_float(x) - __uint_as_float(hi)));
}
// Two f32 (bits) each as the sum of N bf16 (bf16x3: 2, bf16x6: 3), each part
// rounded to nearest from what the previous ones leave; part i of both,
// packed as one word of an m16n8k16 fragment (x0 the lower half), goes to
// w[i * STRIDE]. (Its own cvt: this prelude also stands without the base
// one, in the Hopper prototypes.)
template <int N, int STRIDE>
TG_DEVICE void tg_split_bf16x2(unsigned x0, unsigned x1, unsigned* w) {
  float r0 = __uint_as_float(x0), r1 = __uint_as_float(x1);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    unsigned short b0, b1;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b0) : "f"(r0));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b1) : "f"(r1));
    unsigned h0 = b0, h1 = b1;
    r0 -= __uint_as_float(h0 << 16);
    r1 -= __uint_as_float(h1 << 16);
    w[i * STRIDE] = h0 | (h1 << 16);
  }
}

// d += a * b on one 16x8 accumulator tile: d[0..1] row lane/4, d[2..3] row lane/4 + 8.
TG_DEVICE void tg_mma_f16(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
TG_DEVICE void tg_mma_bf16(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
TG_DEVICE void tg_mma_tf32(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// f16 accumulators, as Triton's dots with an f16 result accumulate: d holds
// the tile's 4 halves as in the f32 form (d[0..1] row lane/4), packed in pairs.
TG_DEVICE void tg_mma_f16_f16(tg_f16* d, const unsigned* a, const unsigned* b) {
  unsigned c0 = d[0] | ((unsigned)d[1] << 16), c1 = d[2] | ((unsigned)d[3] << 16);
  asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
      : "+r"(c0), "+r"(c1)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  d[0] = (tg_f16)c0, d[1] = (tg_f16)(c0 >> 16), d[2] = (tg_f16)c1, d[3] = (tg_f16)(c1 >> 16);
}
// Saturating (.satfinite), as Triton's int8 dots: a sum past the int32 range
// clamps to it instead of wrapping.
TG_DEVICE void tg_mma_s8(int* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// --- Hopper wgmma -----------------------------------------------------------------------
#ifndef TG_WGMMA_HOOK
#define TG_WGMMA_HOOK(...)
#endif
#ifndef TG_WGMMA_REG_HOOK
#define TG_WGMMA_REG_HOOK(...)
#endif
// A shared-memory matrix descriptor: start address, leading and stride byte
// offsets (units of 16 bytes), swizzle mode (1: 128-byte, 2: 64, 3: 32).
TG_DEVICE unsigned long long tg_wgmma_desc(unsigned address, unsigned lbo, unsigned sbo, unsigned mode) {
  return (unsigned long long)((address & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | ((unsigned long long)mode << 62);
}
TG_DEVICE void tg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TG_DEVICE void tg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Until at most N committed groups of this warpgroup are in flight.
template <int N>
TG_DEVICE void tg_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// Generic-proxy writes of shared memory (stores, cp.async) made visible to
// the async proxy wgmma reads through.
TG_DEVICE void tg_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Pins an accumulator register: the compiler moves no access of it across.
TG_DEVICE void tg_pin(float& x) { asm volatile("" : "+f"(x)::"memory"); }
TG_DEVICE void tg_pin(int& x) { asm volatile("" : "+r"(x)::"memory"); }
// d[0..32) += a * b: this warpgroup's 64x64 tile, asynchronous until tg_wgmma_wait.
TG_DEVICE void tg_wgmma_m64n64k16_f16_kk(float* d, unsigned long long a, unsigned long long b) {
  TG_WGMMA_HOOK(d, a, b, 64, 0, 0, 0);
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(a), "l"(b), "r"(1));
}
// d[0..16) += a * b: this warpgroup's 64x32 tile, a from registers, asynchronous until tg_wgmma_wait.
TG_DEVICE void tg_wgmma_m64n32k16_f16_rn(float* d, const unsigned* a, unsigned long long b) {
  TG_WGMMA_REG_HOOK(d, a, b, 32, 0, 1);
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

