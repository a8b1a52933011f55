#include "backends/cpu/backend.h"

#include "backends/cache_key.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/toolchain.h"

namespace tegula::backends::cpu {

namespace {

class CpuTarget : public Target {
 public:
  explicit CpuTarget(const TargetOptions& options) : debug_(options.debug) {}

  // The toolchain's identity: another compiler, other flags or another CPU
  // (-march=native) make other code.
  void add_key_fields(CacheKey& key) const override {
    const Toolchain& found = toolchain();
    key.field("compiler", found.compiler);
    key.field("identity", found.identity);
    key.field("flags", found.flags);
    key.field("host", found.host);
  }

  // The text g++ compiles (less its comments: the kernel's name, source
  // locations) and the toolchain: the same make the same shared object,
  // whatever the request.
  // Its entry point has one name for every kernel (abi::kEntrySymbol), the
  // precompiled prelude is the same code as the prelude in the text, and the
  // linker (ld.gold or not) links the same code.
  bool add_build_fields(CacheKey& key, const Generated& generated, const std::string&) const override {
    add_key_fields(key);
    key.field("source", compiled_text(generated.source));
    return true;
  }

  Generated emit(const ir::Function& fn) const override { return Generated{emit_cpp(fn, {debug_}), {}, {}, 0}; }

  BuildDetails build(const Generated& generated, const std::string& kernel_name, const std::string& output_path,
                     CompileProfile& profile) const override {
    PhaseTimer phase(profile, "c++");
    compile_shared_object(generated.source, output_path);
    return {};
  }

 private:
  bool debug_;
};

constexpr Output kOutputs[] = {{"cpp", OutputKind::Source}};

class CpuBackend : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  BackendKind kind() const override { return BackendKind::Host; }
  std::string_view description() const override { return "the CPU"; }
  std::span<const Output> outputs() const override { return kOutputs; }
  std::string_view source_extension() const override { return "cpp"; }
  std::string_view artifact_extension() const override { return "so"; }

  // The compiler is found once per process (its identity is part of every
  // key); a missing one is the user's error (UserError, E0904).
  std::unique_ptr<Target> target(const TargetOptions& options, Setup setup) const override {
    if (setup == Setup::Compile) toolchain();
    return std::make_unique<CpuTarget>(options);
  }

  std::shared_ptr<const LoadedKernel> load(const Artifact& artifact, const KernelInfo& info,
                                           std::string* why) const override {
    std::shared_ptr<CpuKernel> kernel;
    try {
      kernel = CpuKernel::open(artifact.path);
    } catch (const LibraryError& e) {
      *why = e.what();
      return nullptr;
    }
    // dlopen reads the path again: if a writer renamed a new build over it
    // in between, what got loaded is not what was verified. Drop it; the
    // driver takes the entry lock and looks again.
    if (!artifact.still_at_path()) {
      *why = "the shared object was replaced while it was being loaded";
      return nullptr;
    }
    return kernel;
  }
};

}  // namespace

const Backend& backend() {
  static const CpuBackend instance;
  return instance;
}

}  // namespace tegula::backends::cpu
