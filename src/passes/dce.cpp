// Dead-code elimination.
//
// Algorithm: sweep every block backwards with use counts, so an op's users are
// judged before the op itself. An op goes when all its results are unused and
//  * it is pure, or a load (dropping an unused load also drops a fault it
//    might have caused; see docs/passes.md), or
//  * it is a for/if/while/reduce whose regions have no side effects.
// Region ops are swept inside first, so their bodies are minimal when judged.
// Unused loop-carried values of `for` are pruned as well, with the ops that
// only serve to carry them. Sweeps repeat until nothing changes, since pruning
// a loop-carried value can free more code.
#include "passes/dce.h"

#include <algorithm>
#include <optional>

#include "passes/rewrite_utils.h"

namespace tegula::passes {

using ir::OpKind;

namespace {

class DeadCodeEliminator {
 public:
  explicit DeadCodeEliminator(ir::Function& fn) : fn_(fn), uses_(fn.use_counts()) {}

  bool sweep_block(ir::BlockId block) {
    bool changed = false;
    std::vector<ir::OpId> ops = fn_.block(block).ops;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      ir::OpId id = *it;
      if (fn_.op(id).erased) continue;
      std::vector<ir::BlockId> regions = fn_.op(id).regions;
      for (ir::BlockId region : regions) changed |= sweep_block(region);
      if (fn_.op(id).kind == OpKind::For) changed |= prune_loop_carried(id);
      if (is_dead(id)) {
        forget_uses(id);
        dead_.push_back(id);
        changed = true;
      }
    }
    // Unlinked together (erase_ops): a block may lose most of its ops at once.
    fn_.erase_ops(dead_);
    dead_.clear();
    return changed;
  }

 private:
  bool all_results_unused(const ir::Op& op) const {
    return std::all_of(op.results.begin(), op.results.end(), [&](ir::ValueId r) { return uses_[r.index] == 0; });
  }

  bool is_dead(ir::OpId id) const {
    const ir::Op& op = fn_.op(id);
    if (ir::is_terminator(op.kind) || !all_results_unused(op)) return false;
    if (ir::is_pure(op.kind) && op.regions.empty()) return true;
    if (op.kind == OpKind::Load) return true;
    if (!is_removable_region_op(op.kind)) return false;
    return std::none_of(op.regions.begin(), op.regions.end(),
                        [&](ir::BlockId r) { return block_has_side_effects(fn_, r); });
  }

  // Erases the op and, with it, every use its (nested) ops made.
  void erase(ir::OpId id) {
    forget_uses(id);
    fn_.erase_op(id);
  }

  void forget_uses(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    for (ir::ValueId v : op.operands) uses_[v.index]--;
    for (ir::BlockId region : op.regions)
      for (ir::OpId inner : fn_.block(region).ops) forget_uses(inner);
  }

  // for ... iter_args(%acc = %init): when the result for %acc is unused and the
  // only things %acc feeds (transitively, through pure ops or loads of the
  // body) are each other and its own yield slot, that whole chain is dead:
  // drop the chain, the init operand, the block argument, the yield operand
  // and the result.
  bool prune_loop_carried(ir::OpId id) {
    const ir::Op& loop = fn_.op(id);
    if (loop.regions.size() != 1 || loop.operands.size() != loop.results.size() + 3) return false;
    const ir::Block& body = fn_.block(loop.regions[0]);
    if (body.ops.empty() || body.args.size() != loop.results.size() + 1) return false;
    const ir::Op& yield = fn_.op(body.ops.back());
    if (yield.kind != OpKind::Yield || yield.operands.size() != loop.results.size()) return false;

    bool changed = false;
    for (size_t i = loop.results.size(); i-- > 0;) {
      if (uses_[fn_.op(id).results[i].index] != 0) continue;
      std::optional<std::vector<ir::OpId>> chain = dead_chain(id, i);
      if (!chain) continue;
      for (auto it = chain->rbegin(); it != chain->rend(); ++it) erase(*it);
      drop_loop_carried(id, i);
      changed = true;
    }
    return changed;
  }

  // The body ops computing only from block argument i + 1 of `loop` toward
  // yield slot i, in program order; nothing when the value escapes elsewhere.
  std::optional<std::vector<ir::OpId>> dead_chain(ir::OpId loop, size_t i) const {
    const ir::Block& body = fn_.block(fn_.op(loop).regions[0]);
    std::vector<bool> tainted(fn_.num_values(), false);
    tainted[body.args[i + 1].index] = true;
    auto uses_tainted = [&](const ir::Op& op) {
      return std::any_of(op.operands.begin(), op.operands.end(), [&](ir::ValueId v) { return tainted[v.index]; });
    };
    std::vector<ir::OpId> chain;
    for (size_t k = 0; k + 1 < body.ops.size(); ++k) {
      ir::OpId id = body.ops[k];
      const ir::Op& op = fn_.op(id);
      bool nested_use = false;
      for (ir::BlockId region : op.regions)
        fn_.walk_block(region, [&](ir::OpId inner) { nested_use = nested_use || uses_tainted(fn_.op(inner)); });
      if (nested_use) return std::nullopt;
      if (!uses_tainted(op)) continue;
      bool removable = (ir::is_pure(op.kind) || op.kind == OpKind::Load) && op.regions.empty();
      if (!removable) return std::nullopt;
      for (ir::ValueId r : op.results) tainted[r.index] = true;
      chain.push_back(id);
    }
    const ir::Op& yield = fn_.op(body.ops.back());
    for (size_t j = 0; j < yield.operands.size(); ++j)
      if (j != i && tainted[yield.operands[j].index]) return std::nullopt;
    return chain;
  }

  void drop_loop_carried(ir::OpId id, size_t i) {
    ir::Op& loop = fn_.op(id);
    ir::Block& body = fn_.block(loop.regions[0]);
    ir::Op& yield = fn_.op(body.ops.back());
    uses_[loop.operands[3 + i].index]--;
    uses_[yield.operands[i].index]--;
    loop.operands.erase(loop.operands.begin() + static_cast<std::ptrdiff_t>(3 + i));
    yield.operands.erase(yield.operands.begin() + static_cast<std::ptrdiff_t>(i));
    detach(loop.results[i]);
    detach(body.args[i + 1]);
    loop.results.erase(loop.results.begin() + static_cast<std::ptrdiff_t>(i));
    body.args.erase(body.args.begin() + static_cast<std::ptrdiff_t>(i + 1));
    for (size_t k = 0; k < loop.results.size(); ++k) fn_.value(loop.results[k]).position = static_cast<uint32_t>(k);
    for (size_t k = 0; k < body.args.size(); ++k) fn_.value(body.args[k]).position = static_cast<uint32_t>(k);
  }

  // A value dropped from its op or block keeps its table slot but no owner.
  void detach(ir::ValueId v) {
    ir::Value& value = fn_.value(v);
    value.def = ir::OpId{};
    value.block = ir::BlockId{};
  }

  ir::Function& fn_;
  std::vector<uint32_t> uses_;
  std::vector<ir::OpId> dead_;  // found dead in the sweep of a block, unlinked at its end
};

}  // namespace

bool dce(ir::Function& fn) {
  bool changed = false;
  for (;;) {
    DeadCodeEliminator eliminator(fn);
    if (!eliminator.sweep_block(fn.body())) break;
    changed = true;
  }
  return changed;
}

}  // namespace tegula::passes
