// The pointer/mask form of one block of a strided tensor: what a block
// pointer access and a tensor descriptor load or store mean in terms of the
// IR's plain `load` and `store`. The front end expands block pointers and
// descriptor atomics with it; passes/lower_descriptors.h expands the
// `desc_load` and `desc_store` ops with it, so both forms mean the same.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace tegula::ir {

// One block of a tensor: element (i0, .., ir) of the block is at
// base + sum((offset_d + i_d) * stride_d), inside the tensor when
// 0 <= offset_d + i_d < shape_d for every d. Shapes and strides are signed
// integer scalars, offsets i32 scalars (as Triton's).
struct StridedBlock {
  ValueId base;                  // ptr<T> scalar
  std::vector<ValueId> shape;    // one per dim
  std::vector<ValueId> strides;  // one per dim
  std::vector<ValueId> offsets;  // one per dim
  std::vector<int64_t> block;    // the block's shape (powers of two)
};

// The block's pointer tile, and its mask over the dims in `checked` (a
// tile<i1> of the block's shape; invalid when no dim needs a check).
struct BlockPointerTile {
  ValueId pointers;
  ValueId mask;
};

// Emits the pointer tile and mask of `access` at the builder's insertion
// point and location. Products are taken in 64 bits unless the stride is a
// constant small enough for 32, so large tensors cannot wrap; checks a
// constant offset and shape make redundant are left out.
BlockPointerTile expand_block(Builder& b, const StridedBlock& access, const std::vector<bool>& checked);

// The integer a value holds when it is a scalar integer constant.
bool known_int(const Function& fn, ValueId v, int64_t* out);

}  // namespace tegula::ir
