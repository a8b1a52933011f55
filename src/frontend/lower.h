// Semantic analysis and IR construction: AST of the kernel (and every @jit
// function it calls, inlined) + argument specialization -> tile IR.
//
// This is where names are resolved, constexprs are evaluated, tile shapes and
// dtypes are inferred with Triton's broadcasting and promotion rules, and
// every user error gets its location.
#pragma once

#include "frontend/request.h"
#include "ir/ir.h"
#include "support/source.h"

namespace tegula::frontend {

struct SignatureParam {
  std::string name;
  bool is_constexpr = false;  // annotated `tl.constexpr` / `constexpr`
  bool has_default = false;
};

// The parameters of a kernel as written, for argument binding on the host.
// Throws UserError on a syntax error.
std::vector<SignatureParam> parse_signature(const FunctionSource& fn, SourceManager& sources);

// Builds the tile IR of request.functions[0] for `target`. Registers every
// source text in `sources` (so diagnostics can quote them). Throws UserError.
ir::Function lower_kernel(const KernelRequest& request, SourceManager& sources, const TargetInfo& target = {});

}  // namespace tegula::frontend
