// Tile-level builtins (builtins_tile.cpp): reductions, tl.dot and shape ops.
// builtins.cpp's registry names them; each takes the call's arguments and
// the name it was called by.
#pragma once

#include <string>
#include <vector>

#include "frontend/lowering.h"

namespace tegula::frontend {

// sum and xor_sum; max and min (also with return_indices); argmax and argmin;
// reduce with a @jit combine function; softmax.
Symbol lower_sum(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_max_min(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_argmax_min(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_reduce(Lowerer& l, const CallArgs& c, const std::string& name);
// reduce_or (bitwise OR along an axis); x.item() (a one-element tile's element).
Symbol lower_reduce_or(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_item(Lowerer& l, const CallArgs& c, const std::string& name);
// The element of a one-element tile `x`, as a scalar (x.item(); conditions of
// `if`, `while` and `x if c else y` unsplat so, as in Triton).
ir::ValueId only_element(Lowerer& l, ir::ValueId x, const SourceLoc& loc);
Symbol lower_softmax(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_dot(Lowerer& l, const CallArgs& c, const std::string& name);
// reshape and view; ravel; trans and permute; expand_dims; broadcast_to;
// broadcast of two tiles; join; split; squeeze and unsqueeze.
Symbol lower_reshape(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_ravel(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_permute(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_expand_dims(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_broadcast_to(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_broadcast(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_join(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_split(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_squeeze(Lowerer& l, const CallArgs& c, const std::string& name);

// The attributes of a min/max op for a call's `propagate_nan` argument
// (tl.PropagateNan.ALL: a NaN operand makes the result NaN); empty without it.
std::vector<ir::NamedAttr> nan_propagation(const BoundArgs& a);

// `axis` made non-negative when -rank <= axis < rank; otherwise the error
// `problem` at loc, followed by Triton's words ("invalid axis A, expected
// -R <= axis < R").
int64_t wrap_axis(int64_t axis, int64_t rank, const SourceLoc& loc, const std::string& problem);

}  // namespace tegula::frontend
