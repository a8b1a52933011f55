#include "backends/cuda/warp_specialize.h"

#include <algorithm>
#include <variant>

#include "backends/cuda/codegen_context.h"
#include "ir/ops.h"

namespace tegula::backends::cuda {

using ir::OpKind;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

constexpr int kRegisterFile = 65536;  // 32-bit registers per multiprocessor, all one CTA's at 384+ threads
constexpr int64_t kSharedPerMultiprocessor = 228 * 1024;  // sm_90, of which a block may have 227 KB

int floor8(int v) { return v / 8 * 8; }

// The budgets: what the launch gives every thread (one CTA per
// multiprocessor), and, when it is short of what wgmma accumulators want,
// what the producer keeps and the consumers raise theirs to.
void plan_registers(WarpSpecialization& ws) {
  ws.launch_registers = std::min(255, floor8(kRegisterFile / ws.threads()));
  if (ws.launch_registers >= 240) return;  // one consumer warpgroup: nothing to gain
  // The producer only walks loop bounds and copy offsets: 24 registers
  // hold it (more would come out of the consumers', whose accumulators
  // decide whether a dot loop spills: attention's dK/dV loop at head dim
  // 128 holds two 64 x 128 accumulators per warpgroup).
  ws.producer_registers = 24;
  int pool = ws.launch_registers * ws.threads() - WarpSpecialization::kProducerThreads * ws.producer_registers;
  ws.consumer_registers = std::min(240, floor8(pool / ws.consumer_threads));
  if (ws.consumer_registers <= ws.launch_registers) ws.producer_registers = ws.consumer_registers = 0;
}

class Planner {
 public:
  explicit Planner(const CudaContext& ctx) : ctx_(ctx), fn_(ctx.fn), top_(fn_.block(fn_.body())) {}

  std::optional<WarpSpecialization> run() {
    const CodegenOptions& o = ctx_.options;
    if (o.arch < 90) return std::nullopt;
    WarpSpecialization ws;
    if (!find_loop(ws)) return std::nullopt;  // nothing to feed; no reason to give
    const ir::Attr* asked = fn_.op(ws.loop).attr("warp_specialize");
    if (!asked && ws.tiles.valid()) asked = fn_.op(ws.tiles).attr("warp_specialize");
    if (asked && std::get<int64_t>(*asked) == 0) return refuse("tl.range(..., warp_specialize=False)");
    // Unasked, only where the ring keeps a second program off the
    // multiprocessor anyway: the producer's registers and the budgets'
    // one-block launch bounds cost the second program, worth more than
    // the producer where it fits (a 128x128 bf16 matmul runs 20% slower).
    // So are 16 warps or more: two such programs would have 64 registers
    // per thread at most, too few for a wgmma loop.
    int64_t ring = tma_ring_shared_bytes(ctx_, ws.loop);
    if (!asked && 2 * ring <= kSharedPerMultiprocessor && o.num_warps < 16)
      return refuse("the ring's " + str(ring) + " bytes leave room for two programs per multiprocessor; "
                    "tl.range(..., warp_specialize=True) asks for it");
    if (o.debug) return refuse("debug builds keep one warp role");
    if (o.maxnreg > 0) return refuse("maxnreg fixes every thread's registers");
    if (o.num_warps % 4 != 0) return refuse("num_warps is not a whole number of warpgroups");
    ws.consumer_threads = 32 * o.num_warps;
    if (ws.threads() > 1024) return refuse("num_warps leaves no room for a producer warpgroup (at most 1024 threads)");
    // The producer starts copying at once: nothing before the loop may
    // write memory the copies could read. In a tile loop it runs ahead
    // into the next tile while this one's results are stored, so those
    // stores must not go to the tensors the copies read.
    ir::OpId outermost = ws.tiles.valid() ? ws.tiles : ws.loop;
    if (std::string why = writes_before(top_, outermost); !why.empty()) return refuse(why);
    if (ws.tiles.valid()) {
      const ir::Block& tiles = fn_.block(fn_.op(ws.tiles).regions[0]);
      if (std::string why = writes_before(tiles, ws.loop); !why.empty()) return refuse(why);
      if (std::string why = side_effects(fn_.op(ws.tiles).regions[0]); !why.empty()) return refuse(why);
    }
    // What the producer computes again: the loops' bounds and the inputs of
    // the copies' offsets, from the kernel's parameters through scalar ops.
    const ir::Op& loop = fn_.op(ws.loop);
    std::vector<ir::ValueId> needed = tma_ring_inputs(ctx_, ws.loop);
    needed.insert(needed.end(), loop.operands.begin(), loop.operands.begin() + 3);
    if (ws.tiles.valid()) {
      const ir::Op& tiles = fn_.op(ws.tiles);
      needed.insert(needed.end(), tiles.operands.begin(), tiles.operands.begin() + 3);
    }
    while (!needed.empty()) {
      ir::ValueId v = needed.back();
      needed.pop_back();
      if (is_arg(top_, v) || (ws.tiles.valid() && v == fn_.block(fn_.op(ws.tiles).regions[0]).args[0])) continue;
      ir::OpId def = fn_.value(v).def;
      std::vector<ir::OpId>* slice = nullptr;
      if (def.valid() && position(top_, def) < position(top_, outermost)) {
        slice = &ws.prologue;
      } else if (const ir::Block* tiles = tile_body(ws); tiles && def.valid() &&
                 position(*tiles, def) < position(*tiles, ws.loop)) {
        slice = &ws.tile_prologue;
      } else {
        return refuse("the copies read a value the kernel does not compute before the loop");
      }
      if (std::find(slice->begin(), slice->end(), def) != slice->end()) continue;
      const ir::Op& op = fn_.op(def);
      if (!ir::is_pure(op.kind) || !op.regions.empty() || has_tile(op))
        return refuse("the copies' offsets come from `" + std::string(ir::info(op.kind).name) +
                      "`, not from scalar arithmetic on the parameters");
      slice->push_back(def);
      needed.insert(needed.end(), op.operands.begin(), op.operands.end());
    }
    sort_in(top_, ws.prologue);
    if (const ir::Block* tiles = tile_body(ws)) sort_in(*tiles, ws.tile_prologue);
    plan_registers(ws);
    return ws;
  }

