// dot: out = a @ b + acc over the last two dims (a leading batch dim is
// allowed), as plain loops ordered m, k, n so the innermost loop streams
// through rows of b and out and vectorizes.
//
// Float dots accumulate in float (double for f64) with one fused
// multiply-add per product; f16/bf16 results are rounded once at the end.
// Integer dots accumulate in the result type, wrapping. The `precision` attr
// (tf32...) asks for less than IEEE fp32 and is ignored: the CPU computes
// full fp32.
#include <string>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

void emit_dot(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.operands.size() == 2 || op.operands.size() == 3, "dot takes a, b [, acc]");
  ir::ValueId a = op.operands[0], b = op.operands[1], result = op.results[0];
  const ir::Type& ta = ctx.fn.type(a);
  const ir::Type& tb = ctx.fn.type(b);
  const ir::Type& tr = ctx.fn.type(result);
  TEGULA_ASSERT(ta.rank() == tr.rank() && tb.rank() == tr.rank() && (tr.rank() == 2 || tr.rank() == 3),
                "dot operands must be 2-D (or 3-D batched)");
  size_t r = static_cast<size_t>(tr.rank());
  int64_t batch = r == 3 ? tr.shape[0] : 1;
  int64_t m = tr.shape[r - 2], n = tr.shape[r - 1], k = ta.shape[r - 1];
  TEGULA_ASSERT(ta.shape[r - 2] == m && tb.shape[r - 2] == k && tb.shape[r - 1] == n, "dot shape mismatch");

  ir::Scalar rs = tr.scalar;
  bool is_float = ir::is_float(rs);
  std::string acc_type = is_float ? (rs == ir::Scalar::F64 ? "double" : "float") : c_scalar(rs);
  // Converts an input element to the accumulation type.
  auto widen = [&](ir::Scalar s, const std::string& e) {
    std::string v = to_compute(s, e);
    return "(" + acc_type + ")" + v;
  };

  ctx.declare(result);
  std::string accum = ctx.name(result);
  if (is_half(rs)) {
    accum = ctx.fresh("accum");
    ctx.declare_array("float", 4, tr.numel(), accum);
  }
  std::string x = ctx.fresh("x");
  ctx.open_element_loop(x, tr.numel());
  ctx.out.line(accum + "[" + x + "] = " +
               (op.operands.size() == 3 ? widen(ctx.fn.type(op.operands[2]).scalar, ctx.name(op.operands[2]) + "[" + x + "]")
                                        : acc_type + "()") +
               ";");
  ctx.out.close();

  std::string ib = ctx.fresh("batch"), im = ctx.fresh("m"), ik = ctx.fresh("k"), in = ctx.fresh("n");
  auto loop = [&](const std::string& i, int64_t count) {
    ctx.out.open("for (int " + i + " = 0; " + i + " < " + std::to_string(count) + "; ++" + i + ")");
  };
  std::string a_row = ib + " * " + std::to_string(m * k) + " + " + im + " * " + std::to_string(k);
  std::string b_row = ib + " * " + std::to_string(k * n) + " + " + ik + " * " + std::to_string(n);
  std::string out_row = ib + " * " + std::to_string(m * n) + " + " + im + " * " + std::to_string(n);
  loop(ib, batch);
  loop(im, m);
  loop(ik, k);
  std::string lhs = ctx.fresh("lhs");
  ctx.out.line("const " + acc_type + " " + lhs + " = " + widen(ta.scalar, ctx.name(a) + "[" + a_row + " + " + ik + "]") +
               ";");
  ctx.out.line("TG_IVDEP");
  loop(in, n);
  std::string rhs = widen(tb.scalar, ctx.name(b) + "[" + b_row + " + " + in + "]");
  std::string out = accum + "[" + out_row + " + " + in + "]";
  if (is_float) {
    ctx.out.line(out + " = std::fma(" + lhs + ", " + rhs + ", " + out + ");");
  } else {
    ctx.out.line(out + " = tg_add(" + out + ", tg_mul(" + lhs + ", " + rhs + "));");
  }
  for (int i = 0; i < 4; ++i) ctx.out.close();

  if (is_half(rs)) {
    ctx.open_element_loop(x, tr.numel());
    ctx.out.line(ctx.name(result) + "[" + x + "] = " + from_compute(rs, accum + "[" + x + "]") + ";");
    ctx.out.close();
  }
}

}  // namespace tegula::backends::cpu
