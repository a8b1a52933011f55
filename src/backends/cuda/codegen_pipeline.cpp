// Software pipelining of K loops that feed tensor-core dots (sm_80+):
// loads of the iterations ahead are in flight while the current one computes.
//
// A load in the body of a `for` is pipelined when
//  * its only use is operand a or b of a dot that runs on tensor cores, in
//    the same block, and the body stores nothing (a store could change what
//    a load issued ahead reads);
//  * its pointer is a loop-carried tile the body advances by a loop-
//    invariant offset (`a_ptrs += BLOCK_K * stride_ak`), so the pointer of
//    iteration k + d is `a_ptrs + d * offset`; or the body computes it from
//    the induction variable and loop-invariant values (`a_ptr + k * BK + ...`);
//  * axis info proves the pointers contiguous and aligned in chunks of 4, 8
//    or 16 bytes along one dim, and the mask (if any) constant over each
//    chunk; `other` is absent or zero (masked chunks are zero-filled);
//  * the mask is computed in the body from the induction variable and
//    loop-invariant values only (any pure elementwise or shape ops).
//
// Pointers and masks computed in the body are re-emitted for the iteration
// being issued, in a nested scope where the induction variable is rebound.
//
// The loop then keeps a ring of `num_stages` (S) shared-memory buffers at
// the start of the dynamic shared memory, each holding one iteration's tiles
// in the swizzled layout the dot reads (shared_tile.h), rows along the dim
// the pointers are contiguous in. Every thread copies the chunks its layout
// gives it with cp.async (zero-filled when masked), one commit group per
// iteration:
//
//   prologue:  for j in 0 .. S-2: if j < trips: issue iteration j into stage j
//              commit
//   iteration k:  wait until at most S-2 groups are pending (k's has landed)
//                 barrier (k's tiles visible to all; k-1's readers are done)
//                 if k+S-1 < trips: issue iteration k+S-1 into stage (k+S-1) % S
//                   (or, without the branch, issue it reading nothing past
//                   the last iteration: refill_without_branch)
//                 commit; the body runs, its dot reading stage k % S
//   after:     wait for all groups
//
// Issuing iteration j re-emits the mask's ops in a nested scope with the
// induction variable rebound to j's value, so masked K tails stay exact.
// One barrier per iteration; the stage being overwritten was read by
// iteration k-1, which every thread finished before the barrier.
//
// Hopper wgmma (codegen_wgmma.cpp) reads shared memory through the async
// proxy. The ring needs no proxy fence: only cp.async writes it, and the
// wait and the barrier order its landed bytes for wgmma as well (as in other
// Hopper cp.async pipelines). A fence there is MEMBAR.ALL.CTA in SASS, which
// also waits for the copies in flight for later stages.
//
// Keeping the tensor cores busy on Hopper: when the body's only tensor-core
// dot is a wgmma that accumulates in place (the loop-carried accumulator,
// read by nothing else in the body) with both operands from the ring, its
// group stays in flight into the next iteration, and the refill moves from
// the top of the iteration to behind the dot:
//
//   iteration k:  wait until k's tiles have landed
//                 barrier (k's tiles visible to all warpgroups)
//                 issue the wgmma group of k, commit
//                 wgmma wait_group 1 (this warpgroup's group k-1 is done)
//                 barrier (every warpgroup's group k-1 is done: its stage is free)
//                 if k+S-1 < trips: issue iteration k+S-1 into stage (k-1) % S
//                 commit
//   after:     wgmma wait_group 0, then the accumulator may be read
//
// So group k-1 runs while k's is issued, and k's while the loads ahead are
// issued and the next iteration's tiles are waited for. The second barrier
// is the price: a warpgroup's wait_group says nothing about the other
// warpgroups' groups, and the copies any thread issues fill tiles every
// warpgroup reads.
//
// With several tensor-core dots in the body (attention), the last one keeps
// its group in flight when it accumulates in place and the carried
// accumulator is read by nothing before the first dot, a wgmma: that dot's
// wait_group 0 in the next iteration waits for both groups (then pins the
// accumulator), and the refill follows the in-flight dot behind a barrier.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/codegen_mma.h"
#include "backends/cuda/loop_ahead.h"
#include "passes/fold_constants.h"
#include "passes/rewrite_utils.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

