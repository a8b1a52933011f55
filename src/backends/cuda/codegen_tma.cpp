// desc_load, desc_store and desc_atomic on sm_90: blocks copied (reduced)
// whole by the TMA (tma_plan.h says which ops come here).
//
// desc_load: every load completes on the kernel's one mbarrier
// (CudaContext::tma_barrier, initialized with one arrival per phase in the
// prologue). After a barrier (every thread is past the previous load's wait
// and done reading the area), thread 0 announces the block's bytes
// (arrive.expect_tx) and issues the bulk tensor copy; every thread waits for
// the phase of parity tg_tma_phase to complete, flips the parity and reads
// its elements from the row-major block. The TMA fills the parts of the box
// outside the tensor with zeros (or NaN, padding "nan"), exactly what the
// pointer form gives.
//
// desc_store: every owner writes its elements into the row-major block,
// fences them for the async proxy (fence.proxy.async), a barrier, then
// thread 0 issues the bulk tensor store, commits it and waits for it to
// complete (so later loads of this program see it, and the area may be
// reused); the TMA skips the parts of the box outside the tensor.
//
// A block that is the transpose of a tile (`desc.atomic_add(o, dq_t.T)`:
// dQ of an attention backward, computed transposed) is staged from the
// tile's registers with the transpose as a relabeling: the trans right
// before the desc op is not emitted (transpose_staged_by_tma), which saves a
// round trip through shared memory and its two barriers.
//
// desc_atomic: staged and issued as the store, as a bulk reduction
// (cp.reduce.async.bulk.tensor: each element inside the tensor updated by
// its own relaxed atomic). Its thread waits only until the block is read
// out of shared memory; a later load of the program that may read the
// reduced array waits for the writes first (CudaContext::after_bulk_reduce),
// the loads of other arrays do not (dQ's reduction in an attention
// backward's loop, whose loads read the log-sum-exp).
//
// Each copy waits at once. The matmul's K loop instead keeps its blocks in
// flight in a multi-stage ring, read by wgmma where they land
// (codegen_tma_ring.cpp); the layouts text says why a loop's loads are not.
#include <algorithm>
#include <optional>
#include <string>

#include "backends/cuda/codegen_context.h"
#include "backends/cuda/codegen_mma.h"
#include "backends/cuda/codegen_staging.h"
#include "backends/cuda/tma_plan.h"
#include "ir/descriptor.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

// The prelude helper that writes the block from shared memory: the store,
// or desc_atomic's reduction ("tg_tma_reduce_add_2d").
std::string bulk_write(const ir::Op& op, size_t rank) {
  std::string dims = "_" + std::to_string(rank) + "d";
  return op.kind == ir::OpKind::DescStore ? "tg_tma_store" + dims : "tg_tma_reduce_" + op.str_attr("op") + dims;
}

// "TMA store", "TMA reduction (add)": the comments' name of the write.
std::string bulk_write_name(const ir::Op& op) {
  return op.kind == ir::OpKind::DescStore ? "TMA store" : "TMA reduction (" + op.str_attr("op") + ")";
}

// The registers the block's value is staged from, in their distribution
// over the block: the value's own, or a transposed tile's
// (transpose_staged_by_tma).
struct StagedValue {
  std::string registers;
  Distribution distribution;
};
StagedValue staged_value(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  size_t index = op.operands.size() - 1;
  const ir::Value& value = ctx.fn.value(op.operands[index]);
  if (value.def.valid() && transpose_staged_by_tma(ctx, value.def))
    return {ctx.name(ctx.fn.op(value.def).operands[0]), transposed_distribution(ctx, value.def)};
  return {ctx.operand(id, index), ctx.distribution(ctx.operand_layout(id, index), ctx.fn.type(op.operands[index]).shape)};
}

// After the write is issued: what later loads of the program must wait for.
void after_bulk_write(CudaContext& ctx, const ir::Op& op) {
  if (op.kind == ir::OpKind::DescStore)
    ctx.after_bulk_store();
  else
    ctx.after_bulk_reduce(ir::descriptor_operands(op).base);
}

