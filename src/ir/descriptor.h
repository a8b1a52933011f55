// The tensor-descriptor ops of the tile IR, `desc_load`, `desc_store` and
// `desc_atomic`: one block of a strided tensor, read, written or updated
// whole.
//
//   %t = desc_load %base, %shape.., %strides.., %offsets.. {padding = "zero"} : tile<B0x..xT>
//   desc_store %base, %shape.., %strides.., %offsets.., %value
//   desc_atomic %base, %shape.., %strides.., %offsets.., %value {op = "add"}
//
// The block's rank r is the result's (the value's) rank; the operands are
// the base pointer ptr<T>, r shapes and r strides (signed integer scalars,
// in elements) and r offsets (i32 scalars). Element (i0, .., ir-1) of the
// block is base[sum((offset_d + i_d) * stride_d)] when 0 <= offset_d + i_d <
// shape_d for every d; a load gives `padding` (0, or NaN for floats) for
// the others, a store and an atomic leave them alone. This is exactly the
// load/store/atomic_rmw ir/block_access.h expands it to; the op exists so
// that a backend with a tensor-copy engine (Hopper's TMA) sees the block
// whole.
//
// desc_atomic applies its `op` (ir/atomic.h: add, max, min, and, or, xor;
// not xchg) to every element inside the tensor, each one indivisibly, in no
// particular order, and returns nothing (as Triton's descriptor atomics).
// It promises no ordering with the program's other memory accesses beyond
// that: its pointer form is an acq_rel atomic_rmw, the TMA's bulk reduction
// is relaxed per element.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// How the pipeline treats a desc op (passes/lower_descriptors.h): expanded
// to its pointer form; kept whole for a code generator that copies blocks
// (TMA); or kept where every offset is >= 0 and expanded elsewhere, under a
// runtime branch on the offsets (a TMA store or reduction must start inside
// the tensor, which the compiler could not prove).
enum class DescriptorPath { Lower, Keep, KeepWhereOffsetsNonNegative };

// The operands of a verified desc op, by role.
struct DescriptorOperands {
  size_t rank = 0;
  ValueId base;
  std::vector<ValueId> shape, strides, offsets;
  ValueId value;  // desc_store, desc_atomic
};
DescriptorOperands descriptor_operands(const Op& op);

bool is_descriptor_op(OpKind kind);

// The tile of the block: desc_load's result, the others' value.
ValueId descriptor_block_value(const Op& op);

// What is wrong with desc op `op` of `fn` ("" when nothing is).
std::string descriptor_problem(const Function& fn, const Op& op);

}  // namespace tegula::ir
