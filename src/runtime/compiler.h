// The compile driver: KernelRequest -> CompiledKernel, through the on-disk
// cache. One straight-line function per stage:
//   parse + lower (frontend) -> optimize (passes) -> emit (backend) -> build (toolchain) -> load
// The backend is CompileOptions::backend: "cpu" (C++ source, the system
// compiler, a shared object run on the thread pool) or "cuda" (CUDA source,
// NVRTC, a cubin launched through the driver API on the caller's stream).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontend/request.h"
#include "ir/ir.h"
#include "passes/debug_sites.h"
#include "passes/pipeline.h"
#include "support/compile_profile.h"
#include "support/diagnostic.h"
#include "support/error.h"

namespace tegula::backends::cpu {
class SharedLibrary;
}
namespace tegula::backends::cuda {
class Module;
}

namespace tegula::runtime {

struct CompileOptions {
  std::string backend = "cpu";
  bool debug = false;
  bool keep_stages = false;  // also produce the IR text of every stage and the source
  std::string cache_dir;     // empty: $TEGULA_CACHE_DIR, else ~/.cache/tegula
  // CUDA only (ignored by the CPU backend, and not part of its cache keys):
  int num_warps = 4;  // threads per block = 32 * num_warps; part of the key
  int device = 0;     // the device whose architecture the kernel is built for
  int cuda_arch = 0;  // compute capability * 10 to build for instead of the device's
                      // (compiles and inspects without a GPU; launching needs a device of that arch)
  bool fp_fusion = true;  // contract f32/f64 a*b+c into FMAs (enable_fp_fusion); part of the key.
  int num_stages = 3;     // software-pipeline buffers of K loops feeding tensor-core dots (sm_80+);
                          // 1: no pipelining. Part of the key.
                          // The CPU backend never contracts, whatever this says.
};

// A launch argument value, already converted by the caller to the parameter's
// kind (the binding layer checks kinds and reports user errors).
struct ArgValue {
  enum class Kind { Pointer, Int, UInt, Float, Bool } kind = Kind::Int;
  uint64_t bits = 0;   // pointer address, integer bits
  double real = 0.0;   // floats
  // Pointers, read by debug kernels only: the array the address points
  // into, [extent_base, extent_base + extent_bytes). The default extent
  // covers all memory: nothing is checked against it.
  uint64_t extent_base = 0;
  uint64_t extent_bytes = UINT64_MAX;
};

struct Stages {
  std::vector<passes::StageDump> ir;  // "lowered", then one per optimization stage
  std::string source;                 // generated C++ (or CUDA) source
  // CUDA only:
  std::string layouts;      // the layout of every tile value
  std::string ptx;          // the PTX NVRTC made
  std::string compile_log;  // NVRTC's log with ptxas's report (registers, spills, shared memory)
};

class CompiledKernel {
 public:
  std::string name;
  std::string backend = "cpu";    // "cpu" | "cuda": which launch() applies
  std::vector<ir::Param> params;  // the launch ABI: one per runtime parameter, in order
  std::string key;                // cache key (hex sha256)
  bool from_disk_cache = false;   // loaded, not built, in this process
  Stages stages;                  // filled when compiled with keep_stages
  // Debug mode (docs/debug-mode.md): launches pass the array extents and an
  // error record, and raise DeviceFault (runtime/debug_record.h) for an error
  // the kernel recorded at the check `debug_sites[site]`.
  bool debug = false;
  std::vector<passes::DebugSite> debug_sites;

  // Runs the grid (each of grid[0..2] >= 1; a zero dimension runs nothing) on
  // the worker threads and returns when all programs finished. `args` holds
  // one value per entry of `params`. Throws tegula::Error (kind Value/Type)
  // on a mismatch it can detect, and a debug kernel's DeviceFault
  // (runtime/debug_record.h) when it recorded an error.
  void launch(const int64_t grid[3], const std::vector<ArgValue>& args) const;

  // CUDA kernels: queues the grid on `stream` (a CUstream handle; 0 is the
  // legacy default stream) of CUDA device `device` and returns without
  // waiting (debug kernels wait and report a fault). Pointer arguments are
  // device addresses. Throws tegula::Error like launch(), and
  // cuda::DriverError, naming the kernel and the CUresult, when the driver
  // refuses.
  void launch(const int64_t grid[3], const std::vector<ArgValue>& args, uint64_t stream, int device) const;

  // Internal: set by the driver.
  std::shared_ptr<backends::cpu::SharedLibrary> library;  // CPU
  void* entry = nullptr;                   // CPU
  std::shared_ptr<backends::cuda::Module> cuda_module;  // CUDA (see cuda_launch.h)
};

// Compiles (or loads from the disk cache) the kernel of `request`.
// Thread-safe. Throws tegula::Error for errors in the user's kernel (rendered
// against the request's sources) and for internal compiler errors. With
// `profile`, records the time of each phase there (compile_profile.h; a
// kernel already loaded in this process is the one phase "in memory").
std::shared_ptr<CompiledKernel> compile(const frontend::KernelRequest& request,
                                        const CompileOptions& options, CompileProfile* profile = nullptr);

// The generated source of a request, without building it: C++ for the CPU
// backend; CUDA source and the layout of every tile value for the CUDA
// backend, for options.cuda_arch (or the device's architecture when 0; that
// needs the driver). Neither the toolchain nor the disk cache is touched, so
// it runs anywhere: the golden corpus (tests/golden/corpus) pins it.
struct GeneratedSource {
  std::string source;
  std::string layouts;  // CUDA only
};
GeneratedSource generate_source(const frontend::KernelRequest& request, const CompileOptions& options);

// The cache key of a request: a hash of everything that affects the produced
// code (every function source and its globals, the argument specialization,
// the options, the toolchain identity, the Tegula version).
std::string cache_key(const frontend::KernelRequest& request, const CompileOptions& options);

// Process-wide counters, for tests and `tegula.runtime_stats()`.
struct Stats {
  std::atomic<int64_t> builds{0};        // backend builds (C++ compiler / NVRTC runs)
  std::atomic<int64_t> disk_hits{0};     // kernels loaded from the disk cache
  std::atomic<int64_t> disk_rejected{0}; // entries found on disk but refused (truncated, altered, not ours): rebuilt
  std::atomic<int64_t> frontend_runs{0}; // lowerings performed
};
Stats& stats();

// The resolved cache directory for `options` (created 0700 if missing).
// Throws tegula::Error (kind Value) if it is not owned by the current user or
// is writable by group or others.
std::string cache_directory(const CompileOptions& options);

}  // namespace tegula::runtime
