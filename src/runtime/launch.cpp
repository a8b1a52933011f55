// CompiledKernel::launch: checks and packs the arguments into the CPU kernel
// ABI (backends/cpu/codegen.h) and runs the grid on the thread pool; or, for
// CUDA kernels, into cuLaunchKernel's parameter array (one pointer per
// parameter to a value of its C type: the same 8-byte slots) and queues the
// grid on the caller's stream (cuda_launch.h).
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/kernel_abi.h"
#include "runtime/compiler.h"
#include "backends/cuda/module.h"
#include "runtime/debug_record.h"
#include "runtime/errors.h"
#include "backends/cpu/thread_pool.h"

namespace tegula::runtime {

namespace cuda = backends::cuda;
using backends::cpu::ThreadPool;

namespace {

using KernelEntry = backends::abi::CpuEntry;
// One argument, stored in the first bytes of its slot (backends/kernel_abi.h).
using Slot = backends::abi::ArgSlot;

std::string describe_kind(ArgValue::Kind kind) {
  switch (kind) {
    case ArgValue::Kind::Pointer: return "a pointer";
    case ArgValue::Kind::Int: return "an int";
    case ArgValue::Kind::UInt: return "an unsigned int";
    case ArgValue::Kind::Float: return "a float";
    case ArgValue::Kind::Bool: return "a bool";
  }
  return "a value";
}

std::string describe_value(const ArgValue& value) {
  switch (value.kind) {
    case ArgValue::Kind::Int: return std::to_string(static_cast<int64_t>(value.bits));
    case ArgValue::Kind::UInt: return std::to_string(value.bits);
    case ArgValue::Kind::Bool: return value.bits ? "True" : "False";
    default: return std::to_string(value.real);
  }
}

std::string signature_of(const CompiledKernel& kernel) {
  std::string out;
  for (const ir::Param& p : kernel.params) {
    if (!out.empty()) out += ", ";
    out += p.name + ": " + ir::to_string(p.type);
  }
  return "(" + out + ")";
}

class ArgumentPacker {
 public:
  explicit ArgumentPacker(const CompiledKernel& kernel) : kernel_(kernel) {}

  Slot pack(const ir::Param& param, const ArgValue& value) const {
    if (param.type.is_tile()) wrong_kind(param, value, "a scalar parameter type");
    if (param.type.is_pointer()) {
      if (value.kind != ArgValue::Kind::Pointer) wrong_kind(param, value, "a pointer (a tensor or array)");
      return store(reinterpret_cast<void*>(static_cast<uintptr_t>(value.bits)));
    }
    ir::Scalar scalar = param.type.scalar;
    switch (scalar) {
      case ir::Scalar::I1:
        if (value.kind != ArgValue::Kind::Bool && value.kind != ArgValue::Kind::Int)
          wrong_kind(param, value, "a bool");
        if (value.bits > 1) out_of_range(param, value, "0 or 1");
        return store(static_cast<uint8_t>(value.bits));
      case ir::Scalar::I8: return store(static_cast<int8_t>(signed_in_range(param, value, 8)));
      case ir::Scalar::I16: return store(static_cast<int16_t>(signed_in_range(param, value, 16)));
      case ir::Scalar::I32: return store(static_cast<int32_t>(signed_in_range(param, value, 32)));
      case ir::Scalar::I64: return store(signed_in_range(param, value, 64));
      case ir::Scalar::U8: return store(static_cast<uint8_t>(unsigned_in_range(param, value, 8)));
      case ir::Scalar::U16: return store(static_cast<uint16_t>(unsigned_in_range(param, value, 16)));
      case ir::Scalar::U32: return store(static_cast<uint32_t>(unsigned_in_range(param, value, 32)));
      case ir::Scalar::U64: return store(unsigned_in_range(param, value, 64));
      case ir::Scalar::F32: return store(static_cast<float>(real(param, value)));
      case ir::Scalar::F64: return store(real(param, value));
      case ir::Scalar::F16:
      case ir::Scalar::BF16:
      case ir::Scalar::F8E4M3:
      case ir::Scalar::F8E5M2: break;
    }
    fail(ErrorKind::Type, Diag::LaunchArgumentType,
         "parameter '" + param.name + "' of kernel '" + kernel_.name + "' has type " +
                              ir::to_string(param.type) + ", which cannot be passed from the host",
         "pass it as a float32 scalar and cast inside the kernel");
  }

 private:
  template <class T>
  static Slot store(T value) {
    static_assert(sizeof(T) <= sizeof(Slot));
    Slot slot = 0;
    std::memcpy(&slot, &value, sizeof(T));
    return slot;
  }

  [[noreturn]] void wrong_kind(const ir::Param& param, const ArgValue& value, const std::string& expected) const {
    fail(ErrorKind::Type, Diag::LaunchArgumentType,
         "argument '" + param.name + "' of kernel '" + kernel_.name + "' expects " + expected +
                              " (" + ir::to_string(param.type) + "), got " + describe_kind(value.kind));
  }

  [[noreturn]] void out_of_range(const ir::Param& param, const ArgValue& value, const std::string& range) const {
    fail(ErrorKind::Value, Diag::LaunchArgumentRange,
         "argument '" + param.name + "' of kernel '" + kernel_.name + "' is " +
                               ir::to_string(param.type) + ", but " + describe_value(value) +
                               " is out of its range (" + range + ")");
  }

