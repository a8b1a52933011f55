#include "backends/cuda/driver_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "support/error.h"

namespace tegula::backends::cuda {

namespace {

// Names of the codes a user is likely to meet, for when the driver cannot
// name them itself (a stub library answers every call with code 34).
struct KnownResult {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr KnownResult kKnownResults[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
};

const KnownResult* known_result(CUresult code) {
  for (const KnownResult& known : kKnownResults)
    if (known.code == code) return &known;
  return nullptr;
}

std::string describe_with(const DriverApi* api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api) {
    if (api->cuGetErrorName(result, &name) != kSuccess) name = nullptr;
    if (api->cuGetErrorString(result, &text) != kSuccess) text = nullptr;
  }
  if (const KnownResult* known = known_result(result)) {
    if (!name) name = known->name;
    if (!text) text = known->text;
  }
  std::string out = name ? name : "CUresult " + std::to_string(result);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

// One dlsym per member; remembers the first symbol that is missing.
class SymbolBinder {
 public:
  explicit SymbolBinder(void* handle) : handle_(handle) {}

  template <class FunctionPointer>
  void operator()(FunctionPointer& member, const char* symbol) {
    void* address = ::dlsym(handle_, symbol);
    if (!address && missing_.empty()) missing_ = symbol;
    member = reinterpret_cast<FunctionPointer>(address);
  }
  // A symbol older libraries lack: null there, and not a reason to refuse the library.
  template <class FunctionPointer>
  void optional(FunctionPointer& member, const char* symbol) {
    member = reinterpret_cast<FunctionPointer>(::dlsym(handle_, symbol));
  }
  const std::string& missing() const { return missing_; }