struct PipelinedLoad {
  ir::OpId load;
  ir::OpId advance;             // the addptr the body yields for a carried pointer (else invalid)
  AheadOps ahead;               // what computes the mask (and pointer) for an iteration ahead
  int chunk_bytes = 16;
  SharedTile tile;              // offset: from the start of a stage
};

struct LoopPipeline {
  int stages = 0;
  int64_t stage_bytes = 0;
  std::vector<PipelinedLoad> loads;
  bool async_proxy = false;  // a dot reads the ring through wgmma

  int ahead() const { return stages - 1; }  // how far loads run ahead
};

bool is_zero(const ir::Function& fn, ir::ValueId v) {
  if (const ir::Op* splat = passes::defining_op(fn, v, OpKind::Splat)) v = splat->operands[0];
  std::optional<passes::ConstantValue> c = passes::constant_value(fn, v);
  return c && (c->is_float() ? c->float_value == 0.0 : c->int_value == 0);
}

class Planner {
 public:
  Planner(const CudaContext& ctx, ir::OpId loop) : ctx_(ctx), fn_(ctx.fn), loop_(loop) {}

  std::optional<LoopPipeline> run() {
    const CodegenOptions& o = ctx_.options;
    const ir::Op& op = fn_.op(loop_);
    if (o.arch < 80 || o.debug || o.num_stages < 2 || op.kind != OpKind::For || op.regions.size() != 1)
      return std::nullopt;
    body_ = op.regions[0];
    if (ctx_.contains_store(body_)) return std::nullopt;
    uses_ = fn_.use_counts();
    LoopPipeline pipeline;
    int64_t staged_elsewhere = 0;
    for (ir::OpId id : fn_.block(body_).ops) {
      const ir::Op& dot = fn_.op(id);
      if (dot.erased || dot.kind != OpKind::Dot || !ctx_.layout(dot.results[0]).mma) continue;
      pipeline.async_proxy = pipeline.async_proxy || ctx_.layout(dot.results[0]).mma->warpgroup;
      for (size_t k = 0; k < 2; ++k) {
        if (std::optional<PipelinedLoad> p = plan_load(dot.operands[k], k)) {
          pipeline.loads.push_back(std::move(*p));
        } else {
          staged_elsewhere += fn_.type(dot.operands[k]).numel() * element_bytes(fn_.type(dot.operands[k]));
        }
      }
    }
    if (pipeline.loads.empty()) return std::nullopt;
    for (PipelinedLoad& p : pipeline.loads) {
      p.tile.offset = str(pipeline.stage_bytes);
      pipeline.stage_bytes = next_line(pipeline.stage_bytes + p.tile.bytes());
    }
    // What the body stages besides the ring (other dot operands, and some
    // room for conversions and reductions) must still fit.
    int64_t room = shared_limit(o.arch) - next_line(staged_elsewhere) - 16 * 1024;
    pipeline.stages = static_cast<int>(std::min<int64_t>(o.num_stages, room / pipeline.stage_bytes));
    if (pipeline.stages < 2) return std::nullopt;
    return pipeline;
  }

 private:
  bool inside(ir::ValueId v) const { return passes::is_defined_inside(fn_, v, loop_); }

