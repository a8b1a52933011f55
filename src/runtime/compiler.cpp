// The compile driver. compile() is the straight line
//   key -> in-process table -> disk cache -> (miss) lower, optimize, emit, build -> publish -> load
// and the one place where the compiler's exceptions become tegula::Error.
// The CPU backend builds a shared object with the system compiler; the CUDA
// backend builds a device image with NVRTC for the target device's
// architecture (cuda_compile.h) and loads it lazily, per device, at launch.
#include "runtime/compiler.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "backends/cpu/codegen.h"
#include "backends/cpu/toolchain.h"
#include "backends/kernel_abi.h"
#include "backends/cuda/codegen.h"
#include "frontend/lower.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "backends/cuda/driver_api.h"
#include "compiler_build_id.h"  // generated: TEGULA_COMPILER_BUILD_ID
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/module.h"
#include "runtime/disk_cache.h"
#include "runtime/errors.h"
#include "backends/cpu/shared_library.h"
#include "support/sha256.h"

#ifndef TEGULA_VERSION
#define TEGULA_VERSION "unknown"
#endif

namespace tegula::runtime {

namespace cuda = backends::cuda;
using backends::cpu::LibraryError;
using backends::cpu::SharedLibrary;

namespace {

// Bump when the driver changes what it produces for the same inputs (the
// kernel ABI, how options reach the backend...), so old entries stop matching.
constexpr const char* kDriverVersion = "driver-1";

// --- the cache key -----------------------------------------------------------------
//
// Every field is written as `tag:length:bytes\n`, so no two different inputs
// serialize to the same byte string (a source containing "\n" or ":" cannot
// impersonate a following field).
class KeyWriter {
 public:
  void field(std::string_view tag, std::string_view value) {
    hasher_.update(tag);
    hasher_.update(":" + std::to_string(value.size()) + ":");
    hasher_.update(value);
    hasher_.update("\n");
  }
  void field(std::string_view tag, int64_t value) { field(tag, std::to_string(value)); }
  void field(std::string_view tag, double value) {
    // The bit pattern: exact, and distinguishes -0.0 and NaN payloads.
    field(tag, static_cast<int64_t>(std::bit_cast<uint64_t>(value)));
  }
  void global(const frontend::GlobalValue& value) {
    field("kind", static_cast<int64_t>(value.kind));
    field("int", value.int_value);
    field("float", value.float_value);
    field("text", value.text);
    field("function", static_cast<int64_t>(value.function));
  }
  std::string finish() { return hasher_.finish_hex(); }

