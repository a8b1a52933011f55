// The CPU backend: tile IR -> C++ source (codegen.h) -> a shared object built
// by the system compiler (toolchain.h) -> its entry point run on the
// process's thread pool (kernel.h). Registered as "cpu"
// (runtime/backend_registry.cpp).
#pragma once

#include "backends/backend.h"

namespace tegula::backends::cpu {

const Backend& backend();

}  // namespace tegula::backends::cpu
