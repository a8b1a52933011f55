// CUDA code generation: tile IR -> one self-contained CUDA C++ translation
// unit (no #include; inline PTX where needed), compiled by NVRTC for the
// device's exact architecture.
//
// The generated unit defines the CUDA entry of the kernel ABI
// (backends/kernel_abi.h):
//
//   extern "C" __global__ void __launch_bounds__(NUM_THREADS)
//   tegula_kernel(<one parameter per ir::Function::params entry, in order,
//                  by value: T* for pointers, int32_t/int64_t/uint64_t,
//                  float, bool>)
//
// launched with blockDim.x = 32 * num_warps, the grid = the kernel's grid
// (program_id(i) = blockIdx.{x,y,z}), and `shared_bytes` of dynamic shared
// memory (the launcher raises the function's limit above 48 KB when needed).
//
// Every tile value gets a distributed layout (which thread holds which
// elements, see layout.h); per-thread values are fixed-size register arrays
// indexed only by compile-time constants; layout conversions, reductions
// across warps and dot operands go through shared memory with barriers the
// generator inserts.
#pragma once

#include <string>
#include <vector>

#include "backends/tensor_map_param.h"
#include "ir/ir.h"

namespace tegula::backends::cuda {

struct CodegenOptions {
  int num_warps = 4;
  int arch = 90;       // compute capability * 10 (80, 86, 89, 90)
  bool debug = false;  // keep asserts (bounds checks later)
  // Lets NVRTC contract an f32/f64 product feeding an add or subtract into
  // one FMA (Triton's enable_fp_fusion, on by default there too). Off: every
  // product is rounded on its own, bit-identical to the CPU backend.
  bool fp_fusion = true;
  // Shared-memory buffers of a software-pipelined loop feeding tensor-core
  // dots (Triton's num_stages): loads run num_stages - 1 iterations ahead.
  // 1 turns pipelining off; sm_80 and newer only.
  int num_stages = 3;
  // Triton's maxnreg: the most registers a thread may use, written as
  // __maxnreg__ on the entry (PTX's .maxnreg); 0 leaves it to ptxas.
  int maxnreg = 0;
};

struct CudaKernel {
  std::string source;       // the CUDA C++ translation unit
  std::string layouts;      // human-readable layout of every tile value (for inspect)
  int num_threads = 128;    // blockDim.x
  int shared_bytes = 0;     // dynamic shared memory per block
  // Whether the runtime may trade a few registers for one more resident
  // block (backends/cuda/occupancy.h): yes for memory-bound code, no when a
  // dot needs its registers.
  bool tune_occupancy = true;
  // The tensor maps the kernel takes after its own parameters, as
  // `const __grid_constant__ TgTensorMap tg_map<i>` (desc ops the TMA copies).
  std::vector<TensorMapParam> tensor_maps;
};

// Throws UserError for IR the backend cannot handle yet (naming the op and its
// source location), never crashes.
CudaKernel emit_cuda(const ir::Function& fn, const CodegenOptions& options);

}  // namespace tegula::backends::cuda
