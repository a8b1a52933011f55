// Multi-stage TMA rings (sm_90): a K loop whose tensor-core dots read
// descriptor loads of the body (the matmul: `a_desc.load([off_m, k * BK])`,
// `b_desc.load([k * BK, off_n])`, `acc = tl.dot(a, b, acc)`; attention:
// `s = tl.dot(q, k.T)`, softmax, `acc = tl.dot(p, v, acc)`).
//
// The loop qualifies when its body stores nothing (atomics, desc_atomic's
// too, only into arrays no ring block is copied from), its dots are wgmmas, the last accumulates
// in place, and each dot operand is a desc load of the body (or its
// transpose, `b.T` of a B stored [N, K]) used only by the dot, a value
// defined before the loop (staged once, after the barriers), an operand a
// already held as A fragments (P; not with a single dot, whose group is in
// flight while the next iteration rewrites them), or a tile the body
// computes from no desc load except through dots (dS), which the dot
// stages in every iteration (stage_operands). The loads must
// be ones the TMA can copy (tma_plan.h), of rank 2, with offsets the body
// computes from the induction variable and loop-invariant values, and block
// rows of 32, 64 or a multiple of 128 bytes (a swizzle span). With several
// dots, nothing before the first may read the last one's accumulator: the
// first dot's wait retires the last one's group of the previous iteration.
// Other loops keep the single copies of codegen_tma.cpp (and the layouts
// text says why).
//
// The ring holds S = num_stages stages at the start of shared memory, each
// with both blocks in the SharedTile layout wgmma's descriptors read
// (shared_tile.h): rows along the contiguous dim, cut into blocks of one
// swizzle span (at most 128 bytes), block j of every row together. One TMA
// box per block, swizzled by the map (SWIZZLE_128B for 128-byte spans),
// lands exactly there: the dot reads the landed bytes, nothing goes through
// registers. After the stages, two mbarriers per stage: `full` (one arrival,
// the producer's expect_tx of the stage's bytes, completed by the copies)
// and `empty` (one arrival per warp, once its wgmma reads of the stage have
// retired). Thread 0 is the producer; every thread consumes.
//
//   before:       thread 0 initializes the barriers; a barrier
//                 thread 0: for j in 0 .. S-2: if j < trips: issue j into stage j
//   iteration k:  stage = k % S; phase = (k / S) & 1 (flips as the ring wraps)
//                 wait full[stage] for parity phase (k's blocks have landed)
//                 issue the wgmma group of k, commit; wgmma wait_group 1
//                 if k > 0: lane 0 of each warp arrives on empty[(k-1) % S]
//                 thread 0: if k+S-1 < trips: wait empty[(k-1) % S] for the
//                   parity of k-1 (every warp's group k-1 has retired), then
//                   issue k+S-1 into stage (k-1) % S
//   after:        wgmma wait_group 0
//
// A fresh mbarrier passes a wait for parity 1 at once (the phase "before"
// phase 0), so the first refill of each stage (k = 0 refills stage S-1,
// never read) needs no release. Issuing iteration j re-emits its offsets'
// ops with the induction variable rebound to j's value. No CTA barrier runs
// per iteration: the mbarriers order the TMA's writes against the wgmma
// reads (both async proxy) in both directions.
//
// With several dots and the last one's operand a in registers (attention's
// P), the last dot is issued one iteration late, so the tensor cores run it
// while the threads compute the next block's softmax:
//   iteration k:  wait full[stage]; the first dot's group of k (S = Q K^T);
//                 if k > 0: the last dot's group of k - 1, reading its A
//                   fragments from the array it left and its block from
//                   stage (k-1) % S (else an empty group, so that the waits
//                   count alike in every iteration); wait_group 1: S is in
//                 ... the body computes on S while P V of k - 1 runs ...
//                 before the first read of the carried accumulator (or at the
//                   last dot's site): wait_group 0, then the release and the
//                   refill of stage (k-1) % S as above;
//                 at the last dot's site: its A fragments packed for k + 1.
//   after:        the last dot's group of the last iteration; wait_group 0.
// A ring of S stages then holds the blocks of k - 1, k and S - 2 ahead.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/codegen_mma.h"
#include "backends/cuda/loop_ahead.h"
#include "backends/cuda/tma_plan.h"
#include "ir/atomic.h"
#include "ir/descriptor.h"
#include "passes/pointer_provenance.h"
#include "passes/rewrite_utils.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

struct RingLoad {
  ir::OpId load;
  ir::ValueId operand;  // what the dot reads: the load's block, its transpose, or an fp8 block widened to f16
  std::vector<ir::ValueId> between;  // the transpose and widening results on the way, which read the ring too
  SharedTile tile;      // offset: from the start of a stage
  TensorMapParam map;   // box: all rows by one swizzle span
  bool early = false;   // read by the first dot only (K of attention): released once it retires
  // Other dots' reads of the same block, the other way round too (Q of an
  // attention backward: `k @ q.T` and `ds @ q`): one copy, a descriptor
  // each way (wgmma reads 16-bit tiles with rows along K or along M/N).
  struct View {
    ir::ValueId value;
    bool k_major;
  };
  std::vector<View> views;
  SharedTile tile_as(bool k_major) const {
    SharedTile t = tile;
    t.k_major = k_major;
    return t;
  }
  int64_t pieces() const { return tile.row_bytes() / tile.block_bytes(); }
};

struct TmaRing {
  ir::OpId dot;    // the body's last dot: its wgmma group stays in flight into the next iteration
  ir::OpId cover;  // with several dots, the first: its wait retires that group (else invalid)
  std::vector<RingLoad> loads;       // in the order the dots read them
  // Operands that are the same every iteration (Q of attention): staged
  // once before the loop, after the barriers (offsets from the area's start).
  std::vector<InvariantOperand> invariant;
  std::vector<SharedTile> invariant_tiles;
  // For each invariant operand, the earlier one whose tile it reads the
  // other way round (K of an attention backward, `k @ q.T` and `k.T @ ds`),
  // staged once; -1 for a tile of its own.
  std::vector<int> invariant_view_of;
  AheadOps offsets;                  // computes the offsets for an iteration ahead
  std::vector<DotOperands> operands;  // of each dot, ring tiles' offsets from the start of a stage
  // The last dot is issued one iteration late (see the top of the file; the
  // planner says whether it can be, plan() whether it is); retire_before:
  // the first op after the first dot reading its accumulator.
  bool late = false;
  ir::OpId retire_before;
  int stages = 0;
  int64_t stage_bytes = 0;  // every block of an iteration, on 1024-byte lines
  int64_t invariant_bytes = 0;
  // Operands the body computes (dS of an attention backward), staged by the
  // consumers in every iteration past the ring and its invariant tiles.
  int64_t staged_bytes = 0;
  // With the last dot issued late, the blocks only the first dot reads (K)
  // form barrier group 0 and the others (V) group 1, each with a full and
  // an empty barrier per stage: K is released once the first dot's group
  // retires, a good part of an iteration before V (set by plan()).
  bool split = false;

