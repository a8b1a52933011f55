// libFuzzer target for the front end: arbitrary bytes are taken as the source
// of one kernel, parsed, and when that succeeds lowered to tile IR and
// optimized. A UserError is the expected answer to bad input and is rendered
// (so diagnostics with odd locations are exercised too); anything else that
// escapes (InternalError, another exception, a crash, a sanitizer report, a
// hang) is a compiler bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/lower.h"
#include "frontend/parser.h"
#include "frontend/request.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "support/diagnostic.h"
#include "support/source.h"

using namespace tegula;

namespace {

frontend::GlobalValue module_global(frontend::GlobalValue::Kind kind, const char* path) {
  frontend::GlobalValue g;
  g.kind = kind;
  g.text = path;
  return g;
}

// The names a real kernel module typically imports, so seeds lower instead of
// stopping at the first unknown name.
frontend::FunctionSource kernel_source(const std::string& text) {
  frontend::FunctionSource fs;
  fs.name = "kernel";
  fs.filename = "kernel.py";
  fs.source = text;
  fs.globals["tl"] = module_global(frontend::GlobalValue::Kind::Language, "tegula.language");
  fs.globals["tegula"] = module_global(frontend::GlobalValue::Kind::Tegula, "tegula");
  fs.globals["triton"] = module_global(frontend::GlobalValue::Kind::Tegula, "triton");
  return fs;
}

// Guessed bindings: the first parameter is an f32 pointer (every seed kernel
// takes one first), constexpr parameters are 16 (a valid block size), the
// rest are i32 scalars.
frontend::ArgSpec guess_arg(size_t index, const frontend::SignatureParam& p) {
  frontend::ArgSpec a;
  if (p.is_constexpr) {
    a.kind = frontend::ArgSpec::Kind::Constexpr;
    a.value.kind = frontend::GlobalValue::Kind::Int;
    a.value.int_value = 16;
  } else if (index == 0) {
    a.kind = frontend::ArgSpec::Kind::Pointer;
    a.dtype = ir::Scalar::F32;
    a.divisibility = 16;
  } else {
    a.kind = frontend::ArgSpec::Kind::Int;
    a.dtype = ir::Scalar::I32;
  }
  return a;
}

void compile(const std::string& text) {
  SourceManager sources;
  try {
    int32_t file = sources.add("kernel.py", text);
    frontend::parse_function(sources, file);

    frontend::KernelRequest request;
    request.functions.push_back(kernel_source(text));
    std::vector<frontend::SignatureParam> params = frontend::parse_signature(request.functions[0], sources);
    for (size_t i = 0; i < params.size(); ++i) request.args.push_back(guess_arg(i, params[i]));

    ir::Function fn = frontend::lower_kernel(request, sources);
    ir::verify_or_throw(fn, "lowered");
    passes::optimize(fn);
    ir::verify_or_throw(fn, "optimized");
  } catch (const UserError& e) {
    (void)render(e.diagnostic(), &sources);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  compile(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