 private:
  Sha256 hasher_;
};

bool effective_debug(const frontend::KernelRequest& request, const CompileOptions& options) {
  return options.debug || request.debug;
}

bool is_cuda(const CompileOptions& options) { return options.backend == "cuda"; }

void check_request(const frontend::KernelRequest& request, const CompileOptions& options) {
  if (options.backend != "cpu" && options.backend != "cuda")
    fail(ErrorKind::Value, Diag::InvalidCompileOption,
         "backend '" + options.backend + "' is not available", "use backend 'cpu' or 'cuda'");
  if (request.functions.empty()) fail(ErrorKind::Value, Diag::InvalidCompileOption,
                                      "the compile request has no kernel function");
  if (is_cuda(options) && !std::has_single_bit(static_cast<unsigned>(std::max(options.num_warps, 0))))
    fail(ErrorKind::Value, Diag::InvalidCompileOption,
         "num_warps must be a power of two, got " + std::to_string(options.num_warps));
  if (is_cuda(options) && options.num_warps > 32)
    fail(ErrorKind::Value, Diag::InvalidCompileOption, "num_warps must be at most 32 (1024 threads per block), got " +
                               std::to_string(options.num_warps));
  if (is_cuda(options) && (options.num_stages < 1 || options.num_stages > 8))
    fail(ErrorKind::Value, Diag::InvalidCompileOption,
         "num_stages must be from 1 to 8, got " + std::to_string(options.num_stages));
}

// `target` is the CUDA target for cuda requests, null for cpu ones.
std::string compute_key(const frontend::KernelRequest& request, const CompileOptions& options,
                        const cuda::NvrtcTarget* target) {
  KeyWriter w;
  w.field("format", std::string("tegula ") + TEGULA_VERSION + " " + kDriverVersion + " cache " +
                        std::to_string(kCacheFormatVersion));
  w.field("compiler_build", TEGULA_COMPILER_BUILD_ID);
  w.field("backend", options.backend);
  w.field("debug", int64_t{effective_debug(request, options)});
  w.field("functions", static_cast<int64_t>(request.functions.size()));
  for (const frontend::FunctionSource& fn : request.functions) {
    w.field("name", fn.name);
    w.field("filename", fn.filename);
    w.field("first_line", int64_t{fn.first_line});
    w.field("source", fn.source);
    w.field("globals", static_cast<int64_t>(fn.globals.size()));
    for (const auto& [name, value] : fn.globals) {  // std::map: sorted by name
      w.field("global", name);
      w.global(value);
    }
  }
  w.field("args", static_cast<int64_t>(request.args.size()));
  for (const frontend::ArgSpec& arg : request.args) {
    w.field("arg", static_cast<int64_t>(arg.kind));
    w.field("dtype", ir::to_string(arg.dtype));
    w.field("divisibility", arg.divisibility);
    w.field("is_one", int64_t{arg.is_one});
    w.global(arg.value);
    w.field("parts", static_cast<int64_t>(arg.parts.size()));  // a TensorDescriptor's shape and strides
    for (const frontend::ArgSpec& p : arg.parts) {
      w.field("part", static_cast<int64_t>(p.kind));
      w.field("dtype", ir::to_string(p.dtype));
      w.field("divisibility", p.divisibility);
      w.field("is_one", int64_t{p.is_one});
    }
    w.field("block_shape", static_cast<int64_t>(arg.block_shape.size()));
    for (int64_t d : arg.block_shape) w.field("block", d);
  }
  if (target) {
    w.field("gpu_architecture", target->gpu_architecture);
    w.field("arch", int64_t{target->arch});
    w.field("nvrtc", target->nvrtc_version);
    w.field("num_warps", int64_t{options.num_warps});
    w.field("fp_fusion", int64_t{options.fp_fusion});
    w.field("num_stages", int64_t{options.num_stages});
    return w.finish();
  }
  const backends::cpu::Toolchain& toolchain = backends::cpu::toolchain();
  w.field("compiler", toolchain.compiler);
  w.field("identity", toolchain.identity);
  w.field("flags", toolchain.flags);
  return w.finish();
}

// --- stage dumps (TEGULA_DUMP_DIR) -----------------------------------------------------

std::string dump_directory() {
  const char* dir = std::getenv("TEGULA_DUMP_DIR");
  return dir ? std::string(dir) : std::string();
}

std::string file_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  return out;
}

// Writes <kernel>-<key8>.<NN>-<stage>.txt per stage (numbered: a stage may run
// more than once) and <kernel>-<key8>.source.cpp (.source.cu, .layouts.txt,
// .ptx and .log.txt for CUDA). Best effort: dumping is a debugging aid and
// must never turn a result into a failure.
void write_dumps(const std::string& kernel, const std::string& key, const Stages& stages) {
  std::string dir = dump_directory();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string prefix = dir + "/" + file_safe(kernel) + "-" + key.substr(0, 8) + ".";
  for (size_t i = 0; i < stages.ir.size(); ++i) {
    std::string number = (i < 9 ? "0" : "") + std::to_string(i + 1);
    std::ofstream(prefix + number + "-" + file_safe(stages.ir[i].stage) + ".txt") << stages.ir[i].ir;
  }
  bool cuda = !stages.layouts.empty() || !stages.ptx.empty();
  if (!stages.source.empty()) std::ofstream(prefix + (cuda ? "source.cu" : "source.cpp")) << stages.source;
  if (!stages.layouts.empty()) std::ofstream(prefix + "layouts.txt") << stages.layouts;
  if (!stages.ptx.empty()) std::ofstream(prefix + "ptx") << stages.ptx;
  if (!stages.compile_log.empty()) std::ofstream(prefix + "log.txt") << stages.compile_log;
}

// --- translating the compiler's exceptions ---------------------------------------------

// What a failed compilation has produced so far, for the error report.
struct Attempt {
  const frontend::KernelRequest* request = nullptr;
  std::string key;
  SourceManager sources;
  Stages stages;
  CompileProfile* profile = nullptr;  // where generate() records its phases, if anywhere
};

// `loc` is the kernel source of the op or statement being compiled when the
// invariant broke, if known: the report quotes that line.
[[noreturn]] void internal_failure(const Attempt& attempt, std::string what, const SourceLoc& loc = {}) {
  write_dumps(attempt.request->functions[0].name, attempt.key, attempt.stages);
  std::string dir = dump_directory();
  std::string hint = dir.empty()
                         ? "this is a bug in Tegula; set TEGULA_DUMP_DIR=/some/dir to keep the IR of every "
                           "stage and the generated source, and report it"
                         : "this is a bug in Tegula; the IR of every stage and the generated source are in " + dir;
  if (!what.starts_with("internal compiler error")) what = "internal compiler error: " + what;
  throw to_error(Diagnostic{loc, Diag::InternalCompilerError, std::move(what), std::move(hint), ErrorKind::Compile},
                 &attempt.sources);
}

// Runs `step`, turning every exception into tegula::Error.
template <class Step>
auto translate_errors(Attempt& attempt, Step&& step) -> decltype(step()) {
  try {
    return step();
  } catch (const Error&) {
    throw;
  } catch (const UserError& e) {
    throw to_error(e.diagnostic(), &attempt.sources);
  } catch (const InternalError& e) {
    internal_failure(attempt, e.what(), e.loc());
  } catch (const std::exception& e) {
    internal_failure(attempt, e.what());
  }
}

// --- the stages ----------------------------------------------------------------------------

struct Lowered {
  std::string kernel_name;
  std::vector<ir::Param> params;
  int num_threads = 0;   // CUDA: block size
  int shared_bytes = 0;  // CUDA: dynamic shared memory per block
  std::vector<passes::DebugSite> debug_sites;
  int occupancy_threads = 0;  // CUDA: block size when occupancy tuning applies, else 0  // debug mode: the checks the code was generated with
};

backends::cuda::CudaKernel emit_cuda_source(const ir::Function& fn, const backends::cuda::CodegenOptions& options) {
#ifdef TEGULA_HAVE_CUDA_CODEGEN
  return backends::cuda::emit_cuda(fn, options);
#else
  fail_backend_not_built();
#endif
}

// Frontend, passes and code generation. Fills attempt.stages.source (and
// .layouts for CUDA) always and attempt.stages.ir when `keep_ir`, stage by
// stage, so a failure leaves what was produced before it. `target` is the
// CUDA target of a cuda request, null otherwise.
Lowered generate(Attempt& attempt, const CompileOptions& options, bool keep_ir, const cuda::NvrtcTarget* target) {
  const frontend::KernelRequest& request = *attempt.request;
  CompileProfile unprofiled;
  CompileProfile& profile = attempt.profile ? *attempt.profile : unprofiled;
  std::optional<PhaseTimer> phase(std::in_place, profile, "frontend");
  ir::Function fn = frontend::lower_kernel(request, attempt.sources);
  stats().frontend_runs++;
  ir::verify_or_throw(fn, "lowered");  // optimize() records the "lowered" dump
  phase.emplace(profile, "passes");
  passes::optimize(fn, keep_ir ? &attempt.stages.ir : nullptr);
  bool debug = effective_debug(request, options);
  // The backends number their checks the same way, from the same IR.
  std::vector<passes::DebugSite> sites = debug ? passes::DebugSites(fn).sites() : std::vector<passes::DebugSite>{};
  phase.emplace(profile, "codegen");
  if (!target) {
    attempt.stages.source = backends::cpu::emit_cpp(fn, {debug});
    return Lowered{fn.name, fn.params, 0, 0, std::move(sites)};
  }
  backends::cuda::CudaKernel kernel =
      emit_cuda_source(fn, {options.num_warps, target->arch, debug, options.fp_fusion, options.num_stages});
  attempt.stages.source = std::move(kernel.source);
  attempt.stages.layouts = std::move(kernel.layouts);
  return Lowered{fn.name, fn.params, kernel.num_threads, kernel.shared_bytes, std::move(sites),
                 kernel.tune_occupancy ? kernel.num_threads : 0};
}

std::shared_ptr<CompiledKernel> make_kernel(const std::string& key, CacheManifest manifest,
                                            std::shared_ptr<SharedLibrary> library, void* entry, bool debug) {
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->name = std::move(manifest.kernel_name);
  kernel->params = std::move(manifest.params);
  kernel->debug = debug;
  kernel->debug_sites = std::move(manifest.debug_sites);
  kernel->key = key;
  kernel->library = std::move(library);
  kernel->entry = entry;
  return kernel;
}

std::shared_ptr<CompiledKernel> make_cuda_kernel(const std::string& key, CacheManifest manifest, std::string image,
                                                 bool debug) {
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->name = std::move(manifest.kernel_name);
  kernel->backend = "cuda";
  kernel->params = std::move(manifest.params);
  kernel->debug = debug;
  kernel->debug_sites = std::move(manifest.debug_sites);
  kernel->key = key;
  kernel->cuda_module = std::make_shared<cuda::Module>(kernel->name, std::move(image), manifest.cuda_threads,
                                                       manifest.cuda_shared_bytes, debug);
  return kernel;
}

bool has_stages(const CompiledKernel& kernel) { return !kernel.stages.ir.empty() || !kernel.stages.source.empty(); }

// The stages of an already built entry: from the disk cache, else by running
// everything again except the C++ compiler (NVRTC does run again for CUDA:
// the PTX and ptxas's report come from it), storing them for next time when
// the entry's manifest is known.
Stages stages_of_entry(const frontend::KernelRequest& request, const CompileOptions& options,
                       const cuda::NvrtcTarget* target, const DiskCache& cache, const std::string& key,
                       std::optional<CacheManifest> manifest) {
  if (manifest)
    if (std::optional<Stages> stored = cache.load_stages(key, *manifest)) return std::move(*stored);
  Attempt attempt{&request, key, {}, {}};
  Lowered lowered = translate_errors(attempt, [&] { return generate(attempt, options, /*keep_ir=*/true, target); });
  if (target) {
    cuda::Image image = translate_errors(attempt, [&] {
      return cuda::compile_to_image(attempt.stages.source, lowered.kernel_name, *target,
                                    effective_debug(request, options), /*keep_details=*/true, options.fp_fusion,
                                    lowered.occupancy_threads);
    });
    attempt.stages.ptx = std::move(image.ptx);
    attempt.stages.compile_log = std::move(image.log);
  }
  if (manifest) {
    try {
      cache.store_stages(key, *manifest, attempt.stages);
    } catch (const Error&) {
      // A read-only cache still serves kernels; the stages are simply not kept.
    }
  }
  return std::move(attempt.stages);
}

std::shared_ptr<CompiledKernel> load_or_build_cuda(const frontend::KernelRequest& request,
                                                   const CompileOptions& options, const cuda::NvrtcTarget& target,
                                                   const std::string& key, const std::string& directory,
                                                   bool want_stages, CompileProfile& profile) {
  std::optional<PhaseTimer> phase(std::in_place, profile, "disk cache");
  DiskCache cache(directory);
  bool debug = effective_debug(request, options);

  // On a miss, wait while another process builds this kernel, then look again.
  std::optional<CachedImage> hit = cache.load_image(key);
  std::optional<EntryLock> building;
  if (!hit) {
    building = cache.lock(key);
    std::string why;
    hit = cache.load_image(key, &why);
    if (!hit && why != "no entry") stats().disk_rejected++;
  }
  phase.reset();
  if (hit) {
    building.reset();  // stages_of_entry takes the lock itself
    stats().disk_hits++;
    CacheManifest manifest = hit->manifest;
    auto kernel = make_cuda_kernel(key, std::move(hit->manifest), std::move(hit->image), debug);
    kernel->from_disk_cache = true;
    if (want_stages) {
      kernel->stages = stages_of_entry(request, options, &target, cache, key, std::move(manifest));
      write_dumps(kernel->name, key, kernel->stages);
    }
    return kernel;
  }

  Attempt attempt{&request, key, {}, {}, &profile};
  Lowered lowered = translate_errors(attempt, [&] { return generate(attempt, options, want_stages, &target); });
  TEGULA_ASSERT(lowered.num_threads > 0, "the CUDA code generator chose no block size");
  // NVRTC reports rejected source as InternalError (generated code should always compile).
  // compile_to_image times its own phases: "nvrtc", and "nvrtc occupancy" when it builds twice.
  phase.reset();
  cuda::Image image = translate_errors(attempt, [&] {
    return cuda::compile_to_image(attempt.stages.source, lowered.kernel_name, target, debug, want_stages,
                                  options.fp_fusion, lowered.occupancy_threads, &profile);
  });
  stats().builds++;
  phase.emplace(profile, "store");
  attempt.stages.ptx = std::move(image.ptx);
  attempt.stages.compile_log = std::move(image.log);

  CacheManifest manifest{lowered.kernel_name, lowered.params, {}, {}, lowered.num_threads, lowered.shared_bytes,
                         lowered.debug_sites};
  translate_errors(attempt, [&] {
    cache.store_image(*building, image.binary, manifest, want_stages ? &attempt.stages : nullptr);
  });
  write_dumps(manifest.kernel_name, key, attempt.stages);
  auto kernel = make_cuda_kernel(key, std::move(manifest), std::move(image.binary), debug);
  if (want_stages) kernel->stages = std::move(attempt.stages);
  return kernel;
}

std::shared_ptr<CompiledKernel> load_or_build(const frontend::KernelRequest& request, const CompileOptions& options,
                                              const std::string& key, const std::string& directory,
                                              bool want_stages, CompileProfile& profile) {
  std::optional<PhaseTimer> phase(std::in_place, profile, "disk cache");
  DiskCache cache(directory);

  // On a miss, wait while another process builds this kernel, then look again.
  std::optional<CachedKernel> hit = cache.load(key);
  std::optional<EntryLock> building;
  if (!hit) {
    building = cache.lock(key);
    std::string why;
    hit = cache.load(key, &why);
    if (!hit && why != "no entry") stats().disk_rejected++;
  }
  phase.reset();
  if (hit) {
    building.reset();  // stages_of_entry takes the lock itself
    stats().disk_hits++;
    CacheManifest manifest = hit->manifest;
    auto kernel = make_kernel(key, std::move(hit->manifest), std::move(hit->library), hit->entry,
                              effective_debug(request, options));
    kernel->from_disk_cache = true;
    if (want_stages) {
      kernel->stages = stages_of_entry(request, options, nullptr, cache, key, std::move(manifest));
      write_dumps(kernel->name, key, kernel->stages);
    }
    return kernel;
  }

  // Miss (absent, or failed verification: the new entry overwrites it).
  Attempt attempt{&request, key, {}, {}, &profile};
  Lowered lowered = translate_errors(attempt, [&] { return generate(attempt, options, want_stages, nullptr); });
  std::string built = cache.temporary_path(key, "so");
  // The toolchain reports rejected source as InternalError (generated code
  // should always compile) and I/O trouble as UserError.
  phase.emplace(profile, "c++");
  translate_errors(attempt, [&] {
    try {
      backends::cpu::compile_shared_object(attempt.stages.source, built);
    } catch (...) {
      std::remove(built.c_str());
      throw;
    }
  });
  stats().builds++;

  phase.emplace(profile, "store");
  CacheManifest manifest{lowered.kernel_name, lowered.params, {}, {}, 0, 0, lowered.debug_sites};
  translate_errors(attempt,
                   [&] { cache.store(*building, built, manifest, want_stages ? &attempt.stages : nullptr); });
  phase.emplace(profile, "load");
  std::shared_ptr<SharedLibrary> library;
  void* entry = nullptr;
  try {
    library = SharedLibrary::open(cache.library_path(key));
    entry = library->symbol(backends::abi::kEntrySymbol);
  } catch (const LibraryError& e) {
    fail(ErrorKind::Compile, Diag::KernelLoadFailed, std::string("cannot load the compiled kernel: ") + e.what(),
         "if the cache directory " + directory +
             " is on a file system mounted noexec, set TEGULA_CACHE_DIR to another directory");
  }
  write_dumps(manifest.kernel_name, key, attempt.stages);
  auto kernel = make_kernel(key, std::move(manifest), std::move(library), entry, effective_debug(request, options));
  if (want_stages) kernel->stages = std::move(attempt.stages);
  return kernel;
}

// --- the in-process table ------------------------------------------------------------------
//
// Maps cache directory + key to the kernel built or loaded in this process
// (weakly: the caller decides how long a kernel lives) or to the build in
// progress, so two threads asking for the same kernel build it once.
class KernelTable {
 public:
  using Result = std::shared_future<std::shared_ptr<CompiledKernel>>;

