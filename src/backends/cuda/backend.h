// The CUDA backend: tile IR -> CUDA C++ with a layout for every tile value
// (codegen.h) -> a cubin built by NVRTC for the device's architecture
// (nvrtc.h) -> a module loaded per device and launched on the caller's
// stream (module.h). libcuda and libnvrtc are loaded at run time
// (driver_api.h). Registered as "cuda" (runtime/backend_registry.cpp).
#pragma once

#include "backends/backend.h"

namespace tegula::backends::cuda {

const Backend& backend();

}  // namespace tegula::backends::cuda