  std::optional<PipelinedLoad> plan_load(ir::ValueId value, size_t operand) {
    ir::OpId def = fn_.value(value).def;
    if (!def.valid() || uses_[value.index] != 1) return std::nullopt;
    const ir::Op& load = fn_.op(def);
    if (load.kind != OpKind::Load || load.results.size() != 1 || !in_body_block(def)) return std::nullopt;
    if (load.has_attr("volatile")) return std::nullopt;
    if (load.operands.size() > 2 && !is_zero(fn_, load.operands[2])) return std::nullopt;

    PipelinedLoad p;
    p.load = def;
    // The pointer: a carried tile advanced by a loop-invariant offset, or
    // computed from the induction variable.
    const std::vector<ir::ValueId>& args = fn_.block(body_).args;
    ir::ValueId ptr = load.operands[0];
    auto arg = std::find(args.begin() + 1, args.end(), ptr);
    if (arg != args.end()) {
      size_t carried = static_cast<size_t>(arg - args.begin()) - 1;
      const ir::Op& yield = fn_.op(fn_.block(body_).ops.back());
      ir::OpId advance = fn_.value(yield.operands[carried]).def;
      if (!advance.valid() || fn_.op(advance).kind != OpKind::AddPtr || fn_.op(advance).operands[0] != ptr ||
          inside(fn_.op(advance).operands[1]))
        return std::nullopt;
      p.advance = advance;
    } else if (!collect_ahead(fn_, loop_, ptr, p.ahead)) {
      return std::nullopt;
    }

    // Chunks: contiguous, aligned and (masked) uniform along one dim.
    const ir::Type& t = fn_.type(value);
    const passes::AxisInfo& facts = ctx_.axis_info.get(ptr);
    int rank = t.rank();
    if (rank != 2) return std::nullopt;
    size_t fast = facts.contiguity[0] > facts.contiguity[1] ? 0 : 1;
    int eb = static_cast<int>(element_bytes(t));
    int64_t chunk = std::min<int64_t>({16, facts.contiguity[fast] * eb, facts.divisibility[fast]});
    if (load.operands.size() > 1 && fn_.type(load.operands[1]).is_tile())
      chunk = std::min<int64_t>(chunk, ctx_.axis_info.get(load.operands[1]).constancy[fast] * eb);
    if (chunk < 4) return std::nullopt;
    chunk = int64_t{1} << c_family::log2_ceil(chunk + 1) >> 1;  // a power of two
    p.chunk_bytes = static_cast<int>(chunk);
    const Layout& layout = ctx_.operand_layout(def, 0);
    Distribution d = distribute(layout, t.shape);
    if (contiguous_registers(d, t.shape, static_cast<int>(fast)) * eb < chunk) return std::nullopt;
    if (p.advance.valid()) {
      if (!(distribute(ctx_.layout(ptr), t.shape) == d)) return std::nullopt;
      const ir::Op& advance = fn_.op(p.advance);
      if (fn_.type(advance.operands[1]).is_tile() && !(distribute(ctx_.operand_layout(p.advance, 1), t.shape) == d))
        return std::nullopt;
    }

    // The mask's ops, recomputable for an iteration ahead.
    if (load.operands.size() > 1 && !collect_ahead(fn_, loop_, load.operands[1], p.ahead)) return std::nullopt;

    p.tile.k_dim = operand == 0 ? 1 : 0;
    p.tile.k_major = static_cast<int>(fast) == p.tile.k_dim;
    p.tile.rows = t.shape[static_cast<size_t>(p.tile.row_dim())];
    p.tile.row_elements = t.shape[static_cast<size_t>(p.tile.col_dim())];
    p.tile.element_bytes = eb;
    p.tile.c_type = c_element(t);
    if (p.tile.row_bytes() < 32) return std::nullopt;
    return p;
  }

  bool in_body_block(ir::OpId id) const {
    const std::vector<ir::OpId>& ops = fn_.block(body_).ops;
    return std::find(ops.begin(), ops.end(), id) != ops.end();
  }

  const CudaContext& ctx_;
  const ir::Function& fn_;
  ir::OpId loop_;
  ir::BlockId body_;
  std::vector<uint32_t> uses_;
};

std::string ring_stage(ir::OpId loop) { return "ring" + str(loop.index); }

bool active(const CudaContext& ctx, const LoopPipeline& p) {
  return ctx.ring_tiles.count(ctx.fn.op(p.loads.front().load).results[0].index) > 0;
}

// For each chunk of `vector` registers of `d` (a tile of `shape` copied into
// `tile`), the bytes from the thread's first chunk to it in shared memory,
// when that distance is the same for every thread; empty when it is not.
std::vector<int64_t> chunk_steps(const Distribution& d, int vector, const std::vector<int64_t>& shape,
                                 const SharedTile& tile) {
  std::vector<int64_t> steps;
  for (int r = 0; r < d.registers(); r += vector) {
    // The register's bits and the thread's are disjoint: no carries between dims.
    int64_t offset = d.register_offset(r), dim0 = offset / shape[1], dim1 = offset % shape[1];
    std::optional<int64_t> step = tile.row_dim() == 0 ? tile.constant_step(dim0, dim1 * tile.element_bytes)
                                                      : tile.constant_step(dim1, dim0 * tile.element_bytes);
    if (!step) return {};
    steps.push_back(*step);
  }
  return steps;
}