  int ahead() const { return stages - 1; }
  int groups() const { return split ? 2 : 1; }
  int group(const RingLoad& r) const { return split && !r.early ? 1 : 0; }
  int64_t group_bytes(int g) const {  // what the TMA lands per stage on group g's full barrier
    int64_t bytes = 0;
    for (const RingLoad& r : loads)
      if (group(r) == g) bytes += r.tile.bytes();
    return bytes;
  }
  // full[g][s] at +8(g*S + s), empty[g][s] at +8(G*S + g*S + s); room for two groups either way.
  int64_t barriers_at() const { return stages * stage_bytes; }
  int64_t invariant_at() const { return next_line(barriers_at() + 32 * int64_t{stages}); }
  int64_t bytes() const { return invariant_at() + invariant_bytes; }
};

// Operand `operand` of the ring's last dot as it reads a ring block (offset
// from the start of a stage), when it is one.
std::optional<SharedTile> last_dot_block(const ir::Function& fn, const TmaRing& ring, size_t operand) {
  ir::ValueId v = fn.op(ring.dot).operands[operand];
  for (const RingLoad& r : ring.loads) {
    if (r.operand == v) return r.tile;
    for (const RingLoad::View& view : r.views)
      if (view.value == v) return r.tile_as(view.k_major);
  }
  return std::nullopt;
}

// CUtensorMapSwizzle of a span: 1, 2, 3 for 32, 64, 128 bytes.
int swizzle_mode(int64_t span) { return span == 32 ? 1 : span == 64 ? 2 : 3; }

class RingPlanner {
 public:
  RingPlanner(const CudaContext& ctx, ir::OpId loop) : ctx_(ctx), fn_(ctx.fn), loop_(loop) {}

  // The ring, or nothing and why() says why not.
  std::optional<TmaRing> run() {
    const ir::Op& op = fn_.op(loop_);
    if (ctx_.options.arch < 90 || op.kind != OpKind::For || op.regions.size() != 1)
      return refuse("not an sm_90 for loop");
    if (ctx_.options.num_stages < 2) return refuse("num_stages is below 2");
    body_ = op.regions[0];
    if (std::string why = writes(body_); !why.empty()) return refuse(why);
    uses_ = fn_.use_counts();
    std::vector<ir::OpId> dots;
    for (ir::OpId id : fn_.block(body_).ops) {
      const ir::Op& o = fn_.op(id);
      if (!o.erased && o.kind == OpKind::Dot && ctx_.layout(o.results[0]).mma) dots.push_back(id);
    }
    if (dots.empty()) return refuse("the loop body has no tensor-core dot");
    TmaRing ring;
    ring.dot = dots.back();
    if (dots.size() > 1) ring.cover = dots.front();
    for (ir::OpId id : dots)
      if (!ctx_.layout(fn_.op(id).results[0]).mma->warpgroup) return refuse("a dot of the body does not run as wgmma");
    if (!accumulates_in_place(ctx_, ring.dot))
      return refuse(dots.size() == 1 ? "the dot does not accumulate in place"
                                     : "the body's last dot does not accumulate in place");
    if (ring.cover.valid() && !covered(ring))
      return refuse("the last dot's accumulator is read before the first dot, whose wait would retire its group");
    ring.invariant = invariant_operands(ctx_, loop_);
    for (size_t i = 0; i < ring.invariant.size(); ++i) ring.invariant_view_of.push_back(transposed_invariant(ring, i));
    std::vector<DotOperands>& operands = ring.operands;
    for (ir::OpId id : dots) {
      std::optional<DotOperands> o = plan_dot(id, ring);
      if (!o) return std::nullopt;
      operands.push_back(*o);
    }
    if (ring.loads.empty()) return refuse("no operand of the body's dots is a descriptor load");
    if (std::string why = atomics_into_ring(ring); !why.empty()) return refuse(why);
    ring.late = ring.cover.valid() && operands.back().a_in_registers && last_dot_block(fn_, ring, 1).has_value();
    if (ring.late) ring.retire_before = first_reader_after_cover(ring);
    if (dots.size() == 1 && operands.back().a_in_registers)
      return refuse("the dot reads operand a from registers, which the next iteration rewrites while its group "
                    "is in flight");
    for (RingLoad& load : ring.loads) {
      load.tile.offset = str(ring.stage_bytes);
      ring.stage_bytes = next_line(ring.stage_bytes + load.tile.bytes());
    }
    std::vector<int64_t> at;  // each invariant tile's offset from the first one
    for (size_t i = 0; i < ring.invariant.size(); ++i) {
      if (int j = ring.invariant_view_of[i]; j >= 0) {
        at.push_back(at[static_cast<size_t>(j)]);
        continue;
      }
      at.push_back(ring.invariant_bytes);
      ring.invariant_bytes = next_line(ring.invariant_bytes + invariant_tile(ring, i, 0).bytes());
    }
    // The epilogue's scratch reuses the ring; some room stays for the body's,
    // and the invariant tiles start on the 1024-byte line after the barriers.
    int64_t room = shared_limit(ctx_.options.arch) - 16 * 1024 - ring.invariant_bytes - ring.staged_bytes - 1024;
    ring.stages = static_cast<int>(std::min<int64_t>(ctx_.options.num_stages, room / (ring.stage_bytes + 32)));
    if (ring.stages < 2) return refuse("two stages of " + str(ring.stage_bytes) + " bytes do not fit in shared memory");
    for (size_t i = 0; i < ring.invariant.size(); ++i)
      ring.invariant_tiles.push_back(invariant_tile(ring, i, ring.invariant_at() + at[i]));
    return ring;
  }

