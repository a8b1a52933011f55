// Arrays a kernel must not write: read-only ones (NumPy's `writeable` flag
// off, as for `np.frombuffer(bytes(...))`, whose memory is an immutable
// `bytes`) and views whose elements overlap (`np.broadcast_to`, zero or
// too-small strides from `as_strided`), where a store would land on other
// elements' memory or, past what the view really owns, on the heap.
//
// The classifier notes such arrays while it reads them (a test of bits it
// reads anyway, nothing for a common array); the launch then refuses them
// where the compiled kernel may write the pointer they are bound to (its
// stores and atomics, passes/pointer_effects.h). Reading them stays allowed.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>

#include <span>

#include "backends/backend.h"

namespace tegula::python {

// Why an array's memory may not be written through the kernel.
enum class WriteBlock : uint8_t { None, ReadOnly, Overlapping };

// An array argument noted by the classifier: launch value `value` is the
// pointer to it.
struct UnwritableArgument {
  size_t value = 0;
  WriteBlock why = WriteBlock::None;
  bool descriptor_base = false;  // the array under a TensorDescriptor argument
};

// From NumPy's array interface: `flags` (its NPY_ARRAY_* bits), the shape and
// byte strides (null: C-contiguous) of `nd` dimensions, `item_bytes` per
// element.
WriteBlock numpy_write_block(int flags, int nd, const Py_intptr_t* shape, const Py_intptr_t* strides,
                             int item_bytes);

// From a DLPack tensor (torch's, through the exchange table): its shape and
// strides in elements (null strides: compact row-major). Tensors have no
// read-only flag; an expanded one (`expand`, zero strides) overlaps.
WriteBlock dlpack_write_block(int nd, const int64_t* shape, const int64_t* strides);

// Raises ValueError E0714 for the first of `unwritable` whose pointer
// `kernel` may write, naming the parameter and the fix.
void check_writes(const backends::KernelInfo& kernel, std::span<const UnwritableArgument> unwritable);

}  // namespace tegula::python
