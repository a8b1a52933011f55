// CPU code generation: tile IR -> one self-contained C++ translation unit.
//
// The generated unit exports the CPU entry of the kernel ABI
// (backends/kernel_abi.h: abi::kEntrySymbol, abi::CpuEntry):
//
//   void tegula_kernel(void* const* args, const int32_t* grid,
//                      int64_t first, int64_t last);
//
// It runs the program instances with linear ids [first, last); `args[i]`
// points at the slot of kernel parameter i (ir::Function::params).
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
