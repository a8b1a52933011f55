// The compile driver. compile() is the straight line
//   key -> in-process table -> disk cache -> (miss) lower, optimize, emit, build -> publish -> load
// for every backend (backends/backend.h says what each step asks of it), and
// the one place where the compiler's exceptions become Error.
#include "runtime/compiler.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <future>
#include <optional>

#include "backends/cache_key.h"
#include "compiler_build_id.h"  // generated: TEGULA_COMPILER_BUILD_ID
#include "frontend/lower.h"
#include "ir/verifier.h"
#include "passes/debug_sites.h"
#include "passes/pointer_effects.h"
#include "runtime/backend_registry.h"
#include "runtime/build_records.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_table.h"
#include "runtime/source_override.h"
#include "runtime/stage_dumps.h"
#include "support/interrupt.h"
#include "support/slow_compile_notice.h"

#ifndef TEGULA_VERSION
#define TEGULA_VERSION "unknown"
#endif

namespace tegula::runtime {

namespace {

// Bump when the driver changes what it produces for the same inputs (the
// kernel ABI, how options reach the backend...), so old entries stop matching.
constexpr const char* kDriverVersion = "driver-2";

bool effective_debug(const frontend::KernelRequest& request, const CompileOptions& options) {
  return options.debug || request.debug;
}

// --- translating the compiler's exceptions ---------------------------------------------

// What a compilation has produced so far, for the error report.
struct Attempt {
  const frontend::KernelRequest* request = nullptr;
  const backends::Backend* backend = nullptr;
  std::string key;
  SourceManager sources;
  Stages stages;
  const SourceOverride* source_override = nullptr;  // the source built instead of the generated one
};

// `loc` is the kernel source of the op or statement being compiled when the
// invariant broke, if known: the report quotes that line.
[[noreturn]] void internal_failure(const Attempt& attempt, std::string what, const SourceLoc& loc = {}) {
  if (attempt.source_override) {
    // Not the compiler's code: the edit is what the toolchain (or the loader) rejected.
    std::string prefix = "internal compiler error: ";
    if (what.starts_with(prefix)) what = what.substr(prefix.size());
    throw to_error(Diagnostic{loc, Diag::InvalidCompileOption,
                              "the source override " + attempt.source_override->path + " does not build: " + what,
                              "fix the edit, or remove the file (or unset TEGULA_OVERRIDE_DIR) to build the "
                              "generated source",
                              ErrorKind::Compile},
                   &attempt.sources);
  }
  if (attempt.backend) write_dumps(*attempt.backend, attempt.request->functions[0].name, attempt.key, attempt.stages);
  std::string dir = dump_directory();
  std::string hint = dir.empty()
                         ? "this is a bug in Tegula; set TEGULA_DUMP_DIR=/some/dir to keep the IR of every "
                           "stage and the generated source, and report it"
                         : "this is a bug in Tegula; the IR of every stage and the generated source are in " + dir;
  if (!what.starts_with("internal compiler error")) what = "internal compiler error: " + what;
  throw to_error(Diagnostic{loc, Diag::InternalCompilerError, std::move(what), std::move(hint), ErrorKind::Compile},
                 &attempt.sources);
}

// Runs `step`, turning every exception into Error.
template <class Step>
auto translate_errors(Attempt& attempt, Step&& step) -> decltype(step()) {
  try {
    return step();
  } catch (const Error&) {
    throw;
  } catch (const Interrupted&) {
    throw;  // the user's Ctrl-C, not a failure of the compile
  } catch (const UserError& e) {
    throw to_error(e.diagnostic(), &attempt.sources);
  } catch (const InternalError& e) {
    internal_failure(attempt, e.what(), e.loc());
  } catch (const std::exception& e) {
    internal_failure(attempt, e.what());
  }
}

// --- one compile ---------------------------------------------------------------------------

// A compile's inputs once the backend is set up: everything the steps below share.
struct Job {
  const frontend::KernelRequest& request;
  const backends::Backend& backend;
  const backends::Target& target;
  bool debug = false;
  std::string key;
  std::string directory;
  bool want_stages = false;
  bool rebuild = false;  // CompileOptions::always_compile: no entry or recorded artifact is reused
  std::optional<SourceOverride> source_override;  // TEGULA_OVERRIDE_DIR's file for this kernel

