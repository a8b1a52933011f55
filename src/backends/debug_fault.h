// Debug mode at launch time (docs/debug-mode.md): the extra launch arguments
// of a debug kernel (every pointer argument's array extent, then the address
// of its error record: backends/kernel_abi.h), and the DeviceFault an error
// the kernel recorded becomes. Both backends use these; each provides the
// record in its own memory (backends/cpu/kernel.cpp, backends/cuda/module.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/kernel_abi.h"
#include "backends/launch_arguments.h"
#include "passes/debug_sites.h"
#include "support/error.h"

namespace tegula::backends {

struct KernelInfo;

// A debug kernel found an error: an access out of the bounds of its array or
// a failing device assert. The message (what()) is the full report; the
// fields are what tegula.DeviceError exposes.
class DeviceFault : public Error {
 public:
  struct Details {
    std::string kernel;
    std::string kind;  // "load", "store", "atomic", "assert", or "memory" (a CPU kernel's caught fault)
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

  DeviceFault(std::string text, Details details, Diag code = Diag::DebugCheckFailed)
      : Error(std::move(text), ErrorKind::Value, code), details_(std::move(details)) {}
  const Details& details() const { return details_; }

 private:
  Details details_;
};

// The report of `record` for the kernel `info` describes, or nothing when no
// error was recorded.
std::optional<DeviceFault> fault_of(const KernelInfo& info, const abi::DebugRecord& record);

// Appends the debug arguments of the ABI to `packed`: the extents of the
// pointer arguments in `args`, then `record_address`.
void add_debug_arguments(const KernelInfo& info, std::span<const ArgValue> args, uint64_t record_address,
                         PackedArguments& packed);

}  // namespace tegula::backends
