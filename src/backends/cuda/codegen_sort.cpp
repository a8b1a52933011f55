// sort: a bitonic sorting network in shared memory (order: ir/scan_ops.h).
//
// The tile is staged in shared memory (one owner per element writes it),
// viewed as [outer, A, inner] around the axis. The network has
// log2(A) * (log2(A) + 1) / 2 steps; in each, the numel / 2 compare-and-swap
// pairs are spread over the block's threads (a runtime loop), and a barrier
// ends the step. Step (size, stride) pairs element a with a + stride (bit
// `stride` of a clear) and orders the pair ascending when bit `size` of a is
// clear, else descending, so blocks of `size` become sorted; the last
// merge (size = A) sorts the whole line. Afterwards every thread reads the
// elements it holds in the result's layout.
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/codegen_staging.h"
#include "ir/scan_ops.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

// `a > b` for elements of `s`, NaN above every number.
std::string greater(ir::Scalar s, const std::string& a, const std::string& b) {
  if (!ir::is_float(s)) return a + " > " + b;
  std::string x = to_compute(s, a), y = to_compute(s, b);
  return "(" + x + " > " + y + " || (" + x + " != " + x + " && " + y + " == " + y + "))";
}

// The network's steps on the staged tile `buffer` (a line of length > 1).
void emit_network(CudaContext& ctx, const ir::Op& op, const std::string& buffer) {
  const ir::Type& t = ctx.fn.type(op.operands[0]);
  c_family::AxisView view = c_family::view_around(t, op.int_attr("axis"));
  int64_t length = view.length, inner = view.inner;
  int inner_bits = c_family::log2_exact(inner), length_bits = c_family::log2_exact(length);
  std::string type = c_element(t.element());
  std::string threads = std::to_string(32 * ctx.options.num_warps);
  ctx.out.open("for (int size = 2; size <= " + std::to_string(length) + "; size <<= 1)");
  ctx.out.open("for (int stride = size >> 1; stride > 0; stride >>= 1)");
  ctx.out.open("for (int p = threadIdx.x; p < " + std::to_string(t.numel() / 2) + "; p += " + threads + ")");
  // Pair p: inner element x, pair t within the line, line o.
  std::string x = inner > 1 ? "(p & " + std::to_string(inner - 1) + ")" : "0";
  ctx.out.line("const int t = (p >> " + std::to_string(inner_bits) + ") & " + std::to_string(length / 2 - 1) + ";");
  ctx.out.line("const int o = p >> " + std::to_string(inner_bits + length_bits - 1) + ";");
  ctx.out.line("const int a = ((t & ~(stride - 1)) << 1) | (t & (stride - 1));");
  ctx.out.line("const int lo = ((o << " + std::to_string(length_bits) + ") + a) * " + std::to_string(inner) + " + " + x +
               ";");
  ctx.out.line("const int hi = lo + stride * " + std::to_string(inner) + ";");
  ctx.out.line(std::string("const bool ascending = ((a & size) == 0)") + (ir::sort_descending(op) ? " == false" : "") +
               ";");
  ctx.out.line(type + " first = " + buffer + "[lo], second = " + buffer + "[hi];");
  ctx.out.open("if (ascending ? " + greater(t.scalar, "first", "second") + " : " + greater(t.scalar, "second", "first") +
               ")");
  ctx.out.line(buffer + "[lo] = second;");
  ctx.out.line(buffer + "[hi] = first;");
  ctx.out.close();
  ctx.out.close();
  ctx.barrier();
  ctx.out.close();
  ctx.out.close();
}

}  // namespace

void emit_sort(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const ir::Type& t = ctx.fn.type(op.operands[0]);
  int axis = static_cast<int>(op.int_attr("axis"));
  int64_t length = t.shape[static_cast<size_t>(axis)];
  std::string buffer = declare_staging_buffer(ctx, t, t.numel());
  stage_tile(ctx, buffer, ctx.operand(id, 0), ctx.distribution(ctx.operand_layout(id, 0), t.shape));
  ctx.barrier();
  if (length > 1) emit_network(ctx, op, buffer);
  ir::ValueId r = op.results[0];
  ctx.declare_tile(ctx.name(r), t, ctx.layout(r));
  unstage_tile(ctx, ctx.name(r), buffer, ctx.distribution(ctx.layout(r), t.shape));
  ctx.shared_reads_done();
}

}  // namespace tegula::backends::cuda
