// Internal to the CUDA backend: what the tensor-core dot emitters share
// (mma.sync in codegen_mma.cpp, Hopper wgmma in codegen_wgmma.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "backends/cuda/shared_tile.h"

namespace tegula::backends::cuda {

// A dot's operand tiles in shared memory: from a pipelined loop's ring
// (codegen_pipeline.cpp), or to be staged from registers into scratch.
// plan_operands() only decides; stage_operands() emits the stores of the
// staged ones, then (async_proxy, for wgmma) a fence making them visible to
// the tensor cores' async proxy, then a barrier.
// A 16-bit operand a whose registers already are the A fragments
// (a_in_registers: P of attention, computed in the accumulator layout of an
// earlier dot) is not staged: the dot packs its registers instead.
struct DotOperands {
  SharedTile a, b;
  bool a_from_ring = false, b_from_ring = false;
  bool a_in_registers = false;
  int64_t scratch_bytes = 0;  // what the staged ones take
};
DotOperands plan_operands(const CudaContext& ctx, ir::OpId dot);
// Where operand `index` of `dot` is staged from registers, at byte `offset`:
// rows along K unless the operand's registers run along M or N.
SharedTile plan_operand(const CudaContext& ctx, ir::OpId dot, size_t index, int64_t offset);
// The stores of operand `index` into `tile` (no fence, no barrier).
void stage_operand(CudaContext& ctx, ir::OpId dot, size_t index, const SharedTile& tile);
// Whether `trans` is not emitted because the dot right after it, its only
// user, stages the transposed value straight from the source's registers
// (dS of an attention backward held as dS^T): a tile's rows may run along
// K or along M/N, so no transposition through shared memory is needed.
bool transpose_staged_by_dot(const CudaContext& ctx, ir::OpId trans);
// The same for registers `src` holding a tile of `shape` in distribution `d`.
void stage_registers(CudaContext& ctx, const std::string& src, const Distribution& d, const std::vector<int64_t>& shape,
                     const SharedTile& tile);
// Whether it staged any (and so handed out scratch whose reads the dot's
// end may report done: CudaContext::shared_reads_done).
bool stage_operands(CudaContext& ctx, ir::OpId dot, const DotOperands& operands, bool async_proxy);
// The layout in which a thread's registers of a 16-bit operand a are the A
// fragments of mma.sync m16n8k16 and of wgmma with A from registers, as the
// dot's warps need them: the accumulator layout of the dot with one warp
// tile K wide (register 8 * ks + j of each 16-row tile: fragment word j / 2
// of K step ks, low half first), or nothing for other operand types.
std::optional<Layout> a_fragment_layout(const CudaContext& ctx, ir::OpId dot);
// The 32-bit A fragment word `word` (0..3) of K step `ks` of row tile `mr`,
// packed from operand a's registers (a_in_registers).
std::string a_fragment_word(const CudaContext& ctx, ir::OpId dot, const std::string& mr, const std::string& ks,
                            int word);

// A dot operand of a loop body that is the same every iteration (Q of
// attention): the pipelines (codegen_pipeline.cpp, codegen_tma_ring.cpp)
// stage it once, before the loop, instead of every iteration. Operand a
// already held as A fragments in registers is not one.
struct InvariantOperand {
  ir::OpId dot;
  size_t index;
};
std::vector<InvariantOperand> invariant_operands(const CudaContext& ctx, ir::OpId loop);

// The accumulator a dot adds into: the f32/s32 array holding its result.
// When the acc operand is a loop-carried value used only by this dot and
// the loop yields the dot's result back into it, the dot accumulates in
// place (the result names the carried array: no copies, and wgmma can keep
// working on it across iterations); otherwise the result is declared and
// initialized from acc. f16/bf16 results accumulate in a separate f32 array
// that finish_accumulator() rounds into the result.
struct Accumulator {
  std::string array;
  int registers = 0;
  bool in_place = false;
  bool narrow = false;  // result is f16/bf16
};
Accumulator start_accumulator(CudaContext& ctx, ir::OpId dot);
// The loop-carried value dot `dot` accumulates into in place: its acc
// operand, or the carried value an elementwise acc operand is computed from
// (`acc = acc * alpha; acc = dot(p, v, acc)`); invalid when there is none.
ir::ValueId carried_accumulator(const CudaContext& ctx, ir::OpId dot);
// For an elementwise op whose result is the acc operand of a tensor-core
// dot that accumulates in place: the carried value whose registers the
// result is written back into (CudaContext::emit_op); else invalid.
ir::ValueId accumulator_storage(const CudaContext& ctx, ir::OpId elementwise);
bool accumulates_in_place(const CudaContext& ctx, ir::OpId dot);
void finish_accumulator(CudaContext& ctx, ir::OpId dot, const Accumulator& acc);

// Whether the operand tiles fit wgmma's shared-memory descriptors (else
// the dot runs as mma.sync in the same accumulator layout).
bool wgmma_fits(const CudaContext& ctx, ir::OpId dot, const DotOperands& operands);
// The Hopper wgmma form of a dot whose layout is a warpgroup layout.
void emit_dot_wgmma(CudaContext& ctx, ir::OpId dot, const DotOperands& operands);
// For a TMA ring's last dot issued one iteration late (codegen_tma_ring.cpp):
// the array its A fragments are packed into at its site, declared before the
// loop; and its group's issue (fence, wgmmas, commit) where the ring puts it,
// adding into the carried accumulator and reading the blocks of `operands`.
void declare_late_fragments(CudaContext& ctx, ir::OpId dot, const DotOperands& operands, const std::string& fa);
void emit_wgmma_late_issue(CudaContext& ctx, ir::OpId dot, const DotOperands& operands, const std::string& fragments);

}  // namespace tegula::backends::cuda
