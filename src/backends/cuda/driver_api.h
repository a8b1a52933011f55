// The CUDA driver API (libcuda) and NVRTC (libnvrtc), loaded at run time.
//
// Tegula builds and runs without CUDA: nothing here includes a CUDA header or
// links a CUDA library. The handful of driver and NVRTC types and functions
// the runtime calls are declared below and resolved with dlopen/dlsym the
// first time a CUDA kernel is compiled or launched.
//
// Where the libraries are looked for, in order (first that loads wins):
//
//   libcuda   $TEGULA_LIBCUDA (only it, when set), then the loader's own search
//             for libcuda.so.1 (what torch already loaded, ld.so.conf,
//             LD_LIBRARY_PATH), then the usual driver folders. The toolkit's
//             lib64/stubs/libcuda.so is never a candidate: it only fails.
//   libnvrtc  $TEGULA_LIBNVRTC (only it, when set), then the toolkit
//             ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda: lib64/libnvrtc.so.*),
//             then the NVIDIA wheels under each folder of $TEGULA_NVRTC_SEARCH
//             (site-packages folders, set by the Python package:
//             nvidia/cu13/lib/libnvrtc.so.13, nvidia/cuda_nvrtc/lib/libnvrtc.so.12),
//             then the loader's search for libnvrtc.so.13 / .12 / libnvrtc.so.
//             An NVRTC newer than the driver is used only when nothing else loads
//             (its cubins may not load on that driver).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace tegula::backends::cuda {

// --- driver API types (the subset Tegula uses; values as cuda.h defines them) --------

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = uint64_t;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorInvalidValue = 1;
constexpr CUresult kErrorNotInitialized = 3;
constexpr CUresult kErrorDeinitialized = 4;
constexpr CUresult kErrorStubLibrary = 34;

// CUdevice_attribute
constexpr int kAttrMaxGridDimY = 6;
constexpr int kAttrMaxGridDimZ = 7;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedMemoryPerBlockOptin = 97;
// CUfunction_attribute
constexpr int kFuncMaxThreadsPerBlock = 0;
constexpr int kFuncSharedSizeBytes = 1;
constexpr int kFuncLocalSizeBytes = 3;
constexpr int kFuncNumRegs = 4;
constexpr int kFuncMaxDynamicSharedSizeBytes = 8;
constexpr int kFuncPreferredSharedMemoryCarveout = 9;
constexpr int kCarveoutMaxShared = 100;  // CU_SHAREDMEM_CARVEOUT_MAX_SHARED, percent
// CUpointer_attribute
constexpr int kPointerDeviceOrdinal = 9;
// CUstreamCaptureStatus and CUstreamCaptureMode
constexpr int kStreamCaptureStatusNone = 0;
constexpr int kStreamCaptureModeRelaxed = 2;
constexpr CUresult kErrorStreamCaptureImplicit = 906;

struct DriverApi {
  std::string path;  // the file loaded (or the name the loader resolved)
  int version = 0;   // cuDriverGetVersion: 13000 for CUDA 13.0

  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** text) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext* context) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext context) = nullptr;  // cuCtxPushCurrent_v2
  CUresult (*cuCtxPopCurrent)(CUcontext* context) = nullptr;  // cuCtxPopCurrent_v2
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, CUfunction function) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                             CUstream stream, void** params, void** extra) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  // CUDA graph capture (cuda_launch.h): whether a stream is being captured,
  // and the thread's capture mode (relaxed while a module loads mid-capture).
  CUresult (*cuStreamIsCapturing)(CUstream stream, int* status) = nullptr;
  CUresult (*cuThreadExchangeStreamCaptureMode)(int* mode) = nullptr;
  CUresult (*cuPointerGetAttribute)(void* data, int attribute, CUdeviceptr pointer) = nullptr;
  // For tests and tools that need device memory without a framework.
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes) = nullptr;                       // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer) = nullptr;                                       // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr to, const void* from, size_t bytes) = nullptr;         // _v2
  CUresult (*cuMemcpyDtoH)(void* to, CUdeviceptr from, size_t bytes) = nullptr;               // _v2
  // Optional (CUDA 12.0+; null on older drivers): TMA tensor maps
  // (tensor_map.h). The enums travel as int, the CUtensorMap as its 128 bytes.
  CUresult (*cuTensorMapEncodeTiled)(void* map, int data_type, uint32_t rank, void* base, const uint64_t* dims,
                                     const uint64_t* byte_strides, const uint32_t* box,
                                     const uint32_t* element_strides, int interleave, int swizzle, int l2_promotion,
                                     int oob_fill) = nullptr;
};