  const std::string& why() const { return why_; }

 private:
  // The earlier invariant operand whose staged tile invariant operand `i`
  // reads as it lies (invariant_tile), or -1: one is the other transposed,
  // and 16-bit, which wgmma reads with rows along K or along M/N (plan_dot's
  // wgmma_fits checks the view).
  int transposed_invariant(const TmaRing& ring, size_t i) const {
    const InvariantOperand& o = ring.invariant[i];
    ir::ValueId value = fn_.op(o.dot).operands[o.index];
    if (plan_operand(ctx_, o.dot, o.index, 0).element_bytes != 2) return -1;
    auto transpose_of = [&](ir::ValueId t, ir::ValueId x) {
      ir::OpId def = fn_.value(t).def;
      return def.valid() && fn_.op(def).kind == OpKind::Trans && fn_.op(def).operands[0] == x;
    };
    for (size_t j = 0; j < i; ++j) {
      const InvariantOperand& e = ring.invariant[j];
      ir::ValueId earlier = fn_.op(e.dot).operands[e.index];
      if (ring.invariant_view_of[j] < 0 && (transpose_of(value, earlier) || transpose_of(earlier, value)))
        return static_cast<int>(j);
    }
    return -1;
  }

  // The tile of invariant operand `i` at `offset`: its own, or the tile it
  // views (transposed_invariant) as this reader sees it: each element where
  // the staged tile has it, so the rows that run along K for one reader run
  // along M/N for the other.
  SharedTile invariant_tile(const TmaRing& ring, size_t i, int64_t offset) const {
    const InvariantOperand& o = ring.invariant[i];
    int j = ring.invariant_view_of[i];
    if (j < 0) return plan_operand(ctx_, o.dot, o.index, offset);
    const InvariantOperand& e = ring.invariant[static_cast<size_t>(j)];
    return plan_operand(ctx_, e.dot, e.index, offset).transposed().as_operand(o.index);
  }

  std::nullopt_t refuse(std::string reason) {
    why_ = std::move(reason);
    return std::nullopt;
  }

  // Why the body writes memory a ring may not run ahead of, or "". Stores
  // refuse; atomics are checked against the ring's tensors once the ring
  // is planned (atomics_into_ring).
  std::string writes(ir::BlockId block) {
    std::string why;
    fn_.walk_block(block, [&](ir::OpId id) {
      const ir::Op& op = fn_.op(id);
      if (op.kind == OpKind::Store || op.kind == OpKind::DescStore) {
        if (why.empty()) why = "the loop body stores";
      } else if (ir::is_atomic(op.kind) || op.kind == OpKind::DescAtomic) {
        atomics_.push_back(id);
      }
    });
    return why;
  }

  // The ring copies blocks of later iterations while the body runs, through
  // the async proxy: an atomic of the body (a pointer atomic, or a
  // desc_atomic's TMA reduction) may only write arrays none of the ring's
  // descriptors reads (a gradient accumulated across programs, dQ of an
  // attention backward). Its pointer (base) must come from kernel
  // parameters (pointer_provenance.h) other than the descriptors' bases; as
  // for any kernel, distinct parameters are taken to be distinct arrays.
  std::string atomics_into_ring(const TmaRing& ring) {
    if (atomics_.empty()) return "";
    passes::PointerProvenance provenance(fn_);
    std::vector<int32_t> read;
    for (const RingLoad& r : ring.loads) {
      ir::ValueId base = ir::descriptor_operands(fn_.op(r.load)).base;
      if (provenance.unknown(base)) return "a ring block's base pointer is not a kernel parameter";
      read.insert(read.end(), provenance.sources(base).begin(), provenance.sources(base).end());
    }
    for (ir::OpId id : atomics_) {
      ir::ValueId pointer = fn_.op(id).operands[0];
      if (provenance.unknown(pointer)) return "an atomic of the body writes through a pointer of unknown origin";
      for (int32_t source : provenance.sources(pointer))
        if (std::find(read.begin(), read.end(), source) != read.end())
          return "an atomic of the body writes an array a ring block is copied from";
    }
    return "";
  }

  // Where each operand of `dot` comes from: a ring block (added to the
  // ring), an invariant tile staged before the loop, or A fragments in
  // registers (P of attention); nothing when one comes from elsewhere.
  std::optional<DotOperands> plan_dot(ir::OpId id, TmaRing& ring) {
    const ir::Op& dot = fn_.op(id);
    DotOperands operands;
    for (size_t k = 0; k < 2; ++k) {
      SharedTile& tile = k == 0 ? operands.a : operands.b;
      // The invariant tile holding this operand: staged for it, or for
      // another dot reading the same value (in either role: wgmma_fits
      // below says whether this one can read it as it lies).
      auto invariant = std::find_if(ring.invariant.begin(), ring.invariant.end(),
                                    [&](const InvariantOperand& o) { return o.dot == id && o.index == k; });
      if (invariant == ring.invariant.end())
        invariant = std::find_if(ring.invariant.begin(), ring.invariant.end(), [&](const InvariantOperand& o) {
          return fn_.op(o.dot).operands[o.index] == dot.operands[k];
        });
      if (invariant != ring.invariant.end()) {
        tile = invariant_tile(ring, static_cast<size_t>(invariant - ring.invariant.begin()), 0).as_operand(k);
        (k == 0 ? operands.a_from_ring : operands.b_from_ring) = true;
      } else if (k == 0 && a_in_registers(id)) {
        operands.a_in_registers = true;
        tile = plan_operand(ctx_, id, 0, 0);
      } else if (std::optional<std::pair<RingLoad*, bool>> seen = earlier_read(dot.operands[k], k, ring)) {
        // A block an earlier dot reads too, either way round (A of a gate
        // and an up projection; Q of an attention backward, `k @ q.T` and
        // `ds @ q`): one copy in the ring, read by both.
        RingLoad& shared = *seen->first;
        if ((k == 0) != (shared.tile.k_dim == 1)) return refuse("a block is operand a of one dot and b of another");
        if (id != ring.cover) shared.early = false;
        tile = shared.tile_as(seen->second);
        if (dot.operands[k] != shared.operand && !std::any_of(shared.views.begin(), shared.views.end(), [&](auto& w) {
              return w.value == dot.operands[k];
            }))
          shared.views.push_back({dot.operands[k], seen->second});
        (k == 0 ? operands.a_from_ring : operands.b_from_ring) = true;
      } else if (!reads_descriptor(dot.operands[k])) {
        // A tile the body computes: stored by the consumers in every
        // iteration, fenced and barriered before the dot reads it
        // (stage_operands), outside the ring.
        tile = plan_operand(ctx_, id, k, 0);
        ring.staged_bytes = next_line(ring.staged_bytes + tile.bytes());
      } else {
        std::optional<RingLoad> load = plan_load(dot.operands[k], k, ring);
        if (!load) return std::nullopt;
        tile = load->tile;
        (k == 0 ? operands.a_from_ring : operands.b_from_ring) = true;
        load->early = ring.cover.valid() && id == ring.cover;
        ring.loads.push_back(std::move(*load));
      }
    }
    if (!wgmma_fits(ctx_, id, operands)) return refuse("the blocks do not fit wgmma's shared-memory descriptors");
    return operands;
  }

