#include "ir/ir.h"

#include <algorithm>

#include "support/diagnostic.h"

namespace tegula::ir {

const Attr* Op::attr(std::string_view name) const {
  for (const NamedAttr& a : attrs)
    if (a.name == name) return &a.value;
  return nullptr;
}

int64_t Op::int_attr(std::string_view name) const {
  const Attr* a = attr(name);
  TEGULA_ASSERT(a && std::holds_alternative<int64_t>(*a), "missing int attribute " + std::string(name));
  return std::get<int64_t>(*a);
}

double Op::float_attr(std::string_view name) const {
  const Attr* a = attr(name);
  TEGULA_ASSERT(a != nullptr, "missing attribute " + std::string(name));
  if (std::holds_alternative<int64_t>(*a)) return static_cast<double>(std::get<int64_t>(*a));
  TEGULA_ASSERT(std::holds_alternative<double>(*a), "attribute is not numeric: " + std::string(name));
  return std::get<double>(*a);
}

const std::string& Op::str_attr(std::string_view name) const {
  const Attr* a = attr(name);
  TEGULA_ASSERT(a && std::holds_alternative<std::string>(*a), "missing string attribute " + std::string(name));
  return std::get<std::string>(*a);
}

const std::vector<int64_t>& Op::ints_attr(std::string_view name) const {
  const Attr* a = attr(name);
  TEGULA_ASSERT(a && std::holds_alternative<std::vector<int64_t>>(*a),
                "missing int-list attribute " + std::string(name));
  return std::get<std::vector<int64_t>>(*a);
}

void Op::set_attr(std::string name, Attr value) {
  for (NamedAttr& a : attrs) {
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  }
  attrs.push_back(NamedAttr{std::move(name), std::move(value)});
}

Function::Function() { body_ = add_block(OpId{}); }

BlockId Function::add_block(OpId parent) {
  blocks_.push_back(Block{{}, {}, parent});
  return BlockId{static_cast<uint32_t>(blocks_.size() - 1)};
}

ValueId Function::add_block_arg(BlockId b, Type type) {
  Block& blk = block(b);
  values_.push_back(Value{std::move(type), OpId{}, b, static_cast<uint32_t>(blk.args.size())});
  ValueId id{static_cast<uint32_t>(values_.size() - 1)};
  blk.args.push_back(id);
  return id;
}

OpId Function::create_op(OpKind kind, std::vector<ValueId> operands, const std::vector<Type>& result_types,
                         SourceLoc loc) {
  OpId id{static_cast<uint32_t>(ops_.size())};
  Op o{kind, std::move(operands), {}, {}, {}, BlockId{}, loc, false};
  for (size_t i = 0; i < result_types.size(); ++i) {
    values_.push_back(Value{result_types[i], id, BlockId{}, static_cast<uint32_t>(i)});
    o.results.push_back(ValueId{static_cast<uint32_t>(values_.size() - 1)});
  }
  ops_.push_back(std::move(o));
  if (users_indexed_)
    for (ValueId v : ops_.back().operands) note_use(v, id);
  return id;
}

void Function::note_use(ValueId v, OpId user) {
  if (users_.size() <= v.index) users_.resize(values_.size());
  std::vector<OpId>& list = users_[v.index];
  if (list.empty() || !(list.back() == user)) list.push_back(user);
}

void Function::insert_op(BlockId b, size_t pos, OpId o) {
  Block& blk = block(b);
  TEGULA_ASSERT(pos <= blk.ops.size(), "insert position out of range");
  blk.ops.insert(blk.ops.begin() + static_cast<std::ptrdiff_t>(pos), o);
  op(o).parent = b;
}

void Function::replace_all_uses(ValueId from, ValueId to) {
  if (from == to) return;
  if (!users_indexed_) {
    users_.assign(values_.size(), {});
    for (uint32_t i = 0; i < ops_.size(); ++i)
      for (ValueId v : ops_[i].operands) note_use(v, OpId{i});
    users_indexed_ = true;
  }
  if (users_.size() <= from.index) return;  // a value no op has used
  std::vector<OpId> candidates = std::move(users_[from.index]);
  users_[from.index].clear();
  for (OpId user : candidates) {
    Op& o = ops_[user.index];
    if (o.erased) continue;
    bool used = false;
    for (ValueId& v : o.operands) {
      if (v == from) {
        v = to;
        used = true;
      }
    }
    if (used) note_use(to, user);
  }
}

void Function::erase_op(OpId o) {
  Op& target = op(o);
  if (target.erased) return;
  if (target.parent.valid()) {
    std::vector<OpId>& list = block(target.parent).ops;
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(position_of(o)));
  }
  target.erased = true;
  std::vector<BlockId> regions = target.regions;
  for (BlockId r : regions) {
    std::vector<OpId> inner = block(r).ops;
    for (OpId i : inner) erase_op(i);
  }
}

void Function::erase_ops(const std::vector<OpId>& ops) {
  std::vector<BlockId> parents;
  for (OpId o : ops) {
    if (op(o).erased) continue;
    // Unlinked below, with the block's other erased ops; what its regions
    // hold goes as erase_op takes it (those blocks die whole).
    const BlockId parent = op(o).parent;
    if (parent.valid()) parents.push_back(parent);
    op(o).parent = BlockId{};
    erase_op(o);
    op(o).parent = parent;
  }
  std::sort(parents.begin(), parents.end(), [](BlockId a, BlockId b) { return a.index < b.index; });
  parents.erase(std::unique(parents.begin(), parents.end()), parents.end());
  for (BlockId b : parents) std::erase_if(block(b).ops, [&](OpId o) { return op(o).erased; });
}

namespace {

// Searches outward from `hint`: hint, hint+1, hint-1, hint+2, ...
size_t find_near(const std::vector<OpId>& list, OpId o, size_t hint) {
  const size_t n = list.size();
  if (hint >= n) hint = n == 0 ? 0 : n - 1;
  for (size_t d = 0; d <= n; ++d) {
    const bool above = hint + d < n, below = d != 0 && d <= hint;
    if (!above && !below) break;
    if (above && list[hint + d] == o) return hint + d;
    if (below && list[hint - d] == o) return hint - d;
  }
  TEGULA_ASSERT(false, "op not in its parent block");
  return n;
}

}  // namespace

size_t Function::position_of(OpId o) const {
  const Block& b = block(op(o).parent);
  return find_near(b.ops, o, b.position_hint);
}

size_t Function::position_of(OpId o) {
  Block& b = block(op(o).parent);
  b.position_hint = find_near(b.ops, o, b.position_hint);
  return b.position_hint;
}

std::vector<uint32_t> Function::use_counts() const {
  std::vector<uint32_t> counts(values_.size(), 0);
  for (const Op& o : ops_) {
    if (o.erased) continue;
    for (ValueId v : o.operands) counts[v.index]++;
  }
  return counts;
}

}  // namespace tegula::ir
