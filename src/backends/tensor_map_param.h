// A tensor-map parameter: a kernel argument the launcher makes rather than
// the caller. Device backends with a tensor-copy engine (CUDA's TMA on
// sm_90) copy a descriptor's blocks through a map of the tensor (base,
// shape, strides, block shape) that the host encodes; the kernel receives
// it after its own parameters (backends/kernel_abi.h). The spec says where
// each field of the map comes from: a kernel parameter's value at launch or
// a constant the compiler specialized on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tegula::backends {

// One extent (a dim's size or stride, in elements): parameter `param`'s
// value at launch, or `value` when param < 0; times the values of the
// parameters `factors` and the constant `scale` when the kernel computes the
// extent as a product (`Z * H * N_CTX`, `2 * N`), wrapped to a signed
// integer of `bits` bits as the kernel's own multiplication wraps (0: no
// product, nothing to wrap).
struct TensorMapExtent {
  int param = -1;
  int64_t value = 0;
  std::vector<int> factors = {};
  int64_t scale = 1;
  int bits = 0;
  bool operator==(const TensorMapExtent&) const = default;
};

// The extent's value from the parameters' values (`arg(i)`: parameter i as
// a signed integer), with the kernel's wrapping.
template <class Arg>
int64_t extent_value(const TensorMapExtent& e, Arg arg) {
  uint64_t v = static_cast<uint64_t>(e.param >= 0 ? arg(e.param) : e.value);
  for (int f : e.factors) v *= static_cast<uint64_t>(arg(f));
  v *= static_cast<uint64_t>(e.scale);
  if (e.bits == 32) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

struct TensorMapParam {
  int base = 0;                          // the parameter holding the base pointer (its pointee: the element type)
  std::vector<TensorMapExtent> shape;    // outermost first
  std::vector<TensorMapExtent> strides;  // outermost first
  std::vector<int64_t> box;              // the block one copy moves, outermost first
  int swizzle = 0;                       // CUtensorMapSwizzle: 0 none, 1..3 the 32/64/128-byte modes
  bool nan_fill = false;                 // out-of-bounds elements load as NaN (else 0)
  bool operator==(const TensorMapParam&) const = default;
};

// One line (no newline) that parse_tensor_map_param reads back exactly, for
// the cache manifest: "base=0 shape=p1,p2 strides=p3,1 box=64,64 swizzle=0 fill=zero".
std::string to_text(const TensorMapParam& map);
std::optional<TensorMapParam> parse_tensor_map_param(std::string_view text);

}  // namespace tegula::backends