  // Whether `value` is computed from a descriptor load of the body other
  // than through a dot's result: a ring candidate itself, or a block the
  // body rescales (plan_load refuses those), not a tile to stage.
  bool reads_descriptor(ir::ValueId value) const {
    std::vector<ir::ValueId> todo = {value};
    std::vector<bool> seen(fn_.num_values(), false);
    while (!todo.empty()) {
      ir::ValueId v = todo.back();
      todo.pop_back();
      if (seen[v.index]) continue;
      seen[v.index] = true;
      ir::OpId def = fn_.value(v).def;
      if (!def.valid() || fn_.op(def).parent != body_ || fn_.op(def).kind == OpKind::Dot) continue;
      if (fn_.op(def).kind == OpKind::DescLoad) return true;
      for (ir::ValueId operand : fn_.op(def).operands) todo.push_back(operand);
    }
    return false;
  }

  // The ring block `value` reads when an earlier dot's operand is that block
  // (itself or its transpose), with the k_major of this read as operand
  // `operand`; nothing otherwise.
  std::optional<std::pair<RingLoad*, bool>> earlier_read(ir::ValueId value, size_t operand, TmaRing& ring) const {
    for (RingLoad& r : ring.loads) {
      if (r.operand == value) return std::make_pair(&r, r.tile.k_major);
      bool widened = std::any_of(r.between.begin(), r.between.end(), [&](ir::ValueId b) {
        return fn_.op(fn_.value(b).def).kind == OpKind::Cast;
      });
      if (widened) continue;  // fp8 blocks are read K-major only
      ir::ValueId block = fn_.op(r.load).results[0];
      bool transposed;
      if (value == block) {
        transposed = false;
      } else {
        ir::OpId def = fn_.value(value).def;
        if (!def.valid() || fn_.op(def).kind != OpKind::Trans || fn_.op(def).operands[0] != block) continue;
        transposed = true;
      }
      int k_dim = operand == 0 ? 1 : 0;
      return std::make_pair(&r, k_dim == (transposed ? 0 : 1));
    }
    return std::nullopt;
  }

  bool a_in_registers(ir::OpId id) const {
    std::optional<Layout> fragments = a_fragment_layout(ctx_, id);
    const ir::Type& a = fn_.type(fn_.op(id).operands[0]);
    return fragments && distribute(*fragments, a.shape) == distribute(ctx_.operand_layout(id, 0), a.shape);
  }

  // The first op of the body after the first dot that reads the carried
  // accumulator of the last (itself or in its regions); invalid when only
  // the last dot does.
  ir::OpId first_reader_after_cover(const TmaRing& ring) const {
    ir::ValueId carried = carried_accumulator(ctx_, ring.dot);
    bool after = false;
    for (ir::OpId id : fn_.block(body_).ops) {
      if (id == ring.dot) return ir::OpId{};
      if (after && reads(id, carried)) return id;
      after = after || id == ring.cover;
    }
    return ir::OpId{};
  }

  // Whether op `id` (itself or an op of its regions) reads `value`.
  bool reads(ir::OpId id, ir::ValueId value) const {
    bool found = false;
    auto visit = [&](ir::OpId inner) {
      for (ir::ValueId v : fn_.op(inner).operands) found = found || v == value;
    };
    visit(id);
    for (ir::BlockId region : fn_.op(id).regions) fn_.walk_block(region, visit);
    return found;
  }

  // Whether nothing of the body before the first dot reads the carried
  // accumulator of the last: the first dot's wait retires the last dot's
  // group of the previous iteration, and only then may it be read.
  bool covered(const TmaRing& ring) const {
    ir::ValueId carried = carried_accumulator(ctx_, ring.dot);
    for (ir::OpId id : fn_.block(body_).ops) {
      if (id == ring.cover) return true;
      if (reads(id, carried)) return false;
    }
    return true;
  }

