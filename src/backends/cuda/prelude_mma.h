// Device helpers for tensor-core dots (codegen_mma.cpp), appended to the
// prelude of units that run a dot on tensor cores (sm_80 and newer).
//
// Operand tiles live in shared memory as rows of 16-byte chunks whose chunk
// index is XORed with a few row bits (tg_swizzle), so that the eight rows
// one ldmatrix phase reads, and the chunks a warp's vector stores write, fall
// in distinct banks. ldmatrix.x4 gives every lane one 32-bit word of four
// 8x(16-byte) matrices: exactly the A (four words) and B (two words, twice)
// fragments of mma.sync m16n8k16 (f16, bf16), m16n8k8 (tf32) and m16n8k32
// (s8), whose fragments are all "word lane % 4 of row lane / 4" of such
// matrices when the tile's rows run along K. The .trans form serves 16-bit
// tiles whose rows run along M or N.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

inline constexpr std::string_view kMmaPrelude = R"PRELUDE(
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
)PRELUDE";

// sm_90 only: Hopper's warpgroup MMA (codegen_wgmma.cpp). The instruction
// itself, one per accumulator width N, is generated into the unit
// (tg_wgmma_m64nNk16_*); TG_WGMMA_HOOK and TG_WGMMA_REG_HOOK (a from
// registers), empty here, let the tests' host emulator see each one.
inline constexpr std::string_view kWgmmaPrelude = R"PRELUDE(
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
)PRELUDE";

}  // namespace tegula::backends::cuda
