// Internal to the CUDA backend: what a loop body computes for an iteration
// ahead of the current one. The pipelines' refills (codegen_pipeline.cpp,
// codegen_tma_ring.cpp) issue the loads of iteration k + S - 1 while
// iteration k runs, so the masks, pointers and offsets those loads read are
// computed again for that iteration: the body's pure ops that compute them
// from the induction variable and loop-invariant values, emitted in a nested
// scope where the induction variable is rebound.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"

namespace tegula::backends::cuda {

struct AheadOps {
  std::vector<ir::OpId> ops;  // ops of the loop's body block, each once
  bool uses_iv = false;       // the induction variable is read
};

// Adds the body ops `v` is computed from to `ahead`. False when `v` depends
// on anything else than the induction variable and values defined outside
// `loop` (a carried value, an op that is not pure and layout-free).
bool collect_ahead(const ir::Function& fn, ir::OpId loop, ir::ValueId v, AheadOps& ahead);

// In the current scope: the induction variable of iteration `j` (a C++
// expression of the loop counter), when used, then the ops in body order.
void emit_ahead(CudaContext& ctx, ir::OpId loop, const AheadOps& ahead, const std::string& j);

}  // namespace tegula::backends::cuda
