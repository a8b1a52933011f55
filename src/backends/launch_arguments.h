// Launch arguments: the values a launch passes, checked against the kernel's
// parameters and packed into the slots of the kernel ABI
// (backends/kernel_abi.h). Every backend packs the same way: the CPU entry
// and cuLaunchKernel both read parameter i through a pointer to slot i.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/kernel_abi.h"
#include "ir/ir.h"
#include "support/small_vector.h"

namespace tegula::backends {

// A launch argument value, already converted by the caller to the
// parameter's kind (the binding layer checks kinds and reports user errors).
struct ArgValue {
  enum class Kind { Pointer, Int, UInt, Float, Bool } kind = Kind::Int;
  uint64_t bits = 0;  // pointer address, integer bits
  double real = 0.0;  // floats
  // Pointers, read by debug kernels only: the array the address points
  // into, [extent_base, extent_base + extent_bytes). The default extent
  // covers all memory: nothing is checked against it.
  uint64_t extent_base = 0;
  uint64_t extent_bytes = UINT64_MAX;
};

// The slots of one launch and the pointers to them (argv[i] = &slots[i]),
// inside the object for the usual parameter counts: a launch allocates
// nothing. Lives on the launching function's stack for one launch.
struct PackedArguments {
  SmallVector<abi::ArgSlot, 24> slots;
  SmallVector<void*, 24> argv;

  // Appends one slot (debug extents, the record address) and points every
  // argv entry at its slot again (the slots may have moved to the heap),
  // except those passed by value.
  void append(abi::ArgSlot slot);
  // Points argv[index] at `bytes`, which a device launch passes by value
  // (ir::Param::by_value_bytes), instead of at its slot.
  void pass_by_value(size_t index, const void* bytes);

 private:
  struct ByValue {
    size_t index;
    void* bytes;
  };
  SmallVector<ByValue, 2> by_value_;
};

// Checks the count of `args` against `params` and packs each value as its
// parameter's C type. Throws Error: ValueError-kind for a wrong count or a
// value out of range, TypeError-kind for a wrong kind, each naming the
// argument, `kernel`, the type and the range.
// `out` starts empty.
void pack_arguments(const std::string& kernel, const std::vector<ir::Param>& params, std::span<const ArgValue> args,
                    PackedArguments& out);

}  // namespace tegula::backends
