// Host emulation of what generated CUDA kernels use, so the tensor-core and
// asynchronous code paths can be executed and checked on a machine without a
// GPU (tests/python/cuda_emulator.py builds the translation unit).
//
// Every CUDA thread is a fiber under one seeded scheduler
// (cuda_emulator_core.h): __syncthreads and the named barriers, the warp
// collectives (shuffles, ldmatrix, mma, wgmma with A from registers,
// stmatrix) and the mbarrier waits block a fiber until their condition
// holds, and a launch in which every thread is blocked is reported as a
// deadlock. The fragment layouts of ldmatrix and mma are written here from
// the PTX ISA tables, independently of the code generator's own derivation,
// so a wrong lane or register in the generated code shows up as wrong
// numbers. cp.async copies are deferred until a wait_group that covers them,
// so a missing wait reads stale shared memory, as it could on the device;
// wgmma (cuda_emulator_wgmma.h) runs at the wait_group that retires it.
// Hopper's async proxy (TMA, mbarriers, setmaxnreg: cuda_emulator_async.h)
// lands copies at seeded random points. Errors found (tg_emu::fail) stop the
// launch and come back to Python as EmulatorError.
//
// A kernel's translation unit is:
//   #define TG_EMU_PRELUDE   + this header   (renames the prelude's asm helpers)
//   <the generated prelude>                   (asm statements compile to nothing;
//                                              TG_HOOK bodies call tg_emu_*)
//   #undef TG_EMU_PRELUDE    + this header   (the emulated helpers)
//   <the generated kernel>, <a launcher>
// and its shared library links the emulator's runtime library: the same two
// includes with TG_EMU_RUNTIME defined and nothing between them, compiled
// once per kernel cache (cuda_emulator.py). What is under
// #ifdef TG_EMU_RUNTIME (the scheduler, the launch, the asynchronous proxy,
// the bodies of the tg_emu_* hooks and of the other emulated instructions
// that are neither templates nor small) is compiled there only, as is the
// emulator's state (a unit sees it extern): a unit compiles its kernel, the
// templates it instantiates and the small inline helpers. Nothing the
// runtime compiles may depend on the prelude or on a unit's macros
// (TG_EMU_EAGER_COPIES changes a template, tg_cp_async).
#ifdef TG_EMU_PRELUDE
// ---- part 1: before the generated prelude --------------------------------------------
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __restrict__
// Inline PTX compiles to nothing; every helper that has some is renamed
// here and emulated in part 2.
#define asm(...) ((void)0)
#define volatile

#define tg_f16_to_f32 tg_emu_unused_f16_to_f32
#define tg_f32_to_f16 tg_emu_unused_f32_to_f16
#define tg_f32_to_f16_rz tg_emu_unused_f32_to_f16_rz
#define tg_f32_to_bf16 tg_emu_unused_f32_to_bf16
#define tg_f32_to_bf16_rz tg_emu_unused_f32_to_bf16_rz
#define tg_shared_address tg_emu_unused_shared_address
#define tg_ldmatrix_x4 tg_emu_unused_ldmatrix_x4
#define tg_ldmatrix_x4_trans tg_emu_unused_ldmatrix_x4_trans
#define tg_lds32 tg_emu_unused_lds32
#define tg_lds8 tg_emu_unused_lds8
#define tg_to_tf32 tg_emu_unused_to_tf32
#define tg_mma_f16 tg_emu_unused_mma_f16
#define tg_mma_bf16 tg_emu_unused_mma_bf16
#define tg_mma_tf32 tg_emu_unused_mma_tf32
#define tg_mma_s8 tg_emu_unused_mma_s8
#define tg_mma_f16_f16 tg_emu_unused_mma_f16_f16
#define tg_split_tf32 tg_emu_unused_split_tf32
#define tg_split_bf16x2 tg_emu_unused_split_bf16x2
#define tg_cp_async tg_emu_unused_cp_async
#define tg_cp_async_commit tg_emu_unused_cp_async_commit
#define tg_cp_async_wait tg_emu_unused_cp_async_wait
#define tg_wgmma_fence tg_emu_unused_wgmma_fence
#define tg_wgmma_commit tg_emu_unused_wgmma_commit
#define tg_wgmma_wait tg_emu_unused_wgmma_wait
#define tg_fence_proxy_async tg_emu_unused_fence_proxy_async
#define tg_pin tg_emu_unused_pin
#define tg_exp2 tg_emu_unused_exp2
#define tg_exp_approx tg_emu_unused_exp_approx
#define tg_div_full tg_emu_unused_div_full
#define tg_st16 tg_emu_unused_st16
#define tg_st8 tg_emu_unused_st8
#define tg_st16_if tg_emu_unused_st16_if
#define tg_st8_if tg_emu_unused_st8_if
#define tg_ld16_b64 tg_emu_unused_ld16_b64
#define tg_st16_b64 tg_emu_unused_st16_b64
#define __grid_constant__
#define __cluster_dims__(...)
// Each generated wgmma instruction helper reports itself here (scale-d 1
// unless given: 0 ignores the accumulator's old value).
void tg_emu_wgmma(float* d, unsigned long long a, unsigned long long b, int n, int type, int trans_a, int trans_b,
                  int scale_d = 1);
