// Canonicalization: constant folding and algebraic simplification to a fixed
// point. Rules live in small topic groups in canonicalize.cpp, each with its
// algebra in a comment (x + 0 -> x, splat(c) -> constant tile, ...).
#pragma once

#include "ir/ir.h"

namespace tegula::passes {

// Returns true if anything changed.
bool canonicalize(ir::Function& fn);

}  // namespace tegula::passes
