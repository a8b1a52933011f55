// How a tile's global access (load, store, atomic) is split into vector
// accesses: the fastest-varying dim of the registers, as far as the pointer
// tile's axis facts (contiguity, divisibility) allow, at most 16 bytes.
#pragma once

#include "backends/cuda/codegen_context.h"

namespace tegula::backends::cuda {

// V elements per access, and whether one mask element stands for the whole
// group (the mask is operand 1 of a load, 2 of a store or atomic_rmw).
struct AccessPlan {
  int vector = 1;
  bool uniform_mask = true;
};

AccessPlan plan_access(const CudaContext& ctx, const ir::Op& op, const Layout& layout);

}  // namespace tegula::backends::cuda
