// reduce: N tiles of one shape combined along `axis` by the combiner region,
// inlined as scalar code at every application.
//
// The operands' distribution says where the reduced dim lives (layout.h):
//  1. register bits mapping into it: a tree within the thread (pairs of
//     registers, one bit at a time);
//  2. lane bits mapping into it: butterfly shuffles (__shfl_xor_sync), the
//     lower lane's value always the combiner's first argument, so both lanes
//     of a pair compute the same bits even for a non-commutative combiner
//     (a combiner that is one symmetric op, like a sum, skips the ordering);
//  3. warp bits mapping into it: every thread writes its partials to shared
//     memory, a barrier, then lanes that hold the same result read one warp's
//     partial each and combine by butterfly (one shared read per thread), or,
//     when the result's layout leaves no such lanes, every thread combines
//     all the warps' partials in warp order.
// Every thread then holds the results for the elements it held, in the
// layout slice(operand layout, axis); a 1-d reduction gives a scalar that
// every thread holds, bit for bit the same.
#include <string>
#include <vector>

#include "backends/c_family/combine.h"
#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using c_family::emit_combine;
using c_family::indexed;

namespace {

int coordinate_dim(int linear_bit, const std::vector<int64_t>& shape) { return coordinate_bit(shape, linear_bit).dim; }

// Whether the combiner is one op that gives the same bits with its arguments
// swapped: integer add/mul/and/or/xor/min/max, float add and mul (the GPU
// returns one canonical NaN, so even NaN results agree). Float min/max are
// left out: their signed-zero and NaN choices depend on the order.
bool combiner_is_symmetric(const CudaContext& ctx, const ir::Op& op) {
  if (op.operands.size() != 1) return false;
  const ir::Block& region = ctx.fn.block(op.regions[0]);
  const ir::Op* only = nullptr;
  for (ir::OpId id : region.ops) {
    const ir::Op& o = ctx.fn.op(id);
    if (o.erased || ir::is_terminator(o.kind)) continue;
    if (only != nullptr) return false;
    only = &o;
  }
  if (only == nullptr || !ir::is_commutative(only->kind) || only->kind == ir::OpKind::UMulHi) return false;
  const ir::Op& yield = ctx.terminator(op.regions[0]);
  if (yield.operands.size() != 1 || only->results.size() != 1 || yield.operands[0] != only->results[0]) return false;
  bool uses_both = only->operands.size() == 2 &&
                   ((only->operands[0] == region.args[0] && only->operands[1] == region.args[1]) ||
                    (only->operands[0] == region.args[1] && only->operands[1] == region.args[0]));
  if (!uses_both) return false;
  bool floats = ir::is_float(ctx.fn.type(region.args[0]).scalar);
  return !floats || only->kind == ir::OpKind::Add || only->kind == ir::OpKind::Mul;
}

// One butterfly step across lanes `lane` and `lane ^ mask` on element `i`
// of the partial arrays: the lower lane's value is the first argument, so
// both lanes compute the same bits (a symmetric combiner needs no ordering).
void emit_shuffle_step(CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& partial,
                       const std::string& i, int mask) {
  std::string m = std::to_string(mask);
  bool symmetric = combiner_is_symmetric(ctx, op);
  std::string upper = ctx.fresh("upper");
  if (!symmetric) ctx.out.line("const bool " + upper + " = (lane & " + m + ") != 0;");
  std::vector<std::string> lhs, rhs;
  for (size_t j = 0; j < partial.size(); ++j) {
    std::string o = ctx.fresh("other");
    std::string mine = partial[j] + "[" + i + "]";
    ctx.out.line(c_const(ctx.fn.type(op.operands[j]).element()) + " " + o + " = tg_shfl_xor(" + mine + ", " + m +
                 ");");
    lhs.push_back(symmetric ? mine : upper + " ? " + o + " : " + mine);
    rhs.push_back(symmetric ? o : upper + " ? " + mine + " : " + o);
  }
  emit_combine(ctx, op, lhs, rhs, indexed(partial, i));
}

}  // namespace