  struct Lookup {
    std::shared_ptr<CompiledKernel> ready;  // already loaded
    Result pending;                         // being built by another thread
    bool ours = false;                      // we registered the build: call finish()
  };

  Lookup claim(const std::string& id, Result ours) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      if (auto kernel = it->second.kernel.lock()) return Lookup{std::move(kernel), {}, false};
      if (it->second.pending.valid()) return Lookup{nullptr, it->second.pending, false};
    }
    if (it == entries_.end()) prune();
    entries_[id] = Entry{{}, std::move(ours)};
    return Lookup{nullptr, {}, true};
  }

  // Records the outcome of our build (null: it failed, forget it).
  void finish(const std::string& id, const std::shared_ptr<CompiledKernel>& kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kernel)
      entries_[id] = Entry{kernel, {}};
    else
      entries_.erase(id);
  }

  // Replaces a loaded kernel by an equivalent one that also carries its stages.
  void update(const std::string& id, const std::shared_ptr<CompiledKernel>& kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end() && !it->second.pending.valid()) it->second.kernel = kernel;
  }

 private:
  struct Entry {
    std::weak_ptr<CompiledKernel> kernel;
    Result pending;
  };

  // Forgets kernels nobody holds any more; amortized by only running once the
  // table has doubled since the last sweep.
  void prune() {
    if (entries_.size() < sweep_at_) return;
    std::erase_if(entries_, [](const auto& item) {
      return !item.second.pending.valid() && item.second.kernel.expired();
    });
    sweep_at_ = std::max<size_t>(64, entries_.size() * 2);
  }

  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  size_t sweep_at_ = 64;
};

