// The combiner region of reduce and scan as scalar code, shared by the CPU
// and CUDA code generators: both emit it the same way and differ only in
// their context type and in how a constant of a scalar type is declared.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/diagnostic.h"

namespace tegula::backends {

// One application of `op`'s combiner (2N block arguments, accumulated values
// then new ones, yielding N): binds the arguments to `lhs` and `rhs`
// (element expressions), emits the region's ops and assigns the N yielded
// values to `dest`. `declare(type)` is the backend's "const T" for a scalar
// type. With `own_block` the application gets a C++ block of its own, so
// repeated applications do not redeclare names.
template <class Context, class Declare>
void emit_combine_region(Context& ctx, Declare declare, const ir::Op& op, const std::vector<std::string>& lhs,
                         const std::vector<std::string>& rhs, const std::vector<std::string>& dest,
                         bool own_block) {
  ir::BlockId region = op.regions[0];
  const std::vector<ir::ValueId>& args = ctx.fn.block(region).args;
  size_t n = op.operands.size();
  if (own_block) ctx.out.open("");
  for (size_t j = 0; j < n; ++j) {
    ctx.out.line(declare(ctx.fn.type(args[j])) + " " + ctx.name(args[j]) + " = " + lhs[j] + ";");
    ctx.out.line(declare(ctx.fn.type(args[n + j])) + " " + ctx.name(args[n + j]) + " = " + rhs[j] + ";");
  }
  ctx.emit_block_body(region);
  const ir::Op& yield = ctx.terminator(region);
  TEGULA_ASSERT(yield.kind == ir::OpKind::Yield && yield.operands.size() == n,
                std::string(ir::name(op.kind)) + " combiner must yield N values");
  for (size_t j = 0; j < n; ++j) ctx.out.line(dest[j] + " = " + ctx.name(yield.operands[j]) + ";");
  if (own_block) ctx.out.close();
}

// "a[index]" for each array a.
inline std::vector<std::string> indexed(const std::vector<std::string>& arrays, const std::string& index) {
  std::vector<std::string> out;
  for (const std::string& a : arrays) out.push_back(a + "[" + index + "]");
  return out;
}

}  // namespace tegula::backends
