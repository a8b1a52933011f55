#include "backends/cpu/kernel.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>

#include "backends/cpu/fault_guard.h"
#include "backends/cpu/thread_pool.h"
#include "backends/debug_fault.h"
#include "support/error.h"
#include "support/interrupt.h"

namespace tegula::backends::cpu {

namespace {

// Total number of programs, or an error for a dimension outside [0, 2^31).
int64_t count_programs(const int64_t grid[3]) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  int64_t total = 1;
  for (int axis = 0; axis < 3; ++axis) {
    if (grid[axis] < 0 || grid[axis] >= kLimit)
      fail(ErrorKind::Value, Diag::InvalidGrid,
           "grid dimension " + std::to_string(axis) + " is " + std::to_string(grid[axis]) +
               "; each grid dimension must be between 0 and 2^31 - 1");
    // Three factors below 2^31 can overflow int64 together.
    if (__builtin_mul_overflow(total, grid[axis], &total))
      fail(ErrorKind::Value, Diag::InvalidGrid,
           "the grid (" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + ", " +
               std::to_string(grid[2]) + ") has more than 2^63 programs");
  }
  return total;
}

// The StopPoll of one launch (backends/kernel_abi.h). The programs that run
// on the launching thread also ask the interrupt poll for it (at most every
// InterruptWatch::kInterval): a program that never ends may be running
// there, where nothing else could ask. Those on other threads only read
// `stopped`, which the launching thread (here or in the pool) sets.
class LaunchStop : public abi::StopPoll {
 public:
  explicit LaunchStop(std::atomic<bool>& stopped) : abi::StopPoll{&LaunchStop::ask}, stopped_(&stopped) {}
  LaunchStop(const LaunchStop&) = delete;
  LaunchStop& operator=(const LaunchStop&) = delete;

 private:
  static int32_t ask(abi::StopPoll* self) {
    LaunchStop& stop = *static_cast<LaunchStop*>(self);
    if (stop.stopped_->load(std::memory_order_relaxed)) return 1;
    if (std::this_thread::get_id() != stop.caller_) return 0;
    if (!stop.watch_) stop.watch_.emplace();  // only launches that poll read the clock
    if (!stop.watch_->interrupted()) return 0;
    stop.stopped_->store(true, std::memory_order_relaxed);
    return 1;
  }

  std::atomic<bool>* stopped_;
  std::thread::id caller_ = std::this_thread::get_id();
  std::optional<InterruptWatch> watch_;  // the caller's only
};

// The report of a fault caught in programs [first, last) of `info`'s kernel.
DeviceFault memory_fault(const KernelInfo& info, const int32_t grid[3], const MemoryFault& fault, int64_t first,
                         int64_t last) {
  char address[32];
  std::snprintf(address, sizeof address, "%#llx", static_cast<unsigned long long>(fault.address));
  auto program = [&](int64_t id) {  // the entry's numbering: x fastest
    return "(" + std::to_string(id % grid[0]) + ", " + std::to_string(id / grid[0] % grid[1]) + ", " +
           std::to_string(id / (int64_t{grid[0]} * grid[1])) + ")";
  };
  std::string programs = last - first == 1 ? "program " + program(first)
                                           : "one of programs " + program(first) + " to " + program(last - 1);
  DeviceFault::Details details;
  details.kernel = info.name;
  details.kind = "memory";
  return DeviceFault("kernel `" + info.name + "`: " + (fault.signal == SIGBUS ? "bus error" : "segmentation fault") +
                         " at address " + address + " in " + programs +
                         ": a load or store outside the memory of the process; the launch "
                         "stopped, and what it stored before stays stored\n"
                         "hint: a mask missing, or a size, stride or offset wrong? Launch it with debug=True (or "
                         "TEGULA_DEBUG=1): debug mode checks every access against its array and names the line",
                     std::move(details), Diag::KernelMemoryFault);
}

}  // namespace

std::shared_ptr<CpuKernel> CpuKernel::open(const std::string& path) {
  return std::make_shared<CpuKernel>(SharedLibrary::open(path));
}

CpuKernel::CpuKernel(std::shared_ptr<SharedLibrary> library)
    : library_(std::move(library)), entry_(reinterpret_cast<abi::CpuEntry>(library_->symbol(abi::kEntrySymbol))) {}

void CpuKernel::launch(const KernelInfo& info, const int64_t grid[3], std::span<const ArgValue> args,
                       const std::optional<Stream>& stream) const {
  if (stream)
    fail(ErrorKind::Value, Diag::WrongLaunchTarget,
         "kernel '" + info.name + "' was compiled for the cpu backend; it cannot be launched on a CUDA device");
  PackedArguments packed;
  pack_arguments(info.name, info.params, args, packed);
  int64_t total = count_programs(grid);
  if (total == 0) return;
  abi::DebugRecord record;
  if (info.debug) add_debug_arguments(info, args, reinterpret_cast<uintptr_t>(&record), packed);
  std::atomic<bool> stopped{false};
  LaunchStop stop(stopped);
  packed.append(reinterpret_cast<uintptr_t>(static_cast<abi::StopPoll*>(&stop)));
  const int32_t grid32[3] = {static_cast<int32_t>(grid[0]), static_cast<int32_t>(grid[1]),
                             static_cast<int32_t>(grid[2])};
  abi::CpuEntry entry = entry_;
  void* const* argv = packed.argv.data();
  // A fault in one chunk stops the others at their next poll; the pool rethrows the first report.
  auto run = [&](int64_t first, int64_t last) {
    if (std::optional<MemoryFault> fault = run_catching_faults([&] { entry(argv, grid32, first, last); })) {
      stopped.store(true, std::memory_order_relaxed);
      throw memory_fault(info, grid32, *fault, first, last);
    }
  };
  if (total == 1) {
    run(0, 1);
    if (stopped.load(std::memory_order_relaxed)) throw Interrupted();
  } else {
    ThreadPool& pool = ThreadPool::global();
    // About eight chunks per thread: small enough that fast threads take over the
    // work of slow ones, large enough that claiming a chunk costs little.
    int64_t chunk = std::max<int64_t>(1, total / (static_cast<int64_t>(pool.size()) * 8));
    pool.parallel_for(total, chunk, run, &stopped);
  }
  if (info.debug)
    if (std::optional<DeviceFault> fault = fault_of(info, record)) throw std::move(*fault);
}

}  // namespace tegula::backends::cpu
