// The `tegula._C` extension: the compiler's C++ API as Python sees it.
//
// One file per exposed concept: module.cpp (the module and how C++ errors
// become Python exceptions), bind_compiler.cpp (requests, options, compile,
// cache keys, signatures, stats), bind_kernel.cpp (compiled kernels and
// their bare launch), bind_cuda.cpp (CUDA devices and libraries),
// bind_launch.cpp (the per-kernel launcher that `kernel[grid](...)` calls;
// launcher.h and the launch_*.h files behind it are the one definition of
// binding, specialization and the launch key). The Python package
// (python/tegula) is the only intended caller.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>

#include "backends/debug_fault.h"

namespace tegula::python {

void bind_compiler(nanobind::module_& m);
void bind_kernel(nanobind::module_& m);
void bind_cuda(nanobind::module_& m);
void bind_launch(nanobind::module_& m);
void bind_launch_observer(nanobind::module_& m);

// Sets the Python error for a debug kernel's fault: tegula.DeviceError (bind_debug.cpp).
void raise_device_error(const backends::DeviceFault& fault);

// Sets the Python error for a C++ exception exactly as the module's exception
// translation does, for entry points that bypass nanobind (module.cpp).
void set_python_error(const std::exception_ptr& error);

}  // namespace tegula::python