KernelTable& kernel_table() {
  static KernelTable table;
  return table;
}

}  // namespace

Stats& stats() {
  static Stats counters;
  return counters;
}

std::string cache_directory(const CompileOptions& options) { return resolve_cache_directory(options.cache_dir); }

namespace {

// The CUDA target of a cuda request (needs the driver unless options.cuda_arch is set, and NVRTC).
std::optional<cuda::NvrtcTarget> target_of(const CompileOptions& options) {
  if (!is_cuda(options)) return std::nullopt;
  return cuda::resolve_target(options.device, options.cuda_arch);
}

// The CPU toolchain, found on the first CPU compile of the process (its
// identity is part of the key); a missing compiler is the user's error.
void find_toolchain(const frontend::KernelRequest& request) {
  Attempt attempt{&request, {}, {}, {}};
  translate_errors(attempt, [] { backends::cpu::toolchain(); });
}

std::string key_for(const frontend::KernelRequest& request, const CompileOptions& options,
                    const std::optional<cuda::NvrtcTarget>& target) {
  Attempt attempt{&request, {}, {}, {}};
  return translate_errors(attempt, [&] { return compute_key(request, options, target ? &*target : nullptr); });
}

}  // namespace

std::string cache_key(const frontend::KernelRequest& request, const CompileOptions& options) {
  check_request(request, options);
  return key_for(request, options, target_of(options));
}

