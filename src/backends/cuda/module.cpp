#include "backends/cuda/module.h"

#include "backends/cuda/launch_tensor_maps.h"
#include "backends/debug_fault.h"
#include "backends/kernel_abi.h"
#include "support/error.h"

namespace tegula::backends::cuda {

namespace {

// Dynamic shared memory a function gets without opting in.
constexpr int kDefaultSharedLimit = 48 * 1024;

// The primary context of every device this process launched on, retained
// once and kept for the life of the process, as the CUDA runtime does.
class PrimaryContexts {
 public:
  CUcontext get(int device) {
    if (CUcontext known = contexts_[device].load(std::memory_order_acquire)) return known;
    std::lock_guard<std::mutex> lock(mutex_);
    if (CUcontext known = contexts_[device].load(std::memory_order_relaxed)) return known;
    const DriverApi& api = driver();
    CUdevice handle = 0;
    check(api.cuDeviceGet(&handle, device), "cuDeviceGet(" + std::to_string(device) + ")");
    CUcontext context = nullptr;
    check(api.cuDevicePrimaryCtxRetain(&context, handle),
          "cuDevicePrimaryCtxRetain(device " + std::to_string(device) + ")");
    contexts_[device].store(context, std::memory_order_release);
    return context;
  }

 private:
  std::mutex mutex_;
  std::array<std::atomic<CUcontext>, kMaxDevices> contexts_{};
};

PrimaryContexts& primary_contexts() {
  static PrimaryContexts contexts;
  return contexts;
}

// The number of devices, asked once (it cannot change within a process).
int cached_device_count() {
  static const int count = device_count();
  return count;
}

void check_device(int device) {
  int count = cached_device_count();
  if (device < 0 || device >= count || device >= kMaxDevices)
    fail(ErrorKind::Value, Diag::CudaUnavailable,
         "CUDA device " + std::to_string(device) + " does not exist (this machine has " +
                               std::to_string(count) + (count == 1 ? " device)" : " devices)"));
}

std::string grid_text(const int64_t grid[3]) {
  return "(" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + ", " + std::to_string(grid[2]) + ")";
}

}  // namespace

// --- ScopedContext ---------------------------------------------------------------------------

ScopedContext::ScopedContext(int device) {
  CUcontext wanted = primary_contexts().get(device);
  const DriverApi& api = driver();
  CUcontext current = nullptr;
  check(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current == wanted) return;
  check(api.cuCtxPushCurrent(wanted), "cuCtxPushCurrent");
  pushed_ = true;
}

ScopedContext::~ScopedContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  driver().cuCtxPopCurrent(&popped);  // cannot fail after a successful push
}

// --- graph capture -----------------------------------------------------------------------------

bool stream_is_capturing(uint64_t stream, int device) {
  check_device(device);
  ScopedContext context(device);
  int status = kStreamCaptureStatusNone;
  CUresult result =
      driver().cuStreamIsCapturing(reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream)), &status);
  // The legacy stream cannot be asked while a blocking stream captures: it is capturing by proxy.
  if (result == kErrorStreamCaptureImplicit) return true;
  check(result, "cuStreamIsCapturing");
  return status != kStreamCaptureStatusNone;
}

RelaxedCaptureMode::RelaxedCaptureMode() {
  int mode = kStreamCaptureModeRelaxed;
  check(driver().cuThreadExchangeStreamCaptureMode(&mode), "cuThreadExchangeStreamCaptureMode");
  previous_ = mode;
  exchanged_ = true;
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (!exchanged_) return;
  int mode = previous_;
  driver().cuThreadExchangeStreamCaptureMode(&mode);  // cannot fail after a successful exchange
}

// --- Module ------------------------------------------------------------------------------------

Module::Module(std::string kernel_name, std::string image, int num_threads, int shared_bytes, bool synchronize)
    : kernel_name_(std::move(kernel_name)),
      image_(std::move(image)),
      num_threads_(num_threads),
      shared_bytes_(shared_bytes),
      synchronize_(synchronize) {}

Module::~Module() {
  // Best effort: at process exit the driver may already be shutting down.
  std::lock_guard<std::mutex> lock(load_mutex_);
  for (const auto& [device, module] : loaded_) {
    try {
      ScopedContext context(device);
      driver().cuModuleUnload(module);
    } catch (const Error&) {
    }
  }
}

CUfunction Module::function_on(int device) const {
  if (device >= 0 && device < kMaxDevices)
    if (CUfunction known = functions_[device].load(std::memory_order_acquire)) return known;
  check_device(device);
  return load_on(device);
}