  const SourceOverride* override_ptr() const { return source_override ? &*source_override : nullptr; }
};

backends::TargetOptions target_options(const frontend::KernelRequest& request, const CompileOptions& options) {
  backends::TargetOptions out;
  out.debug = effective_debug(request, options);
  out.keep_details = options.keep_stages || !dump_directory().empty();
  out.num_warps = options.num_warps;
  out.num_stages = options.num_stages;
  out.fp_fusion = options.fp_fusion;
  out.device = options.device;
  out.arch = options.cuda_arch;
  out.maxnreg = options.maxnreg;
  return out;
}

void add_global(backends::CacheKey& key, const frontend::GlobalValue& value) {
  key.field("kind", static_cast<int64_t>(value.kind));
  key.field("int", value.int_value);
  key.field("float", value.float_value);
  key.field("text", value.text);
  key.field("function", static_cast<int64_t>(value.function));
  // A tuple's elements, and those of the kinds that hold parts (a named tuple's or an aggregate's
  // defaults, a constexpr function's source, an aggregate's methods): a kind without parts keys as it did.
  if (value.kind != frontend::GlobalValue::Kind::Tuple && value.elements.empty()) return;
  key.field("elements", static_cast<int64_t>(value.elements.size()));
  for (const frontend::GlobalValue& element : value.elements) add_global(key, element);
}

void add_arg(backends::CacheKey& key, const frontend::ArgSpec& arg) {
  key.field("arg", static_cast<int64_t>(arg.kind));
  key.field("dtype", ir::to_string(arg.dtype));
  key.field("divisibility", arg.divisibility);
  key.field("is_one", int64_t{arg.is_one});
  if (arg.typed_one) key.field("typed_one", int64_t{1});  // only then: other keys stay as they were
  if (arg.by_value_bytes) key.field("by_value_bytes", arg.by_value_bytes);  // likewise
  add_global(key, arg.value);
  key.field("parts", static_cast<int64_t>(arg.parts.size()));
  for (const frontend::ArgSpec& p : arg.parts) {
    if (arg.kind == frontend::ArgSpec::Kind::Tuple) {  // elements of any kind
      add_arg(key, p);
      continue;
    }
    // a TensorDescriptor's shape and strides
    key.field("part", static_cast<int64_t>(p.kind));
    key.field("dtype", ir::to_string(p.dtype));
    key.field("divisibility", p.divisibility);
    key.field("is_one", int64_t{p.is_one});
  }
  key.field("block_shape", static_cast<int64_t>(arg.block_shape.size()));
  for (int64_t d : arg.block_shape) key.field("block", d);
}

std::string compute_key(const frontend::KernelRequest& request, const backends::Backend& backend,
                        const backends::Target& target, bool debug) {
  backends::CacheKey key;
  key.field("format", std::string("tegula ") + TEGULA_VERSION + " " + kDriverVersion + " cache " +
                          std::to_string(kCacheFormatVersion));
  key.field("compiler_build", TEGULA_COMPILER_BUILD_ID);
  key.field("backend", backend.name());
  key.field("debug", int64_t{debug});
  if (!request.name.empty()) key.field("kernel_name", request.name);  // only then: other keys stay as they were
  key.field("num_warps", int64_t{request.num_warps});  // tl.extra.cuda.num_warps() on every backend
  key.field("functions", static_cast<int64_t>(request.functions.size()));
  for (const frontend::FunctionSource& fn : request.functions) {
    key.field("name", fn.name);
    key.field("filename", fn.filename);
    key.field("first_line", int64_t{fn.first_line});
    key.field("source", fn.source);
    key.field("must_use_result", fn.must_use_result);
    key.field("globals", static_cast<int64_t>(fn.globals.size()));
    for (const auto& [name, value] : fn.globals) {  // std::map: sorted by name
      key.field("global", name);
      add_global(key, value);
    }
  }
  key.field("args", static_cast<int64_t>(request.args.size()));
  for (const frontend::ArgSpec& arg : request.args) add_arg(key, arg);
  target.add_key_fields(key);
  return key.finish();
}

// What the front end, the passes and the code generator make of a request.
struct Generated {
  backends::Generated code;
  backends::KernelInfo info;
};

// Frontend, passes and code generation. Fills attempt.stages.source (and
// .layouts) always and attempt.stages.ir when `keep_ir`, stage by stage, so
// a failure leaves what was produced before it.
Generated generate(Attempt& attempt, const backends::Target& target, bool debug, bool keep_ir,
                   CompileProfile& profile, const SourceOverride* source_override = nullptr) {
  std::optional<PhaseTimer> phase(std::in_place, profile, "frontend");
  ir::Function fn = frontend::lower_kernel(*attempt.request, attempt.sources,
                                           frontend::TargetInfo{target.arch()});
  stats().frontend_runs++;
  ir::verify_or_throw(fn, "lowered");  // optimize() records the "lowered" dump
  passes::refuse_writes_to_read_only(fn);
  phase.emplace(profile, "passes");
  passes::optimize(fn, keep_ir ? &attempt.stages.ir : nullptr, {.keep_descriptor_op = [&](const ir::Function& f, const ir::Op& op) { return target.descriptor_path(f, op); }});
  Generated out;
  out.info.name = fn.name;
  out.info.params = fn.params;
  out.info.debug = debug;
  // The backends number their checks the same way, from the same IR.
  if (debug) out.info.debug_sites = passes::DebugSites(fn).sites();
  out.info.effects = passes::pointer_effects(fn);
  out.info.warnings = fn.warnings;
  phase.emplace(profile, "codegen");
  out.code = target.emit(fn);
  if (source_override) out.code.source = source_override->source;
  out.info.shape = out.code.shape;
  out.info.tensor_maps = out.code.tensor_maps;
  attempt.stages.source = out.code.source;
  attempt.stages.layouts = out.code.layouts;
  return out;
}

CacheManifest manifest_of(const backends::Backend& backend, const backends::KernelInfo& info) {
  CacheManifest manifest;
  manifest.backend = backend.name();
  manifest.kernel_name = info.name;
  manifest.params = info.params;
  manifest.shape = info.shape;
  manifest.debug_sites = info.debug_sites;
  manifest.effects = info.effects;
  manifest.tensor_maps = info.tensor_maps;
  manifest.artifact_extension = backend.artifact_extension();
  return manifest;
}

// The verified entry of job.key, loaded by its backend; null with the reason
// in `*why` for a miss.
std::shared_ptr<CompiledKernel> load_entry(const Job& job, const DiskCache& cache, std::string* why) {
  std::optional<CacheEntry> entry = cache.load(job.key, why);
  if (!entry) return nullptr;
  if (entry->manifest.backend != job.backend.name()) {
    *why = "the entry was built by the " + entry->manifest.backend + " backend";
    return nullptr;
  }
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->name = std::move(entry->manifest.kernel_name);
  kernel->params = std::move(entry->manifest.params);
  kernel->shape = entry->manifest.shape;
  kernel->debug = job.debug;
  kernel->debug_sites = std::move(entry->manifest.debug_sites);
  kernel->effects = std::move(entry->manifest.effects);
  kernel->tensor_maps = std::move(entry->manifest.tensor_maps);
  kernel->loaded = job.backend.load(entry->artifact, *kernel, why);
  if (!kernel->loaded) return nullptr;
  kernel->backend = &job.backend;
  kernel->key = job.key;
  return kernel;
}

bool has_stages(const CompiledKernel& kernel) { return !kernel.stages.ir.empty() || !kernel.stages.source.empty(); }

// The stages of an already built entry: from the disk cache, else by running
// everything again except the toolchain's build (the backend may run what
// its details need: NVRTC, for the PTX and ptxas's report), storing them for
// next time when the entry's manifest is known.
Stages stages_of_entry(const Job& job, const DiskCache& cache, std::optional<CacheManifest> manifest) {
  if (manifest)
    if (std::optional<Stages> stored = cache.load_stages(job.key, *manifest)) return std::move(*stored);
  Attempt attempt{&job.request, &job.backend, job.key, {}, {}, job.override_ptr()};
  CompileProfile unprofiled;
  Generated generated =
      translate_errors(attempt, [&] {
        return generate(attempt, job.target, job.debug, /*keep_ir=*/true, unprofiled, job.override_ptr());
      });
  backends::BuildDetails details =
      translate_errors(attempt, [&] { return job.target.details(generated.code, generated.info.name); });
  attempt.stages.ptx = std::move(details.assembly);
  attempt.stages.compile_log = std::move(details.log);
  if (manifest) {
    try {
      cache.store_stages(job.key, *manifest, attempt.stages);
    } catch (const Error&) {
      // A read-only cache still serves kernels; the stages are simply not kept.
    }
  }
  return std::move(attempt.stages);
}

// The hash of what decides the artifact the backend would build from
// `generated` (runtime/build_records.h), or nullopt when the backend cannot
// say. Domain-separated from cache keys by its format field.
std::optional<std::string> build_inputs(const Job& job, const Generated& generated) {
  backends::CacheKey key;
  key.field("format", std::string("tegula ") + TEGULA_VERSION + " " + kDriverVersion + " build inputs " +
                          std::to_string(kCacheFormatVersion));
  key.field("compiler_build", TEGULA_COMPILER_BUILD_ID);
  key.field("backend", job.backend.name());
  key.field("artifact", job.backend.artifact_extension());
  if (!job.target.add_build_fields(key, generated.code, generated.info.name)) return std::nullopt;
  return key.finish();
}

// Writes the artifact recorded for `inputs` to the new file `built` and
// returns true; false when there is no usable record (a miss: build).
bool copy_recorded_artifact(const DiskCache& cache, const std::string& inputs, const std::string& built,
                            CompileProfile& profile) {
  PhaseTimer phase(profile, "disk cache");  // a lookup by content
  std::optional<std::string> bytes = BuildRecords(cache).find(inputs);
  if (!bytes) return false;
  backends::write_new_file(built, *bytes);
  return true;
}

// The one load-or-build: a verified cache entry, else a build published
// under the entry's lock and loaded exactly like a hit.
std::shared_ptr<CompiledKernel> load_or_build(const Job& job, CompileProfile& profile) {
  std::optional<PhaseTimer> phase(std::in_place, profile, "disk cache");
  DiskCache cache(job.directory);

  // On a miss, wait while another process builds this kernel, then look again.
  std::string why;
  std::shared_ptr<CompiledKernel> kernel = job.rebuild ? nullptr : load_entry(job, cache, &why);
  std::optional<EntryLock> building;
  if (!kernel) {
    building = cache.lock(job.key);
    if (!job.rebuild) kernel = load_entry(job, cache, &why);
    if (!kernel && why != "no entry") stats().disk_rejected++;
  }
  phase.reset();
  if (kernel) {
    building.reset();  // stages_of_entry takes the lock itself
    stats().disk_hits++;
    kernel->from_disk_cache = true;
    if (job.want_stages) {
      kernel->stages = stages_of_entry(job, cache, cache.load_manifest(job.key));
      write_dumps(job.backend, kernel->name, job.key, kernel->stages);
    }
    return kernel;
  }

  // Miss (absent, or failed verification: the new entry overwrites it).
  Attempt attempt{&job.request, &job.backend, job.key, {}, {}, job.override_ptr()};
  Generated generated =
      translate_errors(attempt, [&] {
        return generate(attempt, job.target, job.debug, job.want_stages, profile, job.override_ptr());
      });
  std::string built = cache.temporary_path(job.key, job.backend.artifact_extension());

  // The same source built before, under another key: copied, not built again.
  // The inputs' lock is taken after the entry's (never the other way round),
  // so two processes building one source for two keys build it once. Without
  // the entry's lock (no locks here, a stopped holder) none is taken either:
  // records are written atomically and verified, the lock only saves builds.
  std::optional<std::string> inputs = translate_errors(attempt, [&] { return build_inputs(job, generated); });
  std::optional<EntryLock> building_inputs;
  bool reused = false;
  if (inputs && !job.rebuild) {
    if (building->held()) building_inputs = cache.lock(*inputs);
    reused = translate_errors(attempt, [&] { return copy_recorded_artifact(cache, *inputs, built, profile); });
  }
  // The backend reports rejected source as InternalError (generated code
  // should always build) and trouble with its toolchain as Error or UserError.
  backends::BuildDetails details = translate_errors(attempt, [&] {
    if (reused)
      return job.want_stages ? job.target.details(generated.code, generated.info.name) : backends::BuildDetails{};
    try {
      return job.target.build(generated.code, generated.info.name, built, profile);
    } catch (...) {
      std::remove(built.c_str());
      throw;
    }
  });
  (reused ? stats().reused : stats().builds)++;
  attempt.stages.ptx = std::move(details.assembly);
  attempt.stages.compile_log = std::move(details.log);

  phase.emplace(profile, "store");
  CacheManifest manifest = manifest_of(job.backend, generated.info);
  translate_errors(attempt, [&] {
    cache.store(*building, built, manifest, job.want_stages ? &attempt.stages : nullptr);
  });
  if (inputs && !reused) {
    try {
      BuildRecords(cache).record(*inputs, {job.key, manifest.artifact_extension, manifest.artifact_sha256});
    } catch (const Error&) {
      // The entry is published; only later keys with this source will build it again.
    }
  }
  building_inputs.reset();
  phase.emplace(profile, "load");
  kernel = load_entry(job, cache, &why);
  if (!kernel)
    fail(ErrorKind::Compile, Diag::KernelLoadFailed, "cannot load the compiled kernel: " + why,
         "if the cache directory " + job.directory +
             " is on a file system mounted noexec, set TEGULA_CACHE_DIR to another directory");
  write_dumps(job.backend, kernel->name, job.key, attempt.stages);
  if (job.want_stages) kernel->stages = std::move(attempt.stages);
  kernel->warnings = generated.info.warnings;  // the manifest keeps none
  return kernel;
}

// The backend and the compile's target, checked and set up (the "setup"
// phase: finding the C++ compiler, loading NVRTC...). A missing toolchain
// is the user's error.
std::unique_ptr<backends::Target> set_up(const frontend::KernelRequest& request, const CompileOptions& options,
                                         const backends::Backend& backend, backends::Backend::Setup setup) {
  if (request.functions.empty())
    fail(ErrorKind::Value, Diag::InvalidCompileOption, "the compile request has no kernel function");
  Attempt attempt{&request, nullptr, {}, {}, {}};
  return translate_errors(attempt, [&] { return backend.target(target_options(request, options), setup); });
}

std::string key_for(const frontend::KernelRequest& request, const backends::Backend& backend,
                    const backends::Target& target, bool debug) {
  Attempt attempt{&request, nullptr, {}, {}, {}};
  return translate_errors(attempt, [&] { return compute_key(request, backend, target, debug); });
}

}  // namespace

void CompiledKernel::launch(const int64_t grid[3], std::span<const ArgValue> args,
                            const std::optional<backends::Stream>& stream) const {
  if (!loaded) fail(ErrorKind::Value, Diag::WrongLaunchTarget, "kernel '" + name + "' is not loaded");
  loaded->launch(*this, grid, args, stream);
}

Stats& stats() {
  static Stats counters;
  return counters;
}

std::string cache_directory(const CompileOptions& options) { return resolve_cache_directory(options.cache_dir); }

std::string cache_key(const frontend::KernelRequest& request, const CompileOptions& options) {
  const backends::Backend& backend = backend_named(options.backend);
  std::unique_ptr<backends::Target> target = set_up(request, options, backend, backends::Backend::Setup::Compile);
  return key_for(request, backend, *target, effective_debug(request, options));
}

GeneratedSource generate_source(const frontend::KernelRequest& request, const CompileOptions& options) {
  const backends::Backend& backend = backend_named(options.backend);
  std::unique_ptr<backends::Target> target = set_up(request, options, backend, backends::Backend::Setup::SourceOnly);
  Attempt attempt{&request, &backend, {}, {}, {}};
  CompileProfile unprofiled;
  translate_errors(attempt, [&] {
    return generate(attempt, *target, effective_debug(request, options), /*keep_ir=*/false, unprofiled);
  });
  return GeneratedSource{std::move(attempt.stages.source), std::move(attempt.stages.layouts)};
}

backends::KernelInfo build_artifact(const frontend::KernelRequest& request, const CompileOptions& options,
                                    const std::string& output_path) {
  const backends::Backend& backend = backend_named(options.backend);
  std::unique_ptr<backends::Target> target = set_up(request, options, backend, backends::Backend::Setup::Compile);
  Attempt attempt{&request, &backend, {}, {}, {}};
  CompileProfile unprofiled;
  return translate_errors(attempt, [&] {
    Generated generated = generate(attempt, *target, effective_debug(request, options), /*keep_ir=*/false, unprofiled);
    target->build(generated.code, generated.info.name, output_path, unprofiled);
    return generated.info;
  });
}

namespace {

std::string kernel_name(const frontend::KernelRequest& request) {
  if (!request.name.empty()) return request.name;
  return request.functions.empty() ? std::string("?") : request.functions[0].name;
}

// Lets `notice` follow the phases of `profile` for one compile; the profile
// (the caller's, when it asked for one) outlives the notice.
class NoticeAttachment {
 public:
  NoticeAttachment(CompileProfile& profile, SlowCompileNotice& notice) : profile_(profile) { profile.notice = &notice; }
  ~NoticeAttachment() { profile_.notice = nullptr; }
  NoticeAttachment(const NoticeAttachment&) = delete;
  NoticeAttachment& operator=(const NoticeAttachment&) = delete;

