// Which tensor-descriptor ops (ir/descriptor.h) the sm_90 code generator
// copies with the TMA, and the tensor map each one reads.
//
// The TMA copies a block through a tensor map the host encodes
// (backends/cuda/tensor_map.h), so everything the map holds must be known
// at launch: the base is a kernel parameter, each dim's size and stride a
// parameter, a constant, or a product of them (the launcher multiplies as the
// kernel does). The rules the map must meet are checked here
// where the specialization proves them (a base aligned to 16 bytes, outer
// strides multiples of 16 bytes, innermost stride 1, a box of at most 256
// elements per dim whose rows are multiples of 16 bytes), so a launch can
// only break the ones no specialization covers (a size of 0, a stride past
// 2^40 bytes), which it reports as an error. Ops that break a rule here are
// lowered to pointer tiles and masks (passes/lower_descriptors.h): the
// compiler picks the path, `inspect` shows it (the generated source's
// comment on each op, and tma_refusal through the layouts text).
#pragma once

#include <string>

#include "backends/tensor_map_param.h"
#include "ir/atomic.h"
#include "ir/ir.h"
#include "passes/axis_info.h"

namespace tegula::backends::cuda {

// The block ranks the generated copies take (cp.async.bulk.tensor.{1,2,3}d).
inline constexpr size_t kTmaMaxCopyRank = 3;

// Whether cp.reduce.async.bulk.tensor applies `op` to elements of kind `s`
// the way desc_atomic means it (ir/atomic.h). The PTX ISA lists .add on
// .u32 .s32 .u64 .f32 .f16 .bf16, .min/.max on .u32 .s32 .u64 .s64 .f16
// .bf16 and .and/.or/.xor on .b32 .b64, the element type being the tensor
// map's (i64 maps are INT64, so their add is not listed). f16/bf16 keep
// the pointer atomics: the tensor form takes no `.noftz`, so nothing says
// it keeps subnormals as atom.add.noftz does, and the IR's float max/min
// order -0 below +0 and NaNs by sign (ir/atomic.h), which .min/.max need not.
bool tma_reduces(ir::AtomicOp op, ir::Scalar s);

// "" when the TMA can copy (desc_atomic: reduce) the block of desc op `op`
// of `fn`; otherwise why not, as a phrase ("the base pointer is not known
// to be 16-byte aligned").
std::string tma_refusal(const ir::Function& fn, const ir::Op& op);

// What the TMA needs of a block's offsets. On the H200 a copy, store or
// reduction whose innermost offset is 3 floats, and a store or reduction at
// any negative offset, stops the kernel with "illegal instruction"
// (tools/hopper/tma_reduce_probe.py; loads take negative offsets and fill
// what lies outside): the box's first address must be 16-byte aligned, and a
// written box must start inside the tensor. Decided once, before the
// optimization stages (descriptor_path), as the rest of the plan.
//
// "" when the innermost offset is known (`axes`, the analysis of `fn`) to be
// a multiple of 16 bytes, otherwise why not: the op keeps the pointer form,
// which is correct at every offset.
std::string tma_offset_refusal(const ir::Function& fn, const ir::Op& op, const passes::AxisInfoAnalysis& axes);

// "" when every offset of store or reduction `op` is known to be >= 0 (and
// for every load), otherwise which one is not ("offset 1 is not known to be
// >= 0"): the op is then kept under a runtime check of its offsets and takes
// the pointer form where one is negative (ir::DescriptorPath). Known from
// passes/lower_bounds.h, with the op's own extents at least 1 (the launcher
// refuses a map's dimension below 1).
std::string tma_sign_doubt(const ir::Function& fn, const ir::Op& op);

// The tensor map desc op `op` copies through. Asserts tma_refusal is "".
TensorMapParam tma_map_param(const ir::Function& fn, const ir::Op& op);

// "desc_load at k.py:12:9": how the path notes of the layouts text
// (`inspect`) name a desc op.
std::string descriptor_op_name(const ir::Function& fn, const ir::Op& op);

}  // namespace tegula::backends::cuda
