// dot on CUDA cores (the FMA path): out = a @ b + acc over the last two
// dims, with an optional leading batch dim. Dots whose result the layout
// plan put in an MMA layout run on tensor cores instead (codegen_mma.cpp);
// this path takes every other dot: fp64, "ieee" fp32, small or odd shapes,
// and architectures before sm_80.
//
// a and b are staged row-major in shared memory (each owner thread writes
// the elements it holds), then every thread computes the accumulator
// elements its layout gives it: for each k, one fused multiply-add per
// element, reading a[m][k] and b[k][n] from shared memory (the compiler
// merges the reads repeated across a thread's registers, which makes this
// an outer product per thread).
//
// Numerics match the CPU backend: float accumulation (double when an operand
// is f64) with one fma per product in k order, starting from acc, f16/bf16
// results rounded once at the end; integer dots multiply and accumulate in
// the result type, wrapping. Full fp32 here whatever `precision` says.
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::Scalar;

namespace {

// Writes the elements of tile operand k of `op` into `buffer`, row-major.
void stage(CudaContext& ctx, ir::OpId id, size_t k, const std::string& buffer) {
  ir::ValueId v = ctx.fn.op(id).operands[k];
  const ir::Type& t = ctx.fn.type(v);
  Distribution d = ctx.distribution(ctx.operand_layout(id, k), t.shape);
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(d.registers());
  ctx.out.line(buffer + "[" + ctx.element_index(d, i) + "] = " + ctx.operand(id, k) + "[" + i + "];");
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
}

}  // namespace

bool uses_dot(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) { found = found || fn.op(id).kind == ir::OpKind::Dot; });
  return found;
}

void emit_dot(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  if (ctx.layout(op.results[0]).mma) return emit_dot_mma(ctx, id);
  const ir::Type& ta = ctx.fn.type(op.operands[0]);
  const ir::Type& tb = ctx.fn.type(op.operands[1]);
  ir::ValueId result = op.results[0];
  const ir::Type& tr = ctx.fn.type(result);
  int rank = tr.rank();
  TEGULA_ASSERT(rank == 2 || rank == 3, "dot of rank " + std::to_string(rank) + " (verified IR has rank 2 or 3)");
  size_t r = static_cast<size_t>(rank);
  int64_t batch = rank == 3 ? tr.shape[0] : 1, m = tr.shape[r - 2], n = tr.shape[r - 1], k = ta.shape[r - 1];
  TEGULA_ASSERT(ta.shape[r - 2] == m && tb.shape[r - 2] == k && tb.shape[r - 1] == n, "dot shape mismatch");

  Scalar out = tr.scalar;
  bool integer = ir::is_integer(out);
  bool wide = out == Scalar::F64 || ta.scalar == Scalar::F64;
  std::string compute = integer ? c_scalar(out) : wide ? "double" : "float";
  auto widen = [&](Scalar s, const std::string& e) {
    if (integer) return "(" + compute + ")" + e;
    std::string v = to_compute(s, e);
    return (s == Scalar::F64) == wide ? v : "(" + compute + ")" + v;
  };

  // Stage a and b.
  int64_t a_bytes = batch * m * k * element_bytes(ta), b_bytes = batch * k * n * element_bytes(tb);
  int64_t b_offset = (a_bytes + 15) / 16 * 16;
  std::string smem = ctx.shared_scratch(b_offset + b_bytes);
  std::string sa = ctx.fresh("sa"), sb = ctx.fresh("sb");
  ctx.out.line(c_element(ta) + "* const " + sa + " = reinterpret_cast<" + c_element(ta) + "*>(" + smem + ");");
  ctx.out.line(c_element(tb) + "* const " + sb + " = reinterpret_cast<" + c_element(tb) + "*>(" + smem + " + " +
               std::to_string(b_offset) + ");");
  stage(ctx, id, 0, sa);
  stage(ctx, id, 1, sb);
  ctx.barrier();

  // The accumulator, in the result's layout.
  const Layout& layout = ctx.layout(result);
  Distribution d = ctx.distribution(layout, tr.shape);
  int registers = d.registers();
  std::string acc = ctx.fresh("acc");
  ctx.out.line(compute + " " + acc + "[" + std::to_string(registers) + "];");
  std::string i = ctx.open_unrolled(registers);
  std::string init = op.operands.size() > 2 ? widen(ctx.fn.type(op.operands[2]).scalar, ctx.operand(id, 2) + "[" + i + "]")
                                            : "(" + compute + ")0";
  ctx.out.line(acc + "[" + i + "] = " + init + ";");
  ctx.out.close();

  int n_bits = c_family::log2_ceil(n), m_bits = c_family::log2_ceil(m);
  std::string kk = ctx.fresh("k");
  ctx.out.line("#pragma unroll 4");
  ctx.out.open("for (int " + kk + " = 0; " + kk + " < " + std::to_string(k) + "; ++" + kk + ")");
  i = ctx.open_unrolled(registers);
  std::string e = ctx.fresh("e");
  ctx.out.line("const int " + e + " = " + ctx.element_index(d, i) + ";");
  std::string row = "(" + e + " >> " + std::to_string(n_bits) + ")";  // batch * m + row
  std::string col = "(" + e + " & " + std::to_string(n - 1) + ")";
  std::string batch_index = "(" + e + " >> " + std::to_string(n_bits + m_bits) + ")";
  std::string a_elem = sa + "[" + row + " * " + std::to_string(k) + " + " + kk + "]";
  std::string b_elem = sb + "[(" + (batch > 1 ? batch_index + " * " + std::to_string(k) + " + " : std::string()) + kk +
                       ") * " + std::to_string(n) + " + " + col + "]";
  std::string x = widen(ta.scalar, a_elem), y = widen(tb.scalar, b_elem);
  if (integer)
    ctx.out.line(acc + "[" + i + "] = tg_add(" + acc + "[" + i + "], tg_mul(" + x + ", " + y + "));");
  else
    ctx.out.line(acc + "[" + i + "] = " + std::string(wide ? "fma(" : "fmaf(") + x + ", " + y + ", " + acc + "[" + i +
                 "]);");
  ctx.out.close();
  ctx.out.close();
  ctx.shared_reads_done();

  ctx.declare_tile(ctx.name(result), tr, layout);
  i = ctx.open_unrolled(registers);
  std::string value = acc + "[" + i + "]";
  if (!integer) {
    if (is_half(out)) value = from_compute(out, wide ? "(float)" + value : value);
    else if (c_scalar(out) != compute) value = "(" + c_scalar(out) + ")" + value;
  }
  ctx.out.line(ctx.name(result) + "[" + i + "] = " + value + ";");
  ctx.out.close();
}

}  // namespace tegula::backends::cuda