 private:
  CompileProfile& profile_;
};

}  // namespace

std::shared_ptr<CompiledKernel> compile(const frontend::KernelRequest& request, const CompileOptions& options,
                                        CompileProfile* requested_profile) {
  CompileProfile unprofiled;
  CompileProfile& profile = requested_profile ? *requested_profile : unprofiled;
  SlowCompileNotice notice(kernel_name(request), options.backend);
  NoticeAttachment attached(profile, notice);
  std::optional<PhaseTimer> phase(std::in_place, profile, "setup");
  const backends::Backend& backend = backend_named(options.backend);
  std::unique_ptr<backends::Target> target = set_up(request, options, backend, backends::Backend::Setup::Compile);
  phase.emplace(profile, "key");
  bool debug = effective_debug(request, options);
  Job job{request, backend, *target, debug, key_for(request, backend, *target, debug), cache_directory(options),
          options.keep_stages || !dump_directory().empty(), options.always_compile};
  job.source_override = find_source_override(backend, kernel_name(request), job.key);
  if (job.source_override) {
    // Its own entry: the cache never mixes the override's build with the compiler's.
    backends::CacheKey key;
    key.field("key", job.key);
    key.field("source override", job.source_override->source);
    job.key = key.finish();
    // Every compile that takes it says so, built or found in the cache.
    std::fprintf(stderr, "tegula: kernel '%s' is built from %s (TEGULA_OVERRIDE_DIR)\n", kernel_name(request).c_str(),
                 job.source_override->path.c_str());
  }
  phase.reset();
  std::string id = job.directory + "/" + job.key;

  if (job.rebuild) {
    std::shared_ptr<CompiledKernel> kernel = load_or_build(job, profile);
    kernel->origin = std::make_shared<const KernelOrigin>(KernelOrigin{request, options});
    kernel_table().update(id, kernel);  // later lookups find the new build
    return kernel;
  }

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
      kernel = load_or_build(job, profile);
    } catch (...) {
      promise.set_exception(std::current_exception());
      kernel_table().finish(id, nullptr);
      throw;
    }
    kernel->origin = std::make_shared<const KernelOrigin>(KernelOrigin{request, options});
    promise.set_value(kernel);
    kernel_table().finish(id, kernel);
    return kernel;
  }

  if (job.want_stages && !has_stages(*kernel)) {
    // Same code, now with its stages: a copy, because other threads may be reading the shared one.
    auto with_stages = std::make_shared<CompiledKernel>(*kernel);
    DiskCache cache(job.directory);
    with_stages->stages = stages_of_entry(job, cache, cache.load_manifest(job.key));
    write_dumps(backend, with_stages->name, job.key, with_stages->stages);
    kernel_table().update(id, with_stages);
    return with_stages;
  }
  return kernel;
}

Stages stages_of(const CompiledKernel& kernel) {
  if (has_stages(kernel) || !kernel.origin) return kernel.stages;
  CompileOptions options = kernel.origin->options;
  options.keep_stages = true;
  return compile(kernel.origin->request, options)->stages;
}

std::string artifact_of(const CompiledKernel& kernel) {
  if (!kernel.origin || !kernel.backend) return {};
  DiskCache cache(cache_directory(kernel.origin->options));
  std::string path = cache.artifact_path(kernel.key, kernel.backend->artifact_extension());
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return bytes;
}

}  // namespace tegula::runtime
