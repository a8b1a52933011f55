// The C-family dialects Tegula prints: C++ for the CPU backend's system
// compiler, CUDA C++ for NVRTC. The shared tables (type_spelling.h,
// op_syntax.def) have a column per dialect.
#pragma once

#include <cstdint>

namespace tegula::backends::c_family {

enum class Dialect : uint8_t { Cpu, Cuda };

}  // namespace tegula::backends::c_family
