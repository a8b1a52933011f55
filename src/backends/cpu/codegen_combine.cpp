#include "backends/cpu/codegen_combine.h"

#include "backends/combine_emitter.h"

namespace tegula::backends::cpu {

void emit_combine(CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& lhs,
                  const std::vector<std::string>& rhs, const std::vector<std::string>& dest, bool own_block) {
  emit_combine_region(ctx, [](const ir::Type& t) { return c_const(t); }, op, lhs, rhs, dest, own_block);
}

}  // namespace tegula::backends::cpu
