// Lowering of tensor-descriptor ops: every `desc_load`, `desc_store` and
// `desc_atomic` (ir/descriptor.h) becomes the pointer tile, mask and
// `load`/`store`/`atomic_rmw` it means (ir/block_access.h), in place. Runs first, before the optimization
// stages. Targets without a tensor-copy engine (the CPU backend, CUDA
// before sm_90) lower every op, so their IR and generated code are what the
// front end made before the ops existed; sm_90 keeps the ops its TMA can
// copy (backends/cuda/tma_plan.h) and lowers the rest. An op kept "where
// its offsets are >= 0" becomes
//
//   if (offset_0 >= 0 & .. & offset_r-1 >= 0) { the op } else { its pointer form }
//
// (a store or reduction the TMA may only do inside the tensor).
#pragma once

#include <functional>

#include "ir/descriptor.h"
#include "ir/ir.h"

namespace tegula::passes {

// What becomes of a desc op (ir::DescriptorPath).
using DescriptorFilter = std::function<ir::DescriptorPath(const ir::Function& fn, const ir::Op& op)>;

// Lowers every desc op as `path` says (all of them when `path` is empty, or
// not given). Returns whether any op was lowered or guarded.
bool lower_descriptors(ir::Function& fn, const DescriptorFilter& path);
bool lower_descriptors(ir::Function& fn);

}  // namespace tegula::passes
