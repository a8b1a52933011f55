// The combiner region of reduce and scan, applied as scalar code: both ops
// carry the same region shape (2N block arguments, accumulated values then
// new ones, yielding N), so one emitter serves them. The emission itself is
// backends/combine_emitter.h, shared with the other backend.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "backends/combine_emitter.h"

namespace tegula::backends::cuda {

// One application of `op`'s combiner: binds its 2N arguments to `lhs` and
// `rhs` (element expressions), emits its ops and assigns the N yielded values
// to `dest`. With `own_block` the application gets a C++ block of its own, so
// repeated applications do not redeclare names.
void emit_combine(CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& lhs,
                  const std::vector<std::string>& rhs, const std::vector<std::string>& dest, bool own_block = true);

using backends::indexed;  // "a[index]" for each array a

}  // namespace tegula::backends::cuda