CUfunction Module::load_on(int device) const {
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (CUfunction known = functions_[device].load(std::memory_order_relaxed)) return known;
  const DriverApi& api = driver();
  ScopedContext context(device);
  RelaxedCaptureMode relaxed;  // the first launch may be inside a graph capture
  std::string where = "CUDA kernel '" + kernel_name_ + "' on device " + std::to_string(device);

  CUmodule module = nullptr;
  CUresult status = api.cuModuleLoadData(&module, image_.c_str());
  if (status != kSuccess)
    fail_driver(Diag::CudaDriverError, "cannot load " + where + ": cuModuleLoadData: " + describe_result(status),
                "the driver may be older than the NVRTC that compiled the kernel; set TEGULA_LIBNVRTC to an "
                "NVRTC no newer than the driver");
  loaded_.emplace_back(device, module);
  CUfunction function = nullptr;
  check(api.cuModuleGetFunction(&function, module, abi::kEntrySymbol),
        "cannot find " + where + ": cuModuleGetFunction");

  if (shared_bytes_ > kDefaultSharedLimit) {
    int static_bytes = 0;
    check(api.cuFuncGetAttribute(&static_bytes, kFuncSharedSizeBytes, function), where + ": cuFuncGetAttribute");
    int limit = device_attribute(device, kAttrMaxSharedMemoryPerBlockOptin);
    if (static_bytes + shared_bytes_ > limit)
      fail(ErrorKind::Value, Diag::TooMuchSharedMemory,
           where + " needs " + std::to_string(static_bytes + shared_bytes_) +
               " bytes of shared memory per block; the device allows " + std::to_string(limit),
           "use smaller blocks or fewer pipeline stages (num_stages)");
    check(api.cuFuncSetAttribute(function, kFuncMaxDynamicSharedSizeBytes, shared_bytes_),
          where + ": cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " + std::to_string(shared_bytes_) + ")");
    // All of the unified L1/shared memory as shared memory. Left to itself the
    // driver picks a carveout per launch, and beside kernels that prefer L1
    // it may pick one that fits fewer blocks per SM (Triton asks for the
    // same maximum).
    check(api.cuFuncSetAttribute(function, kFuncPreferredSharedMemoryCarveout, kCarveoutMaxShared),
          where + ": cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT, 100)");
  }
  functions_[device].store(function, std::memory_order_release);
  return function;
}

void Module::enqueue(const int64_t grid[3], void** params, uint64_t stream, int device) const {
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;
  // The driver's limits on every CUDA GPU so far; asking the device would cost a call per launch.
  const int64_t limits[3] = {(int64_t{1} << 31) - 1, 65535, 65535};
  for (int axis = 0; axis < 3; ++axis)
    if (grid[axis] < 0 || grid[axis] > limits[axis])
      fail(ErrorKind::Value, Diag::InvalidGrid,
           "the grid " + grid_text(grid) + " of CUDA kernel '" + kernel_name_ + "' is out of range: dimension " +
               std::to_string(axis) + " must be between 0 and " + std::to_string(limits[axis]),
           axis == 0 ? "" : "put the largest dimension first: program_id(0) may go up to 2^31 - 1");

  CUfunction function = function_on(device);
  const DriverApi& api = driver();
  auto handle = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
  ScopedContext context(device);
  CUresult status = api.cuLaunchKernel(function, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                                       static_cast<unsigned>(grid[2]), static_cast<unsigned>(num_threads_), 1, 1,
                                       static_cast<unsigned>(shared_bytes_), handle, params, nullptr);
  if (status != kSuccess)
    fail_driver(Diag::CudaDriverError,
                "cannot launch CUDA kernel '" + kernel_name_ + "' (grid " + grid_text(grid) + ", " +
                std::to_string(num_threads_) + " threads, " + std::to_string(shared_bytes_) +
                " bytes of dynamic shared memory) on device " + std::to_string(device) + ": " +
                describe_result(status));
  if (synchronize_) {
    status = api.cuStreamSynchronize(handle);
    if (status != kSuccess)
      fail_driver(Diag::CudaDriverError,
                  "CUDA kernel '" + kernel_name_ + "' failed on device " + std::to_string(device) + ": " +
                      describe_result(status),
                  "the CUDA context is unusable after a fault; restart the process");
  }
}