#define TG_WGMMA_HOOK(...) tg_emu_wgmma(__VA_ARGS__)
// The form with operand a from registers (four words of mma.sync's A fragment).
void tg_emu_wgmma_reg(float* d, const unsigned* a, unsigned long long b, int n, int type, int trans_b,
                      int scale_d = 1);
#define TG_WGMMA_REG_HOOK(...) tg_emu_wgmma_reg(__VA_ARGS__)
// Every helper of prelude_async.h (and the prototypes' own) with a
// TG_HOOK(op, args...) gets its body from tg_emu_op(args...)
// (cuda_emulator_async.h, compiled in the runtime).
#define TG_HOOK(op, ...) return tg_emu_##op(__VA_ARGS__)
// The prelude's qualified global loads and stores (cache modifiers, eviction hints): plain copies here.
template <class T> inline T tg_emu_load_bits(const void* p) {
  T r;
  std::memcpy(&r, p, sizeof r);
  return r;
}
inline void tg_emu_store_bits(void* p, const void* v, unsigned long bytes) { std::memcpy(p, v, bytes); }
void tg_emu_mbar_init(unsigned bar, unsigned count);
void tg_emu_fence_mbar_init();
void tg_emu_mbar_arrive_expect_tx(unsigned bar, unsigned bytes);
void tg_emu_mbar_arrive(unsigned bar);
void tg_emu_mbar_arrive_cluster(unsigned bar, unsigned cta);
bool tg_emu_mbar_try_wait(unsigned bar, unsigned parity);
void tg_emu_prefetch_tensormap(const void* map);
void tg_emu_tma_load(unsigned dst, const void* map, unsigned bar, int dims, int c0, int c1, int c2,
                     unsigned cta_mask);
void tg_emu_tma_store(const void* map, unsigned src, int dims, int c0, int c1, int c2);
void tg_emu_tma_reduce(const void* map, unsigned src, int dims, int c0, int c1, int c2, int op);
void tg_emu_bulk_commit();
void tg_emu_bulk_wait(int n, bool read);
void tg_emu_named_barrier(int id, int threads, bool wait);
unsigned tg_emu_cluster_ctarank();
unsigned tg_emu_cluster_id_x();
unsigned tg_emu_cluster_count_x();
void tg_emu_cluster_sync();
void tg_emu_setmaxnreg(int n, bool inc);
void tg_emu_stmatrix_x4(unsigned address, unsigned r0, unsigned r1, unsigned r2, unsigned r3);
unsigned tg_emu_pack2(float lo, float hi, bool f16);
float tg_emu_ex2(float x);
float tg_emu_lg2(float x);

#include "cuda_emulator_core.h"

namespace tg_emu {

inline int lane() { return static_cast<int>(me().thread.x & 31); }
inline Warp& warp() { return *me().cta->warps[me().thread.x / 32]; }
inline unsigned char* shared() { return me().cta->smem.data(); }

// Waits for the other lanes of this warp (every lane of a warp takes part
// in its collectives).
void warp_sync();
#ifdef TG_EMU_RUNTIME
void warp_sync() { barrier_arrive(warp().sync, 32, true, "a warp collective of warp " + std::to_string(me().thread.x / 32)); }
#endif

// Every lane's value of `mine`.
template <class T>
std::array<T, 32> warp_exchange(const T& mine) {
  static_assert(sizeof(T) <= kSlotBytes, "exchange slot too small");
  Warp& w = warp();
  std::memcpy(w.slots[lane()], &mine, sizeof(T));
  warp_sync();
  std::array<T, 32> all;
  for (int l = 0; l < 32; ++l) std::memcpy(&all[static_cast<size_t>(l)], w.slots[l], sizeof(T));
  warp_sync();
  return all;
}

}  // namespace tg_emu

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
// CUDA's store with the write-back cache operator (the prelude's tg_st16).
template <class T>
inline void __stwb(T* p, T v) { *p = v; }

