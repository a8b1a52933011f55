// A backend: how optimized tile IR becomes a kernel that runs somewhere.
//
// The compile driver (runtime/compiler.cpp) runs one straight line for every
// backend, and asks the backend at each step that is its own:
//
//   target = backend.target(options)         setup: its toolchain, its architecture
//   key   += target->add_key_fields(...)     what else decides the code it makes
//   hit:     backend.load(artifact, info)    a verified cache entry, made runnable
//   miss:    target->emit(fn)                source, from its code generator
//            target->add_build_fields(...)   what decides the artifact: reused if built before
//            target->build(source, path)     the artifact: a shared object, a cubin
//            publish; backend.load(...)      then exactly as a hit
//   launch:  loaded->launch(info, grid, args, stream)
//
// Backends are listed in runtime/backend_registry.cpp, the only place that
// maps a name ("cpu", "cuda") to a Backend; everything else asks the backend
// object (its kind, its descriptions) instead of comparing names.
//
// A Backend is stateless and thread-safe; a Target lives for one compile.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/artifact.h"
#include "backends/launch_arguments.h"
#include "ir/descriptor.h"
#include "backends/tensor_map_param.h"
#include "ir/ir.h"
#include "passes/debug_sites.h"
#include "passes/pointer_effects.h"
#include "support/compile_profile.h"

namespace tegula::backends {

class CacheKey;

// What a compile asks of its backend, resolved by the driver from the
// compile options and the request.
struct TargetOptions {
  bool debug = false;         // bounds checks and device asserts (docs/debug-mode.md)
  bool keep_details = false;  // the build also keeps its intermediate stages (PTX, the assembler's report)
  int num_warps = 4;          // device backends: threads per program = 32 * num_warps
  int num_stages = 3;         // device backends: software-pipeline buffers of K loops feeding dots
  bool fp_fusion = true;      // a backend may contract a*b+c into one FMA (the CPU backend never does)
  int device = 0;             // device backends: the device whose architecture the kernel is built for
  int arch = 0;               // device backends: the architecture to build for (0: the device's)
  int maxnreg = 0;            // device backends: the most registers a thread may use (0: no cap)
};

// The threads one program instance runs on and the dynamic scratch memory
// it gets, as the generated code was written for them. Zero where the
// backend has no such notion (the CPU: one thread, no scratch memory).
struct LaunchShape {
  int threads = 0;
  int shared_bytes = 0;
};

// What a code generator made of one kernel.
struct Generated {
  std::string source;
  std::string layouts;  // the layout of every tile value, for backends that assign layouts
  LaunchShape shape;
  // When nonzero, the build may trade registers for more resident blocks of
  // this many threads (backends/cuda/occupancy.h); zero builds as generated.
  int occupancy_threads = 0;
  // Device backends with a tensor-copy engine: the tensor maps the kernel
  // takes after its own parameters, which the launcher encodes.
  std::vector<TensorMapParam> tensor_maps;
};

// What a build keeps besides its artifact, for inspection (stages).
struct BuildDetails {
  std::string assembly;  // the assembly the build went through (PTX)
  std::string log;       // the toolchain's log (ptxas's register and shared-memory report)
};

// What launching a kernel needs to know besides its code; the cache
// manifest records it, so a kernel loaded from disk has it without running
// the front end.
struct KernelInfo {
  std::string name;
  std::vector<ir::Param> params;  // the launch ABI: one per runtime parameter, in order
  LaunchShape shape;
  // Debug mode (docs/debug-mode.md): launches pass the array extents and an
  // error record, and raise DeviceFault (debug_fault.h) for an error the
  // kernel recorded at the check `debug_sites[site]`.
  bool debug = false;
  std::vector<passes::DebugSite> debug_sites;
  // Per parameter: whether the kernel may read, write or atomically update
  // the memory behind it (passes/pointer_effects.h; all false for scalars).
  std::vector<passes::PointerEffects> effects;
  // Tensor maps the launch encodes from the arguments and passes after
  // them (Generated::tensor_maps).
  std::vector<TensorMapParam> tensor_maps;
  // What the front end warned of (rendered), when this process built the
  // kernel; a kernel loaded from the disk cache has none, as in Triton.
  std::vector<std::string> warnings;
};

// The stream a launch is queued on, for backends whose launches are queued
// (BackendKind::Device): the caller's current stream handle on `device` (a
// CUstream; 0 is the default stream).
struct Stream {
  uint64_t handle = 0;
  int device = 0;
};

// A kernel ready to run: owned by the backend that loaded it (a shared
// object and its entry point, a device image and its functions).
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;

  // Runs `grid` (each dimension >= 0; a zero dimension runs nothing) with one
  // value per info.params. Host backends return when every program has run
  // and take no stream; device backends need one and return once the grid is
  // queued on it (debug kernels wait and report a fault). Throws Error for
  // arguments, a grid or a place it cannot run with, DeviceFault for an error
  // a debug kernel recorded.
  virtual void launch(const KernelInfo& info, const int64_t grid[3], std::span<const ArgValue> args,
                      const std::optional<Stream>& stream) const = 0;

