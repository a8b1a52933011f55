// CPU code generation: tile IR -> one self-contained C++ translation unit.
//
// The generated unit exports (extern "C"):
//
//   void tegula_kernel(void* const* args, const int32_t* grid,
//                      int64_t first, int64_t last);
//
// It runs the program instances with linear ids [first, last), where the
// linear id of program (x, y, z) is x + grid[0] * (y + grid[1] * z).
// `args[i]` points at the value of kernel parameter i (ir::Function::params):
// a `void*` slot for pointers, an int32_t/int64_t/uint64_t slot for integers,
// a float slot for f32, a uint8_t slot for i1. The runtime splits the id range
// across its worker threads.
//
// Each program instance is straight-line C++: tiles are local arrays (or
// fused element loops), reductions and dot are loops the C++ compiler
// vectorizes; bf16/f16 are stored as uint16_t and computed in float.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::backends::cpu {

struct CodegenOptions {
  bool debug = false;  // bounds checks (future); keeps asserts
};

std::string emit_cpp(const ir::Function& fn, const CodegenOptions& options = {});

}  // namespace tegula::backends::cpu
