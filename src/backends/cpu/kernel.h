// A loaded CPU kernel: the shared object the toolchain built, its entry point
// (backends/kernel_abi.h) and a launch that runs the grid on the process's
// thread pool (thread_pool.h).
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cpu/shared_library.h"

namespace tegula::backends::cpu {

class CpuKernel : public LoadedKernel {
 public:
  // The kernel in the shared object at `path`. Throws LibraryError when it
  // does not load or has no entry point.
  static std::shared_ptr<CpuKernel> open(const std::string& path);

  explicit CpuKernel(std::shared_ptr<SharedLibrary> library);

  // Checks and packs the arguments and runs linear program ids
  // [0, gx * gy * gz): one program runs inline on the caller, more go to the
  // thread pool (about eight chunks per thread). Returns when all programs
  // have run. Each grid dimension must lie in [0, 2^31).
  void launch(const KernelInfo& info, const int64_t grid[3], std::span<const ArgValue> args,
              const std::optional<Stream>& stream) const override;

  // The entry point itself (tests call it with their own program ranges).
  abi::CpuEntry entry() const { return entry_; }

 private:
  std::shared_ptr<SharedLibrary> library_;  // keeps the code mapped while the kernel lives
  abi::CpuEntry entry_ = nullptr;
};

}  // namespace tegula::backends::cpu
