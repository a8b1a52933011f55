// Loop-invariant code motion.
//
// Algorithm: visit loops innermost first (so an op hoisted out of an inner loop
// can keep going out of the outer one). In each loop region, in program order,
// move before the loop every pure, region-free op whose operands are all
// defined outside the loop; because the walk is in order, an op whose operands
// were hoisted a moment ago follows them out. Pure ops cannot fault or write,
// so running them even when the loop runs zero times is safe. Loads stay: a
// store in the loop may change what they read.
#include "passes/licm.h"

#include <algorithm>

#include "passes/rewrite_utils.h"

namespace tegula::passes {

using ir::OpKind;

namespace {

bool is_loop(OpKind kind) { return kind == OpKind::For || kind == OpKind::While; }

bool is_invariant(const ir::Function& fn, ir::OpId op, ir::OpId loop) {
  const ir::Op& o = fn.op(op);
  if (!ir::is_pure(o.kind) || !o.regions.empty()) return false;
  return std::none_of(o.operands.begin(), o.operands.end(),
                      [&](ir::ValueId v) { return is_defined_inside(fn, v, loop); });
}

bool hoist_from(ir::Function& fn, ir::OpId loop) {
  bool changed = false;
  std::vector<ir::BlockId> regions = fn.op(loop).regions;
  for (ir::BlockId region : regions) {
    std::vector<ir::OpId> ops = fn.block(region).ops;
    for (ir::OpId op : ops) {
      if (!is_invariant(fn, op, loop)) continue;
      move_op_before(fn, op, loop);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool licm(ir::Function& fn) {
  std::vector<ir::OpId> loops;
  fn.walk([&](ir::OpId op) {
    if (is_loop(fn.op(op).kind)) loops.push_back(op);
  });
  // The walk lists a loop before the loops nested in it: go backwards.
  bool changed = false;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) changed |= hoist_from(fn, *it);
  return changed;
}

}  // namespace tegula::passes