#define threadIdx (tg_emu::me().thread)
#define blockIdx (tg_emu::me().block)
#define gridDim (tg_emu::grid_dim)
#define blockDim (tg_emu::block_dim)

inline void __syncthreads() {
  tg_emu::Cta& cta = *tg_emu::me().cta;
  tg_emu::barrier_arrive(cta.named[0], cta.threads, true, "__syncthreads (barrier 0)");
}
inline void __syncwarp(unsigned = 0xffffffffu) { tg_emu::warp_sync(); }
inline int __syncthreads_or(int predicate) {
  tg_emu::Cta& s = *tg_emu::me().cta;
  __syncthreads();
  if (predicate) s.vote = 1;
  __syncthreads();
  int result = s.vote;
  __syncthreads();
  if (tg_emu::me().thread.x == 0) s.vote = 0;
  __syncthreads();
  return result;
}
template <class T>
T __shfl_sync(unsigned, T value, int source) {
  return tg_emu::warp_exchange(value)[static_cast<size_t>(source & 31)];
}
template <class T>
T __shfl_xor_sync(unsigned, T value, int mask) {
  return tg_emu::warp_exchange(value)[static_cast<size_t>(tg_emu::lane() ^ mask)];
}

inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
inline double __longlong_as_double(long long u) { double f; std::memcpy(&f, &u, 8); return f; }
inline long long __double_as_longlong(double f) { long long u; std::memcpy(&u, &f, 8); return u; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
template <class I, class F>
I tg_emu_truncate(F x) {
  if (x != x) return 0;
  long double t = std::trunc(static_cast<long double>(x));
  if (t <= static_cast<long double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (t >= static_cast<long double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}
inline int __float2int_rz(float x) { return tg_emu_truncate<int>(x); }
inline int __double2int_rz(double x) { return tg_emu_truncate<int>(x); }
inline unsigned __float2uint_rz(float x) { return tg_emu_truncate<unsigned>(x); }
inline unsigned __double2uint_rz(double x) { return tg_emu_truncate<unsigned>(x); }
inline long long __float2ll_rz(float x) { return tg_emu_truncate<long long>(x); }
inline long long __double2ll_rz(double x) { return tg_emu_truncate<long long>(x); }
inline unsigned long long __float2ull_rz(float x) { return tg_emu_truncate<unsigned long long>(x); }
inline unsigned long long __double2ull_rz(double x) { return tg_emu_truncate<unsigned long long>(x); }
template <class X>
float tg_emu_to_float_rz(X x) {
  float r = static_cast<float>(x);
  if (std::isfinite(r) && std::fabs(static_cast<long double>(r)) > std::fabs(static_cast<long double>(x)))
    r = std::nextafter(r, 0.0f);
  return r;
}
inline float __double2float_rz(double x) { return tg_emu_to_float_rz(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline float __ll2float_rz(long long x) { return tg_emu_to_float_rz(x); }
inline float __ull2float_rz(unsigned long long x) { return tg_emu_to_float_rz(x); }

#else
// ---- part 2: after the generated prelude ------------------------------------------------
#undef asm
#undef volatile
#undef tg_f16_to_f32
#undef tg_f32_to_f16
#undef tg_f32_to_f16_rz
#undef tg_f32_to_bf16
#undef tg_f32_to_bf16_rz
#undef tg_shared_address
#undef tg_ldmatrix_x4
#undef tg_ldmatrix_x4_trans
#undef tg_lds32
#undef tg_lds8
#undef tg_to_tf32
#undef tg_mma_f16
#undef tg_mma_bf16
#undef tg_mma_tf32
#undef tg_mma_s8
#undef tg_mma_f16_f16
#undef tg_split_tf32
#undef tg_split_bf16x2
#undef tg_cp_async
#undef tg_cp_async_commit
#undef tg_cp_async_wait
#undef tg_wgmma_fence
#undef tg_wgmma_commit
#undef tg_wgmma_wait
#undef tg_fence_proxy_async
#undef tg_pin
#undef tg_exp2
#undef tg_exp_approx
#undef tg_div_full
#undef tg_st16
#undef tg_st8
#undef tg_st16_if
#undef tg_st8_if
#undef tg_ld16_b64
#undef tg_st16_b64

// ex2.approx.ftz.f32: subnormal inputs and results flush to (signed) zero.
inline float tg_exp2(float x) {
  if (std::fabs(x) < std::numeric_limits<float>::min()) x = 0.0f;
  float y = std::exp2(x);
  return y < std::numeric_limits<float>::min() ? 0.0f : y;
}
inline double tg_exp2(double x) { return std::exp2(x); }
// ex2.approx.ftz.f32 of x * log2(e): the emulator's ex2 is exact, so only
// the product's rounding remains.
inline float tg_exp_approx(float x) { return tg_exp2(x * 1.4426950408889634f); }
// div.full.f32 is within 2 ulp; the emulator divides exactly.
inline float tg_div_full(float a, float b) { return a / b; }
// st.global.v4/v2 of words, optionally predicated.
inline void tg_st16(void* p, uint4 v) { std::memcpy(p, &v, 16); }
inline void tg_st8(void* p, uint2 v) { std::memcpy(p, &v, 8); }
inline void tg_st16_if(bool m, void* p, uint4 v) { if (m) std::memcpy(p, &v, 16); }
inline void tg_st8_if(bool m, void* p, uint2 v) { if (m) std::memcpy(p, &v, 8); }
template <class T, int N> struct tg_vec;  // the prelude's (Hopper prototype units have none)
template <class T> tg_vec<T, 2> tg_ld16_b64(const void* p) {
  tg_vec<T, 2> v;
  std::memcpy(&v, p, 16);
  return v;
}
template <class T> void tg_st16_b64(void* p, const tg_vec<T, 2>& v) { std::memcpy(p, &v, 16); }

inline float tg_f16_to_f32(unsigned short h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
inline unsigned short tg_f32_to_f16(float f) {
  _Float16 x = static_cast<_Float16>(f);
  unsigned short h;
  std::memcpy(&h, &x, 2);
  return h;
}
inline unsigned short tg_f32_to_f16_rz(float f) {
  unsigned short h = tg_f32_to_f16(f);
  if (std::isfinite(f) && std::fabs(tg_f16_to_f32(h)) > std::fabs(f)) --h;  // one step toward zero
  return h;
}
inline unsigned short tg_f32_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((u >> 16) | 0x40);
  return static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline unsigned short tg_f32_to_bf16_rz(float f) { return static_cast<unsigned short>(__float_as_uint(f) >> 16); }

// Shared addresses are offsets into the block's shared memory.
inline unsigned tg_shared_address(const void* p) {
  return static_cast<unsigned>(static_cast<const unsigned char*>(p) - tg_emu::shared());
}
inline unsigned tg_emu_shared_word(unsigned address) {
  unsigned w;
  std::memcpy(&w, tg_emu::shared() + address, 4);
  return w;
}
inline unsigned tg_lds32(unsigned address) { return tg_emu_shared_word(address); }
inline unsigned tg_lds8(unsigned address) { return tg_emu::shared()[address]; }

// ldmatrix .x4: lanes 8j..8j+7 give the row addresses of matrix j (8 rows of
// 8 b16); lane l receives, of each matrix, row l / 4, b16 elements
// 2 (l % 4) and 2 (l % 4) + 1; with .trans, column l / 4, rows 2 (l % 4) and
// 2 (l % 4) + 1.
void tg_emu_ldmatrix(unsigned* r, unsigned address, bool trans);
#ifdef TG_EMU_RUNTIME
void tg_emu_ldmatrix(unsigned* r, unsigned address, bool trans) {
  std::array<unsigned, 32> rows = tg_emu::warp_exchange(address);
  int l = tg_emu::lane();
  for (int j = 0; j < 4; ++j) {
    unsigned short lo, hi;
    if (!trans) {
      unsigned row = rows[static_cast<size_t>(8 * j + l / 4)];
      std::memcpy(&lo, tg_emu::shared() + row + 4 * (l % 4), 2);
      std::memcpy(&hi, tg_emu::shared() + row + 4 * (l % 4) + 2, 2);
    } else {
      unsigned row0 = rows[static_cast<size_t>(8 * j + 2 * (l % 4))], row1 = rows[static_cast<size_t>(8 * j + 2 * (l % 4) + 1)];
      std::memcpy(&lo, tg_emu::shared() + row0 + 2 * (l / 4), 2);
      std::memcpy(&hi, tg_emu::shared() + row1 + 2 * (l / 4), 2);
    }
    r[j] = lo | (static_cast<unsigned>(hi) << 16);
  }
}
#endif
inline void tg_ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned address) {
  unsigned r[4];
  tg_emu_ldmatrix(r, address, false);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
inline void tg_ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned address) {
  unsigned r[4];
  tg_emu_ldmatrix(r, address, true);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}

// cvt.rna.tf32.f32: round to 10 mantissa bits, ties away from zero.
inline unsigned tg_to_tf32(unsigned x) {
  if ((x & 0x7fffffffu) >= 0x7f800000u) return x;
  return (x + 0x1000u) & 0xffffe000u;
}

// --- mma.sync, from the PTX ISA fragment tables -------------------------------------------
void tg_mma_f16(float* d, const unsigned* a, const unsigned* b);
void tg_mma_bf16(float* d, const unsigned* a, const unsigned* b);
void tg_mma_tf32(float* d, const unsigned* a, const unsigned* b);
void tg_mma_s8(int* d, const unsigned* a, const unsigned* b);
#ifdef TG_EMU_RUNTIME
// g = lane / 4, t = lane % 4.
struct TgEmuFragments {
  unsigned a[4];
  unsigned b[2];
};

// Element (row, k) of A and (k, col) of B as the lane / register / byte that
// holds it, per shape: kind 0 = m16n8k16 (16-bit), 1 = m16n8k8 tf32, 2 = m16n8k32 s8.
struct TgEmuPlace {
  int lane, reg, byte;
};
inline TgEmuPlace tg_emu_a_place(int kind, int row, int k) {
  int g = row % 8, rh = row / 8;
  if (kind == 0) return {4 * g + (k % 8) / 2, rh + 2 * (k / 8), 2 * (k % 2)};
  if (kind == 1) return {4 * g + k % 4, rh + 2 * (k / 4), 0};
  return {4 * g + (k % 16) / 4, rh + 2 * (k / 16), k % 4};
}
inline TgEmuPlace tg_emu_b_place(int kind, int k, int col) {
  if (kind == 0) return {4 * col + (k % 8) / 2, k / 8, 2 * (k % 2)};
  if (kind == 1) return {4 * col + k % 4, k / 4, 0};
  return {4 * col + (k % 16) / 4, k / 16, k % 4};
}
inline double tg_emu_element(int kind, int type, unsigned word, int byte) {
  if (kind == 1) return __uint_as_float(word & 0xffffe000u);  // tf32 reads the top 19 bits
  if (kind == 2) return static_cast<signed char>((word >> (8 * byte)) & 0xff);
  unsigned short h = static_cast<unsigned short>(word >> (8 * byte));
  return type == 0 ? tg_f16_to_f32(h) : __uint_as_float(static_cast<unsigned>(h) << 16);
}
template <class Acc>
void tg_emu_mma(int kind, int type, Acc* d, const unsigned* a, const unsigned* b) {
  TgEmuFragments mine;
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  std::array<TgEmuFragments, 32> all = tg_emu::warp_exchange(mine);
  int l = tg_emu::lane(), g = l / 4, t = l % 4;
  int k_size = kind == 0 ? 16 : kind == 1 ? 8 : 32;
  for (int c = 0; c < 4; ++c) {
    int row = g + 8 * (c / 2), col = 2 * t + c % 2;
    double sum = 0;
    for (int k = 0; k < k_size; ++k) {
      TgEmuPlace pa = tg_emu_a_place(kind, row, k), pb = tg_emu_b_place(kind, k, col);
      sum += tg_emu_element(kind, type, all[static_cast<size_t>(pa.lane)].a[pa.reg], pa.byte) *
             tg_emu_element(kind, type, all[static_cast<size_t>(pb.lane)].b[pb.reg], pb.byte);
    }
    if constexpr (std::is_same_v<Acc, int>)  // .satfinite
      d[c] = static_cast<int>(std::clamp<double>(d[c] + sum, INT32_MIN, INT32_MAX));
    else
      d[c] = static_cast<Acc>(d[c] + static_cast<Acc>(sum));
  }
}
void tg_mma_f16(float* d, const unsigned* a, const unsigned* b) { tg_emu_mma(0, 0, d, a, b); }
void tg_mma_bf16(float* d, const unsigned* a, const unsigned* b) { tg_emu_mma(0, 1, d, a, b); }
void tg_mma_tf32(float* d, const unsigned* a, const unsigned* b) { tg_emu_mma(1, 0, d, a, b); }
void tg_mma_s8(int* d, const unsigned* a, const unsigned* b) { tg_emu_mma(2, 0, d, a, b); }
#endif  // TG_EMU_RUNTIME
// f16 accumulators (the prelude's tg_f16, binary16 bits): the sum of the
// products is rounded once into each half.
inline void tg_mma_f16_f16(unsigned short* d, const unsigned* a, const unsigned* b) {
  float wide[4];
  for (int c = 0; c < 4; ++c) wide[c] = tg_f16_to_f32(d[c]);
  tg_mma_f16(wide, a, b);
  for (int c = 0; c < 4; ++c) d[c] = tg_f32_to_f16(wide[c]);
}
// The prelude's splits, over the emulated roundings.
inline void tg_split_tf32(unsigned x, unsigned& hi, unsigned& lo) {
  hi = tg_to_tf32(x);
  lo = tg_to_tf32(__float_as_uint(__uint_as_float(x) - __uint_as_float(hi)));
}
template <int N, int STRIDE>
void tg_split_bf16x2(unsigned x0, unsigned x1, unsigned* w) {
  float r0 = __uint_as_float(x0), r1 = __uint_as_float(x1);
  for (int i = 0; i < N; ++i) {
    unsigned h0 = tg_f32_to_bf16(r0), h1 = tg_f32_to_bf16(r1);
    r0 -= __uint_as_float(h0 << 16);
    r1 -= __uint_as_float(h1 << 16);
    w[i * STRIDE] = h0 | (h1 << 16);
  }
}

// --- cp.async: copies wait until a wait_group covers their group ------------------------------
// The source is read when the copy is issued (a later store to it is not
// seen, as on the device); shared memory is written at the wait.
template <int BYTES>
void tg_cp_async(unsigned dst, const void* src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async moves 4, 8 or 16 bytes");
  if (dst % BYTES != 0 || (src_bytes > 0 && reinterpret_cast<uintptr_t>(src) % BYTES != 0))
    tg_emu::fail("misaligned cp.async (dst " + std::to_string(dst) + ", " + std::to_string(BYTES) + " bytes)");
  tg_emu::CpAsyncCopy c{dst, {}, BYTES, tg_emu::me().next_group};
  if (src_bytes > 0) std::memcpy(c.data, src, static_cast<size_t>(std::min(src_bytes, BYTES)));
#ifdef TG_EMU_EAGER_COPIES
  // The other extreme the device allows: the copy lands at once, so a stage
  // refilled while an asynchronous reader (wgmma) still needs it shows.
  std::memcpy(tg_emu::shared() + c.dst, c.data, static_cast<size_t>(BYTES));
#else
  tg_emu::me().copies.push_back(c);
#endif
}
inline void tg_cp_async_commit() { ++tg_emu::me().next_group; }
// Lands every copy but those of the n most recently committed groups (and
// the uncommitted ones).
void tg_emu_cp_async_wait(int n);
#ifdef TG_EMU_RUNTIME
void tg_emu_cp_async_wait(int n) {
  tg_emu::ThreadState& t = tg_emu::me();
  std::vector<tg_emu::CpAsyncCopy> left;
  for (const tg_emu::CpAsyncCopy& c : t.copies) {
    if (c.group < t.next_group - n)
      std::memcpy(tg_emu::shared() + c.dst, c.data, static_cast<size_t>(c.size));
    else
      left.push_back(c);
  }
  t.copies = std::move(left);
}
#endif
template <int N>
void tg_cp_async_wait() { tg_emu_cp_async_wait(N); }

#include "cuda_emulator_wgmma.h"
#include "cuda_emulator_async.h"
#endif
