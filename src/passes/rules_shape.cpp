// Shape ops over constants and splats. A constant tile and a splat are both
// "the same value everywhere", so any reshuffling of their elements is again
// the same value everywhere, in the new shape.
#include "passes/canonicalize_rules.h"
#include "passes/rewrite_utils.h"

namespace tegula::passes::rules {

using ir::OpKind;

namespace {

bool is_identity_permutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// shape_op(constant c) -> constant c of the new shape
// shape_op(splat x)    -> splat x of the new shape
bool rebuild_uniform(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  ir::ValueId source = op.operands[0];
  ir::Type result_type = fn.type(op.results[0]);
  if (std::optional<ConstantValue> c = constant_value(fn, source)) {
    replace_op(fn, id, {make_constant(fn, id, *c, result_type)});
    return true;
  }
  if (op.kind == OpKind::Splat) return false;
  if (const ir::Op* splat = defining_op(fn, source, OpKind::Splat)) {
    ir::ValueId scalar = splat->operands[0];
    ir::Builder builder = builder_before(fn, id);
    replace_op(fn, id, {builder.create1(OpKind::Splat, {scalar}, result_type)});
    return true;
  }
  return false;
}

// Shape ops that leave the value as it is:
//   broadcast x to x's own shape -> x;  reshape x to x's own shape -> x;
//   trans x with the identity permutation -> x.
bool drop_noop(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  ir::ValueId source = op.operands[0];
  if (fn.type(source) != fn.type(op.results[0])) return false;
  bool noop = op.kind == OpKind::Broadcast || op.kind == OpKind::Reshape ||
              (op.kind == OpKind::Trans && op.has_attr("perm") && is_identity_permutation(op.ints_attr("perm")));
  if (!noop) return false;
  replace_op(fn, id, {source});
  return true;
}

// broadcast(broadcast x) -> broadcast x (to the outer shape)
bool merge_broadcasts(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  const ir::Op* inner = defining_op(fn, op.operands[0], OpKind::Broadcast);
  if (inner == nullptr) return false;
  ir::ValueId source = inner->operands[0];
  ir::Type result_type = fn.type(op.results[0]);
  ir::Builder builder = builder_before(fn, id);
  replace_op(fn, id, {builder.create1(OpKind::Broadcast, {source}, result_type)});
  return true;
}

}  // namespace

bool simplify_shapes(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  switch (op.kind) {
    case OpKind::Splat:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Trans:
      if (op.operands.size() != 1 || op.results.size() != 1) return false;
      return drop_noop(fn, id) || rebuild_uniform(fn, id);
    case OpKind::Broadcast:
      if (op.operands.size() != 1 || op.results.size() != 1) return false;
      return drop_noop(fn, id) || rebuild_uniform(fn, id) || merge_broadcasts(fn, id);
    default:
      return false;
  }
}

}  // namespace tegula::passes::rules