// --- NVRTC -------------------------------------------------------------------------------

struct NvrtcProgram_st;
using NvrtcResult = int;
using NvrtcProgram = NvrtcProgram_st*;

struct NvrtcApi {
  std::string path;
  int major = 0, minor = 0;  // nvrtcVersion

  const char* (*nvrtcGetErrorString)(NvrtcResult result) = nullptr;
  NvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  NvrtcResult (*nvrtcGetNumSupportedArchs)(int* count) = nullptr;
  NvrtcResult (*nvrtcGetSupportedArchs)(int* archs) = nullptr;
  NvrtcResult (*nvrtcCreateProgram)(NvrtcProgram* program, const char* source, const char* name, int header_count,
                                    const char* const* headers, const char* const* include_names) = nullptr;
  NvrtcResult (*nvrtcDestroyProgram)(NvrtcProgram* program) = nullptr;
  NvrtcResult (*nvrtcCompileProgram)(NvrtcProgram program, int option_count, const char* const* options) = nullptr;
  NvrtcResult (*nvrtcGetProgramLogSize)(NvrtcProgram program, size_t* size) = nullptr;
  NvrtcResult (*nvrtcGetProgramLog)(NvrtcProgram program, char* log) = nullptr;
  NvrtcResult (*nvrtcGetPTXSize)(NvrtcProgram program, size_t* size) = nullptr;
  NvrtcResult (*nvrtcGetPTX)(NvrtcProgram program, char* ptx) = nullptr;
  NvrtcResult (*nvrtcGetCUBINSize)(NvrtcProgram program, size_t* size) = nullptr;
  NvrtcResult (*nvrtcGetCUBIN)(NvrtcProgram program, char* cubin) = nullptr;

  std::string version_text() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// --- errors ----------------------------------------------------------------------------------

// A failure of the driver, the device or the libraries themselves (not of the
// user's arguments): tegula's Python side raises it as RuntimeError. The
// message names what failed and, for driver calls, the CUresult's name.
class DriverError : public Error {
 public:
  DriverError(std::string rendered, Diag code) : Error(std::move(rendered), ErrorKind::Value, code) {}
};

[[noreturn]] void fail_driver(Diag code, std::string message, std::string hint = {});

// "CUDA_ERROR_INVALID_VALUE (invalid argument)"; works without a driver for
// the common codes, "CUresult N" otherwise.
std::string describe_result(CUresult result);

// Throws DriverError "<what>: CUDA_ERROR_... (text)" unless `result` is success.
void check(CUresult result, std::string_view what);

// --- loading ----------------------------------------------------------------------------------

// The candidates in search order (reads the environment; no file system access
// beyond checking which absolute paths exist). Absolute paths or bare names
// for the loader's own search.
std::vector<std::string> driver_candidates();
std::vector<std::string> nvrtc_candidates();

// Loads the first candidate that dlopens and exports every function above.
// Not cached (tests call these with their own lists). Throws DriverError
// listing every candidate tried and why it failed. load_driver also calls
// cuInit and fails if that fails (no device, a stub library, a driver too old).
std::unique_ptr<DriverApi> load_driver(const std::vector<std::string>& candidates);
std::unique_ptr<NvrtcApi> load_nvrtc(const std::vector<std::string>& candidates, int driver_version = 0);

// The process-wide libraries: loaded on first use, kept for the life of the
// process (never dlclosed: kernels and torch may still use them at exit). A
// failure is remembered and rethrown by later calls. Thread-safe.
const DriverApi& driver();
const NvrtcApi& nvrtc();

// Whether driver() loads and sees at least one device; never throws. `why`
// receives the reason when not.
bool driver_available(std::string* why = nullptr);

// --- devices -------------------------------------------------------------------------------------

int device_count();
// Compute capability * 10 (90 for an H200). Throws DriverError for a bad ordinal.
int device_arch(int device);
int device_attribute(int device, int attribute);
// The device ordinal a device pointer belongs to.
int pointer_device(uint64_t address);
// The same, or nothing for an address that is not CUDA device memory.
std::optional<int> device_owning_pointer(uint64_t address);

}  // namespace tegula::backends::cuda