  // Operand `operand` of the dot: a desc load's block, or its transpose
  // (`b_desc.load([off_n, k]).T` of a B stored [N, K]), read where it lands.
  std::optional<RingLoad> plan_load(ir::ValueId value, size_t operand, TmaRing& ring) {
    std::string which = operand == 0 ? "operand a" : "operand b";
    std::vector<ir::ValueId> between;
    ir::OpId def = dot_operand_def(value);
    // An fp8 block the front end widened to f16 for the dot: wgmma reads
    // the fp8 bytes where they land (both operands' rows along K).
    bool fp8 = def.valid() && fn_.op(def).kind == OpKind::Cast &&
               ir::is_fp8(fn_.type(fn_.op(def).operands[0]).scalar);
    if (fp8) {
      between.push_back(value);
      def = single_use_def(fn_.op(def).operands[0]);
    }
    bool transposed = def.valid() && fn_.op(def).kind == OpKind::Trans;
    if (transposed) {
      between.push_back(fn_.op(def).results[0]);
      def = fp8 ? single_use_def(fn_.op(def).operands[0]) : dot_operand_def(fn_.op(def).operands[0]);
    }
    if (!def.valid() || fn_.op(def).kind != OpKind::DescLoad)
      return refuse(which + " is not a descriptor load of the loop body used only by the dot");
    const ir::Op& load = fn_.op(def);
    ir::ValueId block = load.results[0];
    if (std::string why = tma_refusal(fn_, load); !why.empty()) return refuse(which + ": " + why);
    ir::DescriptorOperands d = ir::descriptor_operands(load);
    if (d.rank != 2) return refuse(which + " is a block of rank " + str(static_cast<int64_t>(d.rank)));
    for (ir::ValueId offset : d.offsets)
      if (!collect_ahead(fn_, loop_, offset, ring.offsets))
        return refuse(which + "'s offsets are not computed from the induction variable and loop-invariant values");
    const ir::Type& t = fn_.type(block);
    RingLoad r;
    r.load = def;
    r.operand = value;
    r.tile.k_dim = operand == 0 ? 1 : 0;
    // The tile's rows are the block's, along its contiguous (last) dim:
    // the operand's dim 1, or dim 0 when the dot reads the transpose.
    r.tile.k_major = r.tile.k_dim == (transposed ? 0 : 1);
    r.tile.rows = t.shape[0];
    r.tile.row_elements = t.shape[1];
    r.tile.element_bytes = static_cast<int>(element_bytes(t));
    r.tile.c_type = c_element(t);
    r.between = std::move(between);
    int64_t row = r.tile.row_bytes();
    if (row != 32 && row != 64 && row % 128 != 0)
      return refuse(which + "'s block rows are " + str(row) + " bytes, not 32, 64 or a multiple of 128");
    if (fp8 && !r.tile.k_major)
      return refuse(which + " is an fp8 block whose rows do not run along K (fp8 wgmma reads both operands "
                            "K-major: B stored [N, K], read as .T)");
    if (fp8 && t.scalar != ir::Scalar::F8E4M3 && t.scalar != ir::Scalar::F8E5M2)
      return refuse(which + " is an fp8 format wgmma does not read (e4m3 and e5m2 only)");
    r.map = tma_map_param(fn_, load);
    r.map.box = {r.tile.rows, r.tile.block_bytes() / r.tile.element_bytes};
    r.map.swizzle = swizzle_mode(r.tile.block_bytes());
    return r;
  }

  // The op of the loop body defining `v`, when `v` has no other use.
  // The op of the loop body defining `v`, when only dots of the body read
  // `v` (as operands a or b).
  // Transposes of `v` count as its reads when only dots read them.
  ir::OpId dot_operand_def(ir::ValueId v) const {
    ir::OpId def = fn_.value(v).def;
    if (!def.valid() || !in_body_block(def)) return ir::OpId{};
    auto by_dots = [&](ir::ValueId x) {
      uint32_t n = 0;
      for (ir::OpId id : fn_.block(body_).ops) {
        const ir::Op& o = fn_.op(id);
        if (!o.erased && o.kind == OpKind::Dot) n += (o.operands[0] == x) + (o.operands[1] == x);
      }
      return n;
    };
    uint32_t reads = by_dots(v);
    for (ir::OpId id : fn_.block(body_).ops) {
      const ir::Op& o = fn_.op(id);
      if (!o.erased && o.kind == OpKind::Trans && o.operands[0] == v && uses_[o.results[0].index] > 0 &&
          uses_[o.results[0].index] == by_dots(o.results[0]))
        ++reads;
    }
    return uses_[v.index] == reads ? def : ir::OpId{};
  }

