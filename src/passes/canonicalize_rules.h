// The rule groups the canonicalizer applies to each op, one topic per file.
// Each group looks at one op, and when one of its rules matches, rewrites the
// op (new ops are inserted before it, with its location) and returns true.
// Internal to src/passes.
#pragma once

#include <optional>

#include "ir/ir.h"
#include "passes/fold_constants.h"

namespace tegula::passes::rules {

// rules_fold.cpp: elementwise ops whose operands are all constants.
bool fold_constants(ir::Function& fn, ir::OpId op);

// rules_shape.cpp: splat/broadcast/expand_dims/reshape/trans of constants and
// splats, and shape ops that change nothing.
bool simplify_shapes(ir::Function& fn, ir::OpId op);

// rules_algebra.cpp: identities (x + 0, x * 1, select(c, a, a)...), operand
// order of commutative ops, addptr chains.
bool simplify_algebra(ir::Function& fn, ir::OpId op);

// rules_algebra.cpp: elementwise(splat a, splat b) -> splat(elementwise(a, b)).
bool sink_splats(ir::Function& fn, ir::OpId op);

// rules_control.cpp: `if` on a constant, `for` that never runs.
bool simplify_control_flow(ir::Function& fn, ir::OpId op);

// Creates a constant of `type` (scalar or tile, all elements `value`) before `op`.
ir::ValueId make_constant(ir::Function& fn, ir::OpId before, const ConstantValue& value, const ir::Type& type);

}  // namespace tegula::passes::rules
