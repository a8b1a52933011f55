// Ops that index a tile by data values, through shared memory (semantics:
// ir/scan_ops.h):
//  * gather: src is staged (one owner per element writes it), a barrier,
//    then each thread reads, for every element e = (o, k, x) it holds of the
//    [outer, K, inner] view of the result, src at (o, index[e] mod A, x). The
//    index operand arrives in the result's layout (layout.cpp), so the
//    thread has index[e] in the same register; the mod keeps a wrong index
//    inside the buffer.
//  * histogram: the bins are zeroed in shared memory, a barrier, one owner
//    of each input element adds 1 to its bin with a shared-memory atomicAdd
//    when the value is in [0, BINS) and its mask holds, a barrier, and each
//    thread reads the counts it holds in the result's layout.
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/codegen_staging.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

void emit_gather(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const ir::Type& src = ctx.fn.type(op.operands[0]);
  const ir::Type& result = ctx.fn.type(op.results[0]);
  int axis = static_cast<int>(op.int_attr("axis"));
  c_family::AxisView view = c_family::view_around(src, axis);
  int64_t length = result.shape[static_cast<size_t>(axis)];

  std::string buffer = declare_staging_buffer(ctx, src, src.numel());
  stage_tile(ctx, buffer, ctx.operand(id, 0), ctx.distribution(ctx.operand_layout(id, 0), src.shape));
  ctx.barrier();
  const Layout& layout = ctx.layout(op.results[0]);
  TEGULA_ASSERT(ctx.distribution(ctx.operand_layout(id, 1), result.shape) == ctx.distribution(layout, result.shape),
                "gather reads its index in the result's layout");
  Distribution d = ctx.distribution(layout, result.shape);
  std::string dest = ctx.name(op.results[0]), index = ctx.operand(id, 1);
  ctx.declare_tile(dest, result, layout);
  std::string i = ctx.open_unrolled(d.registers());
  std::string e = ctx.fresh("e");
  ctx.out.line("const int " + e + " = " + ctx.element_index(d, i) + ";");
  std::string k =
      "(int)((unsigned long long)" + index + "[" + i + "] & " + std::to_string(view.length - 1) + "ull)";
  std::string from = c_family::gather_source_index(e, k, view.length, length, view.inner);
  ctx.out.line(dest + "[" + i + "] = " + buffer + "[" + from + "];");
  ctx.out.close();
  ctx.shared_reads_done();
}

void emit_histogram(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const ir::Type& input = ctx.fn.type(op.operands[0]);
  const ir::Type& result = ctx.fn.type(op.results[0]);
  int64_t bins = result.numel();
  std::string buffer = declare_staging_buffer(ctx, result, bins);
  std::string threads = std::to_string(32 * ctx.options.num_warps);
  std::string b = ctx.fresh("bin");
  ctx.out.line("for (int " + b + " = threadIdx.x; " + b + " < " + std::to_string(bins) + "; " + b + " += " + threads +
               ") " + buffer + "[" + b + "] = 0;");
  ctx.barrier();

  Distribution d = ctx.distribution(ctx.operand_layout(id, 0), input.shape);
  if (op.operands.size() > 1)
    TEGULA_ASSERT(ctx.distribution(ctx.operand_layout(id, 1), input.shape) == d,
                  "histogram reads its input and mask in one layout");
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(d.registers());
  std::string v = ctx.fresh("value");
  ctx.out.line("const unsigned long long " + v + " = (unsigned long long)" + ctx.operand(id, 0) + "[" + i + "];");
  std::string cond = v + " < " + std::to_string(bins) + "ull";
  if (op.operands.size() > 1) cond = ctx.operand(id, 1) + "[" + i + "] && " + cond;
  ctx.out.line("if (" + cond + ") atomicAdd(&" + buffer + "[" + v + "], 1);");
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
  ctx.barrier();

  const Layout& layout = ctx.layout(op.results[0]);
  ctx.declare_tile(ctx.name(op.results[0]), result, layout);
  unstage_tile(ctx, ctx.name(op.results[0]), buffer, ctx.distribution(layout, result.shape));
  ctx.shared_reads_done();
}

}  // namespace

void emit_indexed(CudaContext& ctx, ir::OpId id) {
  if (ctx.fn.op(id).kind == ir::OpKind::Gather) return emit_gather(ctx, id);
  TEGULA_ASSERT(ctx.fn.op(id).kind == ir::OpKind::Histogram, "not a gather or histogram");
  emit_histogram(ctx, id);
}

}  // namespace tegula::backends::cuda
