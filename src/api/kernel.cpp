// The C++ API (include/tegula/tegula.hpp) over the runtime: a kernel file is
// read and bound to a signature as `tegula compile` does (cli/kernel_file.h,
// cli/signature.h), compiled by runtime::compile, and launched through
// CompiledKernel::launch, the path Python's launcher ends in. Every error
// leaves as a KernelError with the code Python would report.
#include <tegula/tegula.hpp>

#include <exception>
#include <span>

#include "backends/backend.h"
#include "cli/kernel_file.h"
#include "cli/signature.h"
#include "runtime/backend_registry.h"
#include "runtime/compiler.h"
#include "support/diagnostic.h"
#include "support/error.h"

namespace tegula {

struct Kernel::Impl {
  std::shared_ptr<runtime::CompiledKernel> compiled;
  std::string backend;
  int device = 0;
};

namespace {

KernelError as_kernel_error(Diag code, const std::string& message) {
  return KernelError(std::string(code_of(code)), message);
}

// Runs `body`, turning what the layers below throw into KernelError.
template <class Body>
auto reporting_errors(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const KernelError&) {
    throw;
  } catch (const Error& e) {
    throw as_kernel_error(e.code(), e.what());
  } catch (const tools::SignatureError& e) {
    throw as_kernel_error(Diag::CliSignature, e.what());
  } catch (const tools::FileError& e) {
    throw as_kernel_error(Diag::CliUnreadableFile, e.what());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw as_kernel_error(Diag::InternalCompilerError, std::string("internal error: ") + e.what());
  }
}

const ast::FunctionDef& select_kernel(const tools::KernelFile& file, const std::string& name) {
  std::vector<const ast::FunctionDef*> jit = file.jit_functions();
  if (!name.empty()) {
    if (const ast::FunctionDef* fn = file.find_function(name)) return *fn;
  } else if (jit.size() == 1) {
    return *jit.front();
  }
  std::string known;
  for (const ast::FunctionDef* fn : jit) known += (known.empty() ? "" : ", ") + fn->name;
  throw as_kernel_error(Diag::CliUsage, (name.empty() ? file.path() + " has " + std::to_string(jit.size()) +
                                                            " @jit functions; name one: " + file.path() + "::NAME"
                                                      : "no function '" + name + "' in " + file.path()) +
                                            (known.empty() ? " (it has no @jit functions)" : "; its @jit functions: " + known));
}

}  // namespace

Kernel Kernel::compile(const std::string& target, const Options& options) {
  return reporting_errors([&] {
    if (!runtime::find_backend(options.backend))
      throw as_kernel_error(Diag::InvalidCompileOption,
                            "backend must be " + runtime::backend_names() + ", got '" + options.backend + "'");
    size_t sep = target.rfind("::");
    tools::KernelFile file(target.substr(0, sep));
    const ast::FunctionDef& kernel = select_kernel(file, sep == std::string::npos ? "" : target.substr(sep + 2));
    frontend::KernelRequest request;
    request.functions = file.collect_functions(kernel);
    std::vector<tools::KernelParam> params = file.kernel_params(kernel, request.functions.front());
    request.args = tools::bind_signature(kernel.name, options.signature, params, options.consts);
    request.debug = options.debug;

    runtime::CompileOptions compile_options;
    compile_options.backend = options.backend;
    compile_options.device = options.device;
    compile_options.cuda_arch = options.cuda_arch;
    compile_options.num_warps = options.num_warps;
    compile_options.num_stages = options.num_stages;
    compile_options.debug = options.debug;
    compile_options.cache_dir = options.cache_dir;
    auto impl = std::make_shared<Impl>();
    impl->compiled = runtime::compile(request, compile_options);
    impl->backend = options.backend;
    impl->device = options.device;
    return Kernel(std::move(impl));
  });
}

void Kernel::launch(std::array<int64_t, 3> grid, const std::vector<Arg>& args, void* stream) const {
  reporting_errors([&] {
    std::vector<runtime::ArgValue> values;
    values.reserve(args.size());
    for (const Arg& arg : args) {
      runtime::ArgValue v;
      v.kind = static_cast<runtime::ArgValue::Kind>(static_cast<int>(arg.kind));
      v.bits = arg.bits;
      v.real = arg.real;
      values.push_back(v);
    }
    const runtime::CompiledKernel& kernel = *impl_->compiled;
    std::optional<backends::Stream> where;
    if (kernel.backend->kind() == backends::BackendKind::Device)
      where = backends::Stream{reinterpret_cast<uintptr_t>(stream), impl_->device};
    kernel.launch(grid.data(), std::span<const runtime::ArgValue>(values), where);
  });
}

const std::string& Kernel::name() const { return impl_->compiled->name; }

const std::string& Kernel::backend() const { return impl_->backend; }

std::vector<std::string> Kernel::parameters() const {
  std::vector<std::string> out;
  for (const ir::Param& p : impl_->compiled->params) out.push_back(p.name);
  return out;
}

const char* version() { return TEGULA_VERSION; }

}  // namespace tegula
