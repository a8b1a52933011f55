#include "passes/pointer_provenance.h"

#include <algorithm>

#include "ir/atomic.h"

namespace tegula::passes {

namespace {

using Sources = std::vector<int32_t>;

// What the solver finds, per value: its sources, or that it is unknown.
struct Found {
  std::vector<Sources> sources;
  std::vector<bool> unknown;
};

class Solver {
 public:
  explicit Solver(const ir::Function& fn) : fn_(fn), sources_(fn.num_values()), unknown_(fn.num_values(), false) {
    const ir::Block& body = fn.block(fn.body());
    for (size_t i = 0; i < fn.params.size() && i < body.args.size(); ++i) {
      if (!fn.params[i].type.is_pointer()) continue;
      sources_[body.args[i].index] = {static_cast<int32_t>(i)};
    }
  }

  Found solve() {
    do {
      changed_ = false;
      fn_.walk([&](ir::OpId id) { visit(fn_.op(id)); });
    } while (changed_);
    return Found{std::move(sources_), std::move(unknown_)};
  }

 private:
  bool is_pointer(ir::ValueId v) const { return fn_.type(v).is_pointer(); }

  // sources(to) |= sources(from), for pointer values; unknown absorbs.
  void flow(ir::ValueId from, ir::ValueId to) {
    if (unknown_[from.index]) return make_unknown(to);
    add(to, sources_[from.index]);
  }
  void make_unknown(ir::ValueId v) {
    if (!is_pointer(v) || unknown_[v.index]) return;
    unknown_[v.index] = true;
    sources_[v.index].clear();
    changed_ = true;
  }
  void add(ir::ValueId to, const Sources& extra) {
    if (!is_pointer(to) || extra.empty() || unknown_[to.index]) return;
    Sources& s = sources_[to.index];
    Sources merged;
    std::set_union(s.begin(), s.end(), extra.begin(), extra.end(), std::back_inserter(merged));
    if (merged.size() == s.size()) return;
    s = std::move(merged);
    changed_ = true;
  }

  const ir::Op& terminator(ir::BlockId block) const { return fn_.op(fn_.block(block).ops.back()); }

  // values[offset + k] flows into targets[k], for every k both have.
  void flow_all(const std::vector<ir::ValueId>& values, size_t offset, const std::vector<ir::ValueId>& targets,
                size_t target_offset = 0) {
    for (size_t k = 0; offset + k < values.size() && target_offset + k < targets.size(); ++k)
      flow(values[offset + k], targets[target_offset + k]);
  }

  void visit(const ir::Op& op) {
    switch (op.kind) {
      case ir::OpKind::For: {
        // operands: lb, ub, step, inits...; body args: iv, carried...; yield: next carried.
        const ir::Block& body = fn_.block(op.regions.at(0));
        const ir::Op& yield = terminator(op.regions[0]);
        flow_all(op.operands, 3, body.args, 1);
        flow_all(yield.operands, 0, body.args, 1);
        flow_all(op.operands, 3, op.results);
        flow_all(yield.operands, 0, op.results);
        return;
      }
      case ir::OpKind::If:
        for (ir::BlockId region : op.regions) flow_all(terminator(region).operands, 0, op.results);
        return;
      case ir::OpKind::While: {
        const ir::Block& before = fn_.block(op.regions.at(0));
        const ir::Block& after = fn_.block(op.regions.at(1));
        const ir::Op& condition = terminator(op.regions[0]);
        flow_all(op.operands, 0, before.args);
        flow_all(terminator(op.regions[1]).operands, 0, before.args);
        flow_all(condition.operands, 1, after.args);
        flow_all(condition.operands, 1, op.results);
        return;
      }
      default: break;
    }
    // Any other op: its pointer results come from its pointer operands. A
    // pointer read from memory, or made without a pointer operand (from an
    // integer), may point anywhere, even outside every parameter's array.
    Sources from;
    bool has_pointer_operand = false, unknown = ir::is_atomic(op.kind) || op.kind == ir::OpKind::Load;
    for (ir::ValueId v : op.operands) {
      if (!is_pointer(v)) continue;
      has_pointer_operand = true;
      unknown = unknown || unknown_[v.index];
      const Sources& s = sources_[v.index];
      Sources merged;
      std::set_union(from.begin(), from.end(), s.begin(), s.end(), std::back_inserter(merged));
      from = std::move(merged);
    }
    for (ir::ValueId r : op.results) {
      if (unknown || !has_pointer_operand)
        make_unknown(r);
      else
        add(r, from);
    }
    // Region arguments of ops that do not say where they come from (none
    // today: reduce combiners take no pointers) may be anything.
    for (ir::BlockId region : op.regions)
      for (ir::ValueId arg : fn_.block(region).args) make_unknown(arg);
  }

  const ir::Function& fn_;
  std::vector<Sources> sources_;
  std::vector<bool> unknown_;
  bool changed_ = false;
};

}  // namespace

PointerProvenance::PointerProvenance(const ir::Function& fn) {
  Found found = Solver(fn).solve();
  sources_ = std::move(found.sources);
  unknown_ = std::move(found.unknown);
}

}  // namespace tegula::passes