// Copies iteration `j`'s tiles into stage `stage`; the pointers are the
// carried tiles advanced `ahead` times. `live` (a condition, or empty for
// always) is folded into each copy's source size: where it is false the
// copies read nothing and zero the stage, which no later iteration reads
// (see refill_without_branch).
void issue(CudaContext& ctx, ir::OpId loop, const LoopPipeline& pipeline, const std::string& j,
           const std::string& stage, const std::string& ahead, const std::string& live = "") {
  for (const PipelinedLoad& p : pipeline.loads) {
    const ir::Op& load = ctx.fn.op(p.load);
    const ir::Type& t = ctx.fn.type(load.results[0]);
    ctx.out.open("");
    ctx.out.line("// " + ctx.name(load.results[0]) + " of iteration " + j + " into stage " + stage);
    emit_ahead(ctx, loop, p.ahead, j);
    Distribution d = ctx.distribution(ctx.operand_layout(p.load, 0), t.shape);
    int vector = p.chunk_bytes / p.tile.element_bytes;
    std::string pointers = ctx.operand(p.load, 0);
    std::string mask = load.operands.size() > 1 ? ctx.operand(p.load, 1) : "";
    std::string own = ctx.owner(d);
    if (!own.empty()) ctx.out.open("if (" + own + ")");
    auto destination = [&](const std::string& e) {
      std::string dim0 = e + " >> " + str(c_family::log2_ceil(t.shape[1])), dim1 = e + " & " + str(t.shape[1] - 1);
      std::string row = p.tile.row_dim() == 0 ? dim0 : dim1, col = p.tile.col_dim() == 0 ? dim0 : dim1;
      return "sm + " + stage + " * " + str(pipeline.stage_bytes) + " + " + p.tile.element_at("(" + row + ")", col);
    };
    std::vector<int64_t> steps = chunk_steps(d, vector, t.shape, p.tile);
    std::string first;
    if (!steps.empty()) {
      // Every chunk lies a fixed distance from the thread's first: one
      // swizzled address per thread, the rest are immediate offsets.
      first = ctx.fresh("dst");
      ctx.out.line("const unsigned " + first + " = " + destination("(" + ctx.element_index(d, "0") + ")") + ";");
    }
    std::string i = ctx.open_unrolled(d.registers(), vector);
    std::string dest;
    if (steps.empty()) {
      std::string e = ctx.fresh("e");
      ctx.out.line("const int " + e + " = " + ctx.element_index(d, i) + ";");
      dest = destination(e);
    } else {
      std::string table;
      for (int64_t step : steps) table += (table.empty() ? "" : ", ") + str(step) + "u";
      std::string name = ctx.fresh("step");
      ctx.out.line("const unsigned " + name + "[] = {" + table + "};");
      dest = first + " + " + name + "[" + (vector == 1 ? i : i + " / " + str(vector)) + "]";
    }
    std::string src = pointers + "[" + i + "]";
    if (p.advance.valid() && ahead != "0") {  // a carried pointer, `ahead` advances later
      ir::ValueId step = ctx.fn.op(p.advance).operands[1];
      std::string offset = ctx.operand(p.advance, 1) + (ctx.fn.type(step).is_tile() ? "[" + i + "]" : "");
      src += " + (long long)" + ahead + " * " + offset;
    }
    if (!mask.empty() && ctx.fn.type(load.operands[1]).is_tile()) mask += "[" + i + "]";
    std::string condition = live.empty() ? mask : mask.empty() ? live : "(" + live + " && " + mask + ")";
    std::string bytes = condition.empty() ? str(p.chunk_bytes) : condition + " ? " + str(p.chunk_bytes) + " : 0";
    ctx.out.line("tg_cp_async<" + str(p.chunk_bytes) + ">(" + dest + ", " + src + ", " + bytes + ");");
    ctx.out.close();
    if (!own.empty()) ctx.out.close();
    ctx.out.close();
  }
}

std::optional<LoopPipeline> plan(const CudaContext& ctx, ir::OpId loop) { return Planner(ctx, loop).run(); }

// The wgmma dot whose group may stay in flight into the next iteration (see
// the top of the file), once the ring's tiles are known, and the dot that
// covers it (waits for it) when the body has more than one; invalid if none.
struct Overlap {
  ir::OpId dot, cover;
};