  ir::OpId single_use_def(ir::ValueId v) const {
    ir::OpId def = fn_.value(v).def;
    return def.valid() && in_body_block(def) && uses_[v.index] == 1 ? def : ir::OpId{};
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
  std::vector<ir::OpId> atomics_;  // the body's, checked by atomics_into_ring
  std::string why_;
};

// Whether a producer warpgroup feeds this loop (warp_specialize.h).
bool fed_by_producer(const CudaContext& ctx, ir::OpId loop) {
  return ctx.warp_specialization && ctx.warp_specialization->loop == loop;
}

// The last dot goes late only behind a producer warpgroup, whose two
// consumers run one CTA per SM. Without one, several CTAs share an SM and
// interleave their products and softmaxes on their own; there the late
// issue measured slower on the H200 (attention at D 64: 0.73 of SDPA
// against 0.85, with 112 registers against 110).
std::optional<TmaRing> plan(const CudaContext& ctx, ir::OpId loop) {
  std::optional<TmaRing> ring = RingPlanner(ctx, loop).run();
  if (!ring) return ring;
  ring->late = ring->late && fed_by_producer(ctx, loop);
  ring->split =
      ring->late && std::any_of(ring->loads.begin(), ring->loads.end(), [](const RingLoad& r) { return r.early; });
  return ring;
}

bool active(const CudaContext& ctx, const TmaRing& ring) {
  return ctx.ring_tiles.count(ctx.fn.op(ring.loads.front().load).results[0].index) > 0;
}

// The names of the loop's ring state: the stage iteration k reads, its
// phase parity, and the two barrier arrays' addresses.
struct RingNames {
  std::string stage, phase, full, empty, fragments;
};
RingNames names(ir::OpId loop) {
  std::string n = str(loop.index);
  return {"tma_stage" + n, "tma_phase" + n, "tma_full" + n, "tma_empty" + n, "tma_fragments" + n};
}

// The address of barrier `x` (a stage expression) of group `g` in the
// array at `base`: group 0's barriers first, then group 1's.
std::string barrier(const std::string& base, const TmaRing& ring, int g, const std::string& x) {
  return g == 0 ? base + " + 8 * " + x : base + " + 8 * (" + str(int64_t{g} * ring.stages) + " + " + x + ")";
}

// Iteration `j`'s blocks into stage `stage`, group by group: `before(g)`
// (the producer's wait for the group's release), expect_tx of the group's
// bytes on its full barrier, then one TMA box per swizzle span of each of
// its blocks. Emitted where only the producer thread runs.
template <class Before>
void issue(CudaContext& ctx, ir::OpId loop, const TmaRing& ring, const std::string& j, const std::string& stage,
           Before before) {
  RingNames n = names(loop);
  ctx.out.open("");
  ctx.out.line("// the blocks of iteration " + j + " into stage " + stage);
  emit_ahead(ctx, loop, ring.offsets, j);
  for (int g = 0; g < ring.groups(); ++g) {
  before(g);
  std::string bar = ctx.fresh("full");
  ctx.out.line("const unsigned " + bar + " = " + barrier(n.full, ring, g, "(" + stage + ")") + ";");
  ctx.out.line("tg_mbar_arrive_expect_tx(" + bar + ", " + str(ring.group_bytes(g)) + ");");
  for (const RingLoad& r : ring.loads) {
    if (ring.group(r) != g) continue;
    std::string map = ctx.tensor_map(r.map);
    ir::DescriptorOperands d = ir::descriptor_operands(ctx.fn.op(r.load));
    size_t first_offset = 1 + 2 * d.rank;
    std::string row = ctx.operand(r.load, first_offset), col = ctx.operand(r.load, first_offset + 1);
    int64_t span = r.tile.block_bytes() / r.tile.element_bytes;
    for (int64_t p = 0; p < r.pieces(); ++p) {
      std::string dst = "sm + (" + stage + ") * " + str(ring.stage_bytes) + " + " +
                        str(std::stoll(r.tile.offset) + p * r.tile.block_stride());
      std::string c0 = p == 0 ? col : col + " + " + str(p * span);
      ctx.out.line("tg_tma_load_2d(" + dst + ", &" + map + ", " + bar + ", " + c0 + ", " + row + ");");
    }
  }
  }
  ctx.out.close();
}

void issue(CudaContext& ctx, ir::OpId loop, const TmaRing& ring, const std::string& j, const std::string& stage) {
  issue(ctx, loop, ring, j, stage, [](int) {});
}

// The accumulator registers of `value`, pinned: no read of them (or, before
// the loop, no definition) moves across this point.
void pin(CudaContext& ctx, ir::ValueId value, const std::string& why) {
  int registers = ctx.distribution(ctx.layout(value), ctx.fn.type(value).shape).registers();
  std::string r = ctx.open_unrolled(registers);
  ctx.out.line("tg_pin(" + ctx.name(value) + "[" + r + "]);" + (why.empty() ? "" : "  // " + why));
  ctx.out.close();
}

// The ring's mbarrier names, declared; thread 0 initializes them.
void init_barriers(CudaContext& ctx, ir::OpId loop, const TmaRing& ring) {
  RingNames n = names(loop);
  int consumers = ctx.options.num_warps;
  ctx.out.line("const unsigned " + n.full + " = tg_shared_address(tg_smem) + " + str(ring.barriers_at()) + ";");
  ctx.out.line("const unsigned " + n.empty + " = " + n.full + " + " + str(8 * ring.stages * ring.groups()) + ";");
  ctx.out.open("if (threadIdx.x == 0)");
  ctx.out.open("for (int s = 0; s < " + str(ring.stages * ring.groups()) + "; ++s)");
  ctx.out.line("tg_mbar_init(" + n.full + " + 8 * s, 1);  // the producer's expect_tx");
  ctx.out.line("tg_mbar_init(" + n.empty + " + 8 * s, " + str(consumers) + ");  // one per consumer warp");
  ctx.out.close();
  ctx.out.line("tg_fence_mbar_init();");
  ctx.out.close();
}


TmaRing planned(const CudaContext& ctx, ir::OpId loop) {
  std::optional<TmaRing> ring = plan(ctx, loop);
  TEGULA_ASSERT(ring.has_value(), "warp specialization of a loop that is no TMA ring");
  return *ring;
}

}  // namespace

std::vector<ir::ValueId> tma_ring_inputs(const CudaContext& ctx, ir::OpId loop) {
  TmaRing ring = planned(ctx, loop);
  std::vector<ir::ValueId> inputs;
  auto add = [&](ir::ValueId v) {
    if (!passes::is_defined_inside(ctx.fn, v, loop) && std::find(inputs.begin(), inputs.end(), v) == inputs.end())
      inputs.push_back(v);
  };
  for (const RingLoad& r : ring.loads) {
    ir::DescriptorOperands d = ir::descriptor_operands(ctx.fn.op(r.load));
    for (ir::ValueId offset : d.offsets) add(offset);
  }
  for (ir::OpId id : ring.offsets.ops)
    for (ir::ValueId u : ctx.fn.op(id).operands) add(u);
  return inputs;
}

int64_t tma_ring_shared_bytes(const CudaContext& ctx, ir::OpId loop) { return planned(ctx, loop).bytes(); }

void tma_ring_init_barriers(CudaContext& ctx, ir::OpId loop) { init_barriers(ctx, loop, planned(ctx, loop)); }

void tma_ring_declare_state(CudaContext& ctx, ir::OpId loop) {
  RingNames n = names(loop);
  ctx.out.line("int " + n.stage + " = " + str(planned(ctx, loop).stages - 1) + ";");
  ctx.out.line("unsigned " + n.phase + " = 1;");
}

void tma_ring_produce(CudaContext& ctx, ir::OpId loop, const std::string& trips) {
  TmaRing ring = planned(ctx, loop);
  RingNames n = names(loop);
  std::string last = str(ring.stages - 1);
  ctx.out.open("for (unsigned long long j = 0; j < " + trips + "; ++j)");
  // Round r of a stage waits for the release of round r - 1: parity
  // phase ^ 1. In round 0 that is the phase before a fresh barrier's
  // first, which counts as complete.
  issue(ctx, loop, ring, "j", "stage", [&](int g) {
    ctx.out.line("tg_mbar_wait(" + barrier(n.empty, ring, g, "stage") + ", phase ^ 1);  // the consumers released " +
                 (ring.split ? g == 0 ? "the stage's blocks of the first dot" : "the stage's blocks of the last dot"
                             : "the stage"));
  });
  ctx.out.line("stage = stage == " + last + " ? 0 : stage + 1;");
  ctx.out.line("if (stage == 0) phase ^= 1;");
  ctx.out.close();
}

std::string tma_ring_refusal(const CudaContext& ctx, ir::OpId loop) {
  RingPlanner planner(ctx, loop);
  return planner.run() ? "" : planner.why();
}

