#include "bindings/launch_writes.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "bindings/launch_errors.h"

namespace tegula::python {

namespace {

// NumPy's flag bits (ndarraytypes.h), part of its stable ABI.
constexpr int kCContiguous = 0x0001;
constexpr int kFContiguous = 0x0002;
constexpr int kWriteable = 0x0400;

// Whether the elements of a strided view may overlap: sorted by stride, each
// dimension must step past everything the smaller ones cover (`unit`: what
// one element covers, in the strides' unit). Sufficient, not necessary: an
// interleaving of strides that happens to miss itself is reported too.
template <class Int>
WriteBlock overlap_of(int nd, const Int* shape, const Int* strides, int64_t unit) {
  constexpr int kMaxDims = 64;  // NumPy's limit; torch's is lower
  std::pair<int64_t, int64_t> dims[kMaxDims];  // (|stride|, extent)
  int count = 0;
  for (int i = 0; i < nd && i < kMaxDims; ++i) {
    if (shape[i] == 0) return WriteBlock::None;  // no elements at all
    if (shape[i] > 1) dims[count++] = {std::abs(static_cast<int64_t>(strides[i])), static_cast<int64_t>(shape[i])};
  }
  std::sort(dims, dims + count);
  int64_t covered = unit;
  for (int i = 0; i < count; ++i) {
    if (dims[i].first < covered) return WriteBlock::Overlapping;
    covered = dims[i].first * dims[i].second;
  }
  return WriteBlock::None;
}

}  // namespace

WriteBlock numpy_write_block(int flags, int nd, const Py_intptr_t* shape, const Py_intptr_t* strides,
                             int item_bytes) {
  if (!(flags & kWriteable)) return WriteBlock::ReadOnly;
  // A contiguous array owns one element per index; so does one without strides.
  if ((flags & (kCContiguous | kFContiguous)) || !strides || nd <= 0) return WriteBlock::None;
  return overlap_of(nd, shape, strides, item_bytes);
}

WriteBlock dlpack_write_block(int nd, const int64_t* shape, const int64_t* strides) {
  if (!strides || nd <= 0) return WriteBlock::None;  // compact row-major
  // Every launch reads its tensors: the common contiguous one is settled
  // by one pass over its dims, without the sort.
  int64_t expected = 1;
  bool contiguous = true;
  for (int i = nd; i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) contiguous = false;
    expected *= shape[i];
  }
  return contiguous ? WriteBlock::None : overlap_of(nd, shape, strides, 1);
}

void check_writes(const backends::KernelInfo& kernel, std::span<const UnwritableArgument> unwritable) {
  for (const UnwritableArgument& argument : unwritable) {
    if (argument.value >= kernel.effects.size() || argument.value >= kernel.params.size()) continue;
    const passes::PointerEffects& effects = kernel.effects[argument.value];
    if (!effects.written && !effects.atomic) continue;
    std::string param = kernel.params[argument.value].name;
    std::string what = argument.why == WriteBlock::ReadOnly
                           ? "a read-only array (its `writeable` flag is off, e.g. np.frombuffer of bytes)"
                           : "a view whose elements overlap in memory (a zero or too-small stride, e.g. "
                             "np.broadcast_to or as_strided)";
    constexpr std::string_view kBase = "__base";  // the descriptor's first kernel parameter (launcher.cpp)
    if (argument.descriptor_base && param.ends_with(kBase)) {
      param.resize(param.size() - kBase.size());
      what = "is a TensorDescriptor over " + what;
    } else {
      what = "is " + what;
    }
    raise_coded(PyExc_ValueError, Diag::ReadOnlyLaunchArgument,
                "argument '" + param + "' of kernel '" + kernel.name + "' " + what + ", but the kernel " +
                    (effects.atomic ? "updates it atomically" : "stores to it") +
                    "; pass a writable copy of the array (`array.copy()`) and read the result from that copy");
  }
}

}  // namespace tegula::python