  const std::string& why() const { return why_; }

 private:
  std::nullopt_t refuse(std::string reason) {
    why_ = std::move(reason);
    return std::nullopt;
  }

  bool is_ring(ir::OpId id) const {
    return fn_.op(id).kind == OpKind::For && tma_ring_refusal(ctx_, id).empty();
  }

  // The first ring loop of the kernel's top level, or of the top level of a
  // top-level loop's body (a loop over tiles).
  bool find_loop(WarpSpecialization& ws) const {
    for (ir::OpId id : top_.ops) {
      if (is_ring(id)) {
        ws.loop = id;
        return true;
      }
      const ir::Op& op = fn_.op(id);
      if (op.kind != OpKind::For) continue;
      for (ir::OpId inner : fn_.block(op.regions[0]).ops)
        if (is_ring(inner)) {
          ws.loop = inner;
          ws.tiles = id;
          return true;
        }
    }
    return false;
  }

  const ir::Block* tile_body(const WarpSpecialization& ws) const {
    return ws.tiles.valid() ? &fn_.block(fn_.op(ws.tiles).regions[0]) : nullptr;
  }

  // Why an op of `block` before `until` may write memory, or "". A reduction or scan with a pure
  // combiner writes only its shared scratch, which starts after the ring's reserved bytes, behind a
  // barrier of the consumers alone.
  std::string writes_before(const ir::Block& block, ir::OpId until) const {
    for (ir::OpId id : block.ops) {
      if (id == until) break;
      const ir::Op& op = fn_.op(id);
      bool combines = (op.kind == OpKind::Reduce || op.kind == OpKind::Scan) && pure_regions(op);
      if (!ir::is_pure(op.kind) && op.kind != OpKind::Load && op.kind != OpKind::DescLoad && !combines)
        return "the kernel runs `" + std::string(ir::info(op.kind).name) + "` before the loop";
    }
    return "";
  }

  bool pure_regions(const ir::Op& op) const {
    bool pure = true;
    for (ir::BlockId region : op.regions)
      fn_.walk_block(region, [&](ir::OpId id) {
        OpKind kind = fn_.op(id).kind;
        pure = pure && (ir::is_pure(kind) || kind == OpKind::Yield);
      });
    return pure;
  }

  // Why the tile loop's body runs something the producer, running ahead
  // into the next tile, could overtake, or "". Stores of a tile's results
  // are not: they go to a tensor no copy reads, or the kernel races with
  // its own other programs already.
  std::string side_effects(ir::BlockId tiles) const {
    std::string why;
    fn_.walk_block(tiles, [&](ir::OpId id) {
      const ir::Op& op = fn_.op(id);
      bool fine = ir::is_pure(op.kind) || op.kind == OpKind::Load || op.kind == OpKind::Store ||
                  op.kind == OpKind::DescLoad || op.kind == OpKind::DescStore || op.kind == OpKind::For ||
                  op.kind == OpKind::If || op.kind == OpKind::While || op.kind == OpKind::Yield ||
                  op.kind == OpKind::Condition;
      if (!fine && why.empty())
        why = "the tile loop runs `" + std::string(ir::info(op.kind).name) +
              "`, which the producer's copies of the next tile would not wait for";
    });
    return why;
  }

  bool is_arg(const ir::Block& block, ir::ValueId v) const {
    return std::find(block.args.begin(), block.args.end(), v) != block.args.end();
  }

  size_t position(const ir::Block& block, ir::OpId id) const {
    return static_cast<size_t>(std::find(block.ops.begin(), block.ops.end(), id) - block.ops.begin());
  }

