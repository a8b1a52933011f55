// Structured control flow with constant conditions and bounds.
#include "passes/canonicalize_rules.h"
#include "passes/rewrite_utils.h"

namespace tegula::passes::rules {

using ir::OpKind;

namespace {

// if true { A; yield x } else { B; yield y } -> A, results = x (and the
// mirror image for false): the taken region's ops move before the `if`.
bool inline_constant_if(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (op.operands.empty()) return false;
  std::optional<ConstantValue> cond = constant_value(fn, op.operands[0]);
  if (!cond || cond->is_float()) return false;
  size_t taken_index = cond->int_value != 0 ? 0 : 1;
  std::vector<ir::ValueId> results = op.results;
  if (taken_index >= op.regions.size()) {
    // No else region: nothing runs, and there can be no results to provide.
    if (!results.empty()) return false;
    fn.erase_op(id);
    return true;
  }
  ir::BlockId taken = op.regions[taken_index];
  std::vector<ir::OpId> body = fn.block(taken).ops;
  if (body.empty()) return false;
  const ir::Op& terminator = fn.op(body.back());
  if (terminator.kind != OpKind::Yield || terminator.operands.size() != results.size()) return false;
  std::vector<ir::ValueId> yielded = terminator.operands;
  body.pop_back();
  for (ir::OpId inner : body) move_op_before(fn, inner, id);
  replace_op(fn, id, yielded);
  return true;
}

// for i in range(lb, ub, step) with constant bounds runs zero times when
// step == 0, or step > 0 and lb >= ub, or step < 0 and lb <= ub:
// results = inits.
bool drop_zero_trip_for(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (op.operands.size() < 3 || op.operands.size() - 3 != op.results.size()) return false;
  std::optional<ConstantValue> lb = constant_value(fn, op.operands[0]);
  std::optional<ConstantValue> ub = constant_value(fn, op.operands[1]);
  std::optional<ConstantValue> step = constant_value(fn, op.operands[2]);
  if (!lb || !ub || !step || lb->is_float()) return false;
  bool is_signed = ir::is_signed(lb->type);
  auto less = [&](int64_t x, int64_t y) {
    return is_signed ? x < y : static_cast<uint64_t>(x) < static_cast<uint64_t>(y);
  };
  bool zero_trips = step->int_value == 0 ||
                    (less(0, step->int_value) && !less(lb->int_value, ub->int_value)) ||
                    (less(step->int_value, 0) && !less(ub->int_value, lb->int_value));
  if (!zero_trips) return false;
  std::vector<ir::ValueId> inits(op.operands.begin() + 3, op.operands.end());
  replace_op(fn, id, inits);
  return true;
}

}  // namespace

bool simplify_control_flow(ir::Function& fn, ir::OpId id) {
  switch (fn.op(id).kind) {
    case OpKind::If: return inline_constant_if(fn, id);
    case OpKind::For: return drop_zero_trip_for(fn, id);
    default: return false;
  }
}

}  // namespace tegula::passes::rules
