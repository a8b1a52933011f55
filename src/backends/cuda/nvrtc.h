// NVRTC: generated CUDA C++ -> the device image (a cubin) the driver loads.
//
// Kernels are compiled for the exact architecture of the device they run on
// (sm_90a on Hopper: the "a" variant unlocks wgmma and TMA, and its cubin runs
// on that compute capability only, which is fine: the cache key holds the
// architecture). Options, and why:
//   --gpu-architecture=sm_XX(a)  SASS straight away, no JIT at load time
//   -std=c++17                   what the generated code is written against
//   no -O3                       NVRTC optimizes by default and rejects -O3
//   no --use_fast_math           IEEE division, square root and denormals, like
//                                the CPU backend
//   --fmad=true / --fmad=false   FMA contraction on or off, as asked
//                                (enable_fp_fusion; on by default, as in Triton).
//                                Spelled out so the choice never rests on
//                                NVRTC's default
//   --ptxas-options=-v           only when stages are kept: registers, spills
//                                and shared memory per kernel, for inspect()
//   --generate-line-info         debug builds, so sanitizers can name source lines
//   -DTG_MIN_BLOCKS=B            occupancy tuning only (see compile_to_image;
//                                abi::kMinBlocksMacro, backends/kernel_abi.h)
#pragma once

#include <string>
#include <vector>

#include "support/compile_profile.h"

namespace tegula::backends::cuda {

// What a CUDA kernel is built for. Every field is part of the cache key.
struct NvrtcTarget {
  int arch = 0;                  // compute capability * 10 the code is generated for (90)
  std::string gpu_architecture;  // NVRTC's --gpu-architecture: "sm_90a", or "compute_XX" when this
                                 // NVRTC cannot make SASS for the device (the driver then JIT-compiles the PTX)
  std::string nvrtc_version;     // "13.0"
};

// The target for CUDA device `device`, or for compute capability `arch`
// (× 10) when nonzero: that needs NVRTC but no GPU, so a machine without one
// can still compile and inspect. Throws DriverError when the driver (for a
// device) or NVRTC cannot be loaded, tegula::Error (Value) for a bad ordinal.
NvrtcTarget resolve_target(int device, int arch);

// --gpu-architecture for a device of compute capability `arch`, given the
// real architectures NVRTC can make SASS for (nvrtcGetSupportedArchs):
//   `arch` itself when supported ("a" suffix from 9.0 on);
//   else the newest supported one of the same major version below it (SASS
//   runs on later minor versions of its major);
//   else PTX for the newest supported architecture ("compute_XX"), which the
//   driver compiles for the device at load time.
// Returns the chosen architecture (× 10) in *generated_for.
std::string choose_gpu_architecture(int arch, const std::vector<int>& supported, int* generated_for);

struct Image {
  std::string binary;  // what cuModuleLoadData takes: a cubin, or PTX text for a compute_XX target
  std::string ptx;     // the PTX, when asked for (empty if NVRTC has none)
  std::string log;     // NVRTC's log: warnings, and ptxas's report when asked for
};

// Compiles `source` (a self-contained unit: no #include) with NVRTC. `name`
// names the program in NVRTC's messages. Throws InternalError carrying
// NVRTC's log when the source does not compile (generated code always
// should), DriverError when NVRTC itself fails.
//
// `occupancy_threads` > 0 (the block size) asks for occupancy tuning
// (cuda_occupancy.h): when a slightly lower register count fits one more
// block per multiprocessor, a second build asking for it (-DTG_MIN_BLOCKS=B,
// the generated __launch_bounds__' minimum) is kept if ptxas spills nothing.
// A first build that spills is built again with a minimum of one block
// instead, and that build is kept if it spills less. Leave it 0 for kernels
// that want their registers (dots). The second build
// is a whole NVRTC run again (front end and ptxas: about 0.45 s of a fused
// elementwise kernel on this toolkit, against 0.26 s for its PTX alone).
// Feeding the first build's PTX to nvJitLink instead would cost only ptxas
// (0.17 s), but its ptxas allocates differently from NVRTC's (96 registers
// against 90 for the fused chain, and spills at the tighter bound where
// NVRTC's build does not), so the tuned build would differ from the one
// measured; the rebuild is skipped instead whenever the first report shows
// no block to gain (register_cap_for_next_block).
//
// `profile`, when given, gets the first build as phase "nvrtc" and the
// occupancy rebuild, when there is one, as "nvrtc occupancy"
// (TEGULA_PROFILE_COMPILE=1 prints both).
Image compile_to_image(const std::string& source, const std::string& name, const NvrtcTarget& target, bool debug,
                       bool keep_details, bool fp_fusion = true, int occupancy_threads = 0,
                       CompileProfile* profile = nullptr);

}  // namespace tegula::backends::cuda
