// Host emulation of what generated CUDA kernels use, so the tensor-core code
// paths can be executed and checked on a machine without a GPU
// (tests/python/cuda_emulator.py builds the translation unit).
//
// A block runs as one std::thread per CUDA thread; __syncthreads is a block
// barrier, and warp-collective operations (shuffles, ldmatrix, mma, wgmma)
// exchange values through a per-warp buffer between two warp barriers.
// The fragment layouts of ldmatrix and mma are written here from the PTX ISA
// tables, independently of the code generator's own derivation, so a wrong
// lane or register in the generated code shows up as wrong numbers.
// cp.async copies are deferred until a wait_group that covers them, so a
// missing wait reads stale shared memory, as it could on the device.
//
// The translation unit is:
//   #define TG_EMU_PRELUDE   + this header   (renames the prelude's asm helpers)
//   <the generated prelude>                   (asm statements compile to nothing)
//   #undef TG_EMU_PRELUDE    + this header   (the emulated helpers)
//   <the generated kernel>, <a launcher>
#ifdef TG_EMU_PRELUDE
// ---- part 1: before the generated prelude --------------------------------------------
#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
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
#define tg_cp_async tg_emu_unused_cp_async
#define tg_cp_async_commit tg_emu_unused_cp_async_commit
#define tg_cp_async_wait tg_emu_unused_cp_async_wait
#define tg_wgmma_fence tg_emu_unused_wgmma_fence
#define tg_wgmma_commit tg_emu_unused_wgmma_commit
#define tg_wgmma_wait tg_emu_unused_wgmma_wait
#define tg_fence_proxy_async tg_emu_unused_fence_proxy_async
#define tg_pin tg_emu_unused_pin
#define tg_exp2 tg_emu_unused_exp2
#define tg_div_full tg_emu_unused_div_full
#define tg_st16 tg_emu_unused_st16
#define tg_st8 tg_emu_unused_st8
#define tg_st16_if tg_emu_unused_st16_if
#define tg_st8_if tg_emu_unused_st8_if
// Each generated wgmma instruction helper reports itself here.
void tg_emu_wgmma(float* d, unsigned long long a, unsigned long long b, int n, int type, int trans_a, int trans_b);
#define TG_WGMMA_HOOK(...) tg_emu_wgmma(__VA_ARGS__)
// The form with operand a from registers (four words of mma.sync's A fragment).
void tg_emu_wgmma_reg(float* d, const unsigned* a, unsigned long long b, int n, int type, int trans_b);
#define TG_WGMMA_REG_HOOK(...) tg_emu_wgmma_reg(__VA_ARGS__)

namespace tg_emu {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

inline constexpr int kSlotBytes = 256;

struct Warp {
  explicit Warp(int lanes) : barrier(lanes) {}
  std::barrier<> barrier;
  alignas(16) unsigned char slots[32][kSlotBytes];
};

struct BlockState {
  explicit BlockState(int threads) : all(threads) {
    for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Warp>(32));
  }
  std::barrier<> all;
  std::vector<std::unique_ptr<Warp>> warps;
  std::vector<unsigned char> smem;
  std::atomic<int> vote{0};
};

struct ThreadState {
  Dim3 thread, block;
  BlockState* state = nullptr;
  int next_group = 0;  // cp.async commit groups so far
};

inline thread_local ThreadState self;
inline Dim3 grid_dim, block_dim;

inline int lane() { return static_cast<int>(self.thread.x & 31); }
inline Warp& warp() { return *self.state->warps[self.thread.x / 32]; }
inline unsigned char* shared() { return self.state->smem.data(); }

// Every lane's value of `mine`.
template <class T>
std::array<T, 32> warp_exchange(const T& mine) {
  static_assert(sizeof(T) <= kSlotBytes, "exchange slot too small");
  Warp& w = warp();
  std::memcpy(w.slots[lane()], &mine, sizeof(T));
  w.barrier.arrive_and_wait();
  std::array<T, 32> all;
  for (int l = 0; l < 32; ++l) std::memcpy(&all[static_cast<size_t>(l)], w.slots[l], sizeof(T));
  w.barrier.arrive_and_wait();
  return all;
}

// Runs `kernel` over the grid, block after block.
inline void launch(Dim3 grid, unsigned threads, unsigned shared_bytes, const std::function<void()>& kernel) {
  grid_dim = grid;
  block_dim = {threads, 1, 1};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        BlockState state(static_cast<int>(threads));
        // Garbage, like real shared memory, so unwritten reads show.
        state.smem.assign(shared_bytes + 16, 0xA5);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            self = ThreadState{};
            self.thread = {t, 0, 0};
            self.block = {x, y, z};
            self.state = &state;
            kernel();
          });
        for (std::thread& th : pool) th.join();
      }
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

#define threadIdx (tg_emu::self.thread)
#define blockIdx (tg_emu::self.block)
#define gridDim (tg_emu::grid_dim)
#define blockDim (tg_emu::block_dim)

