// Lowering of tensor-descriptor ops: every `desc_load`, `desc_store` and
// `desc_atomic` (ir/descriptor.h) becomes the pointer tile, mask and
// `load`/`store`/`atomic_rmw` it means (ir/block_access.h), in place. Runs first, before the optimization
// stages. Targets without a tensor-copy engine (the CPU backend, CUDA
// before sm_90) lower every op, so their IR and generated code are what the
// front end made before the ops existed; sm_90 keeps the ops its TMA can
// copy (backends/cuda/tma_plan.h) and lowers the rest.
#pragma once

#include <functional>

#include "ir/ir.h"

namespace tegula::passes {

// Whether a desc op stays as it is (a code generator copies its block whole).
using DescriptorFilter = std::function<bool(const ir::Function& fn, const ir::Op& op)>;

// Lowers every desc op `keep` does not keep (all of them when `keep` is
// empty, or not given). Returns whether any op was lowered.
bool lower_descriptors(ir::Function& fn, const DescriptorFilter& keep);
bool lower_descriptors(ir::Function& fn);

}  // namespace tegula::passes