Overlap overlapped_dot(const CudaContext& ctx, ir::OpId loop, const LoopPipeline& pipeline) {
  if (!pipeline.async_proxy) return {};
  const ir::Block& body = ctx.fn.block(ctx.fn.op(loop).regions[0]);
  std::vector<ir::OpId> dots;
  for (ir::OpId id : body.ops) {
    const ir::Op& dot = ctx.fn.op(id);
    if (!dot.erased && dot.kind == OpKind::Dot && ctx.layout(dot.results[0]).mma) dots.push_back(id);
  }
  if (dots.empty()) return {};
  ir::OpId found = dots.back();
  if (!ctx.layout(ctx.fn.op(found).results[0]).mma->warpgroup || !accumulates_in_place(ctx, found)) return {};
  DotOperands operands = plan_operands(ctx, found);
  if (!wgmma_fits(ctx, found, operands) || !operands.b_from_ring) return {};
  if (dots.size() == 1)
    return operands.a_from_ring && !operands.a_in_registers ? Overlap{found, {}} : Overlap{};
  // Several dots: the first must be a wgmma that waits for all groups before
  // the carried accumulator is read, and nothing between the two reads it.
  ir::OpId cover = dots.front();
  if (!ctx.layout(ctx.fn.op(cover).results[0]).mma->warpgroup ||
      !wgmma_fits(ctx, cover, plan_operands(ctx, cover)))
    return {};
  ir::ValueId carried = carried_accumulator(ctx, found);
  bool covered = false;
  for (ir::OpId id : body.ops) {
    if (id == cover) covered = true;
    if (ctx.fn.op(id).erased) continue;
    bool reads = false;
    auto visit = [&](ir::OpId inner) {
      for (ir::ValueId v : ctx.fn.op(inner).operands) reads = reads || v == carried;
    };
    visit(id);
    for (ir::BlockId region : ctx.fn.op(id).regions) ctx.fn.walk_block(region, visit);
    if (reads && !covered) return {};
  }
  return {found, cover};
}

// Stage of iteration k - 1, which iteration k + S - 1 refills.
std::string previous_stage(ir::OpId loop, int stages) {
  std::string ring = ring_stage(loop), last = str(stages - 1);
  return "(" + ring + " == 0 ? " + last + " : " + ring + " - 1)";
}

}  // namespace

std::vector<InvariantOperand> invariant_operands(const CudaContext& ctx, ir::OpId loop) {
  std::vector<InvariantOperand> found;
  std::set<uint32_t> seen;
  for (ir::OpId id : ctx.fn.block(ctx.fn.op(loop).regions[0]).ops) {
    const ir::Op& dot = ctx.fn.op(id);
    if (dot.erased || dot.kind != OpKind::Dot || !ctx.layout(dot.results[0]).mma) continue;
    for (size_t k = 0; k < 2; ++k) {
      ir::ValueId v = dot.operands[k];
      if (passes::is_defined_inside(ctx.fn, v, loop) || !seen.insert(v.index).second) continue;
      if (k == 0) {  // a that is already in A fragment registers needs no tile
        std::optional<Layout> fragments = a_fragment_layout(ctx, id);
        const ir::Type& t = ctx.fn.type(v);
        if (fragments && distribute(*fragments, t.shape) == distribute(ctx.operand_layout(id, 0), t.shape)) continue;
      }
      found.push_back({id, k});
    }
  }
  return found;
}

// Whether the refill issues its copies every iteration, with the source size
// zero past the last one (issue()), rather than under a branch. The branch
// splits the loop body, and ncu put 9% of the attention loop's samples in
// dispatch stalls around it; without it the attention loop is one block and
// its time 3% lower, the persistent matmul's 6%. But then NVVM keeps every
// chunk's source address live across iterations instead of recomputing
// them inside the branch: the gelu matmul epilogue went from 128 to 160
// registers, one 256-thread block per SM instead of two (470 TFLOP/s
// instead of 570). So: branch-free where occupancy is already one block or
// a loop around the loop dominates (several dots in the body, or a loop
// nested in another), under a branch for the single-dot loop of a kernel.
bool refill_without_branch(const CudaContext& ctx, ir::OpId loop) {
  const ir::Op& op = ctx.fn.op(loop);
  int dots = 0;
  for (ir::OpId id : ctx.fn.block(op.regions[0]).ops)
    if (!ctx.fn.op(id).erased && ctx.fn.op(id).kind == OpKind::Dot) ++dots;
  if (dots > 1) return true;
  for (ir::BlockId b = op.parent; b.valid();) {
    ir::OpId owner = ctx.fn.block(b).parent;
    if (!owner.valid()) break;
    if (ctx.fn.op(owner).kind == OpKind::For || ctx.fn.op(owner).kind == OpKind::While) return true;
    b = ctx.fn.op(owner).parent;
  }
  return false;
}

