// The compile driver: KernelRequest -> CompiledKernel, through the on-disk
// cache. One straight line for every backend:
//   parse + lower (frontend) -> optimize (passes) -> emit, build, load (the backend)
// CompileOptions::backend names the backend (runtime/backend_registry.h);
// backends/backend.h says what each step asks of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/launch_arguments.h"
#include "frontend/request.h"
#include "ir/ir.h"
#include "passes/pipeline.h"
#include "support/compile_profile.h"
#include "support/diagnostic.h"
#include "support/error.h"

namespace tegula::runtime {

struct CompileOptions {
  std::string backend = "cpu";  // a name of runtime/backend_registry.h
  bool debug = false;
  bool keep_stages = false;  // also produce the IR text of every stage and the source
  std::string cache_dir;     // empty: $TEGULA_CACHE_DIR, else ~/.cache/tegula
  // Device backends only (the host backend ignores them, and they are not
  // part of its cache keys): backends::TargetOptions says what each means.
  int num_warps = 4;
  int device = 0;
  int cuda_arch = 0;  // the architecture (compute capability * 10) to build for instead of the device's
                      // (compiles and inspects without a GPU; launching needs a device of that arch)
  bool fp_fusion = true;  // enable_fp_fusion; the CPU backend never contracts, whatever this says
  int num_stages = 3;
  int maxnreg = 0;  // Triton's maxnreg: a register cap per thread (0: none); the CPU backend has no use for it
  // Build anew, past this process's table and the disk cache (which the build then refreshes): Triton's
  // knobs.compilation.always_compile. Not part of any key: the kernel built is the one a lookup finds.
  bool always_compile = false;
};

// The values a launch passes (backends/launch_arguments.h).
using ArgValue = backends::ArgValue;

struct Stages {
  std::vector<passes::StageDump> ir;  // "lowered", then one per optimization stage
  std::string source;                 // the generated source
  std::string layouts;                // the layout of every tile value (backends that assign layouts)
  std::string ptx;                    // the assembly the build went through (CUDA: PTX)
  std::string compile_log;            // the toolchain's log (CUDA: ptxas's register and shared-memory report)
};

// What a kernel was compiled from: enough to produce its stages later
// (stages_of) and to report the options it was built with.
struct KernelOrigin {
  frontend::KernelRequest request;
  CompileOptions options;
};

// A compiled, loaded kernel: what the launch ABI and the debug reports need
// (KernelInfo, backend-neutral), where it came from, and the backend's loaded
// code behind it.
class CompiledKernel : public backends::KernelInfo {
 public:
  const backends::Backend* backend = nullptr;  // the one that built and launches it
  std::string key;                             // cache key (hex sha256)
  bool from_disk_cache = false;                // loaded, not built, in this process
  Stages stages;                               // filled when compiled with keep_stages
  std::shared_ptr<const backends::LoadedKernel> loaded;
  std::shared_ptr<const KernelOrigin> origin;  // set by compile()

  // Runs the grid (each of grid[0..2] >= 0; a zero dimension runs nothing)
  // with one value per entry of `params`: on the host backend it returns
  // when every program has run; a device backend needs the caller's
  // `stream` and returns once the grid is queued on it (debug kernels wait).
  // Throws Error (kind Value/Type) on a mismatch it can detect, a debug
  // kernel's DeviceFault (backends/debug_fault.h) when it recorded an error,
  // and backends::cuda::DriverError when the driver refuses.
  void launch(const int64_t grid[3], std::span<const ArgValue> args,
              const std::optional<backends::Stream>& stream = std::nullopt) const;
  void launch(const int64_t grid[3], std::initializer_list<ArgValue> args,
              const std::optional<backends::Stream>& stream = std::nullopt) const {
    launch(grid, std::span<const ArgValue>(args.begin(), args.size()), stream);
  }
};

// Compiles (or loads from the disk cache) the kernel of `request`.
// Thread-safe. Throws tegula::Error for errors in the user's kernel (rendered
// against the request's sources) and for internal compiler errors. With
// `profile`, records the time of each phase there (compile_profile.h; a
// kernel already loaded in this process is the one phase "in memory").
std::shared_ptr<CompiledKernel> compile(const frontend::KernelRequest& request,
                                        const CompileOptions& options, CompileProfile* profile = nullptr);

// The kernel's stages (IR text per stage, source, assembly, the toolchain's
// log): its own when it was compiled with keep_stages, else compiled again
// from its origin with keep_stages, which the in-process table and the disk
// cache turn into a regeneration without a build at most.
Stages stages_of(const CompiledKernel& kernel);

// The bytes of the artifact the backend built (a shared object, a cubin),
// read back from the disk cache; empty when the entry is gone.
std::string artifact_of(const CompiledKernel& kernel);

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

// Ahead of time: generates the kernel of `request` and builds it into the
// file `output_path` (the backend's artifact: a shared object, a cubin),
// neither loading it nor touching the kernel cache; returns what a launcher
// of that file must know (the parameters and the launch shape). Throws as
// compile() does.
backends::KernelInfo build_artifact(const frontend::KernelRequest& request, const CompileOptions& options,
                                    const std::string& output_path);

// The cache key of a request: a hash of everything that affects the produced
// code (every function source and its globals, the argument specialization,
// the options, the toolchain identity, the Tegula version).
std::string cache_key(const frontend::KernelRequest& request, const CompileOptions& options);

// Process-wide counters, for tests and `tegula.runtime_stats()`.
struct Stats {
  std::atomic<int64_t> builds{0};        // backend builds (C++ compiler / NVRTC runs)
  std::atomic<int64_t> reused{0};        // misses whose artifact was copied from an identical build (no build)
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
