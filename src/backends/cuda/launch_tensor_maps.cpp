#include "backends/cuda/launch_tensor_maps.h"

#include "support/error.h"

namespace tegula::backends::cuda {

namespace {

int64_t extent_of(const KernelInfo& info, const TensorMapExtent& e, std::span<const ArgValue> args) {
  return extent_value(e, [&](int param) {
    TEGULA_ASSERT(static_cast<size_t>(param) < args.size() && static_cast<size_t>(param) < info.params.size(),
                  "a tensor map names a parameter past the arguments");
    uint64_t bits = args[static_cast<size_t>(param)].bits;
    // A 32-bit signed parameter's value, sign-extended, as the kernel reads it.
    if (info.params[static_cast<size_t>(param)].type.scalar == ir::Scalar::I32)
      return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
    return static_cast<int64_t>(bits);
  });
}

}  // namespace

TensorMapKey tensor_map_key(const KernelInfo& info, const TensorMapParam& map, std::span<const ArgValue> args) {
  TEGULA_ASSERT(static_cast<size_t>(map.base) < args.size() && static_cast<size_t>(map.base) < info.params.size(),
                "a tensor map's base parameter is past the arguments");
  TensorMapKey key;
  key.base = args[static_cast<size_t>(map.base)].bits;
  key.dtype = info.params[static_cast<size_t>(map.base)].type.scalar;
  for (const TensorMapExtent& e : map.shape) key.shape.push_back(extent_of(info, e, args));
  for (const TensorMapExtent& e : map.strides) key.strides.push_back(extent_of(info, e, args));
  key.box = map.box;
  key.swizzle = static_cast<TmaSwizzle>(map.swizzle);
  key.nan_fill = map.nan_fill;
  return key;
}

LaunchTensorMaps::LaunchTensorMaps(const KernelInfo& info, std::span<const ArgValue> args) {
  maps_.reserve(info.tensor_maps.size());
  for (const TensorMapParam& map : info.tensor_maps) {
    TensorMapKey key = tensor_map_key(info, map, args);
    if (std::string problem = tma_problem(key); !problem.empty())
      fail(ErrorKind::Value, Diag::InvalidTensorDescriptor,
           "kernel '" + info.name + "' copies blocks of '" + info.params[static_cast<size_t>(map.base)].name +
               "' with the TMA, which cannot take this tensor: " + problem,
           "pass a tensor with at least one element per dimension and strides below 2^40 bytes, or compile for an "
           "architecture before sm_90 (pointer loads and stores)");
    maps_.push_back(tensor_maps().get(key));
  }
}

}  // namespace tegula::backends::cuda
