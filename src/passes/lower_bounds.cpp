#include "passes/lower_bounds.h"

#include <algorithm>
#include <variant>

#include "ir/hint.h"

namespace tegula::passes {

namespace {

// Bounds beyond this are dropped, far from overflow in the sums and products below.
constexpr int64_t kLimit = int64_t{1} << 40;

}  // namespace

LowerBounds::LowerBounds(const ir::Function& fn, std::vector<int> at_least_one)
    : fn_(fn), at_least_one_(std::move(at_least_one)) {}

std::optional<int64_t> LowerBounds::of(ir::ValueId v) {
  if (auto it = known_.find(v.index); it != known_.end()) return it->second;
  known_[v.index] = std::nullopt;  // a cycle through loop-carried values proves nothing
  std::optional<int64_t> bound = prove(v);
  if (bound && (*bound > kLimit || *bound < -kLimit)) bound = std::nullopt;
  known_[v.index] = bound;
  return bound;
}

std::optional<int64_t> LowerBounds::constant(ir::ValueId v) const {
  const ir::Value& value = fn_.value(v);
  if (!value.def.valid() || fn_.op(value.def).kind != ir::OpKind::Constant) return std::nullopt;
  return fn_.op(value.def).int_attr("value");
}

std::optional<int64_t> LowerBounds::prove(ir::ValueId v) {
  const ir::Value& value = fn_.value(v);
  const ir::Type& type = fn_.type(v);
  if (type.is_tile() || type.is_pointer() || !ir::is_integer(type.scalar)) return std::nullopt;
  if (!value.def.valid()) {
    if (value.block == fn_.body()) {
      int position = static_cast<int>(value.position);
      if (std::find(at_least_one_.begin(), at_least_one_.end(), position) != at_least_one_.end()) return 1;
      return ir::is_signed(type.scalar) ? std::nullopt : std::optional<int64_t>(0);
    }
    const ir::Block& block = fn_.block(value.block);
    if (!block.parent.valid() || value.position != 0) return std::nullopt;
    const ir::Op& loop = fn_.op(block.parent);  // a for loop's index: its start, then steps up
    if (loop.kind != ir::OpKind::For) return std::nullopt;
    std::optional<int64_t> step = of(loop.operands[2]);
    return step && *step >= 0 ? of(loop.operands[0]) : std::nullopt;
  }
  const ir::Op& def = fn_.op(value.def);
  std::optional<int64_t> a = def.operands.empty() ? std::nullopt : of(def.operands[0]);
  std::optional<int64_t> b = def.operands.size() < 2 ? std::nullopt : of(def.operands[1]);
  switch (def.kind) {
    case ir::OpKind::Constant: return def.int_attr("value");
    case ir::OpKind::ProgramId: return 0;
    case ir::OpKind::NumPrograms: return 1;
    case ir::OpKind::Add:
      if (a && b) return *a + *b;
      return std::nullopt;
    case ir::OpKind::Sub: {  // x - c
      std::optional<int64_t> c = constant(def.operands[1]);
      if (a && c) return *a - *c;
      return std::nullopt;
    }
    case ir::OpKind::Mul:
      if (a && b && *a >= 0 && *b >= 0) return *a * *b;
      return std::nullopt;
    case ir::OpKind::Div: {  // truncates: a >= 0 over b >= 1 is >= 0, over a constant c >= 1 at least a / c
      if (!a || !b || *a < 0 || *b < 1) return std::nullopt;
      std::optional<int64_t> c = constant(def.operands[1]);
      return c && *c >= 1 ? *a / *c : 0;
    }
    case ir::OpKind::Rem:  // C's `%` takes the dividend's sign
      if (a && *a >= 0) return 0;
      return std::nullopt;
    case ir::OpKind::Min:
      if (a && b) return std::min(*a, *b);
      return std::nullopt;
    case ir::OpKind::Max:
      if (a && b) return std::max(*a, *b);
      return a ? a : b;
    case ir::OpKind::Select: {
      std::optional<int64_t> x = of(def.operands[1]), y = of(def.operands[2]);
      if (x && y) return std::min(*x, *y);
      return std::nullopt;
    }
    case ir::OpKind::Hint: {
      const ir::Attr* least = def.attr(ir::kHintAtLeast);
      if (least == nullptr) return a;
      int64_t promised = std::get<std::vector<int64_t>>(*least).at(0);
      return std::max<int64_t>(promised, a.value_or(promised));
    }
    case ir::OpKind::Cast: {
      const ir::Type& from = fn_.type(def.operands[0]);
      if (!ir::is_integer(from.scalar) || ir::bit_width(from.scalar) > ir::bit_width(type.scalar)) return std::nullopt;
      return a;
    }
    default: return std::nullopt;
  }
}

}  // namespace tegula::passes
