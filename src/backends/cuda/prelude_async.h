// Device helpers for Hopper's asynchronous machinery (sm_90a): mbarriers,
// TMA bulk tensor copies, stores and reductions, named barriers, clusters,
// setmaxnreg and stmatrix, for warp-specialized kernels: a producer issues
// the copies of a ring of stages, each stage with a `full` mbarrier (one
// arrive.expect_tx plus the copies' bytes) and an `empty` one (one arrive
// per reader).
// Appended after kMmaPrelude and kWgmmaPrelude (it uses tg_shared_address
// and pairs with tg_fence_proxy_async there) in units that copy with the
// TMA (codegen_tma.cpp); the hand-written prototypes in tools/hopper include
// the same text.
//
// TG_HOOK(op, args...), empty here, lets the tests' host emulator
// (tests/python/cuda_emulator_async.h) replace a helper's body by its own
// tg_emu_op(args...): it models the phases, the transaction bytes and the
// asynchrony of every helper below.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

inline constexpr std::string_view kAsyncPrelude = R"PRELUDE(
// --- Hopper async proxy: mbarriers, TMA, named barriers, setmaxnreg ------------------------
#ifndef TG_HOOK
#define TG_HOOK(...)
#endif

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. Passed by
// value as a __grid_constant__ kernel parameter, so the TMA unit reads it
// from parameter space through its generic address.
struct __align__(64) TgTensorMap {
  unsigned long long opaque[16];
};

// An mbarrier (8 bytes of shared memory) expecting `count` arrivals per phase.
TG_DEVICE void tg_mbar_init(unsigned bar, unsigned count) {
  TG_HOOK(mbar_init, bar, count);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes the mbarrier.init writes visible to the cluster and to the async
// proxy (the TMA unit's complete_tx) before anyone uses the barriers.
TG_DEVICE void tg_fence_mbar_init() {
  TG_HOOK(fence_mbar_init);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// One arrival that also raises the phase's expected transaction bytes: the
// phase completes when every arrival is in and `bytes` have landed.
TG_DEVICE void tg_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  TG_HOOK(mbar_arrive_expect_tx, bar, bytes);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival (release at CTA scope).
TG_DEVICE void tg_mbar_arrive(unsigned bar) {
  TG_HOOK(mbar_arrive, bar);
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// One arrival on the barrier at the same offset in CTA `cta` of the cluster.
// Default semantics (release at CTA scope), as CUTLASS's cluster barriers:
// what it orders are this warp's wgmma reads, complete at the wait_group
// before it, against the TMA writes the partner's producer issues after
// seeing the phase complete. `.release.cluster` here compiled to
// MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before every arrive.
TG_DEVICE void tg_mbar_arrive_cluster(unsigned bar, unsigned cta) {
  TG_HOOK(mbar_arrive_cluster, bar, cta);
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
  TG_HOOK(mbar_try_wait, bar, parity);
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
  TG_HOOK(prefetch_tensormap, map);
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
// TMA, 1-D: the box of `map` at element c0 into shared memory at `dst`.
TG_DEVICE void tg_tma_load_1d(unsigned dst, const TgTensorMap* map, unsigned bar, int c0) {
  TG_HOOK(tma_load, dst, map, bar, 1, c0, 0, 0, 0u);
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];" ::"r"(
                   dst),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(bar)
               : "memory");
}
// TMA: the box of `map` at element coordinates (c0 along the contiguous
// dim, c1 along the rows) into shared memory at `dst`, laid out and swizzled
// as the map says; its bytes count towards mbarrier `bar`'s transaction.
// Elements of the box outside the tensor land as zeros and count too.
TG_DEVICE void tg_tma_load_2d(unsigned dst, const TgTensorMap* map, unsigned bar, int c0, int c1) {
  TG_HOOK(tma_load, dst, map, bar, 2, c0, c1, 0, 0u);
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same for a 3-D map: c0 along the contiguous dim, c1 along the rows,
// c2 the outer index (attention's batch x head).
TG_DEVICE void tg_tma_load_3d(unsigned dst, const TgTensorMap* map, unsigned bar, int c0, int c1, int c2) {
  TG_HOOK(tma_load, dst, map, bar, 3, c0, c1, c2, 0u);
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
  TG_HOOK(tma_load, dst, map, bar, 2, c0, c1, 0, (unsigned)cta_mask);
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
// TMA store: shared memory at `src` (laid out as the map's box) to the box
// of `map` at (c0, c1); parts of the box outside the tensor are not written.
// The shared source must have been made visible to the async proxy
// (tg_fence_proxy_async by every thread that wrote it).
TG_DEVICE void tg_tma_store_2d(const TgTensorMap* map, unsigned src, int c0, int c1) {
  TG_HOOK(tma_store, map, src, 2, c0, c1, 0);
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
// The same for 1-D and 3-D maps.
TG_DEVICE void tg_tma_store_1d(const TgTensorMap* map, unsigned src, int c0) {
  TG_HOOK(tma_store, map, src, 1, c0, 0, 0);
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%1}], [%2];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(src)
               : "memory");
}
TG_DEVICE void tg_tma_store_3d(const TgTensorMap* map, unsigned src, int c0, int c1, int c2) {
  TG_HOOK(tma_store, map, src, 3, c0, c1, c2);
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
// TMA reduction, OP one of add, min, max, and, or, xor: every element of
// the box of `map` at the coordinates (c0 along the contiguous dim) that
// lies inside the tensor becomes (its value) OP (the element at `src`),
// each one an atomic of its own (relaxed, gpu scope: PTX ISA,
// cp.reduce.async.bulk.tensor), in the map's element type; the rest of the
// box is left alone. Source, bulk groups and waits as for the store.
// CODE names OP for the emulator's hook: 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor.
#define TG_TMA_REDUCE(OP, CODE)                                                                                    \
  TG_DEVICE void tg_tma_reduce_##OP##_1d(const TgTensorMap* map, unsigned src, int c0) {                          \
    TG_HOOK(tma_reduce, map, src, 1, c0, 0, 0, CODE);                                                              \
    asm volatile("cp.reduce.async.bulk.tensor.1d.global.shared::cta." #OP ".tile.bulk_group [%0, {%1}], [%2];" ::"l"( \
                     reinterpret_cast<unsigned long long>(map)),                                                   \
                 "r"(c0), "r"(src)                                                                                 \
                 : "memory");                                                                                      \
  }                                                                                                                \
  TG_DEVICE void tg_tma_reduce_##OP##_2d(const TgTensorMap* map, unsigned src, int c0, int c1) {                  \
    TG_HOOK(tma_reduce, map, src, 2, c0, c1, 0, CODE);                                                             \
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta." #OP                                          \
                 ".tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(reinterpret_cast<unsigned long long>(map)),        \
                 "r"(c0), "r"(c1), "r"(src)                                                                        \
                 : "memory");                                                                                      \
  }                                                                                                                \
  TG_DEVICE void tg_tma_reduce_##OP##_3d(const TgTensorMap* map, unsigned src, int c0, int c1, int c2) {          \
    TG_HOOK(tma_reduce, map, src, 3, c0, c1, c2, CODE);                                                            \
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta." #OP                                          \
                 ".tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(reinterpret_cast<unsigned long long>(map)),    \
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)                                                               \
                 : "memory");                                                                                      \
  }
