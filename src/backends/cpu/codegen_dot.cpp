// dot: out = a @ b + acc over the last two dims (a leading batch dim is
// allowed).
//
// Float dots accumulate in float (double for f64) with one fused
// multiply-add per product, in k order, starting from acc (except bf16 x
// bf16 on AMX, below); f16/bf16 results are rounded once at the end. Integer dots accumulate in the result type,
// wrapping. The `precision` attr (tf32...) asks for less than IEEE fp32 and
// is ignored: the CPU computes full fp32.
//
// Float accumulation calls the prelude's register-blocked tg_dot_f32 (the
// speed of a matmul kernel is this call). f16/bf16 inputs are widened to
// float tiles once per dot, not once per product. A bf16 x bf16 dot of whole
// 32 x 32 blocks first tries AMX tiles (prelude_gemm.h; 3x the speed of a
// bf16 matmul on a CPU that has them), which add products in pairs and flush
// subnormals: the same fp32 accumulation of exact products, in another
// order, so not the bits of the FMA loop. The accumulator is the result's own storage, which the loop emitter may have planned to be the
// storage of `acc` itself (acc = tl.dot(a, b, acc) in a K loop): then the
// dot updates it in place and copies nothing. f64 and integer dots are plain
// m, k, n loops whose innermost loop streams through rows of b and out.
#include <string>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

struct DotShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

DotShape dot_shape(const CodegenContext& ctx, const ir::Op& op) {
  const ir::Type& ta = ctx.fn.type(op.operands[0]);
  const ir::Type& tb = ctx.fn.type(op.operands[1]);
  const ir::Type& tr = ctx.fn.type(op.results[0]);
  TEGULA_ASSERT(ta.rank() == tr.rank() && tb.rank() == tr.rank() && (tr.rank() == 2 || tr.rank() == 3),
                "dot operands must be 2-D (or 3-D batched)");
  size_t r = static_cast<size_t>(tr.rank());
  DotShape s;
  s.batch = r == 3 ? tr.shape[0] : 1;
  s.m = tr.shape[r - 2], s.n = tr.shape[r - 1], s.k = ta.shape[r - 1];
  TEGULA_ASSERT(ta.shape[r - 2] == s.m && tb.shape[r - 2] == s.k && tb.shape[r - 1] == s.n, "dot shape mismatch");
  return s;
}

// Fills the accumulator array `accum` (of `acc_type`, numel elements) with
// acc widened, or zeros without acc; nothing when it already is acc's storage.
void init_accumulator(CodegenContext& ctx, const ir::Op& op, const std::string& accum, const std::string& acc_type,
                      int64_t numel) {
  bool has_acc = op.operands.size() == 3;
  if (has_acc && ctx.name(op.operands[2]) == accum) return;
  std::string x = ctx.fresh("x");
  ctx.open_element_loop(x, numel);
  std::string value = acc_type + "()";
  if (has_acc) {
    ir::ValueId acc = op.operands[2];
    value = "(" + acc_type + ")" + to_compute(ctx.fn.type(acc).scalar, ctx.name(acc) + "[" + x + "]");
  }
  ctx.out.line(accum + "[" + x + "] = " + value + ";");
  ctx.out.close();
}

// A float view of operand `v`: its own array for f32, else a float copy
// (f16/bf16 tiles through prelude_gemm.h's vector widening).
std::string float_operand(CodegenContext& ctx, ir::ValueId v) {
  const ir::Type& t = ctx.fn.type(v);
  if (t.scalar == ir::Scalar::F32) return ctx.name(v);
  std::string widened = ctx.fresh("wide");
  ctx.declare_array("float", 4, t.numel(), widened);
  if (is_half(t.scalar)) {
    std::string widen = t.scalar == ir::Scalar::F16 ? "tg_widen_f16" : "tg_widen_bf16";
    ctx.out.line(widen + "(" + ctx.name(v) + ", " + widened + ", " + std::to_string(t.numel()) + ");");
    return widened;
  }
  std::string x = ctx.fresh("x");
  ctx.open_element_loop(x, t.numel());
  ctx.out.line(widened + "[" + x + "] = (float)" + to_compute(t.scalar, ctx.name(v) + "[" + x + "]") + ";");
  ctx.out.close();
  return widened;
}

// Whether a dot may run on AMX tiles (prelude_gemm.h's tg_dot_bf16_amx): bf16
// operands, no batch, whole 32 x 32 blocks of the result, k a multiple of 32.
bool amx_candidate(const CodegenContext& ctx, const ir::Op& op, const DotShape& s) {
  for (int i = 0; i < 2; ++i)
    if (ctx.fn.type(op.operands[static_cast<size_t>(i)]).scalar != ir::Scalar::BF16) return false;
  return s.batch == 1 && s.m % 32 == 0 && s.n % 32 == 0 && s.k % 32 == 0;
}

