// The two tensor-descriptor ops of the tile IR, `desc_load` and
// `desc_store`: one block of a strided tensor, read or written whole.
//
//   %t = desc_load %base, %shape.., %strides.., %offsets.. {padding = "zero"} : tile<B0x..xT>
//   desc_store %base, %shape.., %strides.., %offsets.., %value
//
// The block's rank r is the result's (the value's) rank; the operands are
// the base pointer ptr<T>, r shapes and r strides (signed integer scalars,
// in elements) and r offsets (i32 scalars). Element (i0, .., ir-1) of the
// block is base[sum((offset_d + i_d) * stride_d)] when 0 <= offset_d + i_d <
// shape_d for every d; a load gives `padding` (0, or NaN for floats) for
// the others and a store leaves them alone. This is exactly the load/store
// ir/block_access.h expands it to; the op exists so that a backend with a
// tensor-copy engine (Hopper's TMA) sees the block whole.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// The operands of a verified desc_load / desc_store, by role.
struct DescriptorOperands {
  size_t rank = 0;
  ValueId base;
  std::vector<ValueId> shape, strides, offsets;
  ValueId value;  // desc_store only
};
DescriptorOperands descriptor_operands(const Op& op);

bool is_descriptor_op(OpKind kind);

// What is wrong with desc op `op` of `fn` ("" when nothing is).
std::string descriptor_problem(const Function& fn, const Op& op);

}  // namespace tegula::ir