// The TMA's coordinates of the block: innermost dim first.
std::string coordinates(CudaContext& ctx, ir::OpId id, const ir::DescriptorOperands& d) {
  const ir::Op& op = ctx.fn.op(id);
  std::string out;
  for (size_t k = d.rank; k-- > 0;) {
    size_t operand = 1 + 2 * d.rank + k;
    TEGULA_ASSERT(op.operands[operand] == d.offsets[k], "desc op operands out of order");
    out += ", " + ctx.operand(id, operand);
  }
  return out;
}

// `T* const s = (T*)(tg_smem + offset)`: room for the block on a 128-byte
// boundary, as bulk tensor copies need.
std::string block_area(CudaContext& ctx, const ir::Type& block, int64_t bytes) {
  std::string buffer = ctx.fresh("s");
  std::string type = c_element(block.element());
  ctx.out.line(type + "* const " + buffer + " = reinterpret_cast<" + type + "*>(" +
               ctx.shared_scratch(bytes, 128) + ");");
  return buffer;
}

// A 2-D block whose rows are whole 128-byte spans, as the SharedTile layout
// lays it out (rows cut into 128-byte spans, 16-byte chunks XORed with the
// row's low bits): the 8 rows an MMA fragment's lanes hold then write 8
// distinct bank groups, where row-major rows of 128 elements all start in
// bank 0. Nothing for other blocks.
std::optional<SharedTile> swizzled_block(const ir::Type& block) {
  int64_t bytes = element_bytes(block.element());
  if (block.rank() != 2 || block.shape[1] * bytes % 128 != 0) return std::nullopt;
  SharedTile tile;
  tile.k_dim = 1;  // rows along dim 1, the contiguous one
  tile.rows = block.shape[0];
  tile.row_elements = block.shape[1];
  tile.element_bytes = static_cast<int>(bytes);
  tile.c_type = c_element(block.element());
  return tile;
}

// desc_store (desc_atomic) of a swizzled block: owners write their
// registers in groups of up to 16 bytes into the tile, then one TMA box (all
// rows by one 128-byte span, SWIZZLE_128B) per span is stored (reduced)
// from it.
void store_swizzled(CudaContext& ctx, ir::OpId id, SharedTile tile, const std::string& map) {
  const ir::Op& op = ctx.fn.op(id);
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  ctx.shared_scratch(tile.bytes(), 1024);
  tile.offset = std::to_string(ctx.scratch_begin());
  int64_t span = tile.block_bytes() / tile.element_bytes;
  ctx.out.line("// " + bulk_write_name(op) + " of the " + std::to_string(tile.bytes()) +
               "-byte block from shared memory, " +
               std::to_string(tile.row_bytes() / 128) + " swizzled boxes of 128-byte rows");
  StagedValue staged = staged_value(ctx, id);
  stage_registers(ctx, staged.registers, staged.distribution, ctx.fn.type(op.operands.back()).shape, tile);
  ctx.out.line("tg_fence_proxy_async();  // the block's writes, visible to the TMA");
  ctx.barrier();
  size_t first_offset = 1 + 2 * d.rank;
  std::string row = ctx.operand(id, first_offset), col = ctx.operand(id, first_offset + 1);
  ctx.out.open("if (threadIdx.x == 0)");
  for (int64_t p = 0; p < tile.row_bytes() / 128; ++p)
    ctx.out.line(bulk_write(op, 2) + "(" + map + ", tg_shared_address(tg_smem) + " +
                 std::to_string(std::stoll(tile.offset) + p * tile.block_stride()) + ", " +
                 (p == 0 ? col : col + " + " + std::to_string(p * span)) + ", " + row + ");");
  ctx.out.line("tg_bulk_commit();  // read out of shared memory while the kernel goes on (bulk_reads_pending)");
  ctx.out.close();
  ctx.bulk_reads_pending();
  after_bulk_write(ctx, op);
}

}  // namespace