void emit_float_dot(CodegenContext& ctx, const ir::Op& op, const DotShape& s) {
  ir::ValueId result = op.results[0];
  const ir::Type& tr = ctx.fn.type(result);
  std::string shape = std::to_string(s.m) + ", " + std::to_string(s.n) + ", " + std::to_string(s.k);
  bool amx = amx_candidate(ctx, op, s);
  std::string a, b;
  if (!amx) {
    a = float_operand(ctx, op.operands[0]);
    b = float_operand(ctx, op.operands[1]);
  }
  ctx.declare(result);
  std::string accum = ctx.name(result);
  if (tr.scalar != ir::Scalar::F32) {
    accum = ctx.fresh("accum");
    ctx.declare_array("float", 4, tr.numel(), accum);
  }
  init_accumulator(ctx, op, accum, "float", tr.numel());
  if (amx) {
    // The tiles when the host and the OS allow them; else widening, as for f16.
    std::string packed = ctx.fresh("packed");
    ctx.declare_array("uint16_t", 2, s.k * s.n, packed);
    ctx.out.open("if (!tg_dot_bf16_amx<" + shape + ">(" + ctx.name(op.operands[0]) + ", " + ctx.name(op.operands[1]) +
                 ", " + accum + ", " + packed + "))");
    a = float_operand(ctx, op.operands[0]);
    b = float_operand(ctx, op.operands[1]);
  }
  std::string call = "tg_dot_f32<" + shape + ">";
  if (s.batch == 1) {
    ctx.out.line(call + "(" + a + ", " + b + ", " + accum + ");");
  } else {
    std::string ib = ctx.fresh("batch");
    ctx.out.open("for (int " + ib + " = 0; " + ib + " < " + std::to_string(s.batch) + "; ++" + ib + ")");
    ctx.out.line(call + "(" + a + " + " + ib + " * " + std::to_string(s.m * s.k) + ", " + b + " + " + ib + " * " +
                 std::to_string(s.k * s.n) + ", " + accum + " + " + ib + " * " + std::to_string(s.m * s.n) + ");");
    ctx.out.close();
  }
  if (amx) ctx.out.close();
  if (accum != ctx.name(result)) {
    std::string x = ctx.fresh("x");
    ctx.open_element_loop(x, tr.numel());
    ctx.out.line(ctx.name(result) + "[" + x + "] = " + from_compute(tr.scalar, accum + "[" + x + "]") + ";");
    ctx.out.close();
  }
}

// f64 and integer dots: m, k, n loops accumulating in the result's storage.
void emit_plain_dot(CodegenContext& ctx, const ir::Op& op, const DotShape& s) {
  ir::ValueId a = op.operands[0], b = op.operands[1], result = op.results[0];
  ir::Scalar rs = ctx.fn.type(result).scalar;
  bool is_float = ir::is_float(rs);
  std::string acc_type = c_scalar(rs);
  auto widen = [&](ir::ValueId v, const std::string& index) {
    return "(" + acc_type + ")" + to_compute(ctx.fn.type(v).scalar, ctx.name(v) + "[" + index + "]");
  };
  ctx.declare(result);
  std::string accum = ctx.name(result);
  init_accumulator(ctx, op, accum, acc_type, ctx.fn.type(result).numel());

  std::string ib = ctx.fresh("batch"), im = ctx.fresh("m"), ik = ctx.fresh("k"), in = ctx.fresh("n");
  auto loop = [&](const std::string& i, int64_t count) {
    ctx.out.open("for (int " + i + " = 0; " + i + " < " + std::to_string(count) + "; ++" + i + ")");
  };
  std::string a_row = ib + " * " + std::to_string(s.m * s.k) + " + " + im + " * " + std::to_string(s.k);
  std::string b_row = ib + " * " + std::to_string(s.k * s.n) + " + " + ik + " * " + std::to_string(s.n);
  std::string out_row = ib + " * " + std::to_string(s.m * s.n) + " + " + im + " * " + std::to_string(s.n);
  loop(ib, s.batch);
  loop(im, s.m);
  loop(ik, s.k);
  std::string lhs = ctx.fresh("lhs");
  ctx.out.line("const " + acc_type + " " + lhs + " = " + widen(a, a_row + " + " + ik) + ";");
  ctx.out.line("TG_IVDEP");
  loop(in, s.n);
  std::string rhs = widen(b, b_row + " + " + in);
  std::string out = accum + "[" + out_row + " + " + in + "]";
  if (is_float) {
    ctx.out.line(out + " = std::fma(" + lhs + ", " + rhs + ", " + out + ");");
  } else {
    ctx.out.line(out + " = tg_add(" + out + ", tg_mul(" + lhs + ", " + rhs + "));");
  }
  for (int i = 0; i < 4; ++i) ctx.out.close();
}

}  // namespace

bool uses_half_dot(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    if (op.kind != ir::OpKind::Dot) return;
    for (size_t i = 0; i < 2 && i < op.operands.size(); ++i) found = found || is_half(fn.type(op.operands[i]).scalar);
  });
  return found;
}

void emit_dot(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.operands.size() == 2 || op.operands.size() == 3, "dot takes a, b [, acc]");
  DotShape s = dot_shape(ctx, op);
  ir::Scalar rs = ctx.fn.type(op.results[0]).scalar;
  if (rs == ir::Scalar::F32 || is_half(rs)) return emit_float_dot(ctx, op, s);
  emit_plain_dot(ctx, op, s);
}

}  // namespace tegula::backends::cpu
