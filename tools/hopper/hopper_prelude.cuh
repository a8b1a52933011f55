// Helpers shared by the hand-written Hopper (sm_90a) prototypes (ws_matmul.cu,
// ws_attention.cu): shared-memory addresses, mbarriers, TMA copies, named
// barriers, clusters, setmaxnreg, wgmma descriptors and groups, register
// lists for inline-PTX wgmma, 16-bit packing and stmatrix. Written the way
// Tegula's generated units are: tg_ prefix, inline PTX, nothing included.
#pragma once

#define TG_DEVICE __device__ __forceinline__

typedef unsigned short tg_f16;   // IEEE binary16, as its bits
typedef unsigned short tg_bf16;  // bfloat16, as its bits

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. Passed by
// value as a __grid_constant__ kernel parameter, so the TMA unit reads it
// from parameter space through its generic address.
struct __align__(64) TgTensorMap {
  unsigned long long opaque[16];
};


// --- shared memory, barriers, TMA ---------------------------------------------------------
// The shared-state-space address of a pointer into shared memory.
TG_DEVICE unsigned tg_shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// An mbarrier (8 bytes of shared memory) expecting `count` arrivals per phase.
TG_DEVICE void tg_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes the mbarrier.init writes visible to the cluster and to the async
// proxy (the TMA unit's complete_tx) before anyone uses the barriers.
TG_DEVICE void tg_fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// One arrival that also raises the phase's expected transaction bytes: the
// phase completes when every arrival is in and `bytes` have landed.
TG_DEVICE void tg_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival (release at CTA scope).
TG_DEVICE void tg_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// One arrival on the barrier at the same offset in CTA `cta` of the cluster.
// Default semantics (release at CTA scope), as CUTLASS's cluster barriers:
// what it orders are this warp's wgmma reads, complete at the wait_group
// before it, against the TMA writes the partner's producer issues after
// seeing the phase complete. `.release.cluster` here compiled to
// MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before every arrive.
TG_DEVICE void tg_mbar_arrive_cluster(unsigned bar, unsigned cta) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(bar),
      "r"(cta)
      : "memory");
}
// Whether the phase of parity `parity` has completed: true right away for
// the phase before the current one, so a fresh barrier (in phase 0) passes a
// wait for parity 1. try_wait suspends a while before it says no. Acquire
// at CTA scope (the default): `.acquire.cluster` added a CCTL.IVALL (L1
// invalidation) after every wait.
TG_DEVICE bool tg_mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
TG_DEVICE void tg_mbar_wait(unsigned bar, unsigned parity) {
  while (!tg_mbar_try_wait(bar, parity)) {
  }
}

