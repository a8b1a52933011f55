// The combiner region shared by reduce and scan ops: 2N scalar block
// arguments (the accumulated values, then the new ones) and a yield of N
// scalars, built from the user's combine function or a builtin's.
#pragma once

#include <functional>
#include <vector>

#include "frontend/lowering.h"

namespace tegula::frontend {

// Builds the combiner on scalar block arguments; returns the N values it yields.
using Combiner = std::function<std::vector<ir::ValueId>(const std::vector<ir::ValueId>& accumulated,
                                                        const std::vector<ir::ValueId>& next)>;

// A new region for an op over `inputs` (tiles of one element type each):
// its arguments, the ops `combine` makes, the yield of their results cast to
// the inputs' element types. Errors (located at `loc`) when the combine
// function returns the wrong number of values or a tile; `verb` says what
// the op does to the inputs ("reduced", "scanned"). The builder is left at
// the end of the block it was in, with `loc` as its location.
ir::BlockId build_combiner_region(Lowerer& l, const std::vector<ir::ValueId>& inputs, const Combiner& combine,
                                  const char* verb, const SourceLoc& loc);

}  // namespace tegula::frontend