 private:
  void* handle_;
  std::string missing_;
};

void bind_driver(SymbolBinder& bind, DriverApi& api) {
  bind(api.cuInit, "cuInit");
  bind(api.cuDriverGetVersion, "cuDriverGetVersion");
  bind(api.cuGetErrorName, "cuGetErrorName");
  bind(api.cuGetErrorString, "cuGetErrorString");
  bind(api.cuDeviceGetCount, "cuDeviceGetCount");
  bind(api.cuDeviceGet, "cuDeviceGet");
  bind(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  bind(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(api.cuCtxGetCurrent, "cuCtxGetCurrent");
  bind(api.cuCtxPushCurrent, "cuCtxPushCurrent_v2");
  bind(api.cuCtxPopCurrent, "cuCtxPopCurrent_v2");
  bind(api.cuCtxSynchronize, "cuCtxSynchronize");
  bind(api.cuModuleLoadData, "cuModuleLoadData");
  bind(api.cuModuleUnload, "cuModuleUnload");
  bind(api.cuModuleGetFunction, "cuModuleGetFunction");
  bind(api.cuFuncGetAttribute, "cuFuncGetAttribute");
  bind(api.cuFuncSetAttribute, "cuFuncSetAttribute");
  bind(api.cuLaunchKernel, "cuLaunchKernel");
  bind(api.cuStreamSynchronize, "cuStreamSynchronize");
  bind(api.cuStreamIsCapturing, "cuStreamIsCapturing");
  bind(api.cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
  bind(api.cuPointerGetAttribute, "cuPointerGetAttribute");
  bind(api.cuMemAlloc, "cuMemAlloc_v2");
  bind(api.cuMemFree, "cuMemFree_v2");
  bind(api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  bind(api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  bind.optional(api.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
}

void bind_nvrtc(SymbolBinder& bind, NvrtcApi& api) {
  bind(api.nvrtcGetErrorString, "nvrtcGetErrorString");
  bind(api.nvrtcVersion, "nvrtcVersion");
  bind(api.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  bind(api.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
  bind(api.nvrtcCreateProgram, "nvrtcCreateProgram");
  bind(api.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  bind(api.nvrtcCompileProgram, "nvrtcCompileProgram");
  bind(api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  bind(api.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  bind(api.nvrtcGetPTXSize, "nvrtcGetPTXSize");
  bind(api.nvrtcGetPTX, "nvrtcGetPTX");
  bind(api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  bind(api.nvrtcGetCUBIN, "nvrtcGetCUBIN");
}

// dlopens `candidate` and binds every symbol of Api. Handles are never
// closed, even on failure: libcuda in particular does not survive being
// unloaded while another library (torch) holds it, and a leaked mapping of a
// library that failed to bind costs nothing.
template <class Api, class Bind>
std::unique_ptr<Api> open_api(const std::string& candidate, Bind bind, std::string* why) {
  ::dlerror();
  void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = ::dlerror();
    *why = reason ? reason : "dlopen failed";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  SymbolBinder binder(handle);
  bind(binder, *api);
  if (!binder.missing().empty()) {
    *why = "it does not export " + binder.missing();
    return nullptr;
  }
  api->path = candidate;
  return api;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

void add_if_exists(std::vector<std::string>& out, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) out.push_back(path);
}

std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string list_failures(const std::vector<std::pair<std::string, std::string>>& failures) {
  std::string out;
  for (const auto& [candidate, why] : failures) out += "\n  " + candidate + ": " + why;
  return out;
}

struct LoadedDriver {
  std::unique_ptr<DriverApi> api;
  std::string error;  // rendered DriverError text when api is null
};

const LoadedDriver& process_driver() {
  static const LoadedDriver loaded = [] {
    LoadedDriver out;
    try {
      out.api = load_driver(driver_candidates());
    } catch (const DriverError& e) {
      out.error = e.what();
    }
    return out;
  }();
  return loaded;
}

}  // namespace

void fail_driver(Diag code, std::string message, std::string hint) {
  throw DriverError(render(Diagnostic{SourceLoc{}, code, std::move(message), std::move(hint), ErrorKind::Value}, nullptr),
                    code);
}

std::string describe_result(CUresult result) { return describe_with(process_driver().api.get(), result); }

void check(CUresult result, std::string_view what) {
  if (result != kSuccess) fail_driver(Diag::CudaDriverError, std::string(what) + ": " + describe_result(result));
}

// --- candidates ----------------------------------------------------------------------------------

std::vector<std::string> driver_candidates() {
  if (std::string chosen = env("TEGULA_LIBCUDA"); !chosen.empty()) return {chosen};
  // The loader first: when torch has loaded the driver already, this returns
  // that very library, so both share one driver and one primary context.
  std::vector<std::string> out = {"libcuda.so.1"};
  for (const char* dir : {"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                          "/usr/lib64", "/usr/lib/wsl/lib"})
    add_if_exists(out, std::string(dir) + "/libcuda.so.1");
  return out;
}

std::vector<std::string> nvrtc_candidates() {
  if (std::string chosen = env("TEGULA_LIBNVRTC"); !chosen.empty()) return {chosen};
  std::vector<std::string> out;
  static constexpr const char* kVersioned[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> toolkits;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string dir = env(var); !dir.empty()) toolkits.push_back(dir);
  toolkits.push_back("/usr/local/cuda");
  for (const std::string& toolkit : toolkits)
    for (const char* name : kVersioned) add_if_exists(out, toolkit + "/lib64/" + name);
  for (const std::string& site : split_path_list(env("TEGULA_NVRTC_SEARCH"))) {
    add_if_exists(out, site + "/nvidia/cu13/lib/libnvrtc.so.13");
    add_if_exists(out, site + "/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  }
  for (const char* name : kVersioned) out.push_back(name);
  // The same file reached twice (a symlinked toolkit) is tried once.
  std::vector<std::string> unique;
  for (const std::string& path : out)
    if (std::find(unique.begin(), unique.end(), path) == unique.end()) unique.push_back(path);
  return unique;
}

// --- loading -------------------------------------------------------------------------------------

std::unique_ptr<DriverApi> load_driver(const std::vector<std::string>& candidates) {
  std::vector<std::pair<std::string, std::string>> failures;
  for (const std::string& candidate : candidates) {
    std::string why;
    std::unique_ptr<DriverApi> api = open_api<DriverApi>(candidate, bind_driver, &why);
    if (!api) {
      failures.emplace_back(candidate, why);
      continue;
    }
    // A library that loads but cannot initialize is the answer, not a reason
    // to try another copy: two different drivers in one process never work.
    // Except a stub (the toolkit's link-time libcuda), which is never the driver.
    CUresult status = api->cuInit(0);
    if (status == kErrorStubLibrary) {
      failures.emplace_back(candidate, "a stub library (" + describe_with(api.get(), status) + ")");
      continue;
    }
    if (status != kSuccess)
      fail_driver(Diag::CudaUnavailable,
                  "the CUDA driver " + candidate + " cannot be initialized: " + describe_with(api.get(), status),
                  status == 100 ? "no NVIDIA GPU is visible to this process (check CUDA_VISIBLE_DEVICES)"
                                : "check that the NVIDIA driver is installed and matches the GPU");
    // Not check(): that names results through the process-wide driver, which may be this very load.
    if (api->cuDriverGetVersion(&api->version) != kSuccess) api->version = 0;
    return api;
  }
  bool overridden = !env("TEGULA_LIBCUDA").empty();
  fail_driver(Diag::CudaUnavailable, "cannot load the CUDA driver (libcuda.so.1); tried:" + list_failures(failures),
              overridden ? "TEGULA_LIBCUDA is set: point it at the driver's libcuda.so.1, or unset it"
                         : "install the NVIDIA driver, or set TEGULA_LIBCUDA to the path of libcuda.so.1");
}

std::unique_ptr<NvrtcApi> load_nvrtc(const std::vector<std::string>& candidates, int driver_version) {
  std::vector<std::pair<std::string, std::string>> failures;
  std::unique_ptr<NvrtcApi> too_new;
  for (const std::string& candidate : candidates) {
    std::string why;
    std::unique_ptr<NvrtcApi> api = open_api<NvrtcApi>(candidate, bind_nvrtc, &why);
    if (api && api->nvrtcVersion(&api->major, &api->minor) != 0) {
      api = nullptr;
      why = "nvrtcVersion failed";
    }
    if (!api) {
      failures.emplace_back(candidate, why);
      continue;
    }
    int version = api->major * 1000 + api->minor * 10;
    if (driver_version > 0 && version > driver_version) {
      if (!too_new) too_new = std::move(api);
      continue;
    }
    return api;
  }
  if (too_new) return too_new;
  bool overridden = !env("TEGULA_LIBNVRTC").empty();
  fail_driver(Diag::CudaUnavailable,
              "cannot load NVRTC (libnvrtc), the CUDA compiler Tegula needs for GPU kernels; tried:" +
                  list_failures(failures),
              overridden ? "TEGULA_LIBNVRTC is set: point it at libnvrtc.so.13 (or .12), or unset it"
                         : "install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, or set TEGULA_LIBNVRTC to "
                           "the path of libnvrtc.so");
}

const DriverApi& driver() {
  const LoadedDriver& loaded = process_driver();
  if (!loaded.api) throw DriverError(loaded.error, Diag::CudaUnavailable);
  return *loaded.api;
}

const NvrtcApi& nvrtc() {
  static const auto loaded = [] {
    std::pair<std::unique_ptr<NvrtcApi>, std::string> out;
    try {
      out.first = load_nvrtc(nvrtc_candidates(), process_driver().api ? process_driver().api->version : 0);
    } catch (const DriverError& e) {
      out.second = e.what();
    }
    return out;
  }();
  if (!loaded.first) throw DriverError(loaded.second, Diag::CudaUnavailable);
  return *loaded.first;
}

bool driver_available(std::string* why) {
  try {
    if (device_count() > 0) return true;
    if (why) *why = "the CUDA driver sees no device";
  } catch (const Error& e) {
    if (why) *why = e.what();
  }
  return false;
}

// --- devices -------------------------------------------------------------------------------------

int device_count() {
  int count = 0;
  check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

int device_attribute(int device, int attribute) {
  int count = device_count();
  if (device < 0 || device >= count)
    fail(ErrorKind::Value, Diag::CudaUnavailable,
         "CUDA device " + std::to_string(device) + " does not exist (this machine has " + std::to_string(count) +
             (count == 1 ? " device)" : " devices)"));
  const DriverApi& api = driver();
  CUdevice handle = 0;
  check(api.cuDeviceGet(&handle, device), "cuDeviceGet");
  int value = 0;
  check(api.cuDeviceGetAttribute(&value, attribute, handle), "cuDeviceGetAttribute");
  return value;
}

int device_arch(int device) {
  return device_attribute(device, kAttrComputeCapabilityMajor) * 10 +
         device_attribute(device, kAttrComputeCapabilityMinor);
}

std::optional<int> device_owning_pointer(uint64_t address) {
  int ordinal = -1;
  if (driver().cuPointerGetAttribute(&ordinal, kPointerDeviceOrdinal, address) != kSuccess || ordinal < 0)
    return std::nullopt;
  return ordinal;
}

int pointer_device(uint64_t address) {
  int ordinal = -1;
  CUresult status = driver().cuPointerGetAttribute(&ordinal, kPointerDeviceOrdinal, address);
  if (status != kSuccess) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
    fail(ErrorKind::Value, Diag::LaunchArgumentType,
         std::string("address ") + hex + " is not CUDA device memory (" + describe_result(status) + ")");
  }
  return ordinal;
}

}  // namespace tegula::backends::cuda
