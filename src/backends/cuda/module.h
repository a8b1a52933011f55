// A loaded CUDA kernel: its image (cubin or PTX), loaded into a device's
// primary context the first time it runs there, and launched with
// cuLaunchKernel on the caller's stream. The CUDA backend's LoadedKernel.
//
// A launch is one cuLaunchKernel and nothing that waits, so it can be
// captured into a CUDA graph (torch.cuda.graph): the parameters are copied
// into the graph node, and replays read the arrays' current contents. The
// first launch on a device may come in the middle of a capture: the module
// then loads in relaxed capture mode. Debug kernels wait for their error
// record, which a capture cannot do: they refuse to launch on a capturing
// stream.
//
// Primary contexts are the ones the CUDA runtime (and so torch and CuPy)
// uses, so a kernel launched on torch's current stream shares memory and
// ordering with torch's own kernels. The launcher makes the device's primary
// context current only for the duration of a call, and only when the
// caller's current context is another one, so it never changes which device
// torch considers current.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/driver_api.h"

namespace tegula::backends::cuda {

// Devices one process can address; ordinals at or above are refused.
constexpr int kMaxDevices = 64;

// What a kernel uses per thread and per block on a device (cuFuncGetAttribute).
struct Resources {
  int registers = 0;             // per thread
  int static_shared_bytes = 0;   // __shared__ declared in the code
  int dynamic_shared_bytes = 0;  // requested at every launch
  int local_bytes = 0;           // per thread: spills and local arrays
  int max_threads = 0;           // the largest block this function can run with
};

// Makes `device`'s primary context current for this scope, unless it already
// is, and restores the caller's context afterwards. Throws DriverError.
class ScopedContext {
 public:
  explicit ScopedContext(int device);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  bool pushed_ = false;
};

// Whether `stream` (a CUstream handle of `device`) is being captured into a
// CUDA graph: launches on it are recorded, not run, so nothing may wait for them.
bool stream_is_capturing(uint64_t stream, int device);

// Sets this thread's graph capture mode to relaxed for the scope, so that
// loading a module (not a stream operation, but not allowed under the global
// mode torch captures with) can happen in the middle of a capture.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode();
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  int previous_ = kStreamCaptureModeRelaxed;
  bool exchanged_ = false;
};

class Module : public LoadedKernel {
 public:
  // `image` as compile_to_image made it; `kernel_name` names the kernel in
  // messages; `num_threads` is the block size and `shared_bytes` the dynamic
  // shared memory the generated code expects. With `synchronize` every launch
  // waits for the kernel and reports its failure (debug mode: a fault is then
  // blamed on the kernel that caused it).
  Module(std::string kernel_name, std::string image, int num_threads, int shared_bytes, bool synchronize);
  ~Module() override;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Packs the arguments (backends/launch_arguments.h) and queues the grid on
  // `stream`, which a CUDA launch needs. Debug kernels also get a zeroed
  // device error record, wait for the kernel, read the record back and throw
  // DeviceFault for an error it holds; they refuse a stream that is being
  // captured into a CUDA graph (nothing may wait there).
  void launch(const KernelInfo& info, const int64_t grid[3], std::span<const ArgValue> args,
              const std::optional<Stream>& stream) const override;

  // usage(device), by name.
  std::vector<std::pair<std::string, int64_t>> resources(const KernelInfo& info, int device) const override;

  // Runs grid[0] x grid[1] x grid[2] blocks of num_threads() threads on
  // `stream` (a CUstream; 0 is the legacy default stream) of `device`;
  // params[i] points at the value of the kernel's i-th parameter. Returns
  // once the launch is queued (unless synchronizing). A zero grid dimension
  // launches nothing. Throws Error (Value) for a grid or device out of range,
  // DriverError (naming the kernel and the CUresult) when the driver refuses.
  void enqueue(const int64_t grid[3], void** params, uint64_t stream, int device) const;

  // Loads the kernel on `device` if needed and reports what it uses there.
  Resources usage(int device) const;

  const std::string& kernel_name() const { return kernel_name_; }
  const std::string& image() const { return image_; }
  int num_threads() const { return num_threads_; }
  int shared_bytes() const { return shared_bytes_; }

 private:
  // The function on `device`, loading the module into its context on first use.
  CUfunction function_on(int device) const;
  CUfunction load_on(int device) const;

  std::string kernel_name_;
  std::string image_;
  int num_threads_;
  int shared_bytes_;
  bool synchronize_;

  // Read without the lock on every launch; written once per device under it.
  mutable std::array<std::atomic<CUfunction>, kMaxDevices> functions_{};
  mutable std::mutex load_mutex_;
  mutable std::vector<std::pair<int, CUmodule>> loaded_;  // guarded by load_mutex_
};

}  // namespace tegula::backends::cuda