// Starts fetching a tensor map into the TMA unit's descriptor cache.
TG_DEVICE void tg_prefetch_tensormap(const TgTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
// TMA: the box of `map` at element coordinates (c0 along the contiguous
// dim, c1 along the rows) into shared memory at `dst`, laid out and swizzled
// as the map says; its bytes count towards mbarrier `bar`'s transaction.
TG_DEVICE void tg_tma_load_2d(unsigned dst, const TgTensorMap* map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same for a 3-D map: c0 along the contiguous dim, c1 along the rows,
// c2 the outer index (attention's batch x head). Rows of the box past the
// tensor's dim 1 land as zeros and still count towards the transaction.
TG_DEVICE void tg_tma_load_3d(unsigned dst, const TgTensorMap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
          dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// The same, landing at the same offset `dst` in every CTA of `cta_mask` and
// signalling the barrier at offset `bar` in each of them.
TG_DEVICE void tg_tma_load_2d_multicast(unsigned dst, const TgTensorMap* map, unsigned bar, int c0, int c1,
                                        unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
// TMA store: shared memory at `src` (laid out as the map's box) to the box
// of `map` at (c0, c1); parts of the box outside the tensor are not written.
TG_DEVICE void tg_tma_store_2d(const TgTensorMap* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
TG_DEVICE void tg_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most N bulk groups of this thread still read their shared source.
template <int N>
TG_DEVICE void tg_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Until at most N bulk groups of this thread are incomplete (writes done).
template <int N>
TG_DEVICE void tg_bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// Generic-proxy writes of shared memory (stmatrix) made visible to the async
// proxy (the TMA store reads through it).
TG_DEVICE void tg_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// A barrier over `THREADS` threads (whole warps) on named barrier `id` (1..15;
// 0 is __syncthreads).
template <int THREADS>
TG_DEVICE void tg_named_barrier(int id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(THREADS) : "memory");
}
// Counts this warp's threads towards named barrier `id` without waiting.
template <int THREADS>
TG_DEVICE void tg_named_arrive(int id) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(THREADS) : "memory");
}

// --- clusters ---------------------------------------------------------------------------
TG_DEVICE unsigned tg_cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
TG_DEVICE unsigned tg_cluster_id_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
TG_DEVICE unsigned tg_cluster_count_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster; orders the barrier inits above
// it before any remote use below it.
TG_DEVICE void tg_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// --- registers ------------------------------------------------------------------------
// The warpgroup's per-thread register budget, lowered or raised (all four
// warps execute the same one). inc blocks until the CTA's pool has them.
template <int N>
TG_DEVICE void tg_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
TG_DEVICE void tg_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// --- Hopper wgmma -----------------------------------------------------------------------
// A shared-memory matrix descriptor: start address, leading and stride byte
// offsets (units of 16 bytes), swizzle mode (1: 128-byte, 2: 64, 3: 32);
// base offset 0, since every tile starts on a 1024-byte line.
TG_DEVICE unsigned long long tg_wgmma_desc(unsigned address, unsigned lbo, unsigned sbo, unsigned mode) {
  return (unsigned long long)((address & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | ((unsigned long long)mode << 62);
}
TG_DEVICE void tg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TG_DEVICE void tg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Until at most N committed groups of this warpgroup are in flight.
template <int N>
TG_DEVICE void tg_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Pins an accumulator register: the compiler moves no access of it across
// (the wgmma writes it asynchronously, which the compiler cannot see).
TG_DEVICE void tg_pin(float& x) { asm volatile("" : "+f"(x)::"memory"); }

#define TG_REGS_32                                                                          \
  "{"                                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"          \
  "}"
#define TG_REGS_64                                                                          \
  "{"                                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "        \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "        \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"          \
  "}"
#define TG_REGS_128                                                                                     \
  "{"                                                                                                   \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                              \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                    \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                    \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                    \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                    \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                    \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "         \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"       \
  "}"
#define TG_ACC_8(i)                                                                                  \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),          \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define TG_ACC_64 TG_ACC_8(0), TG_ACC_8(8), TG_ACC_8(16), TG_ACC_8(24), TG_ACC_8(32), TG_ACC_8(40), TG_ACC_8(48), TG_ACC_8(56)
#define TG_ACC_128 \
  TG_ACC_64, TG_ACC_8(64), TG_ACC_8(72), TG_ACC_8(80), TG_ACC_8(88), TG_ACC_8(96), TG_ACC_8(104), TG_ACC_8(112), TG_ACC_8(120)

#define TG_ACC_32 TG_ACC_8(0), TG_ACC_8(8), TG_ACC_8(16), TG_ACC_8(24)

// --- epilogue helpers -------------------------------------------------------------------
// Two floats rounded to nearest even and packed: lo in bits 0..15 (the lower
// address), hi in 16..31. cvt's first source goes to the upper half.
template <bool F16>
TG_DEVICE unsigned tg_pack2(float lo, float hi) {
  unsigned r;
  if constexpr (F16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// Four 8x8 16-bit matrices to shared memory: lane l gives the row address of
// row l % 8 of matrix l / 8; register i of lane l holds row l / 4, columns
// 2 (l % 4) and +1, of matrix i (mma's accumulator fragment).
TG_DEVICE void tg_stmatrix_x4(unsigned address, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(address), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
