#include "backends/cuda/codegen_combine.h"

#include "support/diagnostic.h"

namespace tegula::backends::cuda {

void emit_combine(CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& lhs,
                  const std::vector<std::string>& rhs, const std::vector<std::string>& dest, bool own_block) {
  ir::BlockId region = op.regions[0];
  const std::vector<ir::ValueId>& args = ctx.fn.block(region).args;
  size_t n = op.operands.size();
  if (own_block) ctx.out.open("");
  for (size_t j = 0; j < n; ++j) {
    ctx.out.line(c_const(ctx.fn.type(args[j])) + " " + ctx.name(args[j]) + " = " + lhs[j] + ";");
    ctx.out.line(c_const(ctx.fn.type(args[n + j])) + " " + ctx.name(args[n + j]) + " = " + rhs[j] + ";");
  }
  ctx.emit_block_body(region);
  const ir::Op& yield = ctx.terminator(region);
  TEGULA_ASSERT(yield.kind == ir::OpKind::Yield && yield.operands.size() == n,
                std::string(ir::name(op.kind)) + " combiner must yield N values");
  for (size_t j = 0; j < n; ++j) ctx.out.line(dest[j] + " = " + ctx.name(yield.operands[j]) + ";");
  if (own_block) ctx.out.close();
}

std::vector<std::string> indexed(const std::vector<std::string>& arrays, const std::string& index) {
  std::vector<std::string> out;
  for (const std::string& a : arrays) out.push_back(a + "[" + index + "]");
  return out;
}

}  // namespace tegula::backends::cuda
