// Constant folding: op(c1, ..., cn) -> constant(op(c1, ..., cn)) for
// elementwise ops, on scalars and on constant tiles alike (a constant tile has
// all elements equal, so the folded tile does too).
#include "passes/canonicalize_rules.h"
#include "passes/rewrite_utils.h"

namespace tegula::passes::rules {

using ir::OpKind;

ir::ValueId make_constant(ir::Function& fn, ir::OpId before, const ConstantValue& value, const ir::Type& type) {
  ir::Builder builder = builder_before(fn, before);
  return builder.create1(OpKind::Constant, {}, type, {{"value", value.to_attr()}});
}

bool fold_constants(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  // Which ops fold, and how, is their fold columns in ir/ops.def (select
  // and addptr have none: the algebraic rules handle them).
  if (!ir::is_elementwise(op.kind)) return false;
  if (op.results.size() != 1) return false;
  const ir::Type& result_type = fn.type(op.results[0]);
  if (result_type.is_pointer()) return false;

  std::vector<ConstantValue> operands;
  for (ir::ValueId v : op.operands) {
    std::optional<ConstantValue> c = constant_value(fn, v);
    if (!c) return false;
    operands.push_back(*c);
  }
  std::optional<ConstantValue> folded = fold_elementwise(op, operands, result_type.scalar);
  if (!folded) return false;
  ir::ValueId constant = make_constant(fn, id, *folded, result_type);
  replace_op(fn, id, {constant});
  return true;
}

}  // namespace tegula::passes::rules
