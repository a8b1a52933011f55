#include "passes/rewrite_utils.h"

#include <algorithm>

#include "support/diagnostic.h"

namespace tegula::passes {

using ir::OpKind;

void replace_op(ir::Function& fn, ir::OpId op, const std::vector<ir::ValueId>& replacements) {
  std::vector<ir::ValueId> results = fn.op(op).results;
  TEGULA_ASSERT(results.size() == replacements.size(), "replacement count differs from result count");
  for (size_t i = 0; i < results.size(); ++i) fn.replace_all_uses(results[i], replacements[i]);
  fn.erase_op(op);
}

ir::Builder builder_before(ir::Function& fn, ir::OpId op) {
  ir::Builder builder(fn);
  builder.set_insertion_before(op);
  builder.set_loc(fn.op(op).loc);
  return builder;
}

void move_op_before(ir::Function& fn, ir::OpId op, ir::OpId anchor) {
  std::vector<ir::OpId>& from = fn.block(fn.op(op).parent).ops;
  from.erase(from.begin() + static_cast<std::ptrdiff_t>(fn.position_of(op)));
  ir::BlockId target = fn.op(anchor).parent;
  fn.insert_op(target, fn.position_of(anchor), op);
}

const ir::Op* defining_op(const ir::Function& fn, ir::ValueId v, ir::OpKind kind) {
  ir::OpId def = fn.value(v).def;
  if (!def.valid()) return nullptr;
  const ir::Op& op = fn.op(def);
  return op.kind == kind ? &op : nullptr;
}

bool is_defined_inside(const ir::Function& fn, ir::ValueId v, ir::OpId ancestor) {
  const ir::Value& value = fn.value(v);
  ir::BlockId block = value.def.valid() ? fn.op(value.def).parent : value.block;
  // Climb the region tree: block -> op owning it as a region -> that op's block.
  while (block.valid()) {
    ir::OpId owner = fn.block(block).parent;
    if (!owner.valid()) return false;
    if (owner == ancestor) return true;
    block = fn.op(owner).parent;
  }
  return false;
}

bool has_side_effects(OpKind kind) {
  if (ir::is_pure(kind) || ir::is_terminator(kind)) return false;
  if (kind == OpKind::Load) return false;
  if (ir::has_regions(kind)) return false;  // judged by what their regions contain
  return true;
}

bool block_has_side_effects(const ir::Function& fn, ir::BlockId block) {
  bool found = false;
  fn.walk_block(block, [&](ir::OpId o) { found = found || has_side_effects(fn.op(o).kind); });
  return found;
}

bool erase_unused_pure_ops(ir::Function& fn) {
  std::vector<uint32_t> uses = fn.use_counts();
  std::vector<ir::OpId> order;
  fn.walk([&](ir::OpId o) { order.push_back(o); });
  // Users come after their operands' definitions in program order (nested
  // ops included), so one backward sweep sees every user before its operands.
  std::vector<ir::OpId> unused_ops;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Op& op = fn.op(*it);
    if (!ir::is_pure(op.kind) || !op.regions.empty()) continue;
    bool unused = std::all_of(op.results.begin(), op.results.end(), [&](ir::ValueId r) { return uses[r.index] == 0; });
    if (!unused) continue;
    for (ir::ValueId v : op.operands) uses[v.index]--;
    unused_ops.push_back(*it);
  }
  fn.erase_ops(unused_ops);
  return !unused_ops.empty();
}

bool is_removable_region_op(OpKind kind) {
  return kind == OpKind::For || kind == OpKind::If || kind == OpKind::While || kind == OpKind::Reduce ||
         kind == OpKind::Scan;
}

}  // namespace tegula::passes
