// Internal to the CUDA backend: warp specialization on sm_90. A kernel whose
// K loop is a TMA ring (codegen_tma_ring.cpp) at the top level gets one more
// warpgroup, the producer, after the num_warps warps that run the kernel
// (the consumers). The producer recomputes what the ring's copies need (the
// loop bounds and the blocks' offsets: scalars of the kernel's prologue),
// issues every iteration's copies into the ring as stages free up, and
// exits; the consumers wait for the blocks, issue the wgmma groups, release
// the stages and run everything else. So the copies never wait behind a
// consumer, and no consumer waits for a stage to be released.
//
// Register budgets move with setmaxnreg: the launch gives every thread
// what __launch_bounds__(threads, 1) allows (65536 / threads, on 8-register
// steps), the producer gives most of its share back and the consumers take
// it; the budgets add up to exactly what the launch gave, so the
// consumers' setmaxnreg.inc never waits for registers nobody frees.
//
// Barriers: the consumers' CTA barriers become named barrier 1 over the
// consumer threads (the producer has left); the one barrier every thread
// passes is the one after the ring's mbarriers are initialized, before the
// producer branches off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tegula::backends::cuda {

class CudaContext;

struct WarpSpecialization {
  ir::OpId loop;                  // the TMA ring loop the producer feeds
  // The loop over tiles around it (a persistent kernel: the ring loop at the
  // top of its body), or invalid when the ring loop is at the kernel's top
  // level. The producer walks the same tiles, and the ring's stages and
  // phases run on across them.
  ir::OpId tiles;
  int consumer_threads = 0;       // threads 0 .. consumer_threads - 1 run the kernel's body
  int launch_registers = 0;       // per thread, what the launch gives (the CTA's pool / threads)
  int producer_registers = 0;     // after the producer's setmaxnreg.dec; 0: budgets stay as launched
  int consumer_registers = 0;     // after the consumers' setmaxnreg.inc
  // The ops the producer computes again, in body order: of the kernel's top
  // level before the loop (or the tile loop), and of the tile loop's body
  // before the ring loop.
  std::vector<ir::OpId> prologue, tile_prologue;

  static constexpr int kProducerThreads = 128;
  int threads() const { return consumer_threads + kProducerThreads; }
  bool moves_registers() const { return producer_registers > 0; }
};

// The kernel's warp specialization, or nothing: then `why` says why not
// (empty when the kernel has no TMA ring loop to feed).
std::optional<WarpSpecialization> plan_warp_specialization(const CudaContext& ctx, std::string& why);

// At the start of the kernel's body: the ring's barriers, the barrier every
// thread passes, and the producer's branch (which returns); the consumers go
// on with their registers raised.
void emit_warp_specialization(CudaContext& ctx, const WarpSpecialization& ws);

// One line for the layouts text (inspect): the partition, or why there is none.
std::string describe_warp_specialization(const ir::Function& fn, const std::optional<WarpSpecialization>& ws,
                                        const std::string& why);

}  // namespace tegula::backends::cuda