// Issues iteration k + ahead into `stage` (the caller commits the group).
void refill(CudaContext& ctx, ir::OpId loop, const LoopPipeline& pipeline, const std::string& k,
            const std::string& trips, const std::string& stage, const std::string& ahead) {
  std::string j = k + " + " + ahead;
  if (refill_without_branch(ctx, loop)) {
    std::string live = ctx.fresh("live");
    ctx.out.line("const bool " + live + " = " + j + " < " + trips + ";");
    issue(ctx, loop, pipeline, j, stage, ahead, live);
  } else {
    ctx.out.open("if (" + j + " < " + trips + ")");
    issue(ctx, loop, pipeline, j, stage, ahead);
    ctx.out.close();
  }
}

void pipeline_before_loop(CudaContext& ctx, ir::OpId loop, const std::string& trips) {
  if (tma_ring_before_loop(ctx, loop, trips)) return;
  if (ctx.shared_reserved() > 0) return;  // inside another pipelined loop
  std::optional<LoopPipeline> pipeline = plan(ctx, loop);
  if (!pipeline) return;
  int stages = pipeline->stages, ahead = pipeline->ahead();
  ctx.out.line("// software pipeline: " + str(stages) + " stages of " + str(pipeline->stage_bytes) +
               " bytes, loads issued " + str(ahead) + " iterations ahead with cp.async");
  // Loop-invariant operands go after the ring, staged once; the dots read
  // them like ring tiles.
  std::vector<InvariantOperand> invariant = invariant_operands(ctx, loop);
  std::vector<SharedTile> invariant_tiles;
  int64_t reserved = stages * pipeline->stage_bytes;
  for (const InvariantOperand& o : invariant) {
    reserved = next_line(reserved);
    invariant_tiles.push_back(plan_operand(ctx, o.dot, o.index, reserved));
    reserved += invariant_tiles.back().bytes();
  }
  ctx.reserve_shared(reserved);
  ctx.thread_ids();
  for (size_t i = 0; i < invariant.size(); ++i) {
    ctx.out.line("// " + ctx.name(ctx.fn.op(invariant[i].dot).operands[invariant[i].index]) +
                 " is the same in every iteration: staged once");
    stage_operand(ctx, invariant[i].dot, invariant[i].index, invariant_tiles[i]);
  }
  if (!invariant.empty()) {
    if (pipeline->async_proxy) ctx.out.line("tg_fence_proxy_async();  // the stores, visible to wgmma");
    ctx.full_barrier();
  }
  for (size_t i = 0; i < invariant.size(); ++i)
    ctx.ring_tiles[ctx.fn.op(invariant[i].dot).operands[invariant[i].index].index] = invariant_tiles[i];
  for (const PipelinedLoad& p : pipeline->loads) {
    SharedTile tile = p.tile;
    tile.offset = "(" + ring_stage(loop) + " * " + str(pipeline->stage_bytes) + " + " + p.tile.offset + ")";
    ctx.ring_tiles[ctx.fn.op(p.load).results[0].index] = tile;
  }
  if (ir::OpId dot = overlapped_dot(ctx, loop, *pipeline).dot; dot.valid()) {
    // Pinned once before the loop, the accumulator's initial value has one
    // definition on every path; else the compiler sinks it into the path
    // that skips the loop, and ptxas, seeing a non-wgmma definition where
    // the group in flight meets the final wait, serializes every wgmma (C7515).
    ir::ValueId acc = carried_accumulator(ctx, dot);
    std::string r = ctx.open_unrolled(ctx.distribution(ctx.layout(acc), ctx.fn.type(acc).shape).registers());
    ctx.out.line("tg_pin(" + ctx.name(acc) + "[" + r + "]);");
    ctx.out.close();
  }
  // The stage iteration k reads, advanced at the top of each iteration.
  ctx.out.line("int " + ring_stage(loop) + " = " + str(stages - 1) + ";");
  ctx.out.open("");
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  for (int j = 0; j < ahead; ++j) {
    ctx.out.open("if (" + str(j) + " < " + trips + ")");
    issue(ctx, loop, *pipeline, str(j), str(j), str(j));
    ctx.out.close();
    ctx.out.line("tg_cp_async_commit();");
  }
  ctx.out.close();
}

