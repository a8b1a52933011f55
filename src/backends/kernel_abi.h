// The kernel ABI: what a generated unit exports and what a launcher passes
// it. The code generators (backends/*/codegen.cpp) spell the generated side
// from these names; the launchers (backends/*/kernel.cpp, module.cpp) and the
// NVRTC build (backends/cuda/nvrtc.cpp) use the same ones, so the two sides
// cannot drift apart.
//
// Arguments. Each kernel parameter (ir::Function::params, in order) gets its
// own 8-byte, 8-aligned slot holding the value as the C type of its IR type:
//
//   ptr<T>           void*           f32, f64   float, double
//   i8 .. i64        int8_t ..       i1         uint8_t (0 or 1)
//   u8 .. u64        uint8_t ..      f16, bf16  uint16_t: the value's bits
//                                    fp8 types  uint8_t: the value's code
//
// (backends/launch_arguments.h packs them). The CPU entry receives an array
// of pointers to the slots; cuLaunchKernel receives the same array and reads
// each parameter from its slot.
//
// Tensor maps (CUDA, sm_90). A kernel whose descriptor blocks the TMA copies
// takes, after its own parameters, one 128-byte map per
// KernelInfo::tensor_maps entry (backends/tensor_map_param.h), which the
// launcher encodes from the arguments; argv points at each. Debug kernels
// never have them.
//
// Debug mode (docs/debug-mode.md). A kernel compiled with debug checks takes,
// after its own parameters, two u64 values per pointer parameter in parameter
// order (the first byte of the array the argument points into, and its size
// in bytes), then the address of a DebugRecord: host memory for CPU kernels,
// a small device buffer for CUDA kernels, zeroed before the launch and read
// back after it (backends/debug_fault.h).
//
// Stopping (CPU). After every slot above, one more slot holds the address of
// a StopPoll. A kernel with a loop that may run without limit (a `while`, or
// a `for` whose trip count is not a constant of at most
// kUnpolledTripCount) calls `poll` after every kStopPollIterations
// iterations of such a loop; once that returns nonzero the program returns at
// once and the entry returns without starting another. Other kernels never
// read the slot. The launcher passes it always.
#pragma once

#include <cstdint>

namespace tegula::backends::abi {

// The symbol every generated unit defines: an extern "C" function on the
// CPU, an extern "C" __global__ function on CUDA.
inline constexpr const char* kEntrySymbol = "tegula_kernel";

// The CPU entry runs the program instances with linear ids [first, last) of
// `grid`, where the linear id of program (x, y, z) is x + grid[0] * (y +
// grid[1] * z); args[i] points at slot i. The launcher splits the id range
// across its worker threads.
using CpuEntry = void (*)(void* const* args, const int32_t* grid, int64_t first, int64_t last);

// One argument's slot.
using ArgSlot = uint64_t;

// What a CPU launch hands its programs to ask whether to stop (the launch was
// interrupted). `poll` may be called from any thread running the launch and
// must be cheap; once it returned nonzero it returns nonzero for the rest of
// the launch. The launcher's object extends this one (this is its first
// member); the generated code declares the same layout (TgStopPoll).
struct StopPoll {
  int32_t (*poll)(StopPoll* self);
};

// How many iterations a polled loop runs between two calls of
// StopPoll::poll: an interrupt stops a program within that many iterations
// (of its innermost polled loop), and the call costs nothing measurable
// beside them.
inline constexpr uint32_t kStopPollIterations = 256;

// A `for` of a constant trip count at most this large is bounded and not
// polled (a `for` nested in it still is when it is not).
inline constexpr uint64_t kUnpolledTripCount = 65536;

// CUDA: the macro a build may define to ask for more resident blocks per
// multiprocessor (occupancy tuning, backends/cuda/occupancy.h). The generated
// kernel's __launch_bounds__ name it as their minimum when it is defined and
// no minimum otherwise.
inline constexpr const char* kMinBlocksMacro = "TG_MIN_BLOCKS";

// The record a debug kernel writes its first error into, as the generated
// code declares it (TgDebugRecord, backends/c_family/prelude_text.h). Zero
// means "nothing recorded".
struct DebugRecord {
  int32_t lock = 0;
  int32_t reported = 0;  // 1 once a program recorded an error
  int64_t program = 0;   // its linear id: x + gx * (y + gy * z)
  int32_t site = 0;      // index into the kernel's debug sites (passes/debug_sites.h)
  int32_t param = 0;     // the parameter whose array was left (-1: an assert)
  int32_t pid[3] = {0, 0, 0};
  int32_t unused = 0;
  int64_t offset = 0;  // element offset from the array's first byte (may be negative)
  int64_t size = 0;    // the array's size in elements
  int64_t index = 0;   // flat index of the failing element in its tile (asserts)
};
static_assert(sizeof(DebugRecord) == 64, "must match TgDebugRecord of the generated code");

}  // namespace tegula::backends::abi