GeneratedSource generate_source(const frontend::KernelRequest& request, const CompileOptions& options) {
  check_request(request, options);
  std::optional<cuda::NvrtcTarget> target;
  if (is_cuda(options)) {
    target.emplace();
    target->arch = options.cuda_arch > 0 ? options.cuda_arch : cuda::device_arch(options.device);
  }
  Attempt attempt{&request, {}, {}, {}};
  translate_errors(attempt, [&] { return generate(attempt, options, /*keep_ir=*/false, target ? &*target : nullptr); });
  return GeneratedSource{std::move(attempt.stages.source), std::move(attempt.stages.layouts)};
}

std::shared_ptr<CompiledKernel> compile(const frontend::KernelRequest& request, const CompileOptions& options,
                                        CompileProfile* requested_profile) {
  CompileProfile unprofiled;
  CompileProfile& profile = requested_profile ? *requested_profile : unprofiled;
  std::optional<PhaseTimer> phase(std::in_place, profile, "setup");
  check_request(request, options);
  std::optional<cuda::NvrtcTarget> target = target_of(options);
  if (!target) find_toolchain(request);
  phase.emplace(profile, "key");
  std::string key = key_for(request, options, target);
  std::string directory = cache_directory(options);
  phase.reset();
  bool want_stages = options.keep_stages || !dump_directory().empty();
  std::string id = directory + "/" + key;

  std::promise<std::shared_ptr<CompiledKernel>> promise;
  KernelTable::Lookup found = kernel_table().claim(id, promise.get_future().share());
  std::shared_ptr<CompiledKernel> kernel = found.ready;
  if (found.pending.valid()) {
    PhaseTimer waiting(profile, "in memory");
    kernel = found.pending.get();  // rethrows the builder's error
  } else if (kernel) {
    profile.add("in memory", 0.0);
  }
  if (found.ours) {
    try {
      kernel = target ? load_or_build_cuda(request, options, *target, key, directory, want_stages, profile)
                      : load_or_build(request, options, key, directory, want_stages, profile);
    } catch (...) {
      promise.set_exception(std::current_exception());
      kernel_table().finish(id, nullptr);
      throw;
    }
    promise.set_value(kernel);
    kernel_table().finish(id, kernel);
    return kernel;
  }

  if (want_stages && !has_stages(*kernel)) {
    // Same code, now with its stages: a copy, because other threads may be reading the shared one.
    auto with_stages = std::make_shared<CompiledKernel>(*kernel);
    DiskCache cache(directory);
    with_stages->stages =
        stages_of_entry(request, options, target ? &*target : nullptr, cache, key, cache.load_manifest(key));
    write_dumps(with_stages->name, key, with_stages->stages);
    kernel_table().update(id, with_stages);
    return with_stages;
  }
  return kernel;
}

}  // namespace tegula::runtime
