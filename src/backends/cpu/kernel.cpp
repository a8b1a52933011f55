#include "backends/cpu/kernel.h"

#include <algorithm>

#include "backends/cpu/thread_pool.h"
#include "backends/debug_fault.h"
#include "support/error.h"

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
  const int32_t grid32[3] = {static_cast<int32_t>(grid[0]), static_cast<int32_t>(grid[1]),
                             static_cast<int32_t>(grid[2])};
  abi::CpuEntry entry = entry_;
  void* const* argv = packed.argv.data();
  if (total == 1) {
    entry(argv, grid32, 0, 1);
  } else {
    ThreadPool& pool = ThreadPool::global();
    // About eight chunks per thread: small enough that fast threads take over the
    // work of slow ones, large enough that claiming a chunk costs little.
    int64_t chunk = std::max<int64_t>(1, total / (static_cast<int64_t>(pool.size()) * 8));
    pool.parallel_for(total, chunk, [&](int64_t first, int64_t last) { entry(argv, grid32, first, last); });
  }
  if (info.debug)
    if (std::optional<DeviceFault> fault = fault_of(info, record)) throw std::move(*fault);
}

}  // namespace tegula::backends::cpu