bool tma_ring_before_loop(CudaContext& ctx, ir::OpId loop, const std::string& trips) {
  bool producer = fed_by_producer(ctx, loop);  // the ring's area is reserved and its barriers made
  if (!producer && ctx.shared_reserved() > 0) return false;  // inside another pipelined loop
  std::optional<TmaRing> ring = plan(ctx, loop);
  if (!ring) return false;
  RingNames n = names(loop);
  int stages = ring->stages;
  if (producer) {
    ctx.out.line("// TMA ring: " + str(stages) + " stages of " + str(ring->stage_bytes) +
                 " bytes, filled by the producer warpgroup; a full and an empty mbarrier per stage");
  } else {
    ctx.before_global_load();
    ctx.out.line("// TMA ring: " + str(stages) + " stages of " + str(ring->stage_bytes) + " bytes, copies issued " +
                 str(ring->ahead()) + " iterations ahead by thread 0; a full and an empty mbarrier per stage");
    // Generic-proxy writes to the area before the loop (an earlier tile's
    // epilogue, in a loop around this one) are ordered before the TMA's by a
    // proxy fence and the barrier after the barriers' init; once per loop.
    ctx.out.line("tg_fence_proxy_async();  // earlier writes to the area, before the TMA's");
    ctx.reserve_shared(ring->bytes());
  }
  ctx.thread_ids();
  for (const RingLoad& r : ring->loads) {
    SharedTile tile = r.tile;
    tile.offset = "(" + n.stage + " * " + str(ring->stage_bytes) + " + " + r.tile.offset + ")";
    ctx.ring_tiles[ctx.fn.op(r.load).results[0].index] = tile;
    for (ir::ValueId v : r.between) ctx.ring_tiles[v.index] = tile;
    ctx.ring_tiles[r.operand.index] = tile;
    for (const RingLoad::View& view : r.views) {
      SharedTile other = tile;
      other.k_major = view.k_major;
      ctx.ring_tiles[view.value.index] = other;
    }
    ctx.descriptor_paths.push_back(descriptor_op_name(ctx.fn, ctx.fn.op(r.load)) + ": TMA ring through " +
                                   ctx.tensor_map(r.map) + ", " + str(stages) + " stages, " +
                                   str(r.tile.block_bytes()) + "-byte swizzle, read by wgmma where it lands");
  }
  for (size_t i = 0; i < ring->invariant.size(); ++i) {
    const InvariantOperand& o = ring->invariant[i];
    if (int j = ring->invariant_view_of[i]; j >= 0) {
      const InvariantOperand& e = ring->invariant[static_cast<size_t>(j)];
      ctx.out.line("// " + ctx.name(ctx.fn.op(o.dot).operands[o.index]) + " is " +
                   ctx.name(ctx.fn.op(e.dot).operands[e.index]) + " transposed: read from its tile");
    } else {
      ctx.out.line("// " + ctx.name(ctx.fn.op(o.dot).operands[o.index]) + " is the same in every iteration: staged once");
      stage_operand(ctx, o.dot, o.index, ring->invariant_tiles[i]);
    }
    ctx.ring_tiles[ctx.fn.op(o.dot).operands[o.index].index] = ring->invariant_tiles[i];
  }
  if (!ring->invariant.empty()) ctx.out.line("tg_fence_proxy_async();  // the stores, visible to wgmma");
  // Pinned once before the loop, the accumulator's initial value has one
  // definition on every path (see codegen_pipeline.cpp: ptxas would
  // otherwise serialize the wgmmas, C7515).
  pin(ctx, carried_accumulator(ctx, ring->dot), "");
  if (ring->late) {
    declare_late_fragments(ctx, ring->dot, ring->operands.back(), n.fragments);
    ctx.descriptor_paths.push_back("the loop of line " + str(ctx.fn.op(loop).loc.line) + " issues its last dot (" +
                                   ctx.name(ctx.fn.op(ring->dot).results[0]) +
                                   ") one iteration late, behind the first: the body computes under it");
  }
  if (!producer) init_barriers(ctx, loop, *ring);
  if (!producer || !ring->invariant.empty()) ctx.barrier();
  if (producer) return true;  // the stage and parity run on from the kernel's head
  // The stage iteration k reads and its parity, advanced at the top of each iteration.
  ctx.out.line("int " + n.stage + " = " + str(stages - 1) + ";");
  ctx.out.line("unsigned " + n.phase + " = 1;");
  ctx.out.open("if (threadIdx.x == 0)");
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  for (int j = 0; j < ring->ahead(); ++j) {
    ctx.out.open("if (" + str(j) + " < " + trips + ")");
    issue(ctx, loop, *ring, str(j), str(j));
    ctx.out.close();
  }
  ctx.out.close();
  return true;
}

bool tma_ring_iteration(CudaContext& ctx, ir::OpId loop, const std::string& trips, const std::string& k) {
  std::optional<TmaRing> ring = plan(ctx, loop);
  if (!ring || !active(ctx, *ring)) return false;
  RingNames n = names(loop);
  std::string last = str(ring->stages - 1);
  ctx.out.line(n.stage + " = " + n.stage + " == " + last + " ? 0 : " + n.stage + " + 1;  // k % " +
               str(ring->stages));
  ctx.out.line("if (" + n.stage + " == 0) " + n.phase + " ^= 1;  // (k / " + str(ring->stages) +
               ") & 1: flips as the ring wraps");
  ctx.out.line("tg_mbar_wait(" + barrier(n.full, *ring, 0, n.stage) + ", " + n.phase + ");  // this iteration's " +
               (ring->split ? "blocks of the first dot have" : "blocks have") + " landed");
  ctx.out.line("// the wgmma group of " + ctx.name(ctx.fn.op(ring->dot).results[0]) +
               (ring->late ? " is issued in the next iteration: the refill follows its retirement"
                           : " stays in flight into the next iteration: the refill follows it"));
  CudaContext::InFlightDot flight{ring->dot, loop, trips, k, false, ring->cover, true};
  flight.late = ring->late;
  flight.fragments = n.fragments;
  flight.retire_before = ring->retire_before;
  ctx.in_flight_dot = flight;
  return true;
}

