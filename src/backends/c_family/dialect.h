// The C-family dialects Tegula prints: the C++ of the CPU backend, compiled
// by the system compiler, and the CUDA C++ of the CUDA backend, compiled by
// NVRTC without any #include. Where their spelling differs (scalar type
// names, a few literals, the escapes of a string literal) the shared
// printer's tables have a column per dialect.
#pragma once

namespace tegula::backends::c_family {

enum class Dialect { Cpu, Cuda };

}  // namespace tegula::backends::c_family
