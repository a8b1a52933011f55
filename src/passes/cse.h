// Common-subexpression elimination of pure ops: two pure ops with the same
// kind, operands, attributes and result types compute the same value, so the
// later one (dominated by the earlier: same block or a nested region) is
// replaced by the earlier.
#pragma once

#include "ir/ir.h"

namespace tegula::passes {

bool cse(ir::Function& fn);

}  // namespace tegula::passes