void tma_ring_issue_late(CudaContext& ctx, bool in_loop) {
  TEGULA_ASSERT(ctx.in_flight_dot && ctx.in_flight_dot->late, "late issue without a late dot in flight");
  const CudaContext::InFlightDot& flight = *ctx.in_flight_dot;
  std::optional<TmaRing> ring = plan(ctx, flight.loop);
  TEGULA_ASSERT(ring.has_value() && ring->late, "late issue of a loop without a TMA ring");
  RingNames n = names(flight.loop);
  ctx.out.open("if (" + (in_loop ? flight.k : flight.trips) + " > 0)");
  std::string stage = n.stage;
  if (in_loop) {
    stage = "late_stage";
    ctx.out.line("const int late_stage = " + n.stage + " == 0 ? " + str(ring->stages - 1) + " : " + n.stage +
                 " - 1;  // read by iteration k - 1");
  }
  ctx.out.line("// the group of " + ctx.name(ctx.fn.op(ring->dot).results[0]) + " of the " +
               (in_loop ? "previous" : "last") + " iteration");
  if (ring->split)  // its blocks have a full barrier of their own, passed here
    ctx.out.line("tg_mbar_wait(" + barrier(n.full, *ring, 1, stage) + ", " +
                 (in_loop ? n.stage + " == 0 ? " + n.phase + " ^ 1 : " + n.phase : n.phase) +
                 ");  // its blocks have landed");
  DotOperands operands = ring->operands.back();
  for (size_t k = 0; k < 2; ++k) {
    std::optional<SharedTile> tile = last_dot_block(ctx.fn, *ring, k);
    if (tile) (k == 0 ? operands.a : operands.b).offset = "(" + stage + " * " + str(ring->stage_bytes) + " + " +
                                                          tile->offset + ")";
  }
  emit_wgmma_late_issue(ctx, ring->dot, operands, flight.fragments);
  ctx.out.close();
  if (in_loop) {
    ctx.out.open("else");
    ctx.out.line("tg_wgmma_commit();  // an empty group: the waits count the same groups in every iteration");
    ctx.out.close();
  }
}

void tma_ring_first_dot_retired(CudaContext& ctx) {
  const CudaContext::InFlightDot& flight = *ctx.in_flight_dot;
  std::optional<TmaRing> ring = plan(ctx, flight.loop);
  TEGULA_ASSERT(ring.has_value(), "first dot of a loop without a TMA ring");
  if (!ring->split) return;
  RingNames n = names(flight.loop);
  ctx.out.line("if (lane == 0) tg_mbar_arrive(" + barrier(n.empty, *ring, 0, n.stage) +
               ");  // this warp's reads of the first dot's blocks have retired");
}

void tma_ring_retire(CudaContext& ctx) {
  TEGULA_ASSERT(ctx.in_flight_dot && ctx.in_flight_dot->late && !ctx.in_flight_dot->retired,
                "retiring a late dot twice");
  ctx.out.line("tg_wgmma_wait<0>();  // the last dot's group of the previous iteration");
  pin(ctx, carried_accumulator(ctx, ctx.in_flight_dot->dot), "no read of it moves above the wait");
  ctx.in_flight_dot->retired = true;
  tma_ring_refill(ctx);
}

void tma_ring_refill(CudaContext& ctx) {
  TEGULA_ASSERT(ctx.in_flight_dot && ctx.in_flight_dot->tma_ring && !ctx.in_flight_dot->refilled,
                "TMA ring refill without its dot in flight");
  CudaContext::InFlightDot& flight = *ctx.in_flight_dot;
  std::optional<TmaRing> ring = plan(ctx, flight.loop);
  TEGULA_ASSERT(ring.has_value(), "in-flight dot of a loop without a TMA ring");
  RingNames n = names(flight.loop);
  std::string last = str(ring->stages - 1), ahead = str(ring->ahead());
  ctx.out.open("");
  ctx.out.line("const int previous = " + n.stage + " == 0 ? " + last + " : " + n.stage +
               " - 1;  // read by iteration k - 1");
  ctx.out.line("if (" + flight.k + " > 0 && lane == 0) tg_mbar_arrive(" +
               barrier(n.empty, *ring, ring->groups() - 1, "previous") + ");  // this warp's group k - 1 has retired");
  if (fed_by_producer(ctx, flight.loop)) {
    ctx.out.close();
    flight.refilled = true;
    return;
  }
  ctx.out.open("if (threadIdx.x == 0 && " + flight.k + " + " + ahead + " < " + flight.trips + ")");
  for (int g = 0; g < ring->groups(); ++g)
    ctx.out.line("tg_mbar_wait(" + barrier(n.empty, *ring, g, "previous") + ", " + n.stage + " == 0 ? " + n.phase +
                 " ^ 1 : " + n.phase + ");  // every warp's reads of it have retired");
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  issue(ctx, flight.loop, *ring, flight.k + " + " + ahead, "previous");
  ctx.out.close();
  ctx.out.close();
  flight.refilled = true;
}

bool tma_ring_after_loop(CudaContext& ctx, ir::OpId loop) {
  std::optional<TmaRing> ring = plan(ctx, loop);
  if (!ring || !active(ctx, *ring)) return false;
  TEGULA_ASSERT(ctx.in_flight_dot && ctx.in_flight_dot->loop == loop && ctx.in_flight_dot->refilled,
                "the TMA ring's wgmma dot did not refill it");
  if (ring->late) tma_ring_issue_late(ctx, false);
  ctx.out.line("tg_wgmma_wait<0>();  // the last iteration's wgmma group");
  pin(ctx, ctx.fn.op(ring->dot).results[0], "no read of it moves above the wait");
  bool producer = fed_by_producer(ctx, loop);
  if (producer) {
    // The producer may go on into this stage (the next tile's copies).
    RingNames n = names(loop);
    ctx.out.line("if (" + ctx.in_flight_dot->trips + " > 0 && lane == 0) tg_mbar_arrive(" +
                 barrier(n.empty, *ring, ring->groups() - 1, n.stage) + ");  // the last iteration's stage");
  }
  ctx.in_flight_dot.reset();
  for (const RingLoad& r : ring->loads) {
    ctx.ring_tiles.erase(ctx.fn.op(r.load).results[0].index);
    for (ir::ValueId v : r.between) ctx.ring_tiles.erase(v.index);
    ctx.ring_tiles.erase(r.operand.index);
    for (const RingLoad::View& view : r.views) ctx.ring_tiles.erase(view.value.index);
  }
  for (const InvariantOperand& o : ring->invariant) ctx.ring_tiles.erase(ctx.fn.op(o.dot).operands[o.index].index);
  // A producer walking tiles fills the ring during this one's epilogue:
  // the area stays reserved.
  if (!producer || !ctx.warp_specialization->tiles.valid()) ctx.release_shared();
  return true;
}

}  // namespace tegula::backends::cuda
