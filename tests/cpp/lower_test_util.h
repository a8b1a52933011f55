// Helpers for front-end tests: build a KernelRequest from a source string and
// lower it, capturing either the printed IR or the rendered diagnostic.
#pragma once

#include <string>
#include <vector>

#include "frontend/lower.h"
#include "frontend/request.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/diagnostic.h"

namespace tegula::testing {

inline frontend::ArgSpec ptr_arg(ir::Scalar s, int64_t div = 16) {
  frontend::ArgSpec a;
  a.kind = frontend::ArgSpec::Kind::Pointer;
  a.dtype = s;
  a.divisibility = div;
  return a;
}
inline frontend::ArgSpec int_arg(ir::Scalar s = ir::Scalar::I32, int64_t div = 1) {
  frontend::ArgSpec a;
  a.kind = frontend::ArgSpec::Kind::Int;
  a.dtype = s;
  a.divisibility = div;
  return a;
}
inline frontend::ArgSpec float_arg() {
  frontend::ArgSpec a;
  a.kind = frontend::ArgSpec::Kind::Float;
  a.dtype = ir::Scalar::F32;
  return a;
}
inline frontend::ArgSpec const_int(int64_t v) {
  frontend::ArgSpec a;
  a.kind = frontend::ArgSpec::Kind::Constexpr;
  a.value.kind = frontend::GlobalValue::Kind::Int;
  a.value.int_value = v;
  return a;
}
inline frontend::ArgSpec const_dtype(const std::string& name) {
  frontend::ArgSpec a;
  a.kind = frontend::ArgSpec::Kind::Constexpr;
  a.value.kind = frontend::GlobalValue::Kind::DType;
  a.value.text = name;
  return a;
}

inline frontend::FunctionSource source(const std::string& name, const std::string& text, int first_line = 1) {
  frontend::FunctionSource fs;
  fs.name = name;
  fs.filename = "kernel.py";
  fs.source = text;
  fs.first_line = first_line;
  frontend::GlobalValue tl;
  tl.kind = frontend::GlobalValue::Kind::Language;
  tl.text = "tegula.language";
  fs.globals["tl"] = tl;
  return fs;
}

struct LowerResult {
  std::string ir;     // printed IR without locations (empty on error)
  std::string error;  // rendered diagnostic (empty on success)
  bool ok() const { return error.empty(); }
};

inline LowerResult lower(const frontend::KernelRequest& request) {
  SourceManager sources;
  LowerResult r;
  try {
    ir::Function fn = frontend::lower_kernel(request, sources);
    std::string problem = ir::verify(fn);
    if (!problem.empty()) return LowerResult{"", "VERIFIER: " + problem + "\n" + ir::print(fn)};
    r.ir = ir::print(fn, ir::PrintOptions{false});
  } catch (const UserError& e) {
    r.error = render(e.diagnostic(), &sources);
  }
  return r;
}

inline LowerResult lower(const std::string& text, std::vector<frontend::ArgSpec> args, int first_line = 1) {
  frontend::KernelRequest request;
  request.functions.push_back(source("k", text, first_line));
  request.args = std::move(args);
  return lower(request);
}

}  // namespace tegula::testing
