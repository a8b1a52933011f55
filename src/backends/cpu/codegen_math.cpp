// `math` and `hint` ops as C++ element expressions.
//
// A `math` op calls the C library function of its compute type: `tanf` for
// float (f16/bf16 compute in float and round back), `tan` for double. With
// SLEEF's vector library linked (prelude.h declares the vector versions),
// g++ vectorizes the element loops that call them; rint, round, trunc and
// copysign vectorize as plain instructions. A `hint` is its operand: its
// facts were used by the axis analysis before code generation.
#include <string>
#include <vector>

#include "backends/cpu/codegen_context.h"
#include "ir/math_ops.h"

namespace tegula::backends::cpu {

std::string math_expr(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  if (op.kind == ir::OpKind::Hint) return operands[0];
  ir::Scalar s = ctx.fn.type(op.results[0]).scalar;
  const ir::MathFunction& f = ir::math_function_of(op);
  std::string call = std::string(f.name) + (c_compute(s) == "float" ? "f(" : "(");
  for (size_t i = 0; i < operands.size(); ++i) call += (i ? ", " : "") + to_compute(s, operands[i]);
  return from_compute(s, call + ")");
}

}  // namespace tegula::backends::cpu
