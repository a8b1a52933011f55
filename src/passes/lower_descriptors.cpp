// Each desc op is replaced by the ops of its expansion, emitted just before
// it: the block's pointers and its mask over every dimension; for a load,
// the padding splatted as `other`, then the load, whose result replaces the
// op's; for a store, the masked store; for an atomic, the masked atomic_rmw
// with tl.atomic_*'s default order (acq_rel, gpu), its old values unused:
// what the front end emitted for desc.atomic_* before the op existed.
#include "passes/lower_descriptors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ir/atomic.h"
#include "ir/block_access.h"
#include "ir/builder.h"
#include "ir/descriptor.h"

namespace tegula::passes {

namespace {

// The attributes a desc op hands on to its load or store: all but padding.
std::vector<ir::NamedAttr> memory_attrs(const ir::Op& op) {
  std::vector<ir::NamedAttr> out;
  for (const ir::NamedAttr& a : op.attrs)
    if (a.name != "padding") out.push_back(a);
  return out;
}

void lower(ir::Function& fn, ir::OpId id) {
  const ir::Op op = fn.op(id);  // a copy: creating ops below may move the table
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  ir::Builder b(fn);
  b.set_insertion_before(id);
  b.set_loc(op.loc);
  ir::StridedBlock block{d.base, d.shape, d.strides, d.offsets, {}};
  ir::Scalar element = fn.type(d.base).scalar;
  block.block = fn.type(ir::descriptor_block_value(op)).shape;
  ir::BlockPointerTile tile = ir::expand_block(b, block, std::vector<bool>(d.rank, true));
  std::vector<ir::NamedAttr> attrs = memory_attrs(op);
  if (op.kind == ir::OpKind::DescStore) {
    std::vector<ir::ValueId> operands = {tile.pointers, d.value};
    if (tile.mask.valid()) operands.push_back(tile.mask);
    b.create(ir::OpKind::Store, operands, {}, std::move(attrs));
  } else if (op.kind == ir::OpKind::DescAtomic) {
    std::vector<ir::ValueId> operands = {tile.pointers, d.value};
    if (tile.mask.valid()) operands.push_back(tile.mask);
    attrs.push_back({"sem", ir::Attr{std::string(ir::to_string(ir::MemorySem::AcqRel))}});
    attrs.push_back({"scope", ir::Attr{std::string(ir::to_string(ir::MemoryScope::Gpu))}});
    b.create1(ir::OpKind::AtomicRmw, operands, fn.type(d.value), std::move(attrs));
  } else {
    std::vector<ir::ValueId> operands = {tile.pointers};
    if (tile.mask.valid()) {
      operands.push_back(tile.mask);
      ir::Type scalar = ir::Type::of(element);
      ir::ValueId other = op.str_attr("padding") == "nan"
                              ? b.float_constant(std::numeric_limits<double>::quiet_NaN(), scalar)
                          : ir::is_float(element) ? b.float_constant(0.0, scalar)
                                                  : b.int_constant(0, scalar);
      operands.push_back(b.broadcast_to(other, block.block));
    }
    ir::ValueId result = op.results[0];
    ir::Type type = fn.type(result);
    ir::ValueId loaded = b.create1(ir::OpKind::Load, operands, type, std::move(attrs));
    fn.replace_all_uses(result, loaded);
  }
  fn.erase_op(id);
}

// `if (every offset >= 0) { op } else { op's pointer form }`, in op's place.
void guard(ir::Function& fn, ir::OpId id) {
  const ir::Op op = fn.op(id);  // a copy: creating ops below may move the table
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  ir::Builder b(fn);
  b.set_insertion_before(id);
  b.set_loc(op.loc);
  const ir::Type flag = ir::Type::of(ir::Scalar::I1);
  ir::ValueId inside;
  for (ir::ValueId offset : d.offsets) {
    ir::ValueId zero = b.int_constant(0, fn.type(offset));
    ir::ValueId at_least_zero = b.create1(ir::OpKind::Cmp, {offset, zero}, flag, {{"pred", ir::Attr{std::string("ge")}}});
    inside = inside.valid() ? b.create1(ir::OpKind::And, {inside, at_least_zero}, flag) : at_least_zero;
  }
  ir::OpId branch = b.create(ir::OpKind::If, {inside}, {});
  ir::BlockId whole = fn.add_block(branch), pointers = fn.add_block(branch);
  fn.op(branch).regions = {whole, pointers};
  std::vector<ir::OpId>& siblings = fn.block(op.parent).ops;
  siblings.erase(std::remove(siblings.begin(), siblings.end(), id), siblings.end());
  fn.insert_op(whole, 0, id);
  ir::OpId copy = fn.create_op(op.kind, op.operands, {}, op.loc);
  fn.op(copy).attrs = op.attrs;
  fn.insert_op(pointers, 0, copy);
  for (ir::BlockId block : {whole, pointers}) {
    b.set_insertion_end(block);
    b.create(ir::OpKind::Yield, {}, {});
  }
  lower(fn, copy);
}

}  // namespace

bool lower_descriptors(ir::Function& fn, const DescriptorFilter& path) {
  std::vector<ir::OpId> lowered, guarded;
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    if (!ir::is_descriptor_op(op.kind)) return;
    ir::DescriptorPath p = path ? path(fn, op) : ir::DescriptorPath::Lower;
    if (p == ir::DescriptorPath::Lower) lowered.push_back(id);
    if (p == ir::DescriptorPath::KeepWhereOffsetsNonNegative) guarded.push_back(id);
  });
  for (ir::OpId id : guarded) guard(fn, id);
  for (ir::OpId id : lowered) lower(fn, id);
  return !lowered.empty() || !guarded.empty();
}

bool lower_descriptors(ir::Function& fn) { return lower_descriptors(fn, {}); }

}  // namespace tegula::passes