Resources Module::usage(int device) const {
  CUfunction function = function_on(device);
  const DriverApi& api = driver();
  auto attribute = [&](int which, const char* name) {
    int value = 0;
    check(api.cuFuncGetAttribute(&value, which, function),
          "CUDA kernel '" + kernel_name_ + "': cuFuncGetAttribute(" + name + ")");
    return value;
  };
  Resources out;
  out.registers = attribute(kFuncNumRegs, "NUM_REGS");
  out.static_shared_bytes = attribute(kFuncSharedSizeBytes, "SHARED_SIZE_BYTES");
  out.local_bytes = attribute(kFuncLocalSizeBytes, "LOCAL_SIZE_BYTES");
  out.max_threads = attribute(kFuncMaxThreadsPerBlock, "MAX_THREADS_PER_BLOCK");
  out.dynamic_shared_bytes = shared_bytes_;
  return out;
}

std::vector<std::pair<std::string, int64_t>> Module::resources(const KernelInfo& info, int device) const {
  Resources used = usage(device);
  return {{"registers", used.registers},       {"static_shared_bytes", used.static_shared_bytes},
          {"dynamic_shared_bytes", used.dynamic_shared_bytes}, {"local_bytes", used.local_bytes},
          {"max_threads", used.max_threads},   {"threads", num_threads_}};
}

namespace {

// A device buffer for a debug kernel's error record, freed on every path out.
class DeviceRecord {
 public:
  DeviceRecord() { check(driver().cuMemAlloc(&address_, sizeof(abi::DebugRecord)), "cuMemAlloc (debug record)"); }
  ~DeviceRecord() { driver().cuMemFree(address_); }
  DeviceRecord(const DeviceRecord&) = delete;
  DeviceRecord& operator=(const DeviceRecord&) = delete;
  uint64_t address() const { return address_; }

 private:
  CUdeviceptr address_ = 0;
};

}  // namespace

void Module::launch(const KernelInfo& info, const int64_t grid[3], std::span<const ArgValue> args,
                    const std::optional<Stream>& stream) const {
  if (!stream)
    fail(ErrorKind::Value, Diag::WrongLaunchTarget,
         "kernel '" + info.name + "' was compiled for CUDA; launch it on a device and stream");
  PackedArguments packed;
  pack_arguments(info.name, info.params, args, packed);
  for (size_t i = 0; i < info.params.size(); ++i) {
    if (info.params[i].by_value_bytes == 0) continue;
    if (args[i].bits == 0)
      fail(ErrorKind::Value, Diag::LaunchArgumentType,
           "argument '" + info.params[i].name + "' of kernel '" + info.name + "' is passed by value (a host TMA " +
               "descriptor's " + std::to_string(info.params[i].by_value_bytes) + " bytes) but has no host address");
    packed.pass_by_value(i, reinterpret_cast<const void*>(static_cast<uintptr_t>(args[i].bits)));
  }
  if (!info.tensor_maps.empty()) {  // debug kernels have none (the pointer form checks bounds)
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;  // nothing runs: an empty tensor needs no map
    // cuTensorMapEncodeTiled needs a current context; the launching thread may have none (autograd's
    // device threads run a backward before anything made the device's context current there).
    ScopedContext context(stream->device);
    LaunchTensorMaps maps(info, args);
    maps.append_to(packed.argv);
    return enqueue(grid, packed.argv.data(), stream->handle, stream->device);
  }
  if (!info.debug) return enqueue(grid, packed.argv.data(), stream->handle, stream->device);
  if (stream_is_capturing(stream->handle, stream->device))
    fail(ErrorKind::Value, Diag::WrongLaunchTarget,
         "kernel '" + info.name + "' is compiled in debug mode, which cannot run inside CUDA graph capture: a debug "
             "launch waits for the kernel and reads its error record back",
         "capture the kernel without debug mode (debug=False and TEGULA_DEBUG unset), or launch it in debug "
         "mode outside the capture");
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;
  const DriverApi& api = driver();
  ScopedContext context(stream->device);
  DeviceRecord record;
  abi::DebugRecord host{};
  check(api.cuMemcpyHtoD(record.address(), &host, sizeof host), "cuMemcpyHtoD (debug record)");
  // A copy from pageable memory may still be in flight when it returns, and
  // the kernel may run on a stream that does not wait for it.
  check(api.cuCtxSynchronize(), "cuCtxSynchronize (debug record)");
  add_debug_arguments(info, args, record.address(), packed);
  enqueue(grid, packed.argv.data(), stream->handle, stream->device);  // debug modules wait for the kernel
  check(api.cuMemcpyDtoH(&host, record.address(), sizeof host), "cuMemcpyDtoH (debug record)");
  if (std::optional<DeviceFault> fault = fault_of(info, host)) throw std::move(*fault);
}

}  // namespace tegula::backends::cuda
