// The tensor maps of one launch (KernelInfo::tensor_maps): each one's key
// read from the launch's arguments, encoded through the process-wide cache
// (tensor_map.h), and passed by pointer after the kernel's own parameters
// (cuLaunchKernel copies the 128 bytes into the __grid_constant__
// parameter). Kernels without descriptors never get here.
#pragma once

#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/tensor_map.h"

namespace tegula::backends::cuda {

// What map `map` of kernel `info` holds for the arguments `args`.
TensorMapKey tensor_map_key(const KernelInfo& info, const TensorMapParam& map, std::span<const ArgValue> args);

class LaunchTensorMaps {
 public:
  // Throws Error (E0711, ValueError) naming the kernel, the argument and the
  // TMA rule a tensor breaks (a dimension of 0 elements, a stride past 2^40
  // bytes: what specialization cannot prove at compile time).
  LaunchTensorMaps(const KernelInfo& info, std::span<const ArgValue> args);

  // Appends a pointer to each map to `argv` (PackedArguments::argv, of
  // whichever vector type it is).
  template <class Argv>
  void append_to(Argv& argv) {
    for (TensorMap& map : maps_) argv.push_back(&map);
  }

 private:
  std::vector<TensorMap> maps_;
};

}  // namespace tegula::backends::cuda