  // The range texts are made only for the error: every launch packs every argument.
  int64_t signed_in_range(const ir::Param& param, const ArgValue& value, int bits) const {
    int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    int64_t min = -max - 1;
    auto fail_range = [&] { out_of_range(param, value, std::to_string(min) + " to " + std::to_string(max)); };
    switch (value.kind) {
      case ArgValue::Kind::Bool: return value.bits ? 1 : 0;
      case ArgValue::Kind::Int: {
        auto v = static_cast<int64_t>(value.bits);
        if (v < min || v > max) fail_range();
        return v;
      }
      case ArgValue::Kind::UInt:
        if (value.bits > static_cast<uint64_t>(max)) fail_range();
        return static_cast<int64_t>(value.bits);
      default: wrong_kind(param, value, "an integer");
    }
  }

  uint64_t unsigned_in_range(const ir::Param& param, const ArgValue& value, int bits) const {
    uint64_t max = bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
    auto fail_range = [&] { out_of_range(param, value, "0 to " + std::to_string(max)); };
    switch (value.kind) {
      case ArgValue::Kind::Bool: return value.bits ? 1 : 0;
      case ArgValue::Kind::Int:
        if (static_cast<int64_t>(value.bits) < 0 || value.bits > max) fail_range();
        return value.bits;
      case ArgValue::Kind::UInt:
        if (value.bits > max) fail_range();
        return value.bits;
      default: wrong_kind(param, value, "an integer");
    }
  }

  double real(const ir::Param& param, const ArgValue& value) const {
    switch (value.kind) {
      case ArgValue::Kind::Float: return value.real;
      case ArgValue::Kind::Int: return static_cast<double>(static_cast<int64_t>(value.bits));
      case ArgValue::Kind::UInt: return static_cast<double>(value.bits);
      default: wrong_kind(param, value, "a float");
    }
  }

  const CompiledKernel& kernel_;
};

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

// Checks the argument count and packs every argument into `slots`, with
// `argv[i]` pointing at slot i.
void pack_arguments(const CompiledKernel& kernel, const std::vector<ArgValue>& args, std::vector<Slot>& slots,
                    std::vector<void*>& argv) {
  if (args.size() != kernel.params.size())
    fail(ErrorKind::Value, Diag::LaunchArgumentCount,
         "kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) +
                               " runtime argument" + (kernel.params.size() == 1 ? "" : "s") + " " +
                               signature_of(kernel) + ", got " + std::to_string(args.size()));
  ArgumentPacker packer(kernel);
  slots.resize(args.size());
  argv.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    slots[i] = packer.pack(kernel.params[i], args[i]);
    argv[i] = &slots[i];
  }
}

}  // namespace

void CompiledKernel::launch(const int64_t grid[3], const std::vector<ArgValue>& args) const {
  if (cuda_module)
    fail(ErrorKind::Value, Diag::WrongLaunchTarget,
         "kernel '" + name + "' was compiled for CUDA; launch it on a device and stream");
  std::vector<Slot> slots;
  std::vector<void*> argv;
  pack_arguments(*this, args, slots, argv);
  if (!entry) fail(ErrorKind::Value, Diag::WrongLaunchTarget, "kernel '" + name + "' is not loaded");

  int64_t total = count_programs(grid);
  if (total == 0) return;
  DebugRecord record;
  if (debug) add_debug_arguments(*this, args, reinterpret_cast<uintptr_t>(&record), slots, argv);
  const int32_t grid32[3] = {static_cast<int32_t>(grid[0]), static_cast<int32_t>(grid[1]),
                             static_cast<int32_t>(grid[2])};
  auto kernel = reinterpret_cast<KernelEntry>(entry);
  void* const* arg_array = argv.data();
  if (total == 1) {
    kernel(arg_array, grid32, 0, 1);
  } else {
    ThreadPool& pool = ThreadPool::global();
    // About eight chunks per thread: small enough that fast threads take over the
    // work of slow ones, large enough that claiming a chunk costs little.
    int64_t chunk = std::max<int64_t>(1, total / (static_cast<int64_t>(pool.size()) * 8));
    pool.parallel_for(total, chunk, [&](int64_t first, int64_t last) { kernel(arg_array, grid32, first, last); });
  }
  if (debug)
    if (std::optional<DeviceFault> fault = fault_of(*this, record)) throw std::move(*fault);
}

void CompiledKernel::launch(const int64_t grid[3], const std::vector<ArgValue>& args, uint64_t stream,
                            int device) const {
  if (!cuda_module)
    fail(ErrorKind::Value, Diag::WrongLaunchTarget, "kernel '" + name + "' was compiled for the " + backend +
                               " backend; it cannot be launched on a CUDA device");
  std::vector<Slot> slots;
  std::vector<void*> argv;
  pack_arguments(*this, args, slots, argv);
  if (debug) {
    if (cuda::stream_is_capturing(stream, device))
      fail(ErrorKind::Value, Diag::WrongLaunchTarget,
           "kernel '" + name + "' is compiled in debug mode, which cannot run inside CUDA graph capture: a debug "
               "launch waits for the kernel and reads its error record back",
           "capture the kernel without debug mode (debug=False and TEGULA_DEBUG unset), or launch it in debug "
           "mode outside the capture");
    return launch_cuda_debug(*this, grid, args, slots, argv, stream, device);
  }
  cuda_module->launch(grid, argv.data(), stream, device);
}

}  // namespace tegula::runtime
