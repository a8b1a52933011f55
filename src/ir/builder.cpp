#include "ir/builder.h"

#include "support/diagnostic.h"

namespace tegula::ir {

void Builder::set_insertion_end(BlockId block) {
  block_ = block;
  at_end_ = true;
}

void Builder::set_insertion_before(OpId op) {
  block_ = fn_.op(op).parent;
  pos_ = fn_.position_of(op);
  at_end_ = false;
}

OpId Builder::create(OpKind kind, std::vector<ValueId> operands, const std::vector<Type>& result_types,
                     std::vector<NamedAttr> attrs) {
  TEGULA_ASSERT(block_.valid(), "builder has no insertion point");
  OpId id = fn_.create_op(kind, std::move(operands), result_types, loc_);
  fn_.op(id).attrs = std::move(attrs);
  if (at_end_) {
    fn_.insert_op(block_, fn_.block(block_).ops.size(), id);
  } else {
    fn_.insert_op(block_, pos_, id);
    ++pos_;
  }
  return id;
}

ValueId Builder::create1(OpKind kind, std::vector<ValueId> operands, Type result_type,
                         std::vector<NamedAttr> attrs) {
  OpId id = create(kind, std::move(operands), {std::move(result_type)}, std::move(attrs));
  return fn_.op(id).results[0];
}

ValueId Builder::int_constant(int64_t v, Type type) {
  return create1(OpKind::Constant, {}, std::move(type), {{"value", Attr{v}}});
}

ValueId Builder::float_constant(double v, Type type) {
  return create1(OpKind::Constant, {}, std::move(type), {{"value", Attr{v}}});
}

ValueId Builder::broadcast_to(ValueId v, const std::vector<int64_t>& shape) {
  const Type& t = fn_.type(v);
  if (t.shape == shape) return v;
  if (!t.is_tile()) return create1(OpKind::Splat, {v}, t.with_shape(shape));
  TEGULA_ASSERT(t.rank() == static_cast<int>(shape.size()), "broadcast_to: rank mismatch");
  return create1(OpKind::Broadcast, {v}, t.with_shape(shape));
}

}  // namespace tegula::ir