void emit_reduce(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  size_t n = op.operands.size();
  TEGULA_ASSERT(n >= 1 && op.results.size() == n && op.regions.size() == 1, "malformed reduce");
  TEGULA_ASSERT(ctx.fn.block(op.regions[0]).args.size() == 2 * n, "reduce combiner must take 2N arguments");
  const ir::Type& input = ctx.fn.type(op.operands[0]);
  int axis = static_cast<int>(op.int_attr("axis"));
  const Layout& layout = ctx.operand_layout(id, 0);
  Distribution d = ctx.distribution(layout, input.shape);
  bool scalar_result = !ctx.fn.type(op.results[0]).is_tile();

  // 1. Within the thread: copy the operands, then fold register pairs.
  std::vector<int> reduced_bits, kept_bits;  // register bit positions
  for (size_t k = 0; k < d.register_bits.size(); ++k)
    (coordinate_dim(d.register_bits[k], input.shape) == axis ? reduced_bits : kept_bits).push_back(static_cast<int>(k));
  std::vector<std::string> work;
  for (size_t j = 0; j < n; ++j) {
    std::string w = ctx.fresh("acc");
    work.push_back(w);
    ctx.out.line(c_element(ctx.fn.type(op.operands[j]).element()) + " " + w + "[" + std::to_string(d.registers()) +
                 "];");
    emit_tile_copy(ctx, w, ctx.operand(id, j), d.registers());
  }
  int done_mask = 0;
  for (int k : reduced_bits) {
    done_mask |= 1 << k;
    std::string i = ctx.open_unrolled(d.registers());
    ctx.out.open("if ((" + i + " & " + std::to_string(done_mask) + ") == 0)");
    emit_combine(ctx, op, indexed(work, i), indexed(work, i + " + " + std::to_string(1 << k)), indexed(work, i));
    ctx.out.close();
    ctx.out.close();
  }
  // The partial results: register j of the result is work register j with
  // zeros inserted at the reduced bits.
  std::vector<int> expand;
  for (int k : kept_bits) expand.push_back(k);
  int out_registers = 1 << kept_bits.size();
  std::vector<std::string> partial;
  for (size_t j = 0; j < n; ++j) {
    ir::ValueId r = op.results[j];
    std::string p = scalar_result ? ctx.fresh("total") : ctx.name(r);
    partial.push_back(p);
    ctx.out.line(c_element(ctx.fn.type(op.operands[j]).element()) + " " + p + "[" + std::to_string(out_registers) +
                 "];");
    std::string i = ctx.open_unrolled(out_registers);
    ctx.out.line(p + "[" + i + "] = " + work[j] + "[" + bits_expr(i, expand, static_cast<int>(expand.size())) + "];");
    ctx.out.close();
  }

  // 2. Across the lanes of a warp.
  for (size_t b = 0; b < d.lane_bits.size(); ++b) {
    if (d.lane_bits[b] < 0 || coordinate_dim(d.lane_bits[b], input.shape) != axis) continue;
    ctx.thread_ids();
    std::string i = ctx.open_unrolled(out_registers);
    emit_shuffle_step(ctx, op, partial, i, 1 << b);
    ctx.out.close();
  }

  // 3. Across warps, through shared memory.
  std::vector<int> warp_bits;  // warp id bit -> position in the partials' warp index
  int warps = 1;
  for (size_t b = 0; b < d.warp_bits.size(); ++b) {
    bool reduced = d.warp_bits[b] >= 0 && coordinate_dim(d.warp_bits[b], input.shape) == axis;
    warp_bits.push_back(reduced ? __builtin_ctz(static_cast<unsigned>(warps)) : -1);
    if (reduced) warps *= 2;
  }
  if (warps > 1) {
    ctx.thread_ids();
    std::vector<int64_t> out_shape = input.shape;
    out_shape.erase(out_shape.begin() + axis);
    Distribution rd = out_shape.empty() ? Distribution{} : ctx.distribution(slice(layout, axis), out_shape);
    int64_t out_numel = rd.numel;
    std::vector<std::string> buffers;
    int64_t bytes = 0;
    std::vector<int64_t> offsets;
    for (size_t j = 0; j < n; ++j) {
      int64_t size = element_bytes(ctx.fn.type(op.operands[j]).element());
      bytes = (bytes + size - 1) / size * size;
      offsets.push_back(bytes);
      bytes += size * out_numel * warps;
    }
    std::string smem = ctx.shared_scratch(bytes);
    std::string position = ctx.fresh("wpos");
    ctx.out.line("const int " + position + " = " + bits_expr("warp", warp_bits, static_cast<int>(warp_bits.size())) +
                 ";");
    for (size_t j = 0; j < n; ++j) {
      std::string type = c_element(ctx.fn.type(op.operands[j]).element());
      std::string buffer = ctx.fresh("s");
      buffers.push_back(buffer);
      ctx.out.line(type + "* const " + buffer + " = reinterpret_cast<" + type + "*>(" + smem + " + " +
                   std::to_string(offsets[j]) + ");");
    }
    auto slot = [&](const std::string& i) {
      return out_shape.empty() ? std::string("0") : "(" + ctx.element_index(rd, i) + ")";
    };
    std::string i = ctx.open_unrolled(out_registers);
    for (size_t j = 0; j < n; ++j)
      ctx.out.line(buffers[j] + "[" + slot(i) + " * " + std::to_string(warps) + " + " + position + "] = " + partial[j] +
                   "[" + i + "];");
    ctx.out.close();
    ctx.barrier();
    // When the result leaves log2(warps) lane bits free (replicated), lane
    // l picks up the partial of warp position l (those bits of l) and a
    // butterfly over those lane bits combines them: one shared read per
    // thread, and every thread ends with the same bits. Otherwise every
    // thread reads all the partials, in warp order.
    std::vector<int> free_lane_bits;
    for (int b = 0; b < 5; ++b)
      if (out_shape.empty() || rd.lane_bits[static_cast<size_t>(b)] < 0) free_lane_bits.push_back(b);
    int needed = __builtin_ctz(static_cast<unsigned>(warps));
    i = ctx.open_unrolled(out_registers);
    if (static_cast<int>(free_lane_bits.size()) >= needed) {
      std::vector<int> pick(5, -1);  // lane bit -> bit of the warp position it selects
      for (int k = 0; k < needed; ++k) pick[static_cast<size_t>(free_lane_bits[static_cast<size_t>(k)])] = k;
      std::string which = bits_expr("lane", pick, 5);
      for (size_t j = 0; j < n; ++j)
        ctx.out.line(partial[j] + "[" + i + "] = " + buffers[j] + "[" + slot(i) + " * " + std::to_string(warps) + " + " +
                     which + "];");
      for (int k = 0; k < needed; ++k)
        emit_shuffle_step(ctx, op, partial, i, 1 << free_lane_bits[static_cast<size_t>(k)]);
    } else {
      for (size_t j = 0; j < n; ++j)
        ctx.out.line(partial[j] + "[" + i + "] = " + buffers[j] + "[" + slot(i) + " * " + std::to_string(warps) + "];");
      std::string w = ctx.open_unrolled(warps, 1);
      ctx.out.line("if (" + w + " == 0) continue;");
      std::vector<std::string> from_warp;
      for (size_t j = 0; j < n; ++j)
        from_warp.push_back(buffers[j] + "[" + slot(i) + " * " + std::to_string(warps) + " + " + w + "]");
      emit_combine(ctx, op, indexed(partial, i), from_warp, indexed(partial, i));
      ctx.out.close();
    }
    ctx.out.close();
    ctx.shared_reads_done();
  }

  if (scalar_result)
    for (size_t j = 0; j < n; ++j)
      ctx.out.line(c_const(ctx.fn.type(op.results[j])) + " " + ctx.name(op.results[j]) + " = " + partial[j] +
                   "[0];");
}

}  // namespace tegula::backends::cuda