  void sort_in(const ir::Block& block, std::vector<ir::OpId>& ops) const {
    std::sort(ops.begin(), ops.end(), [&](ir::OpId x, ir::OpId y) { return position(block, x) < position(block, y); });
  }

  bool has_tile(const ir::Op& op) const {
    auto tile = [&](ir::ValueId v) { return fn_.type(v).is_tile(); };
    return std::any_of(op.results.begin(), op.results.end(), tile) ||
           std::any_of(op.operands.begin(), op.operands.end(), tile);
  }

  const CudaContext& ctx_;
  const ir::Function& fn_;
  const ir::Block& top_;
  std::string why_;
};

}  // namespace

std::optional<WarpSpecialization> plan_warp_specialization(const CudaContext& ctx, std::string& why) {
  Planner planner(ctx);
  std::optional<WarpSpecialization> ws = planner.run();
  why = planner.why();
  return ws;
}

namespace {

// `const T iv = ...;` and the trip count `trips` of `loop`, whose bounds are in scope.
std::string trip_count(CudaContext& ctx, const ir::Op& loop, const std::string& trips) {
  std::string iv_type = c_scalar(ctx.fn.type(ctx.fn.block(loop.regions[0]).args[0]).scalar);
  ctx.out.line("const unsigned long long " + trips + " = tg_trip_count<" + iv_type + ">(" +
               ctx.name(loop.operands[0]) + ", " + ctx.name(loop.operands[1]) + ", " + ctx.name(loop.operands[2]) +
               ");");
  return iv_type;
}

}  // namespace

void emit_warp_specialization(CudaContext& ctx, const WarpSpecialization& ws) {
  std::string consumers = str(ws.consumer_threads);
  ctx.out.line("// warp specialization: threads " + consumers + ".." + str(ws.threads() - 1) +
               " (the producer warpgroup) fill the TMA ring, threads 0.." + str(ws.consumer_threads - 1) +
               " run the kernel");
  ctx.reserve_shared(tma_ring_shared_bytes(ctx, ws.loop));
  tma_ring_init_barriers(ctx, ws.loop);
  ctx.out.line("__syncthreads();  // the only barrier of every thread: the ring's barriers are initialized");
  ctx.out.open("if (threadIdx.x >= " + consumers + ")");
  if (ws.moves_registers())
    ctx.out.line("tg_setmaxnreg_dec<" + str(ws.producer_registers) + ">();  // of " + str(ws.launch_registers) +
                 " at launch");
  ctx.out.open("if (threadIdx.x == " + consumers + ")");
  for (ir::OpId id : ws.prologue) ctx.emit_op(id);
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  ctx.out.line("int stage = 0;");
  ctx.out.line("unsigned phase = 0;  // the ring's laps, counted over every tile, & 1");
  if (ws.tiles.valid()) {
    const ir::Op& tiles = ctx.fn.op(ws.tiles);
    std::string iv_type = trip_count(ctx, tiles, "tiles");
    ctx.out.open("for (unsigned long long t = 0; t < tiles; ++t)");
    ctx.out.line("const " + iv_type + " " + ctx.name(ctx.fn.block(tiles.regions[0]).args[0]) + " = tg_induction<" +
                 iv_type + ">(" + ctx.name(tiles.operands[0]) + ", t, " + ctx.name(tiles.operands[2]) + ");");
    for (ir::OpId id : ws.tile_prologue) ctx.emit_op(id);
  }
  trip_count(ctx, ctx.fn.op(ws.loop), "trips");
  tma_ring_produce(ctx, ws.loop, "trips");
  if (ws.tiles.valid()) ctx.out.close();
  ctx.out.close();
  ctx.out.line("return;");
  ctx.out.close();
  if (ws.moves_registers()) ctx.out.line("tg_setmaxnreg_inc<" + str(ws.consumer_registers) + ">();");
  tma_ring_declare_state(ctx, ws.loop);
}

std::string describe_warp_specialization(const ir::Function& fn, const std::optional<WarpSpecialization>& ws,
                                        const std::string& why) {
  if (!ws) return why.empty() ? "" : "warp specialization: none (" + why + ")\n";
  std::string text = "warp specialization: the loop of line " + str(fn.op(ws->loop).loc.line) +
                     (ws->tiles.valid() ? " (in the tile loop of line " + str(fn.op(ws->tiles).loc.line) + ")" : "") +
                     " fed by a producer warpgroup (threads " +
                     str(ws->consumer_threads) + ".." + str(ws->threads() - 1) + "), " +
                     str(ws->consumer_threads / 128) + " consumer warpgroup(s)";
  if (ws->moves_registers())
    text += "; registers " + str(ws->launch_registers) + " at launch, producer " + str(ws->producer_registers) +
            ", consumers " + str(ws->consumer_registers) + " (setmaxnreg)";
  return text + "\n";
}

}  // namespace tegula::backends::cuda
