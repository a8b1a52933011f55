// Ops that index a tile by data values (see ir/scan_ops.h):
//  * gather: one flat loop over the result; element e = (o, k, x) of the
//    [outer, K, inner] view reads src at (o, index[e] mod A, x). Every
//    extent is a power of two, so the index math is shifts and masks, and
//    the mod keeps a wrong index inside src (no crash, no UB).
//  * histogram: the counts are zeroed, then one pass over the input adds 1
//    to bin v for each element v in [0, BINS) whose mask is true. Reading
//    the value as unsigned 64-bit sends negative values far above BINS.
#include <string>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

int log2_of(int64_t v) {
  TEGULA_ASSERT(v > 0 && (v & (v - 1)) == 0, "tile extents are powers of two");
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

void emit_gather(CodegenContext& ctx, const ir::Op& op) {
  const ir::Type& src = ctx.fn.type(op.operands[0]);
  const ir::Type& index = ctx.fn.type(op.operands[1]);
  int64_t axis = op.int_attr("axis");
  int64_t src_length = src.shape[static_cast<size_t>(axis)], length = index.shape[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < src.rank(); ++d) inner *= src.shape[static_cast<size_t>(d)];
  ir::ValueId r = op.results[0];
  ctx.declare(r);
  std::string e = ctx.fresh("e");
  // (o * A + k) * inner + x, with o = e >> log2(K * inner), x = e & (inner - 1).
  std::string k = "(int)((uint64_t)" + ctx.element(op.operands[1], e) + " & " + std::to_string(src_length - 1) + "u)";
  std::string outer_part = "(" + e + " >> " + std::to_string(log2_of(length * inner)) + ") * " +
                           std::to_string(src_length * inner);
  std::string from = outer_part + " + " + k + (inner > 1 ? " * " + std::to_string(inner) + " + (" + e + " & " +
                                                              std::to_string(inner - 1) + ")"
                                                        : "");
  ctx.open_element_loop(e, index.numel());
  ctx.out.line(ctx.element(r, e) + " = " + ctx.element(op.operands[0], from) + ";");
  ctx.out.close();
}

void emit_histogram(CodegenContext& ctx, const ir::Op& op) {
  const ir::Type& input = ctx.fn.type(op.operands[0]);
  ir::ValueId r = op.results[0];
  int64_t bins = ctx.fn.type(r).numel();
  ctx.declare(r);
  ctx.out.line("std::memset(" + ctx.name(r) + ", 0, sizeof(int32_t) * " + std::to_string(bins) + ");");
  std::string e = ctx.fresh("e"), v = ctx.fresh("value");
  ctx.out.open("for (int " + e + " = 0; " + e + " < " + std::to_string(input.numel()) + "; ++" + e + ")");
  ctx.out.line("const uint64_t " + v + " = (uint64_t)" + ctx.element(op.operands[0], e) + ";");
  std::string cond = v + " < " + std::to_string(bins) + "u";
  if (op.operands.size() > 1) cond = ctx.element(op.operands[1], e) + " && " + cond;
  ctx.out.line("if (" + cond + ") " + ctx.name(r) + "[" + v + "] += 1;");
  ctx.out.close();
}

}  // namespace

void emit_indexed(CodegenContext& ctx, const ir::Op& op) {
  if (op.kind == ir::OpKind::Gather) return emit_gather(ctx, op);
  TEGULA_ASSERT(op.kind == ir::OpKind::Histogram, "not a gather or histogram");
  emit_histogram(ctx, op);
}

}  // namespace tegula::backends::cpu