TG_TMA_REDUCE(add, 0)
TG_TMA_REDUCE(min, 1)
TG_TMA_REDUCE(max, 2)
TG_TMA_REDUCE(and, 3)
TG_TMA_REDUCE(or, 4)
TG_TMA_REDUCE(xor, 5)
#undef TG_TMA_REDUCE
TG_DEVICE void tg_bulk_commit() {
  TG_HOOK(bulk_commit);
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Until at most N bulk groups of this thread still read their shared source.
template <int N>
TG_DEVICE void tg_bulk_wait_read() {
  TG_HOOK(bulk_wait, N, true);
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Until at most N bulk groups of this thread are incomplete (writes done).
template <int N>
TG_DEVICE void tg_bulk_wait() {
  TG_HOOK(bulk_wait, N, false);
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// A barrier over `THREADS` threads (whole warps) on named barrier `id` (1..15;
// 0 is __syncthreads).
template <int THREADS>
TG_DEVICE void tg_named_barrier(int id) {
  TG_HOOK(named_barrier, id, THREADS, true);
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(THREADS) : "memory");
}
// Counts this warp's threads towards named barrier `id` without waiting.
template <int THREADS>
TG_DEVICE void tg_named_arrive(int id) {
  TG_HOOK(named_barrier, id, THREADS, false);
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(THREADS) : "memory");
}

// --- clusters ---------------------------------------------------------------------------
TG_DEVICE unsigned tg_cluster_ctarank() {
  TG_HOOK(cluster_ctarank);
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
TG_DEVICE unsigned tg_cluster_id_x() {
  TG_HOOK(cluster_id_x);
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
TG_DEVICE unsigned tg_cluster_count_x() {
  TG_HOOK(cluster_count_x);
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster; orders the barrier inits above
// it before any remote use below it.
TG_DEVICE void tg_cluster_sync() {
  TG_HOOK(cluster_sync);
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// --- registers ------------------------------------------------------------------------
// The warpgroup's per-thread register budget, lowered or raised (all four
// warps execute the same one; N a multiple of 8 in [24, 256]). inc blocks
// until the CTA's pool has the registers: the pool holds what the launch
// gave every thread, so the warpgroups' budgets must add up to no more.
template <int N>
TG_DEVICE void tg_setmaxnreg_dec() {
  TG_HOOK(setmaxnreg, N, false);
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
TG_DEVICE void tg_setmaxnreg_inc() {
  TG_HOOK(setmaxnreg, N, true);
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// --- stmatrix -------------------------------------------------------------------------
// Four 8x8 16-bit matrices to shared memory: lane l gives the row address of
// row l % 8 of matrix l / 8; register i of lane l holds row l / 4, columns
// 2 (l % 4) and +1, of matrix i (mma's accumulator fragment). A write of
// the generic proxy: tg_fence_proxy_async before a TMA store reads it.
TG_DEVICE void tg_stmatrix_x4(unsigned address, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  TG_HOOK(stmatrix_x4, address, r0, r1, r2, r3);
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(address), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
)PRELUDE";

}  // namespace tegula::backends::cuda