void pipeline_iteration(CudaContext& ctx, ir::OpId loop, const std::string& trips, const std::string& k) {
  if (tma_ring_iteration(ctx, loop, trips, k)) return;
  std::optional<LoopPipeline> pipeline = plan(ctx, loop);
  if (!pipeline || !active(ctx, *pipeline)) return;
  int stages = pipeline->stages;
  std::string ring = ring_stage(loop), last = str(stages - 1);
  ctx.out.line(ring + " = " + ring + " == " + last + " ? 0 : " + ring + " + 1;  // k % " + str(stages));
  ctx.out.line("tg_cp_async_wait<" + str(pipeline->ahead() - 1) + ">();  // this iteration's tiles have landed");
  // No proxy fence here: the ring is written only by cp.async, whose landed
  // bytes the wait and the barrier make visible to wgmma as well. A fence
  // (MEMBAR.ALL.CTA in SASS) would also wait for the copies still in flight
  // for later stages, draining the pipeline every iteration. Stores from
  // registers (staged operands) still get theirs.
  ctx.full_barrier();
  if (Overlap overlap = overlapped_dot(ctx, loop, *pipeline); overlap.dot.valid()) {
    ctx.out.line("// the wgmma group of " + ctx.name(ctx.fn.op(overlap.dot).results[0]) +
                 " stays in flight into the next iteration: the refill follows it");
    ctx.in_flight_dot = CudaContext::InFlightDot{overlap.dot, loop, trips, k, false, overlap.cover};
    return;
  }
  ctx.out.open("");
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  std::string ahead = str(pipeline->ahead());
  // (k + S - 1) % S is the stage iteration k - 1 read.
  refill(ctx, loop, *pipeline, k, trips, previous_stage(loop, stages), ahead);
  ctx.out.line("tg_cp_async_commit();");
  ctx.out.close();
}

void pipeline_refill(CudaContext& ctx) {
  TEGULA_ASSERT(ctx.in_flight_dot && !ctx.in_flight_dot->refilled, "pipeline refill without a dot in flight");
  if (ctx.in_flight_dot->tma_ring) return tma_ring_refill(ctx);
  CudaContext::InFlightDot& flight = *ctx.in_flight_dot;
  std::optional<LoopPipeline> pipeline = plan(ctx, flight.loop);
  TEGULA_ASSERT(pipeline.has_value(), "in-flight dot of a loop without a pipeline");
  ctx.full_barrier();  // every warpgroup's previous group is done: its stage is free
  ctx.out.open("");
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  std::string ahead = str(pipeline->ahead());
  refill(ctx, flight.loop, *pipeline, flight.k, flight.trips, previous_stage(flight.loop, pipeline->stages), ahead);
  ctx.out.line("tg_cp_async_commit();");
  ctx.out.close();
  flight.refilled = true;
}

void pipeline_after_loop(CudaContext& ctx, ir::OpId loop) {
  if (tma_ring_after_loop(ctx, loop)) return;
  std::optional<LoopPipeline> pipeline = plan(ctx, loop);
  if (!pipeline || !active(ctx, *pipeline)) return;
  if (ctx.in_flight_dot && ctx.in_flight_dot->loop == loop) {
    TEGULA_ASSERT(ctx.in_flight_dot->refilled, "the in-flight wgmma dot did not refill the pipeline");
    ir::ValueId result = ctx.fn.op(ctx.in_flight_dot->dot).results[0];
    int registers = ctx.distribution(ctx.layout(result), ctx.fn.type(result).shape).registers();
    ctx.out.line("tg_wgmma_wait<0>();  // the last iteration's wgmma group");
    std::string r = ctx.open_unrolled(registers);
    ctx.out.line("tg_pin(" + ctx.name(result) + "[" + r + "]);  // no read of it moves above the wait");
    ctx.out.close();
    ctx.in_flight_dot.reset();
  }
  ctx.out.line("tg_cp_async_wait<0>();");
  for (const PipelinedLoad& p : pipeline->loads) ctx.ring_tiles.erase(ctx.fn.op(p.load).results[0].index);
  for (const InvariantOperand& o : invariant_operands(ctx, loop))
    ctx.ring_tiles.erase(ctx.fn.op(o.dot).operands[o.index].index);
  ctx.release_shared();
}

}  // namespace tegula::backends::cuda
