// Small IR-surgery helpers shared by the passes: replacing an op by values,
// moving ops between blocks, asking where a value lives and which ops have
// effects. Internal to src/passes.
#pragma once

#include <vector>

#include "ir/builder.h"
#include "ir/ir.h"

namespace tegula::passes {

// Redirects every use of op's results to `replacements` (one per result) and
// erases the op.
void replace_op(ir::Function& fn, ir::OpId op, const std::vector<ir::ValueId>& replacements);

// A builder that inserts before `op` and gives new ops op's location, so a
// rewrite keeps pointing at the user's source.
ir::Builder builder_before(ir::Function& fn, ir::OpId op);

// Unlinks `op` from its block and links it just before `anchor`.
void move_op_before(ir::Function& fn, ir::OpId op, ir::OpId anchor);

// The op defining `v` if it is of `kind`, else null (block arguments included).
const ir::Op* defining_op(const ir::Function& fn, ir::ValueId v, ir::OpKind kind);

// True when `v` is defined inside one of the regions of `ancestor`, at any depth.
bool is_defined_inside(const ir::Function& fn, ir::ValueId v, ir::OpId ancestor);

// Ops whose execution is observable besides their results. Loads are not:
// an unused load may be dropped (see docs/passes.md).
bool has_side_effects(ir::OpKind kind);

// True when some op in `block` (or nested in it) has side effects.
bool block_has_side_effects(const ir::Function& fn, ir::BlockId block);

// Erases pure, region-free ops whose results are all unused, including ops
// that become unused as their users go. Returns true if anything was erased.
bool erase_unused_pure_ops(ir::Function& fn);

// Region ops whose only effect is computing their results, given their bodies
// have no side effects.
bool is_removable_region_op(ir::OpKind kind);

}  // namespace tegula::passes
