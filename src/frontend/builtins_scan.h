// The tl functions that treat one axis of a tile as a sequence or index a
// tile by data values (builtins_scan.cpp), and the few Triton standard-library
// helpers composed from other ops (builtins_compose.cpp). builtins.cpp puts
// them in its handler table; each takes the call's arguments and the name it
// was called by.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

// cumsum, cumprod, associative_scan -> the `scan` op.
Symbol lower_scan(Lowerer& l, const CallArgs& c, const std::string& name);
// sort and topk -> `sort` (and `gather` for the first k of topk).
Symbol lower_sort(Lowerer& l, const CallArgs& c, const std::string& name);
// bitonic_merge -> a compare-and-swap network of `gather`, `cmp` and `select`.
Symbol lower_bitonic_merge(Lowerer& l, const CallArgs& c, const std::string& name);
// flip -> `gather` with a reversed index.
Symbol lower_flip(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_gather(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_histogram(Lowerer& l, const CallArgs& c, const std::string& name);

// builtins_compose.cpp: interleave and cat (join + trans/reshape), swizzle2d
// (integer arithmetic).
Symbol lower_interleave(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_cat(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_swizzle2d(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