  // What the kernel uses on `device` (registers, shared and local memory...),
  // by name, for backends that can say; the others throw Error.
  virtual std::vector<std::pair<std::string, int64_t>> resources(const KernelInfo& info, int device) const;
};

// One backend set up for one compile.
class Target {
 public:
  virtual ~Target() = default;

  // Adds the fields of the cache key only this backend knows: its
  // toolchain's identity, the architecture, the options it honours.
  virtual void add_key_fields(CacheKey& key) const = 0;

  // Adds to `key` everything that decides the artifact build() makes of
  // `generated` (the text it compiles, the toolchain and its flags, the
  // architecture) and returns true; the driver then reuses the artifact of
  // an earlier build whose fields were the same, under whatever cache key
  // (runtime/build_records.h). Only what provably cannot change the
  // artifact may be left out. False (the default): every miss builds.
  virtual bool add_build_fields(CacheKey& /*key*/, const Generated& /*generated*/,
                                const std::string& /*kernel_name*/) const {
    return false;
  }

  // The architecture kernels are built for (compute capability * 10 on
  // CUDA, e.g. 90), which kernels may test at compile time
  // (tl.target_info); 0 for a host backend. Part of the cache key.
  virtual int arch() const { return 0; }

  // Whether emit() takes desc op `op` of `fn` (ir/descriptor.h) as it is,
  // copying its block whole, or only where its offsets are >= 0; the passes
  // lower the others (and the rest of the guarded ones) to pointer tiles and
  // masks first (passes/lower_descriptors.h).
  virtual ir::DescriptorPath descriptor_path(const ir::Function& fn, const ir::Op& op) const;

  // The generated source of the optimized kernel `fn` (its code generator).
  virtual Generated emit(const ir::Function& fn) const = 0;

  // Builds `generated` into the artifact file `output_path` (a fresh name
  // in the cache directory, which the driver publishes). Records the
  // toolchain's phases in `profile`. Throws InternalError (with the
  // toolchain's output) when the generated source does not build, Error
  // when the toolchain itself fails.
  virtual BuildDetails build(const Generated& generated, const std::string& kernel_name,
                             const std::string& output_path, CompileProfile& profile) const = 0;

  // The details build() would keep, for an entry built without them; runs
  // no more of the toolchain than they need (nothing, for most backends).
  virtual BuildDetails details(const Generated& generated, const std::string& kernel_name) const;
};

// How a backend's kernels relate to the caller's memory and time.
enum class BackendKind {
  Host,    // runs on this machine's cores, on arrays in host memory; a launch returns when it is done
  Device,  // runs on a device, on arrays in its memory; a launch is queued on the caller's stream there
};

// What a backend can show of a compile besides the IR: the names the CLI's
// --emit knows them by.
enum class OutputKind { Source, Layouts, Assembly, BuildLog };
struct Output {
  std::string_view name;  // "cpp", "cuda", "ptx"...
  OutputKind kind;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // The name users pick the backend by (CompileOptions::backend,
  // TEGULA_BACKEND, the CLI's --backend). Data, never compared outside the
  // registry.
  virtual std::string_view name() const = 0;
  virtual BackendKind kind() const = 0;
  // Where its kernels run, for messages: "the CPU", "CUDA GPUs".
  virtual std::string_view description() const = 0;
  // What to pass a kernel that must run here, for messages ("CUDA tensors
  // (torch, CuPy)"); empty when nothing needs saying.
  virtual std::string_view arrays_hint() const { return {}; }
  // The outputs of a compile, in the order the CLI prints them.
  virtual std::span<const Output> outputs() const = 0;
  // The file extension of its generated source ("cpp", "cu") and of its
  // artifacts in the cache ("so", "cubin").
  virtual std::string_view source_extension() const = 0;
  virtual std::string_view artifact_extension() const = 0;

  // Whether target() needs the toolchain: a compile does, showing the
  // generated source only (runtime::generate_source) does not.
  enum class Setup { Compile, SourceOnly };
  // Checks `options` and sets the backend up for one compile: finds the
  // toolchain, resolves the architecture. Throws Error for options it cannot
  // honour or a toolchain it cannot use, UserError when no toolchain exists.
  virtual std::unique_ptr<Target> target(const TargetOptions& options, Setup setup) const = 0;

  // The kernel in `artifact` (verified against the cache manifest), or null
  // with the reason in `*why` when it cannot be loaded: the caller then
  // treats the entry as a miss (or, for an artifact it just built, as an
  // error).
  virtual std::shared_ptr<const LoadedKernel> load(const Artifact& artifact, const KernelInfo& info,
                                                   std::string* why) const = 0;

  // Device backends: how many devices the process can use, and the device
  // that owns `address` (Error for memory no device of this backend owns).
  virtual int device_count() const { return 0; }
  virtual int device_of(uint64_t address) const;
  // The device that owns `address`, or nothing (memory of no device of this backend, or no driver): for
  // addresses that may be host memory, such as the one inside a host TMA descriptor.
  virtual std::optional<int> device_owning(uint64_t /*address*/) const { return std::nullopt; }
};

}  // namespace tegula::backends
