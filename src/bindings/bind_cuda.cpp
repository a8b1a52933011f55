// CUDA devices and libraries as the Python side needs them: whether a GPU is
// usable (and why not), device count and architecture, which device a
// pointer lives on, and which libcuda/libnvrtc were loaded (for reports).
// Launching lives with the kernel (bind_kernel.cpp).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "bindings/bindings.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/occupancy.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {
namespace {

namespace cuda = backends::cuda;

std::pair<bool, std::string> cuda_status() {
  nb::gil_scoped_release released;  // the first call loads libcuda and initializes the driver
  std::string why;
  bool available = cuda::driver_available(&why);
  return {available, why};
}

// Every field is None (with the error in driver_error / nvrtc_error) when that library is missing.
nb::dict cuda_libraries() {
  nb::dict d;
  d["driver"] = nb::none();
  d["driver_version"] = nb::none();
  d["nvrtc"] = nb::none();
  d["nvrtc_version"] = nb::none();
  try {
    const cuda::DriverApi& api = cuda::driver();
    d["driver"] = api.path;
    d["driver_version"] = api.version;
  } catch (const tegula::Error& e) {
    d["driver_error"] = std::string(e.what());
  }
  try {
    const cuda::NvrtcApi& api = cuda::nvrtc();
    d["nvrtc"] = api.path;
    d["nvrtc_version"] = api.version_text();
  } catch (const tegula::Error& e) {
    d["nvrtc_error"] = std::string(e.what());
  }
  return d;
}

// The --gpu-architecture a kernel for `device` (or compute capability `arch` × 10) is built with.
std::string cuda_target(int device, int arch) { return cuda::resolve_target(device, arch).gpu_architecture; }

}  // namespace

void bind_cuda(nb::module_& m) {
  m.def("cuda_status", &cuda_status,
        "(available, reason): whether the CUDA driver loads and sees a device; never raises.");
  m.def("cuda_device_count", &cuda::device_count, "Number of CUDA devices (raises RuntimeError without a driver).");
  m.def("cuda_device_arch", &cuda::device_arch, "device"_a,
        "Compute capability * 10 of a CUDA device (90 for H100/H200).");
  m.def("cuda_device_attribute", &cuda::device_attribute, "device"_a, "attribute"_a,
        "cuDeviceGetAttribute: the value of a CUdevice_attribute (by its number) of a CUDA device.");
  m.def("cuda_pointer_device", &cuda::pointer_device, "address"_a,
        "The ordinal of the CUDA device that owns a device address (ValueError for host memory).");
  m.def("cuda_libraries", &cuda_libraries, "Which libcuda and libnvrtc are loaded, and their versions.");
  m.def("cuda_target", &cuda_target, "device"_a = 0, "arch"_a = 0,
        "NVRTC's --gpu-architecture for a device (or for compute capability `arch` * 10).");
  m.def("cuda_resident_blocks", &cuda::resident_blocks, "arch"_a, "threads"_a, "registers"_a,
        "Blocks of `threads` threads using `registers` registers each that fit on one multiprocessor of "
        "compute capability `arch` * 10, by registers and threads (backends/cuda/occupancy.h; shared memory "
        "not counted).");
}

}  // namespace tegula::python
