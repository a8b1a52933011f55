// Lowering of tensor-descriptor ops: every `desc_load` and `desc_store`
// (ir/descriptor.h) becomes the pointer tile, mask and `load`/`store` it
// means (ir/block_access.h), in place. Runs first, before the optimization
// stages, for targets without a tensor-copy engine (the CPU backend, CUDA
// before sm_90), so their IR and generated code are what the front end made
// before the ops existed.
#pragma once

#include "ir/ir.h"

namespace tegula::passes {

// Returns whether any op was lowered.
bool lower_descriptors(ir::Function& fn);

}  // namespace tegula::passes
