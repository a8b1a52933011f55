#include "fuzz_inputs.h"

#include <string>
#include <vector>

#include "backends/cpu/codegen.h"
#include "frontend/lower.h"
#include "frontend/parser.h"
#include "frontend/request.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/debug_sites.h"
#include "passes/pipeline.h"
#include "support/diagnostic.h"
#include "support/source.h"
#ifdef TEGULA_FUZZ_CUDA_CODEGEN
#include "backends/cuda/codegen.h"
#endif

namespace tegula::fuzz {

namespace {

frontend::GlobalValue module_global(frontend::GlobalValue::Kind kind, const char* path) {
  frontend::GlobalValue g;
  g.kind = kind;
  g.text = path;
  return g;
}

// The names a real kernel module typically imports, so seeds lower instead of
// stopping at the first unknown name.
frontend::FunctionSource kernel_source(std::string_view text) {
  frontend::FunctionSource fs;
  fs.name = "kernel";
  fs.filename = "kernel.py";
  fs.source = std::string(text);
  fs.globals["tl"] = module_global(frontend::GlobalValue::Kind::Language, "tegula.language");
  fs.globals["tegula"] = module_global(frontend::GlobalValue::Kind::Tegula, "tegula");
  fs.globals["triton"] = module_global(frontend::GlobalValue::Kind::Tegula, "triton");
  return fs;
}

// Guessed bindings, by the naming habits of real kernels: the first parameter
// and every one whose name contains "ptr" is a pointer (to int32 when the
// name also says int, idx, hist, count or lock; else to float32), constexpr
// parameters are 16 (a valid block size), the rest int32 scalars.
frontend::ArgSpec guess_arg(size_t index, const frontend::SignatureParam& p) {
  auto says = [&](const char* word) { return p.name.find(word) != std::string::npos; };
  frontend::ArgSpec a;
  if (p.is_constexpr) {
    a.kind = frontend::ArgSpec::Kind::Constexpr;
    a.value.kind = frontend::GlobalValue::Kind::Int;
    a.value.int_value = 16;
  } else if (index == 0 || says("ptr")) {
    a.kind = frontend::ArgSpec::Kind::Pointer;
    bool ints = says("int") || says("idx") || says("hist") || says("count") || says("lock");
    a.dtype = ints ? ir::Scalar::I32 : ir::Scalar::F32;
    a.divisibility = 16;
  } else {
    a.kind = frontend::ArgSpec::Kind::Int;
    a.dtype = ir::Scalar::I32;
  }
  return a;
}

// What the runtime does after optimization (runtime/compiler.cpp: generate),
// minus the C++ compiler and NVRTC.
void generate_code(const ir::Function& fn, bool debug, int arch) {
  if (debug) (void)passes::DebugSites(fn).sites();
  (void)backends::cpu::emit_cpp(fn, {debug});
#ifdef TEGULA_FUZZ_CUDA_CODEGEN
  backends::cuda::CodegenOptions options;
  options.arch = arch;
  options.debug = debug;
  (void)backends::cuda::emit_cuda(fn, options);
#else
  (void)arch;
#endif
}

}  // namespace

bool compile_kernel_source(std::string_view text) {
  SourceManager sources;
  try {
    int32_t file = sources.add("kernel.py", std::string(text));
    frontend::parse_function(sources, file);

    frontend::KernelRequest request;
    request.functions.push_back(kernel_source(text));
    std::vector<frontend::SignatureParam> params = frontend::parse_signature(request.functions[0], sources);
    for (size_t i = 0; i < params.size(); ++i) request.args.push_back(guess_arg(i, params[i]));
    // The length picks the variant, so every input has one fixed path.
    request.debug = text.size() % 2 == 1;
    int arch = text.size() % 4 >= 2 ? 80 : 90;

    ir::Function fn = frontend::lower_kernel(request, sources);
    ir::verify_or_throw(fn, "lowered");
    passes::optimize(fn);
    ir::verify_or_throw(fn, "optimized");
    generate_code(fn, request.debug, arch);
    return true;
  } catch (const UserError& e) {
    (void)render(e.diagnostic(), &sources);
    return false;
  }
}

bool check_ir_text(std::string_view text) {
  std::string copy(text);
  try {
    ir::Function fn = ir::parse(copy);
    if (!ir::verify(fn).empty()) return false;
    // Printing must handle anything the verifier accepts.
    (void)ir::print(fn);
    passes::optimize(fn);
    ir::verify_or_throw(fn, "optimized");
    (void)ir::print(fn);
    return true;
  } catch (const UserError& e) {
    SourceManager sources;
    sources.add("<ir>", copy);
    (void)render(e.diagnostic(), &sources);
    return false;
  }
}

}  // namespace tegula::fuzz
