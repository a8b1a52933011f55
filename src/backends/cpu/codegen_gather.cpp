// Ops that index a tile by data values (see ir/scan_ops.h):
//  * gather: one flat loop over the result; element e = (o, k, x) of the
//    [outer, K, inner] view reads src at (o, index[e] mod A, x). Every
//    extent is a power of two, so the index math is shifts and masks, and
//    the mod keeps a wrong index inside src (no crash, no UB).
//  * histogram: the counts are zeroed, then one pass over the input adds 1
//    to bin v for each element v in [0, BINS) whose mask is true. Reading
//    the value as unsigned 64-bit sends negative values far above BINS.
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

void emit_gather(CodegenContext& ctx, const ir::Op& op) {
  const ir::Type& src = ctx.fn.type(op.operands[0]);
  const ir::Type& index = ctx.fn.type(op.operands[1]);
  int64_t axis = op.int_attr("axis");
  c_family::AxisView view = c_family::view_around(src, axis);
  int64_t length = index.shape[static_cast<size_t>(axis)];
  ir::ValueId r = op.results[0];
  ctx.declare(r);
  std::string e = ctx.fresh("e");
  std::string k =
      "(int)((uint64_t)" + ctx.element(op.operands[1], e) + " & " + std::to_string(view.length - 1) + "u)";
  std::string from = c_family::gather_source_index(e, k, view.length, length, view.inner);
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
