// The in-process table of compiled kernels: maps cache directory + key to
// the kernel built or loaded in this process (weakly: the caller decides how
// long a kernel lives) or to the build in progress, so two threads asking
// for the same kernel build it once, and kernels of equal content are shared
// by every launcher that asks for them. Failed builds are forgotten, so the
// next call retries.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/compiler.h"

namespace tegula::runtime {

class KernelTable {
 public:
  using Result = std::shared_future<std::shared_ptr<CompiledKernel>>;

  struct Lookup {
    std::shared_ptr<CompiledKernel> ready;  // already loaded
    Result pending;                         // being built by another thread
    bool ours = false;                      // we registered the build: call finish()
  };

  // The kernel of `id` when it is loaded, the build in progress when another
  // thread builds it, else registers `ours` as the build in progress.
  Lookup claim(const std::string& id, Result ours);
  // Records the outcome of our build (null: it failed, forget it).
  void finish(const std::string& id, const std::shared_ptr<CompiledKernel>& kernel);
  // Replaces a loaded kernel by an equivalent one that also carries its stages.
  void update(const std::string& id, const std::shared_ptr<CompiledKernel>& kernel);

 private:
  struct Entry {
    std::weak_ptr<CompiledKernel> kernel;
    Result pending;
  };

  // Forgets kernels nobody holds any more; amortized by only running once the
  // table has doubled since the last sweep.
  void prune();

  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  size_t sweep_at_ = 64;
};

// The process-wide table.
KernelTable& kernel_table();

}  // namespace tegula::runtime
