// The element check of tl.atomic_* (builtins_atomic.cpp), which the
// descriptor atomics (builtins_block_ptr.cpp) share.
#pragma once

#include <string>

#include "frontend/lowering.h"
#include "ir/atomic.h"

namespace tegula::frontend {

// A located error at `loc` when `op` is not defined on `element`
// (ir/atomic.h): "tl.atomic_or does not support fp32 elements", with the
// kinds it supports as the hint.
void check_atomic_element(ir::AtomicOp op, ir::Scalar element, const SourceLoc& loc, const std::string& callee);

}  // namespace tegula::frontend
