// Debug mode at launch time (docs/debug-mode.md): the error record a debug
// kernel writes, the extra launch arguments that carry it and every pointer
// argument's array extent, and the DeviceFault a recorded error becomes.
//
// The debug ABI (both backends): after the kernel's own arguments come two
// u64 values per pointer parameter, in parameter order (the first byte of
// the array the argument points into, and its size in bytes; from
// ArgValue::extent_base / extent_bytes), then the address of a DebugRecord:
// host memory for CPU kernels, a small device buffer for CUDA kernels
// (zeroed before the launch, read back after it synchronously).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/kernel_abi.h"
#include "runtime/compiler.h"

namespace tegula::runtime {

using backends::abi::DebugRecord;  // the layout the generated code writes (backends/kernel_abi.h)

// A debug kernel found an error: an access out of the bounds of its array or
// a failing device assert. The message (what()) is the full report; the
// fields are what tegula.DeviceError exposes.
class DeviceFault : public Error {
 public:
  struct Details {
    std::string kernel;
    std::string kind;  // "load", "store", "atomic" or "assert"
    std::string file;
    int32_t line = 0;
    int32_t col = 0;
    std::array<int32_t, 3> program_id{};
    // Bounds errors:
    std::optional<int64_t> offset;  // in elements of `dtype`, from the array's first byte
    std::optional<int64_t> size;    // the array's size in elements of `dtype`
    std::string arg;                // the parameter's name
    std::string dtype;              // the accessed element type: "float32", ...
    // Asserts:
    std::string message;
    std::vector<int64_t> index;     // the failing element's position in its tile (empty: a scalar)
  };

  DeviceFault(std::string text, Details details)
      : Error(std::move(text), ErrorKind::Value, Diag::DebugCheckFailed), details_(std::move(details)) {}
  const Details& details() const { return details_; }

 private:
  Details details_;
};

// The report of `record` for `kernel`, or nothing when no error was recorded.
std::optional<DeviceFault> fault_of(const CompiledKernel& kernel, const DebugRecord& record);

// Appends the debug arguments (extents from `args`, then `record_address`)
// to `slots`, and makes argv[i] point at slots[i] for every slot.
void add_debug_arguments(const CompiledKernel& kernel, const std::vector<ArgValue>& args, uint64_t record_address,
                         std::vector<uint64_t>& slots, std::vector<void*>& argv);

// The CUDA launch of a debug kernel: a zeroed device record, the launch (which
// waits for the kernel), the record read back. Throws DeviceFault when the
// kernel recorded an error.
void launch_cuda_debug(const CompiledKernel& kernel, const int64_t grid[3], const std::vector<ArgValue>& args,
                       std::vector<uint64_t>& slots, std::vector<void*>& argv, uint64_t stream, int device);

}  // namespace tegula::runtime
