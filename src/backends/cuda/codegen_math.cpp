// `math` and `hint` ops as CUDA element expressions.
//
// A `math` op calls the CUDA math library function of its compute type:
// `tanf` for float (f16/bf16 compute in float and round back), `tan` for
// double. NVRTC compiles without --use_fast_math, so these are the accurate
// versions (the CUDA C Programming Guide lists their ulp bounds), not the
// __tanf-style intrinsics. A `hint` is its operand: its facts were used by
// the axis analysis and the layout plan before code generation.
#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "ir/math_ops.h"

namespace tegula::backends::cuda {

std::string math_expr(const CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  if (op.kind == ir::OpKind::Hint) return operands[0];
  ir::Scalar s = ctx.fn.type(op.results[0]).scalar;
  const ir::MathFunction& f = ir::math_function_of(op);
  std::string call = std::string(f.name) + (c_compute(s) == "float" ? "f(" : "(");
  for (size_t i = 0; i < operands.size(); ++i) call += (i ? ", " : "") + to_compute(s, operands[i]);
  return from_compute(s, call + ")");
}

}  // namespace tegula::backends::cuda