void emit_tma(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(ctx.options.arch >= 90, "desc ops reach the CUDA code generator only on sm_90 (tma_plan.h)");
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  bool load = op.kind == ir::OpKind::DescLoad;
  ir::ValueId value = ir::descriptor_block_value(op);
  const ir::Type& block = ctx.fn.type(value);
  int64_t bytes = block.numel() * element_bytes(block.element());
  std::optional<SharedTile> swizzled = load ? std::nullopt : swizzled_block(block);
  TensorMapParam param = tma_map_param(ctx.fn, op);
  if (swizzled) {  // one box per 128-byte span of the rows
    param.box = {swizzled->rows, swizzled->block_bytes() / swizzled->element_bytes};
    param.swizzle = 3;  // CU_TENSOR_MAP_SWIZZLE_128B
  }
  std::string map_name = ctx.tensor_map(param);
  std::string map = "&" + map_name;
  std::string path = descriptor_op_name(ctx.fn, op) + ": TMA through " + map_name;
  if (ir::OpId loop = ctx.fn.block(op.parent).parent; load && loop.valid() && ctx.fn.op(loop).kind == ir::OpKind::For) {
    std::string why = tma_ring_refusal(ctx, loop);
    path += ", waited where issued (";
    path += (why.empty() ? "not read by the loop's TMA ring" : "not a TMA ring: " + why) + ")";
  }
  ctx.descriptor_paths.push_back(path);
  std::string rank = std::to_string(d.rank) + "d";
  std::string coords = coordinates(ctx, id, d);

  if (load) {
    ctx.before_global_load(d.base);
    // Every thread past the previous load's wait before the barrier's next
    // phase can complete: the area's barrier is that one too.
    ctx.assume_shared_readers();
    std::string buffer = block_area(ctx, block, bytes);
    std::string bar = ctx.tma_barrier();
    ctx.out.line("// TMA copy of the " + std::to_string(bytes) + "-byte block, completed on the mbarrier");
    ctx.out.open("if (threadIdx.x == 0)");
    ctx.out.line("tg_mbar_arrive_expect_tx(" + bar + ", " + std::to_string(bytes) + ");");
    ctx.out.line("tg_tma_load_" + rank + "(tg_shared_address(" + buffer + "), " + map + ", " + bar + coords + ");");
    ctx.out.close();
    ctx.out.line("tg_mbar_wait(" + bar + ", tg_tma_phase);  // the block has landed");
    ctx.out.line("tg_tma_phase ^= 1;");
    std::string dest = ctx.name(value);
    ctx.declare_tile(dest, block, ctx.layout(value));
    unstage_tile(ctx, dest, buffer, ctx.distribution(ctx.layout(value), block.shape));
    ctx.shared_reads_done();
    return;
  }

  if (swizzled) {
    store_swizzled(ctx, id, *swizzled, map);
    return;
  }
  std::string buffer = block_area(ctx, block, bytes);
  ctx.out.line("// " + bulk_write_name(op) + " of the " + std::to_string(bytes) + "-byte block from shared memory");
  StagedValue staged = staged_value(ctx, id);
  stage_tile(ctx, buffer, staged.registers, staged.distribution);
  ctx.out.line("tg_fence_proxy_async();  // the block's writes, visible to the TMA");
  ctx.barrier();
  ctx.out.open("if (threadIdx.x == 0)");
  ctx.out.line(bulk_write(op, d.rank) + "(" + map + ", tg_shared_address(" + buffer + ")" + coords + ");");
  ctx.out.line("tg_bulk_commit();  // read out of shared memory while the kernel goes on (bulk_reads_pending)");
  ctx.out.close();
  ctx.bulk_reads_pending();
  after_bulk_write(ctx, op);
}

bool transpose_staged_by_tma(const CudaContext& ctx, ir::OpId trans) {
  const ir::Function& fn = ctx.fn;
  const ir::Op& op = fn.op(trans);
  if (op.kind != ir::OpKind::Trans || ctx.options.arch < 90) return false;
  // Its only user is the op right after it, a desc_store or desc_atomic
  // (which the TMA writes: every desc op reaching this generator is), so
  // nothing between may rewrite the operand's registers (a dot or an
  // epilogue accumulating in place) before the staging reads them.
  const std::vector<ir::OpId>& ops = fn.block(op.parent).ops;
  auto at = std::find(ops.begin(), ops.end(), trans);
  if (at == ops.end() || at + 1 == ops.end()) return false;
  const ir::Op& desc = fn.op(*(at + 1));
  ir::ValueId result = op.results[0];
  if ((desc.kind != ir::OpKind::DescStore && desc.kind != ir::OpKind::DescAtomic) || desc.operands.back() != result)
    return false;
  int uses = 0;
  fn.walk([&](ir::OpId u) {
    for (ir::ValueId v : fn.op(u).operands) uses += v == result;
  });
  return uses == 1;
}

}  // namespace tegula::backends::cuda
