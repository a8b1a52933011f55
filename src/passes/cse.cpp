// Common-subexpression elimination over structured regions.
//
// Algorithm: walk the region tree depth first with a scoped table of the pure
// ops seen so far. A value defined in a block dominates the rest of that block
// and everything nested in it, so entering a region opens a scope and leaving
// it forgets what the region added. An op whose key (kind, operands,
// attributes, result types) is already in the table is replaced by the
// earlier op. Region ops (for, if, while, reduce) are never merged.
#include "passes/cse.h"

#include <bit>
#include <functional>
#include <unordered_map>

#include "passes/rewrite_utils.h"

namespace tegula::passes {

namespace {

// Floats compare by bit pattern: 0.0 and -0.0 differ, and a NaN equals itself.
bool same_attr(const ir::Attr& a, const ir::Attr& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}

// Consistent with same_attr: floats hash by bit pattern.
size_t hash_attr(const ir::Attr& a) {
  if (const auto* x = std::get_if<int64_t>(&a)) return std::hash<int64_t>{}(*x);
  if (const auto* x = std::get_if<double>(&a)) return std::hash<uint64_t>{}(std::bit_cast<uint64_t>(*x)) ^ 1;
  if (const auto* x = std::get_if<std::string>(&a)) return std::hash<std::string>{}(*x);
  size_t h = 2;
  for (int64_t d : std::get<std::vector<int64_t>>(a)) h = h * 1000003u + std::hash<int64_t>{}(d);
  return h;
}

struct OpKey {
  const ir::Function* fn;
  ir::OpId op;
};

struct OpKeyHash {
  size_t operator()(const OpKey& key) const {
    const ir::Op& op = key.fn->op(key.op);
    size_t h = static_cast<size_t>(op.kind);
    auto mix = [&](size_t x) { h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (ir::ValueId v : op.operands) mix(v.index);
    // Values are hashed too: kernels hold thousands of constants that differ
    // only in their value, and one bucket for all of them makes the pass
    // quadratic.
    for (const ir::NamedAttr& a : op.attrs) {
      mix(std::hash<std::string>{}(a.name));
      mix(hash_attr(a.value));
    }
    for (ir::ValueId r : op.results) {
      const ir::Type& t = key.fn->type(r);
      mix(static_cast<size_t>(t.scalar) * 2 + t.pointer);
      for (int64_t d : t.shape) mix(static_cast<size_t>(d));
    }
    return h;
  }
};

struct OpKeyEqual {
  bool operator()(const OpKey& x, const OpKey& y) const {
    const ir::Function& fn = *x.fn;
    const ir::Op& a = fn.op(x.op);
    const ir::Op& b = fn.op(y.op);
    if (a.kind != b.kind || a.operands != b.operands || a.results.size() != b.results.size() ||
        a.attrs.size() != b.attrs.size())
      return false;
    for (size_t i = 0; i < a.attrs.size(); ++i)
      if (a.attrs[i].name != b.attrs[i].name || !same_attr(a.attrs[i].value, b.attrs[i].value)) return false;
    for (size_t i = 0; i < a.results.size(); ++i)
      if (fn.type(a.results[i]) != fn.type(b.results[i])) return false;
    return true;
  }
};

class ScopedCse {
 public:
  explicit ScopedCse(ir::Function& fn) : fn_(fn) {}

  bool run_block(ir::BlockId block) {
    std::vector<OpKey> added;  // forgotten when this block's scope closes
    bool changed = false;
    std::vector<ir::OpId> ops = fn_.block(block).ops;
    for (ir::OpId id : ops) {
      const ir::Op& op = fn_.op(id);
      if (!op.regions.empty()) {
        std::vector<ir::BlockId> regions = op.regions;
        for (ir::BlockId region : regions) changed |= run_block(region);
        continue;
      }
      if (!ir::is_pure(op.kind) || op.results.empty()) continue;
      OpKey key{&fn_, id};
      auto found = table_.find(key);
      if (found != table_.end()) {
        // The duplicate's results now name the first op's; it is unlinked
        // with the others at the end (erase_ops), as many may share a block.
        const std::vector<ir::ValueId> results = fn_.op(id).results;
        const std::vector<ir::ValueId> kept = fn_.op(found->second).results;
        for (size_t i = 0; i < results.size(); ++i) fn_.replace_all_uses(results[i], kept[i]);
        duplicates_.push_back(id);
        changed = true;
        continue;
      }
      table_.emplace(key, id);
      added.push_back(key);
    }
    for (const OpKey& key : added) table_.erase(key);
    return changed;
  }

  const std::vector<ir::OpId>& duplicates() const { return duplicates_; }

 private:
  ir::Function& fn_;
  std::vector<ir::OpId> duplicates_;
  std::unordered_map<OpKey, ir::OpId, OpKeyHash, OpKeyEqual> table_;
};

}  // namespace

bool cse(ir::Function& fn) {
  ScopedCse pass(fn);
  bool changed = pass.run_block(fn.body());
  fn.erase_ops(pass.duplicates());
  return changed;
}

}  // namespace tegula::passes
