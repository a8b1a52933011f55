// The `tegula._C` extension: the compiler's C++ API as Python sees it.
//
// One file per exposed concept: module.cpp (the module and how C++ errors
// become Python exceptions), bind_compiler.cpp (requests, options, compile,
// cache keys, signatures, stats), bind_kernel.cpp (compiled kernels and the
// launch paths), bind_cuda.cpp (CUDA devices and libraries). The Python package (python/tegula) is the only intended
// caller; its argument binding decides every specialization before C++ sees it.
#pragma once

#include <nanobind/nanobind.h>

namespace tegula::python {

void bind_compiler(nanobind::module_& m);
void bind_kernel(nanobind::module_& m);
void bind_cuda(nanobind::module_& m);

}  // namespace tegula::python
