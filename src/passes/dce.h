// Dead-code elimination: removes pure ops whose results are unused, and
// region ops (for/if/while) whose results are unused and whose bodies have no
// side effects, iterating until nothing changes.
#pragma once

#include "ir/ir.h"

namespace tegula::passes {

bool dce(ir::Function& fn);

}  // namespace tegula::passes
