// Loop-invariant code motion: pure ops inside a `for`/`while` body whose
// operands are all defined outside the loop are hoisted before the loop.
#pragma once

#include "ir/ir.h"

namespace tegula::passes {

bool licm(ir::Function& fn);

}  // namespace tegula::passes
