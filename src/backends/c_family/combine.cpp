#include "backends/c_family/combine.h"

#include "support/diagnostic.h"

namespace tegula::backends::c_family {

void emit_combine(Printer& p, const ir::Op& op, const std::vector<std::string>& lhs,
                  const std::vector<std::string>& rhs, const std::vector<std::string>& dest, bool own_block) {
  ir::BlockId region = op.regions[0];
  const std::vector<ir::ValueId>& args = p.fn.block(region).args;
  size_t n = op.operands.size();
  if (own_block) p.out.open("");
  for (size_t j = 0; j < n; ++j) {
    p.out.line(p.const_type(p.fn.type(args[j])) + " " + p.name(args[j]) + " = " + lhs[j] + ";");
    p.out.line(p.const_type(p.fn.type(args[n + j])) + " " + p.name(args[n + j]) + " = " + rhs[j] + ";");
  }
  p.emit_block_body(region);
  const ir::Op& yield = p.terminator(region);
  TEGULA_ASSERT(yield.kind == ir::OpKind::Yield && yield.operands.size() == n,
                std::string(ir::name(op.kind)) + " combiner must yield N values");
  for (size_t j = 0; j < n; ++j) p.out.line(dest[j] + " = " + p.name(yield.operands[j]) + ";");
  if (own_block) p.out.close();
}

std::vector<std::string> indexed(const std::vector<std::string>& arrays, const std::string& index) {
  std::vector<std::string> out;
  for (const std::string& a : arrays) out.push_back(a + "[" + index + "]");
  return out;
}

}  // namespace tegula::backends::c_family