inline void __syncthreads() { tg_emu::self.state->all.arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { tg_emu::warp().barrier.arrive_and_wait(); }
inline int __syncthreads_or(int predicate) {
  tg_emu::BlockState& s = *tg_emu::self.state;
  s.all.arrive_and_wait();
  if (predicate) s.vote.store(1);
  s.all.arrive_and_wait();
  int result = s.vote.load();
  s.all.arrive_and_wait();
  if (tg_emu::self.thread.x == 0) s.vote.store(0);
  s.all.arrive_and_wait();
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
#undef tg_cp_async
#undef tg_cp_async_commit
#undef tg_cp_async_wait
#undef tg_wgmma_fence
#undef tg_wgmma_commit
#undef tg_wgmma_wait
#undef tg_fence_proxy_async
#undef tg_pin
#undef tg_exp2
#undef tg_div_full
#undef tg_st16
#undef tg_st8
#undef tg_st16_if
#undef tg_st8_if

// ex2.approx.ftz.f32: subnormal inputs and results flush to (signed) zero.
inline float tg_exp2(float x) {
  if (std::fabs(x) < std::numeric_limits<float>::min()) x = 0.0f;
  float y = std::exp2(x);
  return y < std::numeric_limits<float>::min() ? 0.0f : y;
}
inline double tg_exp2(double x) { return std::exp2(x); }
// div.full.f32 is within 2 ulp; the emulator divides exactly.
inline float tg_div_full(float a, float b) { return a / b; }
// st.global.v4/v2 of words, optionally predicated.
inline void tg_st16(void* p, uint4 v) { std::memcpy(p, &v, 16); }
inline void tg_st8(void* p, uint2 v) { std::memcpy(p, &v, 8); }
inline void tg_st16_if(bool m, void* p, uint4 v) { if (m) std::memcpy(p, &v, 16); }
inline void tg_st8_if(bool m, void* p, uint2 v) { if (m) std::memcpy(p, &v, 8); }

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
inline void tg_emu_ldmatrix(unsigned* r, unsigned address, bool trans) {
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
    d[c] = static_cast<Acc>(d[c] + static_cast<Acc>(sum));
  }
}
inline void tg_mma_f16(float* d, const unsigned* a, const unsigned* b) { tg_emu_mma(0, 0, d, a, b); }
inline void tg_mma_bf16(float* d, const unsigned* a, const unsigned* b) { tg_emu_mma(0, 1, d, a, b); }
inline void tg_mma_tf32(float* d, const unsigned* a, const unsigned* b) { tg_emu_mma(1, 0, d, a, b); }
inline void tg_mma_s8(int* d, const unsigned* a, const unsigned* b) { tg_emu_mma(2, 0, d, a, b); }

// --- cp.async: copies wait until a wait_group covers their group ------------------------------
// The source is read when the copy is issued (a later store to it is not
// seen, as on the device); shared memory is written at the wait.
struct TgEmuCopy {
  unsigned dst;
  unsigned char data[16];
  int size, group;
};
inline thread_local std::vector<TgEmuCopy> tg_emu_copies;
template <int BYTES>
void tg_cp_async(unsigned dst, const void* src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async moves 4, 8 or 16 bytes");
  if (dst % BYTES != 0 || (src_bytes > 0 && reinterpret_cast<uintptr_t>(src) % BYTES != 0)) {
    std::fprintf(stderr, "tg_emu: misaligned cp.async (dst %u, src %p, %d bytes)\n", dst, src, BYTES);
    std::abort();
  }
  TgEmuCopy c{dst, {}, BYTES, tg_emu::self.next_group};
  if (src_bytes > 0) std::memcpy(c.data, src, static_cast<size_t>(std::min(src_bytes, BYTES)));
#ifdef TG_EMU_EAGER_COPIES
  // The other extreme the device allows: the copy lands at once, so a stage
  // refilled while an asynchronous reader (wgmma) still needs it shows.
  std::memcpy(tg_emu::shared() + c.dst, c.data, static_cast<size_t>(BYTES));
#else
  tg_emu_copies.push_back(c);
#endif
}
inline void tg_cp_async_commit() { ++tg_emu::self.next_group; }
// Lands every copy but those of the N most recently committed groups (and
// the uncommitted ones).
template <int N>
void tg_cp_async_wait() {
  std::vector<TgEmuCopy> left;
  for (const TgEmuCopy& c : tg_emu_copies) {
    if (c.group < tg_emu::self.next_group - N)
      std::memcpy(tg_emu::shared() + c.dst, c.data, static_cast<size_t>(c.size));
    else
      left.push_back(c);
  }
  tg_emu_copies = std::move(left);
}

// --- wgmma: each instruction runs when a wait_group covers its group ---------------------------
// Operands are read through the descriptors as the PTX ISA describes the
// canonical layouts: swizzle atoms of 8 rows x W bytes (W = 128, 64, 32 for
// modes 1, 2, 3), rows along K ("K-major": the stride byte offset steps 8
// rows of M/N, the leading one the next atom along K) or along M/N
// (transposed: the leading byte offset steps the next atom along M/N, the
// stride one 8 rows of K); then the hardware's swizzle: address bits
// [4, 4 + log2(W/16)) ^= bits [7, 7 + log2(W/16)). The accumulator fragment:
// warp w % 4 of the warpgroup holds rows 16 (w % 4) .. + 15, as mma.sync's.
struct TgEmuWgmma {
  float* d;
  unsigned long long a, b;
  int n, type, trans_a, trans_b, group;
  // a from registers: every lane's four A fragment words, gathered at issue
  // (the warp's 16 rows of the warpgroup's 64, laid out as mma.sync's A).
  std::shared_ptr<std::array<std::array<unsigned, 4>, 32>> a_registers = nullptr;
};
inline thread_local std::vector<TgEmuWgmma> tg_emu_wgmmas;
inline thread_local int tg_emu_wgmma_groups = 0;

inline void tg_emu_wgmma(float* d, unsigned long long a, unsigned long long b, int n, int type, int trans_a,
                         int trans_b) {
  tg_emu_wgmmas.push_back({d, a, b, n, type, trans_a, trans_b, tg_emu_wgmma_groups});
}
inline void tg_emu_wgmma_reg(float* d, const unsigned* a, unsigned long long b, int n, int type, int trans_b) {
  std::array<unsigned, 4> mine;
  std::memcpy(mine.data(), a, sizeof mine);
  auto all = std::make_shared<std::array<std::array<unsigned, 4>, 32>>(tg_emu::warp_exchange(mine));
  tg_emu_wgmmas.push_back({d, 0, b, n, type, 0, trans_b, tg_emu_wgmma_groups, std::move(all)});
}
inline void tg_wgmma_fence() {}
inline void tg_wgmma_commit() { ++tg_emu_wgmma_groups; }
inline void tg_fence_proxy_async() {}
inline void tg_pin(float&) {}
inline void tg_pin(int&) {}

// Element (mn, k) of a 16-bit operand through descriptor `desc`.
inline float tg_emu_desc_element(unsigned long long desc, bool mn_major, int mn, int k, int type) {
  unsigned start = static_cast<unsigned>(desc & 0x3fff) << 4;
  unsigned lbo = static_cast<unsigned>((desc >> 16) & 0x3fff) << 4;
  unsigned sbo = static_cast<unsigned>((desc >> 32) & 0x3fff) << 4;
  unsigned mode = static_cast<unsigned>(desc >> 62);
  unsigned width = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  if (width == 0) {
    std::fprintf(stderr, "tg_emu: wgmma descriptor without swizzle is not emulated\n");
    std::abort();
  }
  unsigned per_row = width / 2;  // 16-bit elements in a row of an atom
  unsigned u = mn_major ? start + (mn / per_row) * lbo + (k / 8) * sbo + (k % 8) * width + (mn % per_row) * 2
                        : start + (mn / 8) * sbo + (k / per_row) * lbo + (mn % 8) * width + (k % per_row) * 2;
  unsigned physical = u ^ (((u >> 7) & (width / 16 - 1)) << 4);
  unsigned short h;
  std::memcpy(&h, tg_emu::shared() + physical, 2);
  return type == 0 ? tg_f16_to_f32(h) : __uint_as_float(static_cast<unsigned>(h) << 16);
}

template <int N>
void tg_wgmma_wait() {
  int l = tg_emu::lane(), quarter = static_cast<int>(tg_emu::self.thread.x / 32) % 4;
  std::vector<TgEmuWgmma> left;
  for (const TgEmuWgmma& w : tg_emu_wgmmas) {
    if (w.group >= tg_emu_wgmma_groups - N) {
      left.push_back(w);
      continue;
    }
    for (int i = 0; i < w.n / 8; ++i)
      for (int c = 0; c < 4; ++c) {
        int row = 16 * quarter + l / 4 + 8 * (c / 2), col = 8 * i + 2 * (l % 4) + c % 2;
        double sum = 0;
        for (int k = 0; k < 16; ++k) {
          double a;
          if (w.a_registers) {
            TgEmuPlace p = tg_emu_a_place(0, row - 16 * quarter, k);
            a = tg_emu_element(0, w.type, (*w.a_registers)[static_cast<size_t>(p.lane)][static_cast<size_t>(p.reg)],
                               p.byte);
          } else {
            a = tg_emu_desc_element(w.a, w.trans_a != 0, row, k, w.type);
          }
          sum += a * tg_emu_desc_element(w.b, w.trans_b != 0, col, k, w.type);
        }
        w.d[4 * i + c] = static_cast<float>(w.d[4 * i + c] + sum);
      }
  }
  tg_emu_wgmmas = std::move(left);
}
#endif
