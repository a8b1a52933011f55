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
  int consumer_groups = ws.consumer_threads / 128;
  ws.producer_registers = consumer_groups >= 3 ? 24 : 40;
  int pool = ws.launch_registers * ws.threads() - WarpSpecialization::kProducerThreads * ws.producer_registers;
  ws.consumer_registers = std::min(240, floor8(pool / ws.consumer_threads));
  if (ws.consumer_registers <= ws.launch_registers) ws.producer_registers = ws.consumer_registers = 0;
}

class Planner {
 public:
  explicit Planner(const CudaContext& ctx) : ctx_(ctx), fn_(ctx.fn), body_(fn_.block(fn_.body())) {}

  std::optional<WarpSpecialization> run() {
    const CodegenOptions& o = ctx_.options;
    if (o.arch < 90) return std::nullopt;
    // The loop the producer feeds: the first top-level loop that runs as a TMA ring.
    size_t at = body_.ops.size();
    for (size_t i = 0; i < body_.ops.size() && at == body_.ops.size(); ++i) {
      const ir::Op& op = fn_.op(body_.ops[i]);
      if (op.kind == OpKind::For && tma_ring_refusal(ctx_, body_.ops[i]).empty()) at = i;
    }
    if (at == body_.ops.size()) return std::nullopt;  // nothing to feed; no reason to give
    const ir::Attr* asked = fn_.op(body_.ops[at]).attr("warp_specialize");
    if (asked && std::get<int64_t>(*asked) == 0) return refuse("tl.range(..., warp_specialize=False)");
    // Unasked, only where the ring keeps a second program off the
    // multiprocessor anyway: the producer's registers and the budgets'
    // one-block launch bounds cost the second program, worth more than
    // the producer where it fits (a 128x128 bf16 matmul runs 20% slower).
    int64_t ring = tma_ring_shared_bytes(ctx_, body_.ops[at]);
    if (!asked && 2 * ring <= kSharedPerMultiprocessor)
      return refuse("the ring's " + str(ring) + " bytes leave room for two programs per multiprocessor; "
                    "tl.range(..., warp_specialize=True) asks for it");
    if (o.debug) return refuse("debug builds keep one warp role");
    if (o.maxnreg > 0) return refuse("maxnreg fixes every thread's registers");
    if (o.num_warps % 4 != 0) return refuse("num_warps is not a whole number of warpgroups");
    WarpSpecialization ws;
    ws.loop = body_.ops[at];
    ws.consumer_threads = 32 * o.num_warps;
    if (ws.threads() > 1024) return refuse("num_warps leaves no room for a producer warpgroup (at most 1024 threads)");
    // The producer starts copying at once: nothing before the loop may
    // write memory the copies could read.
    for (size_t i = 0; i < at; ++i) {
      const ir::Op& op = fn_.op(body_.ops[i]);
      if (!ir::is_pure(op.kind) && op.kind != OpKind::Load)
        return refuse("the kernel runs `" + std::string(ir::info(op.kind).name) + "` before the loop");
    }
    // What the producer computes again: the loop's bounds and the inputs of
    // the copies' offsets, from the kernel's parameters through scalar ops.
    const ir::Op& loop = fn_.op(ws.loop);
    std::vector<ir::ValueId> needed = tma_ring_inputs(ctx_, ws.loop);
    needed.insert(needed.end(), loop.operands.begin(), loop.operands.begin() + 3);
    while (!needed.empty()) {
      ir::ValueId v = needed.back();
      needed.pop_back();
      if (is_parameter(v)) continue;
      ir::OpId def = fn_.value(v).def;
      size_t pos = def.valid() ? position(def) : body_.ops.size();
      if (pos >= at) return refuse("the copies read a value the kernel's body does not compute before the loop");
      if (std::find(ws.prologue.begin(), ws.prologue.end(), def) != ws.prologue.end()) continue;
      const ir::Op& op = fn_.op(def);
      if (!ir::is_pure(op.kind) || !op.regions.empty() || has_tile(op))
        return refuse("the copies' offsets come from `" + std::string(ir::info(op.kind).name) +
                      "`, not from scalar arithmetic on the parameters");
      ws.prologue.push_back(def);
      needed.insert(needed.end(), op.operands.begin(), op.operands.end());
    }
    std::sort(ws.prologue.begin(), ws.prologue.end(),
              [&](ir::OpId x, ir::OpId y) { return position(x) < position(y); });
    plan_registers(ws);
    return ws;
  }

  const std::string& why() const { return why_; }

 private:
  std::nullopt_t refuse(std::string reason) {
    why_ = std::move(reason);
    return std::nullopt;
  }

  bool is_parameter(ir::ValueId v) const {
    return std::find(body_.args.begin(), body_.args.end(), v) != body_.args.end();
  }

  size_t position(ir::OpId id) const {
    return static_cast<size_t>(std::find(body_.ops.begin(), body_.ops.end(), id) - body_.ops.begin());
  }

  bool has_tile(const ir::Op& op) const {
    auto tile = [&](ir::ValueId v) { return fn_.type(v).is_tile(); };
    return std::any_of(op.results.begin(), op.results.end(), tile) ||
           std::any_of(op.operands.begin(), op.operands.end(), tile);
  }

  const CudaContext& ctx_;
  const ir::Function& fn_;
  const ir::Block& body_;
  std::string why_;
};

}  // namespace

std::optional<WarpSpecialization> plan_warp_specialization(const CudaContext& ctx, std::string& why) {
  Planner planner(ctx);
  std::optional<WarpSpecialization> ws = planner.run();
  why = planner.why();
  return ws;
}

void emit_warp_specialization(CudaContext& ctx, const WarpSpecialization& ws) {
  const ir::Op& loop = ctx.fn.op(ws.loop);
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
  std::string iv_type = c_scalar(ctx.fn.type(ctx.fn.block(loop.regions[0]).args[0]).scalar);
  ctx.out.line("const unsigned long long trips = tg_trip_count<" + iv_type + ">(" + ctx.name(loop.operands[0]) +
               ", " + ctx.name(loop.operands[1]) + ", " + ctx.name(loop.operands[2]) + ");");
  tma_ring_produce(ctx, ws.loop, "trips");
  ctx.out.close();
  ctx.out.line("return;");
  ctx.out.close();
  if (ws.moves_registers())
    ctx.out.line("tg_setmaxnreg_inc<" + str(ws.consumer_registers) + ">();");
}

std::string describe_warp_specialization(const ir::Function& fn, const std::optional<WarpSpecialization>& ws,
                                        const std::string& why) {
  if (!ws) return why.empty() ? "" : "warp specialization: none (" + why + ")\n";
  std::string text = "warp specialization: the loop of line " + str(fn.op(ws->loop).loc.line) +
                     " fed by a producer warpgroup (threads " +
                     str(ws->consumer_threads) + ".." + str(ws->threads() - 1) + "), " +
                     str(ws->consumer_threads / 128) + " consumer warpgroup(s)";
  if (ws->moves_registers())
    text += "; registers " + str(ws->launch_registers) + " at launch, producer " + str(ws->producer_registers) +
            ", consumers " + str(ws->consumer_registers) + " (setmaxnreg)";
  return text + "\n";
}

}  // namespace tegula::backends::cuda
