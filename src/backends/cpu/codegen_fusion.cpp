// Fusion of per-element tile ops into one element loop.
//
// A run of ops of one block that each compute element i from element i of
// their operands (elementwise ops, splat, tile constants, arange, broadcast
// of a finished tile, reshape/expand_dims, load, store) and share an element
// count becomes a single loop over i (CodegenContext::schedule_segment picks
// the runs). A value that only ops of the run use never gets an array: it is
// a scalar local of the loop body (`e7`), so a chain like load -> mul -> add
// -> store reads and writes memory once per element. Values used elsewhere
// are written to their array (`v7[i]`).
//
// Rows: the loop is a nest `for r { for c }` with i = r * L + c, where the
// row length L divides the last dim (of size > 1) of every tile in the run.
// Then a broadcast reads its operand at "something of r + c" and a load or
// store whose pointers are contiguous along rows reads `row_base[c]` with the
// base computed once per row: affine accesses g++ turns into (masked) vector
// loads and stores. When the common row length would be short (< 16) the
// loop stays flat and broadcasts use div/mod index math.
//
// Cheap values (constants, splats, aranges and up to a few elementwise ops
// on them: index and mask arithmetic) get no array even when other loops use
// them: each loop recomputes them at its own index, which costs less than
// storing and reloading them.
//
// Full tiles: a load/store mask or select condition of the form `offs < n`
// (or <=, >, >=, and `&` of such, through broadcasts), with `offs`
// increasing by one along the tile, is all-true exactly when its first and
// last elements pass and do not wrap. That is checked once before the loop,
// which then comes in two copies: without masks when the whole tile is in
// bounds, with them otherwise.
//
// Rows checked at run time: a pointer tile whose rows axis info cannot show
// contiguous, but which its loop checked (CodegenContext::
// rows_contiguous_flag), is read through row bases in the fast copy, taken
// when the tile is full and the check passed, and element by element (a
// gather) in the other.
//
// Streamed stores: a store of a whole contiguous tile of at least
// kMinStreamBytes, in a flat loop, with no mask or a full one, in a kernel
// without atomics, is computed
// into a staging array and written out with non-temporal stores when the
// launch moves more than the last-level cache (prelude_stream.h says why and
// when). The loop itself is the same; only the pointer it stores through
// differs. A loop of whole blocks of kBlock elements streams each block's
// completed lines right after the block (tg_stream_store_part), so the
// writes overlap the loop instead of following it as one burst that the
// core waits for. When what follows such a store in the program touches
// memory only through scalar loads and stores, the partial line at the
// tile's end waits for the thread's next program, whose tile usually
// completes it (tg_line_carry), instead of being written with ordinary
// stores that read the line first; those scalar accesses first write the
// held line out if they touch it.
//
// Tiles computed where reduced: a result whose only user is a reduce, and
// that a few elementwise ops compute from arrays of its own run, loaded
// tiles and index arithmetic (layer norm's `centred * centred`), gets no
// array: the reduce computes each element as it combines it
// (tile_element), saving a store and a load of the whole tile. Only arrays
// of the same run and loaded tiles are read, which nothing writes before
// the reduce (for a tile read in place, see below), so the values are the
// ones the run would have stored.
//
// Tiles computed again from loads: a result that a few cheap elementwise
// ops (add, sub, mul, select...) compute from loaded tiles and index
// arithmetic, used only by per-element ops of its block (layer norm's
// `centred = where(in_row, x - mean, 0)`), gets no array either: each loop
// using it, and the reduce computing a value of it where reduced, computes
// it again from the loaded tiles, which keep their arrays (or are read in
// place, below). The operations are the same, so are the values; a store
// and a load of the whole tile are saved. Such a select evaluates both its
// choices (tg_select, a blend: g++ keeps `c ? x[i] - m : 0` scalar on AVX2
// because the subtraction could trap), reading only arrays or rows read in
// place, whole.
//
// Loads read in place: a run that only loads a whole contiguous tile into
// an array (a flat loop, no mask or a full one) copies nothing when the tile
// is in bounds: the tile's name is a pointer to the memory itself, provided
// nothing of the program writes memory before the tile's last use and its
// users only read it (per-element ops and reduces, directly or through
// values computed again from it). The array is filled, by the masked loop,
// only for a partial tile. That saves a pass over the tile and its room in
// the L1 cache; the values read are the same. The last use may be in the
// loop of the store that first writes memory after the load when that store
// writes one range known before the loop: the loop then checks that range
// against the tile first and reads a copy of the tile when they overlap
// (an output over its input), so it never reads what it wrote.
//
// Next tiles: a tile read in place of at least kMinNextTileBytes, in the
// program's body (not in a loop of it), is waited for by the loop that
// reduces it, after which the program computes from cache and moves no
// memory; the hardware prefetcher does not cross the 4 KB pages of the next
// program's row. So the program predicts where the next program of its
// thread reads (prelude_stream.h, tg_next_tile) and the loops of its body
// after the load fetch that tile into L2 while they compute: its flat loops
// and its reductions in whole blocks, an equal share each (counted before
// them, loops_fetching_after), spread over blocks of kBlock elements, so
// the fetches overlap all of the work after the row instead of arriving as
// a burst. Where some of those loops call a math function per element
// (softmax's exp), they alone fetch: their compute leaves the memory idle,
// while the other loops' own loads and stores already keep it busy
// (softmax 14% faster on two threads; layer norm, with no such loop, keeps
// the equal shares, which measured best for it).
//
// Reductions accumulated where computed: a reduce of a whole tile along its
// one wide axis whose lanes are the loop's blocks (reduces_in_blocks), over
// a tile a loop computes anyway for other users (softmax's exponentials,
// which the division reads too), is accumulated by that loop: lane x takes
// element x of the first block and combines element x of each later one,
// exactly the reduce's own loop in the same order, so the result is the
// same bit for bit; the reduce is left only its tree over the lanes. That
// saves a pass over the tile while it is still in registers (softmax's
// compute 10% faster in L2).
//
// Ordering: inside a fused loop, the memory accesses of element i happen
// before those of element i + 1, instead of op after op. Only a store ends a
// run, so a store is never followed by a load of the same run; a run's loads
// may still see its store to an *other* element when the addresses overlap,
// which is the same ordering freedom the GPU backend has between threads
// (documented in docs/backend-cpu.md).
#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "backends/c_family/combine.h"
#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;

bool is_per_element(const CodegenContext& ctx, const ir::Op& op) {
  auto tile = [&](ir::ValueId v) { return ctx.fn.type(v).is_tile(); };
  switch (op.kind) {
    case OpKind::Store: return tile(op.operands[0]);
    case OpKind::Load:
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::Arange: return tile(op.results[0]);
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape: return tile(op.operands[0]) && tile(op.results[0]);
    default: return ir::is_elementwise(op.kind) && tile(op.results[0]);
  }
}

namespace {

// Shorter rows than this make a poor inner loop; such runs stay flat.
constexpr int64_t kMinRowLength = 16;
// Values computable from scalars in at most this many per-element ops are
// recomputed by every loop that reads them instead of stored.
constexpr int kMaxRecomputedOps = 4;
// Smaller tiles are not worth staging (a few lines, mostly partial).
constexpr int64_t kMinStreamBytes = 1024;
// Rows shorter than a page are fetched well enough by the hardware.
constexpr int64_t kMinNextTileBytes = 4096;
// Elements of a block of a loop that prefetches next tiles or streams its
// stores block by block.
constexpr int64_t kBlock = kNextTileBlock;

// The per-element ops computing tile `v` from scalars alone, or `limit` when
// that is `limit` or more (reading memory, or anything else, is too many).
// Each op visited spends some of the limit first, so a walk visits at most
// `limit` ops however long the chain of tiles behind `v` is.
int recompute_cost(const CodegenContext& ctx, ir::ValueId v, int limit) {
  if (!ctx.fn.type(v).is_tile()) return 0;
  ir::OpId def = ctx.fn.value(v).def;
  if (!def.valid() || ctx.has_planned_storage(v)) return limit;
  const ir::Op& o = ctx.fn.op(def);
  switch (o.kind) {
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::Arange: return std::min(1, limit);
    case OpKind::ExpandDims:
    case OpKind::Reshape: return ctx.fn.type(o.operands[0]).is_tile() ? recompute_cost(ctx, o.operands[0], limit) : limit;
    default: break;
  }
  if (!ir::is_elementwise(o.kind)) return limit;
  int cost = 1;
  for (ir::ValueId operand : o.operands) {
    if (cost >= limit) return limit;
    cost += recompute_cost(ctx, operand, limit - cost);
  }
  return std::min(cost, limit);
}

bool is_recomputed(const CodegenContext& ctx, ir::ValueId v) {
  return recompute_cost(ctx, v, kMaxRecomputedOps + 1) <= kMaxRecomputedOps;
}

bool is_view(const ir::Op& o) { return o.kind == OpKind::Reshape || o.kind == OpKind::ExpandDims; }

// The element of `o`, an elementwise op computing tile `v` from its
// operands' elements: a select computed from loaded tiles evaluates both
// choices (tg_select), which are arrays or rows read in place, whole.
std::string recomputed_element(const CodegenContext& ctx, ir::ValueId v, const ir::Op& o,
                               const std::vector<std::string>& operands) {
  if (o.kind == OpKind::Select && !is_recomputed(ctx, v))
    return "tg_select(" + operands[0] + ", " + operands[1] + ", " + operands[2] + ")";
  return elementwise_expr(ctx, o, operands);
}

// Whether `expr` is one call, `name(...)`, which needs no parentheses.
bool is_one_call(const std::string& expr) {
  size_t open = expr.find('(');
  if (open == 0 || open == std::string::npos || expr.back() != ')') return false;
  for (size_t k = 0; k < open; ++k)
    if (!std::isalnum(static_cast<unsigned char>(expr[k])) && expr[k] != '_') return false;
  int depth = 0;
  for (size_t k = open; k < expr.size(); ++k) {
    depth += expr[k] == '(' ? 1 : expr[k] == ')' ? -1 : 0;
    if (depth == 0) return k + 1 == expr.size();
  }
  return false;
}

// `expr`, the element of tile `v` computed from its operands' (not read
// from an array), as an operand of another element expression: in
// parentheses when an elementwise op computes it (the printers add none).
// Recomputed values need them too: integer index arithmetic prints as
// calls, but float arithmetic is infix, and `0.75 - (x + s)` must not
// print as `0.75 - x + s`.
std::string nested(const CodegenContext& ctx, ir::ValueId v, const std::string& expr) {
  ir::OpId def = ctx.fn.value(v).def;
  bool parenthesize = def.valid() && ir::is_elementwise(ctx.fn.op(def).kind);
  return parenthesize && !is_one_call(expr) ? "(" + expr + ")" : expr;
}

// Elementwise ops cheap enough to compute again in each loop that reads
// their result, rather than store it once and load it there.
bool is_cheap(OpKind kind) {
  switch (kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Min:
    case OpKind::Max:
    case OpKind::Cmp:
    case OpKind::Select:
    case OpKind::Cast: return true;
    default: return false;
  }
}

// Whether `v` is a tile loaded in `block`, whose values stay where the load
// put them (its array, or memory under the rule of "Loads read in place")
// for the rest of the block.
bool is_loaded_in(const CodegenContext& ctx, ir::ValueId v, ir::BlockId block) {
  ir::OpId def = ctx.fn.value(v).def;
  return def.valid() && ctx.fn.type(v).is_tile() && ctx.fn.op(def).kind == OpKind::Load &&
         ctx.fn.op(def).parent == block && !ctx.has_planned_storage(v);
}

// The cheap ops computing tile `v` from tiles loaded in `block`, scalars
// and values every loop recomputes anyway (index and mask arithmetic), or
// `limit` when that is `limit` or more. An operand read twice by one op
// counts once: the compiler computes it once.
int cost_from_loads(const CodegenContext& ctx, ir::ValueId v, ir::BlockId block, int limit) {
  if (!ctx.fn.type(v).is_tile() || is_loaded_in(ctx, v, block) || is_recomputed(ctx, v)) return 0;
  ir::OpId def = ctx.fn.value(v).def;
  if (!def.valid() || ctx.has_planned_storage(v)) return limit;
  const ir::Op& o = ctx.fn.op(def);
  if (!ir::is_elementwise(o.kind) || !is_cheap(o.kind)) return limit;
  int cost = 1;
  for (size_t j = 0; j < o.operands.size(); ++j) {
    if (cost >= limit) return limit;
    if (std::find(o.operands.begin(), o.operands.begin() + j, o.operands[j]) != o.operands.begin() + j) continue;
    cost += cost_from_loads(ctx, o.operands[j], block, limit - cost);
  }
  return std::min(cost, limit);
}

// Whether tile `r` gets no array, each of its users computing it again
// from the tiles loaded before it (see the top of the file): it is cheap
// to compute so, and every user is a per-element op of its block reading
// it at the user's own index.
bool recomputed_from_loads(const CodegenContext& ctx, ir::ValueId r) {
  ir::OpId def = ctx.fn.value(r).def;
  if (ctx.options.debug || !def.valid() || !ctx.fn.type(r).is_tile()) return false;
  const ir::Op& o = ctx.fn.op(def);
  if (!ir::is_elementwise(o.kind) || !is_cheap(o.kind) || ctx.users(r).empty()) return false;
  for (ir::OpId user : ctx.users(r)) {
    const ir::Op& u = ctx.fn.op(user);
    if (u.parent != o.parent || !is_per_element(ctx, u) || u.kind == OpKind::Broadcast || is_view(u)) return false;
  }
  return cost_from_loads(ctx, r, o.parent, kMaxRecomputedOps + 1) <= kMaxRecomputedOps;
}

// The last dim of size > 1 (-1 for a one-element tile).
int last_wide_dim(const ir::Type& t) {
  for (size_t d = t.shape.size(); d-- > 0;)
    if (t.shape[d] > 1) return static_cast<int>(d);
  return -1;
}

// The elementwise ops computing tile `v` from scalars, splats, constants
// and arrays that `readable` accepts, or `limit` when that is `limit` or
// more (reading memory, broadcasts, anything else).
template <class Readable>
int cost_from_arrays(const CodegenContext& ctx, ir::ValueId v, int limit, const Readable& readable) {
  if (!ctx.fn.type(v).is_tile()) return 0;
  if (readable(v)) return 0;
  ir::OpId def = ctx.fn.value(v).def;
  if (!def.valid() || ctx.has_planned_storage(v)) return limit;
  const ir::Op& o = ctx.fn.op(def);
  if (o.kind == OpKind::Constant || o.kind == OpKind::Splat) return std::min(1, limit);
  if (!ir::is_elementwise(o.kind)) return limit;
  int cost = 1;
  for (size_t j = 0; j < o.operands.size(); ++j) {
    if (cost >= limit) return limit;
    if (std::find(o.operands.begin(), o.operands.begin() + j, o.operands[j]) != o.operands.begin() + j) continue;
    cost += cost_from_arrays(ctx, o.operands[j], limit - cost, readable);
  }
  return std::min(cost, limit);
}

// Whether `o` (or an op of its regions) may write memory.
bool writes_memory(const ir::Function& fn, const ir::Op& o) {
  switch (o.kind) {
    case OpKind::Store:
    case OpKind::AtomicRmw:
    case OpKind::AtomicCas:
    case OpKind::DescStore:
    case OpKind::InlineAsm: return true;
    default: break;
  }
  for (ir::BlockId region : o.regions)
    for (ir::OpId id : fn.block(region).ops)
      if (writes_memory(fn, fn.op(id))) return true;
  return false;
}

// Whether `o` (or an op of its regions) may read or write memory.
bool accesses_memory(const ir::Function& fn, const ir::Op& o) {
  if (o.kind == OpKind::Load || o.kind == OpKind::DescLoad || writes_memory(fn, o)) return true;
  for (ir::BlockId region : o.regions)
    for (ir::OpId id : fn.block(region).ops)
      if (accesses_memory(fn, fn.op(id))) return true;
  return false;
}

// Adds to `positions` those of the ops of `block` that compute `r`, a
// per-element op's result, again (its users when it is computed again
// from the loads, the reduce when it is computed where reduced), and of
// their own such users; false when one lies in another block.
bool add_later_reads(const CodegenContext& ctx, ir::ValueId r, ir::BlockId block, std::vector<size_t>& positions) {
  const std::vector<ir::OpId>& users = ctx.users(r);
  bool reduced_only = users.size() == 1 && ctx.fn.op(users[0]).kind == OpKind::Reduce;
  if (!reduced_only && !recomputed_from_loads(ctx, r)) return true;
  for (ir::OpId user : users) {
    const ir::Op& u = ctx.fn.op(user);
    if (u.parent != block) return false;
    positions.push_back(ctx.fn.position_of(user));
    if (u.kind != OpKind::Reduce && u.kind != OpKind::Store && !add_later_reads(ctx, u.results[0], block, positions))
      return false;
  }
  return true;
}

// The positions in `block` of the ops reading tile `v`, through views of it
// and values computed again from it, if every one of them is an op of
// `block` that only reads it element by element (a per-element op other
// than a store) or reduces it.
std::optional<std::vector<size_t>> read_only_uses(const CodegenContext& ctx, ir::ValueId v, ir::BlockId block) {
  std::vector<size_t> positions;
  for (ir::OpId user : ctx.users(v)) {
    const ir::Op& u = ctx.fn.op(user);
    if (u.parent != block) return std::nullopt;
    positions.push_back(ctx.fn.position_of(user));
    if (u.kind == OpKind::Reshape || u.kind == OpKind::ExpandDims) {
      std::optional<std::vector<size_t>> more = read_only_uses(ctx, u.results[0], block);
      if (!more) return std::nullopt;
      positions.insert(positions.end(), more->begin(), more->end());
    } else if (u.kind != OpKind::Reduce && (!is_per_element(ctx, u) || u.kind == OpKind::Store)) {
      return std::nullopt;
    } else if (u.kind != OpKind::Reduce && !add_later_reads(ctx, u.results[0], block, positions)) {
      return std::nullopt;
    }
  }
  return positions;
}

// Whether tile `v` is computed without reading memory (scalars count as
// computed: they are, before any loop that reads `v`).
bool computed_without_loads(const CodegenContext& ctx, ir::ValueId v) {
  if (!ctx.fn.type(v).is_tile()) return true;
  ir::OpId def = ctx.fn.value(v).def;
  if (!def.valid()) return true;
  const ir::Op& o = ctx.fn.op(def);
  if (o.kind == OpKind::Load) return false;
  for (ir::ValueId operand : o.operands)
    if (!computed_without_loads(ctx, operand)) return false;
  return true;
}

// Whether `o` is a store of a tile to one range of consecutive elements
// known before its loop: its pointers count up through its one dim of size
// > 1 and are computed without reading memory. Its loop can then check
// whether the range overlaps a tile read in place (FusedRun::
// keep_tiles_read_in_place).
bool stores_one_range(const CodegenContext& ctx, const ir::Op& o) {
  if (o.kind != OpKind::Store || !ctx.fn.type(o.operands[0]).is_tile()) return false;
  ir::ValueId p = o.operands[0];
  const ir::Type& t = ctx.fn.type(p);
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] != 1 && t.shape[d] != t.numel()) return false;
  int d = -1;
  for (size_t e = 0; e < t.shape.size(); ++e)
    if (t.shape[e] > 1) d = static_cast<int>(e);
  if (d >= 0 && ctx.contiguity(p).at(static_cast<size_t>(d)) != t.numel()) return false;
  return computed_without_loads(ctx, p);
}

// Whether the tile that `load` produces may be read from memory where it
// lies: nothing writes memory between the load and the tile's last use, and
// that use is not in the fused loop of a later store (a non-per-element op
// with regions, or the use itself not being per-element, ends the segment),
// unless that store writes one range its loop checks against the tile
// first, reading a copy of the tile when they overlap (stores_one_range).
bool unwritten_while_used(const CodegenContext& ctx, ir::OpId load) {
  const ir::Function& fn = ctx.fn;
  ir::BlockId block = fn.op(load).parent;
  std::optional<std::vector<size_t>> uses = read_only_uses(ctx, fn.op(load).results[0], block);
  if (!uses || uses->empty()) return false;
  size_t last = *std::max_element(uses->begin(), uses->end());
  const std::vector<ir::OpId>& ops = fn.block(block).ops;
  bool segment_ended = !is_per_element(ctx, fn.op(ops[last]));
  for (size_t k = fn.position_of(load) + 1; k < ops.size(); ++k) {
    const ir::Op& o = fn.op(ops[k]);
    if (o.erased) continue;
    if (writes_memory(fn, o)) return (k > last && segment_ended) || (k >= last && stores_one_range(ctx, o));
    if (k > last && !o.regions.empty()) segment_ended = true;
  }
  return true;
}

// Whether the per-element ops `segment` of the program's body, emitted as
// fused runs, run a loop: a store, or a result used after them that gets
// an array (neither index arithmetic, nor computed again from loads, nor
// cheap and computed where reduced). Mirrors FusedRun's choices closely
// enough to count the loops that share next tiles.
bool segment_runs_loop(const CodegenContext& ctx, const std::vector<ir::OpId>& segment) {
  auto in_segment = [&](ir::OpId id) { return std::find(segment.begin(), segment.end(), id) != segment.end(); };
  for (ir::OpId id : segment) {
    const ir::Op& o = ctx.fn.op(id);
    if (o.kind == OpKind::Store) return true;
    for (ir::ValueId r : o.results) {
      const std::vector<ir::OpId>& users = ctx.users(r);
      bool used_after = std::any_of(users.begin(), users.end(), [&](ir::OpId u) { return !in_segment(u); });
      bool reduced_only = users.size() == 1 && ctx.fn.op(users[0]).kind == OpKind::Reduce &&
                          ir::is_elementwise(o.kind) && is_cheap(o.kind);
      if (used_after && !is_recomputed(ctx, r) && !recomputed_from_loads(ctx, r) && !reduced_only) return true;
    }
  }
  return false;
}

// Whether `kind` is a math function (exp, log, tanh, pow...): a library
// call per element, not one instruction.
bool is_math_function(OpKind kind) {
  if (ir::info(kind).rule != ir::TypeRule::Floats) return false;
  switch (kind) {
    case OpKind::Fma:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Rint:
    case OpKind::Round:
    case OpKind::Trunc:
    case OpKind::Copysign: return false;
    default: return true;
  }
}

// The loops of the program's body after `load` that fetch next tiles: its
// reductions that fetch (reduce_fetches_next_tiles) and the loops of its
// segments of per-element ops (CodegenContext::emit_block_body), the rest
// of the load's own segment included; for each, whether it takes a share:
// all of them, or only the loops of segments that call a math function
// when there are such. At least one.
std::vector<bool> loops_fetching_after(const CodegenContext& ctx, ir::OpId load) {
  const std::vector<ir::OpId>& ops = ctx.fn.block(ctx.fn.body()).ops;
  std::vector<bool> loops, heavy;
  std::vector<ir::OpId> segment;
  auto end_segment = [&] {
    if (!segment.empty() && segment_runs_loop(ctx, segment)) {
      loops.push_back(true);
      heavy.push_back(std::any_of(segment.begin(), segment.end(),
                                  [&](ir::OpId id) { return is_math_function(ctx.fn.op(id).kind); }));
    }
    segment.clear();
  };
  for (size_t k = ctx.fn.position_of(load) + 1; k < ops.size(); ++k) {
    const ir::Op& o = ctx.fn.op(ops[k]);
    if (o.erased || ir::is_terminator(o.kind)) continue;
    if (is_per_element(ctx, o)) {
      segment.push_back(ops[k]);
      if (o.kind == OpKind::Store) end_segment();
      continue;
    }
    bool scalar = !o.results.empty() && o.regions.empty() &&
                  std::none_of(o.results.begin(), o.results.end(), [&](ir::ValueId r) { return ctx.fn.type(r).is_tile(); });
    if (scalar && ir::is_pure(o.kind)) continue;  // emitted ahead of the segment's loops
    end_segment();
    if (o.kind == OpKind::Reduce && reduce_fetches_next_tiles(ctx, o)) {
      loops.push_back(true);
      heavy.push_back(false);
    }
  }
  end_segment();
  if (loops.empty()) return {true};
  if (std::find(heavy.begin(), heavy.end(), true) != heavy.end()) return heavy;
  return loops;
}

class FusedRun {
 public:
  FusedRun(CodegenContext& ctx, const std::vector<ir::OpId>& ops) : ctx_(ctx), fn_(ctx.fn), ops_(ops) {
    for (ir::OpId id : ops_) members_.insert(id.index);
    const ir::Op& first = fn_.op(ops[0]);
    numel_ = fn_.type(first.results.empty() ? first.operands[0] : first.results[0]).numel();
    plan_arrays();
    choose_row_length();
    plan_contiguous_accesses();
    plan_full_tile_check();
    plan_streamed_stores();
    plan_accumulated_reduces();
  }

  void emit();
  // The checks of contiguity_checks_, before the loop.
  void emit_contiguity_checks();

 private:
  bool in_run(ir::OpId id) const { return members_.count(id.index) != 0; }
  bool defined_in_run(ir::ValueId v) const {
    ir::OpId def = fn_.value(v).def;
    return def.valid() && in_run(def);
  }
  static std::string local(ir::ValueId v) { return "e" + std::to_string(v.index); }
  static bool is_memory(const ir::Op& o) { return o.kind == OpKind::Load || o.kind == OpKind::Store; }
  // The mask operand of a load or store, if it has one.
  static std::optional<ir::ValueId> mask_of(const ir::Op& o) {
    if (o.kind == OpKind::Load && o.operands.size() >= 2) return o.operands[1];
    if (o.kind == OpKind::Store && o.operands.size() >= 3) return o.operands[2];
    return std::nullopt;
  }

  // Which results need an array: those used outside the run, unless every
  // such user is a per-element op that can recompute them. A reshape needing
  // one shares its operand's array, which then needs one too.
  void plan_arrays() {
    needs_array_.assign(fn_.num_values(), false);
    for (ir::OpId id : ops_)
      for (ir::ValueId r : fn_.op(id).results) {
        bool recomputed = is_recomputed(ctx_, r);
        for (ir::OpId user : ctx_.users(r)) {
          const ir::Op& u = fn_.op(user);
          bool recomputes = recomputed && is_per_element(ctx_, u) && u.kind != OpKind::Broadcast;
          if (!in_run(user) && !recomputes) needs_array_[r.index] = true;
        }
      }
    for (size_t k = ops_.size(); k-- > 0;) {
      const ir::Op& o = fn_.op(ops_[k]);
      if (is_view(o) && needs_array_[o.results[0].index]) needs_array_[o.operands[0].index] = true;
    }
    if (ctx_.options.debug) return;
    for (ir::OpId id : ops_)
      for (ir::ValueId r : fn_.op(id).results)
        if (needs_array_[r.index] && recomputed_from_loads(ctx_, r) && reads_kept_loads(r)) needs_array_[r.index] = false;
    for (ir::OpId id : ops_)
      for (ir::ValueId r : fn_.op(id).results)
        if (needs_array_[r.index] && computed_where_reduced(r)) needs_array_[r.index] = false;
  }

  // Whether a loaded tile `v` keeps its values for later loops: it has an
  // array (or is read in place) by the end of this run.
  bool kept(ir::ValueId v) const { return defined_in_run(v) ? needs_array_[v.index] : ctx_.has_storage(v); }

  // Whether computing `r` again after this run reads only arrays (of
  // loaded tiles among them) that exist by then, never memory again.
  bool reads_kept_loads(ir::ValueId r) const {
    for (ir::ValueId operand : fn_.op(fn_.value(r).def).operands)
      if (fn_.type(operand).is_tile() && !kept(operand)) {
        ir::OpId def = fn_.value(operand).def;
        if (!def.valid() || fn_.op(def).kind == OpKind::Load || !reads_kept_loads(operand)) return false;
      }
    return true;
  }

  // Whether result `r`, used by one reduce alone, is cheap to compute from
  // the arrays of this run, tiles loaded before it and index arithmetic
  // (see the top of the file).
  bool computed_where_reduced(ir::ValueId r) const {
    const std::vector<ir::OpId>& users = ctx_.users(r);
    if (users.size() != 1 || fn_.op(users[0]).kind != OpKind::Reduce || fn_.op(users[0]).operands.size() != 1)
      return false;
    if (is_view(fn_.op(fn_.value(r).def))) return false;
    ir::BlockId block = fn_.op(ops_[0]).parent;
    auto readable = [&](ir::ValueId v) {
      if (v == r) return false;
      if (defined_in_run(v) && needs_array_[v.index]) return true;
      return is_recomputed(ctx_, v) || (is_loaded_in(ctx_, v, block) && kept(v));
    };
    return cost_from_arrays(ctx_, r, kMaxRecomputedOps + 1, readable) <= kMaxRecomputedOps && reads_kept_loads(r);
  }

  // L: the gcd of the last dims (of size > 1) of the run's tiles. A single
  // row (L == numel) is a flat loop; so is a short L, unless some load or
  // store is contiguous along its rows (a short row of vector accesses still
  // beats a gather).
  void choose_row_length() {
    int64_t row = numel_;
    for (ir::OpId id : ops_) {
      const ir::Op& o = fn_.op(id);
      const ir::Type& t = fn_.type(o.results.empty() ? o.operands[0] : o.results[0]);
      int d = last_wide_dim(t);
      if (d >= 0) row = std::gcd(row, t.shape[static_cast<size_t>(d)]);
    }
    bool indexes_rows = false;  // by a broadcast or an access through row bases
    for (ir::OpId id : ops_) indexes_rows |= fn_.op(id).kind == OpKind::Broadcast || is_memory(fn_.op(id));
    rows_ = indexes_rows && row < numel_ && row > 1 && (row >= kMinRowLength || has_contiguous_access(row));
    row_ = rows_ ? row : numel_;
  }

  // The contiguity of pointer tile `p` along its last dim of size > 1 (without what hints promise: `proven`).
  int64_t row_contiguity(ir::ValueId p, bool proven = false) const {
    int d = last_wide_dim(fn_.type(p));
    if (d < 0) return 1;
    return (proven ? ctx_.proven_contiguity(p) : ctx_.contiguity(p)).at(static_cast<size_t>(d));
  }

  // The flag of a check, emitted before the loop, that each row of `row`
  // elements of tile `v` counts up by one (pointers: by one element), for a
  // tile only a hint calls so (ContiguityCheck); made once per tile and row.
  const std::string& promised_run_flag(ir::ValueId v, int64_t row) const {
    for (const ContiguityCheck& c : contiguity_checks_)
      if (c.tile == v && c.row == row) return c.flag;
    contiguity_checks_.push_back(ContiguityCheck{v, row, ctx_.unique("promised" + std::to_string(v.index))});
    return contiguity_checks_.back().flag;
  }

  bool has_contiguous_access(int64_t row) const {
    for (ir::OpId id : ops_) {
      const ir::Op& o = fn_.op(id);
      if (is_memory(o) && computable_anywhere(o.operands[0]) && row_contiguity(o.operands[0]) % row == 0) return true;
    }
    return false;
  }

  // Whether `v` can be evaluated at any index before the loop: computed in
  // this run (or outside it) without reading memory.
  bool computable_anywhere(ir::ValueId v) const {
    if (!defined_in_run(v)) return true;
    const ir::Op& o = fn_.op(fn_.value(v).def);
    if (o.kind == OpKind::Load) return false;
    for (ir::ValueId operand : o.operands)
      if (!computable_anywhere(operand)) return false;
    return true;
  }

  // Element `index` of `v` as one expression: read from its array, or
  // computed from its operands when it has none or is computed by this run
  // (for row base pointers, and for recomputed values).
  // With `full`, a select whose condition is one of full_masks_ is its
  // first choice (the loop copy of a full tile).
  std::string value_at(ir::ValueId v, const std::string& index, bool full = false) const {
    if (!fn_.type(v).is_tile() || (!defined_in_run(v) && ctx_.has_storage(v))) return ctx_.element(v, index);
    TEGULA_ASSERT(fn_.value(v).def.valid(), "a tile without array or definition");
    const ir::Op& o = fn_.op(fn_.value(v).def);
    if (full && is_full_select(o)) return value_at(o.operands[1], index, full);
    std::vector<std::string> operands;
    for (ir::ValueId operand : o.operands) {
      std::string element = value_at(operand, index, full);
      bool computed = fn_.type(operand).is_tile() && (defined_in_run(operand) || !ctx_.has_storage(operand));
      operands.push_back(computed ? nested(ctx_, operand, element) : element);
    }
    if (!defined_in_run(v) && ir::is_elementwise(o.kind)) return recomputed_element(ctx_, v, o, operands);
    return member_value(o, operands, index, index);
  }

  // Element `index` (a constant) of `v` as an expression valid before the
  // loop, if it can be computed without memory: members of the run are
  // recomputed, other tiles read from their arrays or recomputed when they
  // have none.
  std::optional<std::string> value_at_constant(ir::ValueId v, int64_t index) const {
    const ir::Type& t = fn_.type(v);
    if (!t.is_tile()) return ctx_.name(v);
    if (!defined_in_run(v) && ctx_.has_storage(v)) return ctx_.element(v, std::to_string(index));
    ir::OpId def = fn_.value(v).def;
    if (!def.valid()) return std::nullopt;
    const ir::Op& o = fn_.op(def);
    switch (o.kind) {
      case OpKind::Splat: return ctx_.name(o.operands[0]);
      case OpKind::Constant: return value_source_element(ctx_, o, {}, std::to_string(index));
      case OpKind::Arange: return "(" + c_element(t) + ")" + std::to_string(o.int_attr("start") + index);
      case OpKind::ExpandDims:
      case OpKind::Reshape: return value_at_constant(o.operands[0], index);
      case OpKind::Broadcast:
        return value_at_constant(o.operands[0], broadcast_source_index(fn_.type(o.operands[0]), t, index));
      default: break;
    }
    if (!ir::is_elementwise(o.kind)) return std::nullopt;
    std::vector<std::string> operands;
    for (ir::ValueId operand : o.operands) {
      std::optional<std::string> e = value_at_constant(operand, index);
      if (!e) return std::nullopt;
      operands.push_back(*e);
    }
    return elementwise_expr(ctx_, o, operands);
  }

  // Whether integer tile `v` is x0, x0 + 1, ... in flat order: one dim of
  // size > 1, contiguous along all of it. Nothing when it is not; else the
  // run-time check it needs ("" when the analysis proves it, a flag when only
  // a hint promises it).
  std::optional<std::string> counting_check(ir::ValueId v) const {
    const ir::Type& t = fn_.type(v);
    if (!t.is_tile() || t.is_pointer() || !ir::is_integer(t.scalar) || t.scalar == ir::Scalar::I1) return std::nullopt;
    int d = last_wide_dim(t);
    if (d < 0) return std::nullopt;
    for (int e = 0; e < d; ++e)
      if (t.shape[static_cast<size_t>(e)] > 1) return std::nullopt;
    int64_t length = t.shape[static_cast<size_t>(d)];
    if (ctx_.proven_contiguity(v).at(static_cast<size_t>(d)) == length) return std::string();
    if (ctx_.contiguity(v).at(static_cast<size_t>(d)) != length || !computable_anywhere(v)) return std::nullopt;
    return promised_run_flag(v, t.numel());
  }

  using Conjuncts = std::vector<std::string>;

  // Conditions, computable before the loop, that all hold exactly when every
  // element of mask `v` is true; nothing when no cheap ones are known.
  std::optional<Conjuncts> all_true(ir::ValueId v) const {
    if (!fn_.type(v).is_tile()) return Conjuncts{ctx_.name(v)};
    ir::OpId def = fn_.value(v).def;
    if (!def.valid()) return std::nullopt;
    const ir::Op& o = fn_.op(def);
    switch (o.kind) {
      case OpKind::Splat: return Conjuncts{ctx_.name(o.operands[0])};
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape: return all_true(o.operands[0]);
      case OpKind::And: {
        std::optional<Conjuncts> a = all_true(o.operands[0]), b = all_true(o.operands[1]);
        if (!a || !b) return std::nullopt;
        a->insert(a->end(), b->begin(), b->end());
        return a;
      }
      case OpKind::Cmp: return all_in_bounds(o);
      default: return std::nullopt;
    }
  }

  // cmp(counting, uniform) with <, <=, >, >= (either side): every element
  // passes iff the first and the last do and the count does not wrap.
  std::optional<Conjuncts> all_in_bounds(const ir::Op& cmp) const {
    const ir::Attr* pred = cmp.attr("pred");
    if (pred == nullptr || !std::holds_alternative<std::string>(*pred)) return std::nullopt;
    const std::string& p = std::get<std::string>(*pred);
    const char* op = p == "lt" ? " < " : p == "le" ? " <= " : p == "gt" ? " > " : p == "ge" ? " >= " : nullptr;
    if (op == nullptr) return std::nullopt;
    ir::ValueId lhs = cmp.operands[0], rhs = cmp.operands[1];
    bool counting_left = is_uniform_tile(fn_, rhs) && counting_check(lhs).has_value();
    if (!counting_left && !(is_uniform_tile(fn_, lhs) && counting_check(rhs).has_value())) return std::nullopt;
    ir::ValueId counting = counting_left ? lhs : rhs;
    std::string promised = *counting_check(counting);
    int64_t last = fn_.type(counting).numel() - 1;
    std::optional<std::string> first_value = value_at_constant(counting, 0);
    std::optional<std::string> last_value = value_at_constant(counting, last);
    std::optional<std::string> bound = value_at_constant(counting_left ? rhs : lhs, 0);
    if (!first_value || !last_value || !bound) return std::nullopt;
    auto passes = [&](const std::string& x) {
      return counting_left ? "(" + x + op + *bound + ")" : "(" + *bound + op + x + ")";
    };
    Conjuncts all{passes(*first_value), passes(*last_value), "(" + *first_value + " <= " + *last_value + ")"};
    if (!promised.empty()) all.push_back(promised);
    return all;
  }

  // Loads and stores whose pointers are contiguous along whole rows (axis
  // info: runs a multiple of L long) address memory as `row_base[c]`. In a
  // flat loop only pointers counting up through the whole tile qualify.
  void plan_contiguous_accesses() {
    for (ir::OpId id : ops_) {
      const ir::Op& o = fn_.op(id);
      if (!is_memory(o)) continue;
      ir::ValueId p = o.operands[0];
      if (!computable_anywhere(p)) continue;
      const ir::Type& t = fn_.type(p);
      int d = last_wide_dim(t);
      auto fits_by = [&](bool proven) {
        return d < 0 || (rows_ ? row_contiguity(p, proven) % row_ == 0
                               : row_contiguity(p, proven) == numel_ && t.shape[static_cast<size_t>(d)] == numel_);
      };
      bool proven = fits_by(true), promised = !proven && fits_by(false);
      const std::string* flag = ctx_.rows_contiguous_flag(p);
      bool fits_when_checked = flag != nullptr && d >= 0 &&
                               (rows_ ? t.shape[static_cast<size_t>(d)] % row_ == 0
                                      : t.shape[static_cast<size_t>(d)] == numel_);
      if (!proven && !promised && !fits_when_checked) continue;
      bool seen = false;
      for (const RowBase& b : bases_) seen |= b.pointer == p;
      if (seen) continue;
      // What only a hint promises is checked like what the analysis cannot tell: before the loop.
      std::string check = proven ? "" : fits_when_checked ? *flag : promised_run_flag(p, rows_ ? row_ : numel_);
      bases_.push_back(RowBase{p, ctx_.unique("row" + std::to_string(p.index)), check});
      if (!check.empty()) fast_flags_.push_back(check);
    }
  }
  // The row base of pointer tile `p` in the loop copy `fast` (or the other),
  // if it has one there.
  const std::string* base_of(ir::ValueId p, bool fast) const {
    for (const RowBase& b : bases_)
      if (b.pointer == p && (fast || b.checked_by.empty())) return &b.name;
    return nullptr;
  }

  // The masks of loads and stores, and the conditions of selects (a
  // `where(offs < n, x, 0)` on a whole tile is just x).
  void plan_full_tile_check() {
    for (ir::OpId id : ops_) {
      const ir::Op& o = fn_.op(id);
      std::optional<ir::ValueId> mask = o.kind == OpKind::Select ? std::optional(o.operands[0]) : mask_of(o);
      if (!mask || !fn_.type(*mask).is_tile()) continue;
      bool seen = false;
      for (ir::ValueId m : full_masks_) seen |= m == *mask;
      if (seen) continue;
      std::optional<Conjuncts> condition = all_true(*mask);
      if (!condition) continue;
      full_masks_.push_back(*mask);
      for (const std::string& c : *condition)
        if (std::find(full_condition_.begin(), full_condition_.end(), c) == full_condition_.end())
          full_condition_.push_back(c);
    }
  }

  // Whether store `o` streams in the loop copy where full masks are `full`.
  bool streams(const ir::Op& o, bool full) const {
    if (o.kind != OpKind::Store || ctx_.options.debug || rows_ || base_of(o.operands[0], false) == nullptr) return false;
    ir::Scalar s = fn_.type(o.operands[0]).scalar;
    if (s == ir::Scalar::I1 || numel_ * ir::byte_size(s) < kMinStreamBytes) return false;
    return !mask_of(o) || (full && has_full_mask(o));
  }
  // Names of the flag, staging array and store pointer of each store that
  // may stream, by its pointer tile.
  struct Staging {
    std::string flag, array, out;
    int carry = -1;  // its slot of the entry's line_carry, or -1
  };
  void plan_streamed_stores() {
    // An atomic may publish what the program stored to other programs while
    // the launch runs; weakly ordered stores would need a fence before it.
    if (uses_atomics(fn_)) return;
    for (ir::OpId id : ops_) {
      const ir::Op& o = fn_.op(id);
      if (!streams(o, true)) continue;
      std::string index = std::to_string(o.operands[0].index);
      int carry = numel_ % kBlock == 0 && may_hold_last_line(id) ? ctx_.line_carries++ : -1;
      staged_.emplace_back(o.operands[0], Staging{ctx_.unique("stream" + index), ctx_.unique("stage" + index),
                                                  ctx_.unique("out" + index), carry});
    }
  }
  // Whether store `store` is in the program's body and what follows it
  // there touches memory only through scalar loads and stores (which first
  // write out a held line they touch, CodegenContext::held_lines): only
  // then may its last partial line wait for the thread's next program
  // (prelude_stream.h, tg_line_carry).
  bool may_hold_last_line(ir::OpId store) const {
    if (fn_.op(store).parent != fn_.body()) return false;
    const std::vector<ir::OpId>& body = fn_.block(fn_.body()).ops;
    auto at = std::find(body.begin(), body.end(), store);
    if (at == body.end()) return false;
    for (auto it = at + 1; it != body.end(); ++it) {
      const ir::Op& o = fn_.op(*it);
      if (!accesses_memory(fn_, o)) continue;
      bool scalar = (o.kind == OpKind::Load || o.kind == OpKind::Store) && o.regions.empty() &&
                    !fn_.type(o.operands[0]).is_tile();
      if (!scalar) return false;
    }
    return true;
  }
  const Staging* staging_of(const ir::Op& o, bool full) const {
    if (!streams(o, full)) return nullptr;
    for (const auto& s : staged_)
      if (s.first == o.operands[0]) return &s.second;
    return nullptr;
  }
  // Around the loop copy `full`: choosing each streamed store's pointer
  // before it, the copy out after it.
  void open_streamed_stores(bool full);
  void close_streamed_stores(bool full);
  // The statements streaming out the block at `block` of each staged store.
  std::vector<std::string> stream_block(bool full) const;

  // The element expression of one member, from its operands' elements.
  std::string member_value(const ir::Op& op, const std::vector<std::string>& operands, const std::string& index,
                           const std::string& row) const {
    switch (op.kind) {
      case OpKind::Load: return load_element(ctx_, op, operands);
      case OpKind::Constant:
      case OpKind::Splat:
      case OpKind::Arange: return value_source_element(ctx_, op, operands, index);
      case OpKind::Broadcast:
        return rows_ && index == "i" ? broadcast_row_element(ctx_, op, row, row_, "c")
                                     : broadcast_element(ctx_, op, index);
      case OpKind::ExpandDims:
      case OpKind::Reshape: return operands[0];
      default: return elementwise_expr(ctx_, op, operands);
    }
  }

  // Element i of `v` in the loop body; with `full`, masks of full_masks_
  // are true (they may also be read as select conditions).
  std::string element_of(ir::ValueId v, bool full) const {
    if (full)
      for (ir::ValueId m : full_masks_)
        if (m == v) return "true";
    if (defined_in_run(v) && !needs_array_[v.index]) return local(v);
    if (!defined_in_run(v)) {
      std::string element = value_at(v, "i", full);
      return fn_.type(v).is_tile() && !ctx_.has_storage(v) ? nested(ctx_, v, element) : element;
    }
    return ctx_.element(v, "i");
  }

  // Whether `o` is a load or store whose mask is known true in a full tile.
  bool has_full_mask(const ir::Op& o) const {
    std::optional<ir::ValueId> mask = mask_of(o);
    return mask && std::find(full_masks_.begin(), full_masks_.end(), *mask) != full_masks_.end();
  }
  // Whether `o` is a select whose condition is known true in a full tile.
  bool is_full_select(const ir::Op& o) const {
    return o.kind == OpKind::Select &&
           std::find(full_masks_.begin(), full_masks_.end(), o.operands[0]) != full_masks_.end();
  }
  // Whether `o` reads operand j in the loop copy where full masks are
  // `full`: a load with a full mask reads only its pointer (`other` is never
  // taken), such a store its pointer and value, a select with a full
  // condition only its first choice.
  bool reads_operand(const ir::Op& o, size_t j, bool full) const {
    if (!full) return true;
    if (is_full_select(o)) return j == 1;
    if (!has_full_mask(o)) return true;
    return j < (o.kind == OpKind::Load ? 1u : 2u);
  }

  // The reduces this loop accumulates (see the top of the file), and the
  // statements doing it for element i, in the loop copy `full`.
  void plan_accumulated_reduces();
  std::string accumulated_element(ir::ValueId v, bool full) const;
  void declare_lanes();
  void accumulate_reduces(bool full);

  using Fetch = NextTileFetch;
  std::vector<Fetch> next_tile_fetches();
  void declare_next_tile(ir::OpId load, const std::string& base);
  // Whether the loop copy `full` runs in blocks of kBlock elements.
  bool blocked(const std::vector<Fetch>& fetches, bool full) const;
  void open_loop(const std::string& index, const std::vector<Fetch>& fetches, bool in_blocks);
  void close_loop(bool in_blocks, const std::vector<std::string>& after_block);

  std::optional<ir::OpId> load_read_in_place() const;
  void find_tiles_read_in_place(ir::ValueId v, std::vector<ir::ValueId>& found) const;
  std::vector<std::pair<ir::ValueId, std::string>> keep_tiles_read_in_place();
  std::vector<bool> live_members(bool full) const;
  void declare_arrays(const std::vector<bool>& live);
  std::vector<std::string> body(bool full) const;
  bool converts_f16_in_scalar_loop(const std::vector<bool>& live, bool full) const;

  CodegenContext& ctx_;
  const ir::Function& fn_;
  const std::vector<ir::OpId>& ops_;
  std::unordered_set<uint32_t> members_;  // ops_ by index, for in_run
  int64_t numel_ = 0;
  bool rows_ = false;   // a loop nest over rows r of L elements c (else one flat loop)
  int64_t row_ = 0;     // L; numel for a flat loop
  std::vector<bool> needs_array_;
  struct RowBase {
    ir::ValueId pointer;     // the tile
    std::string name;        // its row base local
    std::string checked_by;  // the run-time check it needs (fast copy only), or empty
  };
  // A tile whose rows only a hint calls consecutive (tl.max_contiguous): the
  // fast copy of the loop relies on it only where `flag`, computed before
  // the loop, says each row of `row` elements ends `row - 1` elements past
  // its first. That is not the whole promise, but it costs two reads a row
  // and keeps every access of the fast copy between two the program makes
  // itself; a promise it catches broken (offsets that wrap) takes the copy
  // that computes every address, whose results are the program's own.
  struct ContiguityCheck {
    ir::ValueId tile;
    int64_t row;
    std::string flag;
  };
  mutable std::vector<ContiguityCheck> contiguity_checks_;
  std::vector<RowBase> bases_;
  std::vector<std::string> fast_flags_;                     // the checks of bases_
  std::vector<ir::ValueId> full_masks_;                     // masks all-true when full_condition_ holds
  std::vector<ir::ValueId> shared_views_;                   // views naming their operand's array
  std::vector<std::string> full_condition_;                 // its conjuncts
  std::vector<std::pair<ir::ValueId, Staging>> staged_;     // stores that may stream, by pointer tile
  std::vector<const ir::Op*> accumulated_;                  // reduces this loop accumulates
};

// Members whose value nothing in the loop reads any more (pointer chains
// replaced by row bases, masks of a full tile) are left out; the compiler
// would drop them anyway, readers should not have to.
std::vector<bool> FusedRun::live_members(bool full) const {
  std::vector<bool> live(ops_.size(), false);
  std::vector<bool> read(fn_.num_values(), false);
  for (size_t k = ops_.size(); k-- > 0;) {
    const ir::Op& o = fn_.op(ops_[k]);
    live[k] = o.kind == OpKind::Store || (!o.results.empty() && (needs_array_[o.results[0].index] || read[o.results[0].index]));
    if (!live[k]) continue;
    for (size_t j = 0; j < o.operands.size(); ++j) {
      if (!reads_operand(o, j, full)) continue;
      bool replaced = j == 0 && is_memory(o) && base_of(o.operands[0], full);
      if (!replaced) read[o.operands[j].index] = true;
    }
  }
  return live;
}

// The load of a run that, in a full tile, only copies a whole contiguous
// tile into its array, when that tile may be read in place (see the top of
// the file).
std::optional<ir::OpId> FusedRun::load_read_in_place() const {
  if (ctx_.options.debug || rows_ || uses_atomics(fn_)) return std::nullopt;
  std::vector<bool> live = live_members(true);
  std::optional<ir::OpId> load;
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (!live[k]) continue;
    if (load || fn_.op(ops_[k]).kind != OpKind::Load) return std::nullopt;
    load = ops_[k];
  }
  if (!load) return std::nullopt;
  const ir::Op& o = fn_.op(*load);
  ir::ValueId r = o.results[0];
  const ir::Type& t = fn_.type(r);
  const ir::Attr* volatile_attr = o.attr("volatile");
  bool is_volatile = volatile_attr != nullptr && std::holds_alternative<int64_t>(*volatile_attr) &&
                     std::get<int64_t>(*volatile_attr) != 0;
  // The memory must hold exactly what the array would: not bytes read as
  // i1, not pointers.
  if (is_volatile || !needs_array_[r.index] || base_of(o.operands[0], false) == nullptr || t.scalar == ir::Scalar::I1 ||
      t.is_pointer() || c_storage(t) + "*" != c_element(fn_.type(o.operands[0]).element()))
    return std::nullopt;
  if (mask_of(o) && !has_full_mask(o)) return std::nullopt;
  if (!unwritten_while_used(ctx_, *load)) return std::nullopt;
  return load;
}

// The tiles read in place that element i of `v` reads: `v` itself, or
// those of its operands when this run computes it again (it has no array).
void FusedRun::find_tiles_read_in_place(ir::ValueId v, std::vector<ir::ValueId>& found) const {
  if (!fn_.type(v).is_tile() || defined_in_run(v)) return;
  if (ctx_.tiles_read_in_place.count(v.index) != 0) {
    if (std::find(found.begin(), found.end(), v) == found.end()) found.push_back(v);
    return;
  }
  if (ctx_.has_storage(v) || !fn_.value(v).def.valid()) return;
  for (ir::ValueId operand : fn_.op(fn_.value(v).def).operands) find_tiles_read_in_place(operand, found);
}

// Before the loop of a store that reads tiles read in place (allowed by
// unwritten_while_used when the store writes one range): each such tile is
// read from a copy instead when the range overlaps it, so that the loop
// never reads what it has written. Returns the tiles renamed for the loop,
// with their names to restore after it.
std::vector<std::pair<ir::ValueId, std::string>> FusedRun::keep_tiles_read_in_place() {
  std::vector<std::pair<ir::ValueId, std::string>> renamed;
  const ir::Op* store = nullptr;
  std::vector<ir::ValueId> tiles;
  std::vector<bool> live = live_members(false);
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (!live[k]) continue;
    const ir::Op& o = fn_.op(ops_[k]);
    if (o.kind == OpKind::Store) store = &o;
    for (ir::ValueId operand : o.operands) find_tiles_read_in_place(operand, tiles);
  }
  if (store == nullptr || tiles.empty()) return renamed;
  TEGULA_ASSERT(stores_one_range(ctx_, *store), "a tile read in place by the loop of a store it may overlap");
  ir::ValueId p = store->operands[0];
  std::optional<std::string> start = value_at_constant(p, 0);
  TEGULA_ASSERT(start.has_value(), "the range of a store not known before its loop");
  std::string stored_bytes = std::to_string(numel_ * c_element_size(ir::Type::of(fn_.type(p).scalar)));
  for (ir::ValueId tile : tiles) {
    const ir::Type& t = fn_.type(tile);
    std::string bytes = std::to_string(ctx_.tiles_read_in_place.at(tile.index));
    std::string name = ctx_.name(tile), index = std::to_string(tile.index);
    std::string copy = ctx_.unique("keep" + index), pointer = ctx_.unique("src" + index);
    ctx_.out.line("// " + name + " is read where it lies while this loop stores v" + std::to_string(p.index) +
                  ": from a copy if the store overlaps it");
    ctx_.declare_array(c_storage(t), c_element_size(t), t.numel(), copy);
    ctx_.out.line("const " + c_storage(t) + "* const " + pointer + " = tg_overlaps(" + *start + ", " + stored_bytes +
                  ", " + name + ", " + bytes + ") ? static_cast<const " + c_storage(t) + "*>(std::memcpy(" + copy +
                  ", " + name + ", " + bytes + ")) : " + name + ";");
    renamed.emplace_back(tile, name);
    ctx_.rename(tile, pointer);
  }
  return renamed;
}

// A reduce qualifies (reduce_accumulated_where_computed) and each of its
// operands is either computed by this loop in both its copies or index
// arithmetic, and the loop runs flat in blocks of the reduce's lanes.
void FusedRun::plan_accumulated_reduces() {
  if (rows_ || numel_ % kBlock != 0) return;
  std::vector<bool> live = live_members(false), live_full = live_members(true);
  auto computed_here = [&](ir::ValueId v) {
    if (!defined_in_run(v)) return false;
    size_t k = std::find(ops_.begin(), ops_.end(), fn_.value(v).def) - ops_.begin();
    return live[k] && live_full[k];
  };
  ir::BlockId block = fn_.op(ops_[0]).parent;
  for (ir::OpId id : ops_)
    for (ir::ValueId r : fn_.op(id).results)
      for (ir::OpId user : ctx_.users(r)) {
        const ir::Op& u = fn_.op(user);
        if (u.kind != OpKind::Reduce || u.parent != block || !reduce_accumulated_where_computed(ctx_, u) ||
            std::find(accumulated_.begin(), accumulated_.end(), &u) != accumulated_.end())
          continue;
        bool operands_here = std::all_of(u.operands.begin(), u.operands.end(), [&](ir::ValueId v) {
          return computed_here(v) || is_recomputed(ctx_, v);
        });
        if (operands_here) accumulated_.push_back(&u);
      }
}

// Element i of operand `v` of an accumulated reduce: a member that is not
// live (index arithmetic nothing else in the loop reads) is computed here.
std::string FusedRun::accumulated_element(ir::ValueId v, bool full) const {
  if (defined_in_run(v) && !needs_array_[v.index]) {
    size_t k = std::find(ops_.begin(), ops_.end(), fn_.value(v).def) - ops_.begin();
    if (!live_members(full)[k]) return nested(ctx_, v, value_at(v, "i", full));
  }
  return element_of(v, full);
}

// Before the loop: the lanes of each reduce it accumulates, which the
// reduce then combines (emit_reduce).
void FusedRun::declare_lanes() {
  for (const ir::Op* r : accumulated_) {
    ctx_.out.line(ctx_.op_comment(*r) + "  (accumulated by the loop below, in its lanes and order)");
    std::vector<std::string> lanes;
    for (ir::ValueId v : r->operands) {
      const ir::Type& t = fn_.type(v);
      lanes.push_back(ctx_.fresh("lane"));
      ctx_.declare_array(c_storage(t), c_element_size(t), kBlock, lanes.back());
    }
    ctx_.accumulated_lanes[r->results[0].index] = lanes;
  }
}

// Lane x takes element x of the first block, then combines element x of
// each later block: what the reduce's own loop would do, in its order.
void FusedRun::accumulate_reduces(bool full) {
  for (const ir::Op* r : accumulated_) {
    std::vector<std::string> lane = c_family::indexed(ctx_.accumulated_lanes.at(r->results[0].index), "i - block");
    std::vector<std::string> elements;
    for (ir::ValueId v : r->operands) elements.push_back(accumulated_element(v, full));
    ctx_.out.open("if (block == 0)");
    for (size_t j = 0; j < lane.size(); ++j) ctx_.out.line(lane[j] + " = " + elements[j] + ";");
    ctx_.out.close_open("else");
    c_family::emit_combine(ctx_, *r, lane, elements, lane, /*own_block=*/false);
    ctx_.out.close();
  }
}

// Shares of the pending next tiles for this run's loop (a flat loop of the
// program's body in whole blocks), counted as fetched.
std::vector<FusedRun::Fetch> FusedRun::next_tile_fetches() {
  if (rows_ || numel_ % kBlock != 0 || fn_.op(ops_[0]).parent != fn_.body()) return {};
  return plan_next_tile_fetches(ctx_, numel_ / kBlock);
}

// After the pointer of a tile read in place: the pointer to the next
// program's copy of it, when it qualifies as a next tile.
void FusedRun::declare_next_tile(ir::OpId load, const std::string& base) {
  const ir::Op& o = fn_.op(load);
  int64_t bytes = numel_ * c_element_size(ir::Type::of(fn_.type(o.results[0]).scalar));
  if (o.parent != fn_.body() || bytes < kMinNextTileBytes) return;
  std::string pointer = ctx_.unique("next" + std::to_string(o.results[0].index));
  ctx_.out.line("// where the next program reads it, fetched by the loops below while the launch streams");
  ctx_.out.line("const char* const " + pointer + " = tg_next_tile(tile_history[" +
                std::to_string(ctx_.next_tiles.size()) + "], " + base + ", tg_streams(grid, tg_program_bytes));");
  ctx_.next_tiles.push_back(CodegenContext::NextTile{pointer, bytes, 0, {true}});
  ctx_.next_tiles.back().loops = loops_fetching_after(ctx_, load);
}

// Arrays of the results used outside the run. A view shares its operand's
// array, or gets its own when the operand was recomputed by an earlier loop.
void FusedRun::declare_arrays(const std::vector<bool>& live) {
  for (size_t k = 0; k < ops_.size(); ++k) {
    const ir::Op& o = fn_.op(ops_[k]);
    if (!live[k] || o.results.empty() || !needs_array_[o.results[0].index]) continue;
    if (is_view(o) && (defined_in_run(o.operands[0]) || ctx_.has_storage(o.operands[0]))) {
      ctx_.alias(o.results[0], o.operands[0]);
      shared_views_.push_back(o.results[0]);
    } else {
      ctx_.declare(o.results[0]);
    }
  }
}

namespace {

// Ops whose f16 elements are copied as bits, never converted.
bool moves_bits_only(const ir::Op& o) {
  switch (o.kind) {
    case OpKind::Load:
    case OpKind::Store:
    case OpKind::Select:
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Bitcast: return true;
    default: return false;
  }
}

}  // namespace

// Whether the loop copy `full` converts f16 and loads or stores 1- or
// 2-byte elements through a pointer tile without a row base (a gather or
// scatter). No x86 instruction gathers or scatters such elements, so g++
// leaves the whole loop scalar, and its conversions are then cheaper one at
// a time by the host's instructions (prelude.h, tg_scalar_f16_to_f32) than
// by the bit-exact code meant for vectors.
bool FusedRun::converts_f16_in_scalar_loop(const std::vector<bool>& live, bool full) const {
  bool narrow_gather = false, f16 = false;
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (!live[k]) continue;
    const ir::Op& o = fn_.op(ops_[k]);
    auto is_f16 = [&](ir::ValueId v) { return fn_.type(v).scalar == ir::Scalar::F16 && !fn_.type(v).is_pointer(); };
    if (!moves_bits_only(o)) f16 |= std::any_of(o.results.begin(), o.results.end(), is_f16) ||
                                   std::any_of(o.operands.begin(), o.operands.end(), is_f16);
    if (!is_memory(o) || !fn_.type(o.operands[0]).is_tile()) continue;
    bool narrow = c_element_size(ir::Type::of(fn_.type(o.operands[0]).scalar)) <= 2;
    narrow_gather |= narrow && base_of(o.operands[0], full) == nullptr && staging_of(o, full) == nullptr;
  }
  return narrow_gather && f16;
}

// The statements computing element i; with `full`, the masks of
// full_masks_ read as true.
std::vector<std::string> FusedRun::body(bool full) const {
  bool single = ops_.size() == 1;
  std::vector<bool> live = live_members(full);
  std::vector<std::string> lines;
  if (converts_f16_in_scalar_loop(live, full)) {
    lines.push_back("// 16-bit elements gathered or scattered keep this loop scalar: f16 converts by F16C");
    lines.push_back("constexpr tg_scalar_f16_to_f32 tg_f16_to_f32{};");
    lines.push_back("constexpr tg_scalar_f32_to_f16 tg_f32_to_f16{};");
  }
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (!live[k]) continue;
    const ir::Op& o = fn_.op(ops_[k]);
    if (!single) lines.push_back(ctx_.op_comment(o));
    std::vector<std::string> operands;
    for (size_t j = 0; j < o.operands.size(); ++j)
      if (reads_operand(o, j, full)) operands.push_back(element_of(o.operands[j], full));
    if (const std::string* base = is_memory(o) ? base_of(o.operands[0], full) : nullptr) operands[0] = "(" + *base + " + c)";
    if (const Staging* staging = staging_of(o, full)) operands[0] = "(" + staging->out + " + c)";
    if (o.kind == OpKind::Store) {
      lines.push_back(store_statement(ctx_, o, operands));
      continue;
    }
    ir::ValueId r = o.results[0];
    if (std::find(shared_views_.begin(), shared_views_.end(), r) != shared_views_.end()) {
      lines.push_back("// v" + std::to_string(r.index) + " shares the array of " + ctx_.name(r));
      continue;
    }
    std::string value = full && is_full_select(o) ? operands[0] : member_value(o, operands, "i", "r");
    if (needs_array_[r.index]) lines.push_back(ctx_.element(r, "i") + " = " + value + ";");
    else lines.push_back(c_const(fn_.type(r).element()) + " " + local(r) + " = " + value + ";");
  }
  return lines;
}

void FusedRun::open_streamed_stores(bool full) {
  for (ir::OpId id : ops_) {
    const ir::Op& o = fn_.op(id);
    const Staging* staging = staging_of(o, full);
    if (staging == nullptr) continue;
    ir::Type element = ir::Type::of(fn_.type(o.operands[0]).scalar);
    ctx_.out.line("// v" + std::to_string(o.operands[0].index) +
                  " is streamed past the cache when the launch moves more than the cache holds");
    ctx_.out.line("const bool " + staging->flag + " = tg_streams(grid, tg_program_bytes);");
    ctx_.declare_array(c_element(element), c_element_size(element), numel_, staging->array);
    ctx_.out.line(c_element(element) + "* const " + staging->out + " = " + staging->flag + " ? " + staging->array +
                  " : " + *base_of(o.operands[0], false) + ";");
    ctx_.streams = true;
  }
}

void FusedRun::close_streamed_stores(bool full) {
  if (blocked({}, full)) {  // streamed block by block
    for (const auto& staged : staged_) {
      std::vector<int>& held = ctx_.held_lines;
      if (staged.second.carry >= 0 && std::find(held.begin(), held.end(), staged.second.carry) == held.end())
        held.push_back(staged.second.carry);
    }
    return;
  }
  for (ir::OpId id : ops_) {
    const ir::Op& o = fn_.op(id);
    const Staging* staging = staging_of(o, full);
    if (staging == nullptr) continue;
    int64_t bytes = numel_ * c_element_size(ir::Type::of(fn_.type(o.operands[0]).scalar));
    ctx_.out.line("if (" + staging->flag + ") tg_stream_store(" + *base_of(o.operands[0], false) + ", " + staging->array +
                  ", " + std::to_string(bytes) + ");");
  }
}

std::vector<std::string> FusedRun::stream_block(bool full) const {
  std::vector<std::string> lines;
  for (ir::OpId id : ops_) {
    const ir::Op& o = fn_.op(id);
    const Staging* staging = staging_of(o, full);
    if (staging == nullptr) continue;
    int64_t size = c_element_size(ir::Type::of(fn_.type(o.operands[0]).scalar));
    std::string from = "block * " + std::to_string(size);
    std::string carry = staging->carry < 0 ? "nullptr" : "&line_carry[" + std::to_string(staging->carry) + "]";
    lines.push_back("if (" + staging->flag + ") tg_stream_store_part(" + *base_of(o.operands[0], false) + ", " +
                    staging->array + ", " + std::to_string(numel_ * size) + ", " + from + ", " + from + " + " +
                    std::to_string(kBlock * size) + ", " + carry + ");");
  }
  return lines;
}

bool FusedRun::blocked(const std::vector<Fetch>& fetches, bool full) const {
  if (rows_ || numel_ % kBlock != 0) return false;
  if (!fetches.empty() || !accumulated_.empty()) return true;
  for (ir::OpId id : ops_)
    if (staging_of(fn_.op(id), full) != nullptr) return true;
  return false;
}

// The flat loop over elements `index` of the run; in blocks, each of which
// prefetches its part of the next tiles first.
void FusedRun::open_loop(const std::string& index, const std::vector<Fetch>& fetches, bool in_blocks) {
  if (!in_blocks) return ctx_.open_element_loop(index, row_);
  std::string block = std::to_string(kBlock);
  ctx_.out.open("for (int block = 0; block < " + std::to_string(row_) + "; block += " + block + ")");
  for (const Fetch& f : fetches) ctx_.out.line(next_tile_prefetch(f, "block"));
  ctx_.out.line("TG_IVDEP");
  ctx_.out.line("TG_NO_UNROLL");
  ctx_.out.open("for (int " + index + " = block; " + index + " < block + " + block + "; ++" + index + ")");
}

void FusedRun::close_loop(bool in_blocks, const std::vector<std::string>& after_block) {
  ctx_.out.close();
  if (!in_blocks) return;
  for (const std::string& line : after_block) ctx_.out.line(line);
  ctx_.out.close();
}

void FusedRun::emit_contiguity_checks() {
  auto used = [&](const std::string& flag) {
    return std::find(fast_flags_.begin(), fast_flags_.end(), flag) != fast_flags_.end() ||
           std::find(full_condition_.begin(), full_condition_.end(), flag) != full_condition_.end();
  };
  for (const ContiguityCheck& check : contiguity_checks_) {
    if (!used(check.flag)) continue;  // asked for by a mask that turned out not checkable whole
    const ir::Type& t = fn_.type(check.tile);
    int64_t rows = t.numel() / check.row;
    std::string r = rows == 1 ? "0" : ctx_.fresh("r"), start = r + " * " + std::to_string(check.row);
    std::string first = value_at(check.tile, start);
    std::string last = value_at(check.tile, start + " + " + std::to_string(check.row - 1));
    std::string step = std::to_string(check.row - 1);
    std::string ends = last + " == " + (t.is_pointer() ? "tg_addptr(" + first + ", " + step + ")"
                                                        : "tg_add(" + first + ", (" + c_element(t) + ")" + step + ")");
    ctx_.out.line("// whether each row of v" + std::to_string(check.tile.index) + " ends " + step +
                  " past its first, as a hint promises (else the copy that computes every address runs)");
    if (rows == 1) {
      ctx_.out.line("const bool " + check.flag + " = " + ends + ";");
      continue;
    }
    ctx_.out.line("bool " + check.flag + " = true;");
    ctx_.out.open("for (int " + r + " = 0; " + r + " < " + std::to_string(rows) + " && " + check.flag + "; ++" + r +
                  ")");
    ctx_.out.line(check.flag + " = " + ends + ";");
    ctx_.out.close();
  }
}

void FusedRun::emit() {
  bool single = ops_.size() == 1;
  std::vector<bool> live = live_members(false);
  if (std::find(live.begin(), live.end(), true) == live.end()) {
    // Only values every user recomputes: nothing to store.
    for (ir::OpId id : ops_) ctx_.out.line(ctx_.op_comment(fn_.op(id)) + "  (recomputed where used)");
    return;
  }
  if (single) ctx_.out.line(ctx_.op_comment(fn_.op(ops_[0])));
  std::optional<ir::OpId> in_place = load_read_in_place();
  std::string tile_name;  // of the tile read in place; its array (for a partial tile) is renamed
  if (in_place) {
    ir::ValueId r = fn_.op(*in_place).results[0];
    tile_name = ctx_.name(r);
    ctx_.rename(r, ctx_.unique("copy" + std::to_string(r.index)));
  }
  if (!in_place || !full_masks_.empty()) declare_arrays(live);
  for (size_t k = 0; k < ops_.size(); ++k) {
    const ir::Op& o = fn_.op(ops_[k]);
    if (live[k] && is_memory(o) && base_of(o.operands[0], false) != nullptr)
      ctx_.program_bytes += numel_ * c_element_size(ir::Type::of(fn_.type(o.operands[0]).scalar));
  }
  std::vector<std::pair<ir::ValueId, std::string>> kept_names = keep_tiles_read_in_place();
  auto restore_names = [&] {
    for (const auto& [tile, name] : kept_names) ctx_.rename(tile, name);
  };
  std::vector<std::string> lines = body(false);
  if (single && fn_.op(ops_[0]).kind != OpKind::Store && lines.size() == 1 && lines[0].rfind("//", 0) == 0) {
    ctx_.out.line(lines[0]);  // a view: nothing to compute
    return restore_names();
  }
  std::vector<Fetch> fetches = in_place ? std::vector<Fetch>{} : next_tile_fetches();
  if (!rows_ && bases_.empty() && full_masks_.empty()) {
    declare_lanes();
    open_loop("i", fetches, blocked(fetches, false));
    for (const std::string& line : lines) ctx_.out.line(line);
    accumulate_reduces(false);
    close_loop(blocked(fetches, false), {});
    return restore_names();
  }
  emit_contiguity_checks();
  // [full check] for each row r: row base pointers, then the elements c of the row.
  std::string full;
  if (!full_masks_.empty() || !fast_flags_.empty()) {
    std::string masks, checked;
    for (ir::ValueId m : full_masks_) masks += (masks.empty() ? "v" : ", v") + std::to_string(m.index);
    for (const RowBase& b : bases_)
      if (!b.checked_by.empty()) checked += (checked.empty() ? "v" : ", v") + std::to_string(b.pointer.index);
    if (!masks.empty())
      ctx_.out.line("// the whole tile is in bounds (" + masks + " all true): first and last index pass, no wrap");
    if (!checked.empty())
      ctx_.out.line(std::string(masks.empty() ? "// " : "// and ") + "the rows of " + checked +
                    " hold consecutive addresses (checked before the loop)");
    std::string condition;
    for (const std::string& c : full_condition_) condition += (condition.empty() ? "" : " && ") + c;
    for (const std::string& c : fast_flags_) condition += (condition.empty() ? "" : " && ") + c;
    if (full_masks_.empty()) {
      full = condition;  // the checks' flags alone
    } else {
      full = ctx_.fresh("full");
      ctx_.out.line("const bool " + full + " = " + condition + ";");
    }
  }
  declare_lanes();
  bool one_row = !rows_;
  std::string row_start = one_row ? "0" : "r * " + std::to_string(row_);
  if (!one_row) ctx_.out.open("for (int r = 0; r < " + std::to_string(numel_ / row_) + "; ++r)");
  for (const RowBase& b : bases_)
    ctx_.out.line(c_const(fn_.type(b.pointer).element()) + " " + b.name + " = " + value_at(b.pointer, row_start) +
                  ";  // &v" + std::to_string(b.pointer.index) + "[" + row_start + "]");
  auto element_loop = [&](const std::vector<std::string>& statements, bool full_copy) {
    bool in_blocks = blocked(fetches, full_copy);
    open_streamed_stores(full_copy);
    open_loop("c", fetches, in_blocks);
    ctx_.out.line(one_row ? "const int i = c;" : "const int i = r * " + std::to_string(row_) + " + c;");
    for (const std::string& line : statements) ctx_.out.line(line);
    accumulate_reduces(full_copy);
    close_loop(in_blocks, stream_block(full_copy));
    close_streamed_stores(full_copy);
  };
  if (in_place) {
    ir::ValueId r = fn_.op(*in_place).results[0];
    const std::string& base = *base_of(fn_.op(*in_place).operands[0], false);
    std::string pointer = base;
    if (!full.empty()) {
      ctx_.out.open("if (!" + full + ")");
      element_loop(lines, false);
      ctx_.out.close();
      pointer = full + " ? " + base + " : " + ctx_.name(r);
    }
    ctx_.out.line("// " + tile_name + " is read where it lies" + (full.empty() ? "" : " when whole") +
                  ": nothing writes memory before its last use");
    ctx_.declare_pointer(r, tile_name, pointer);
    ctx_.tiles_read_in_place[r.index] = numel_ * c_element_size(ir::Type::of(fn_.type(r).scalar));
    declare_next_tile(*in_place, base);
  } else if (full.empty()) {
    element_loop(lines, false);
  } else {
    ctx_.out.open("if (" + full + ")");
    element_loop(body(true), true);
    ctx_.out.close_open("else");
    element_loop(lines, false);
    ctx_.out.close();
  }
  if (!one_row) ctx_.out.close();
  restore_names();
}

}  // namespace

std::vector<NextTileFetch> plan_next_tile_fetches(CodegenContext& ctx, int64_t blocks) {
  std::vector<NextTileFetch> fetches;
  auto whole_lines = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  for (CodegenContext::NextTile& tile : ctx.next_tiles) {
    int64_t left = tile.bytes - tile.prefetched;
    if (left <= 0 || tile.loops.empty()) continue;
    int64_t sharing = std::count(tile.loops.begin(), tile.loops.end(), true);
    bool takes = tile.loops.front();
    tile.loops.erase(tile.loops.begin());
    if (!takes) continue;
    // Whole lines per block: the first loops take a line more where the
    // lines do not divide evenly.
    int64_t share = (left + sharing - 1) / sharing;
    int64_t per_block = whole_lines((share + blocks - 1) / blocks);
    fetches.push_back(NextTileFetch{tile.pointer, tile.prefetched, per_block / kBlock});
    tile.prefetched = std::min(tile.bytes, tile.prefetched + per_block * blocks);
  }
  return fetches;
}

bool reduce_accumulated_where_computed(const CodegenContext& ctx, const ir::Op& op) {
  if (!reduces_in_blocks(ctx, op)) return false;
  bool computed = false;
  for (ir::ValueId v : op.operands) {
    if (is_recomputed(ctx, v)) continue;
    ir::OpId def = ctx.fn.value(v).def;
    if (!def.valid()) return false;
    const ir::Op& d = ctx.fn.op(def);
    // Used by the reduce alone, the operand is computed where reduced or
    // stored for it; a loop computing it for other users is what is reused.
    if (d.parent != op.parent || !ir::is_elementwise(d.kind) || !is_per_element(ctx, d) ||
        recomputed_from_loads(ctx, v) || ctx.users(v).size() < 2)
      return false;
    computed = true;
  }
  return computed;
}

std::string next_tile_prefetch(const NextTileFetch& fetch, const std::string& first) {
  std::string step = fetch.bytes_per_element == 1 ? first : first + " * " + std::to_string(fetch.bytes_per_element);
  std::string from = first == "0" ? std::to_string(fetch.offset)
                                  : (fetch.offset == 0 ? "" : std::to_string(fetch.offset) + " + ") + step;
  return "tg_prefetch(" + fetch.pointer + ", " + from + ", " + std::to_string(fetch.bytes_per_element * kBlock) + ");";
}

std::string tile_element(const CodegenContext& ctx, ir::ValueId v, const std::string& index) {
  if (!ctx.fn.type(v).is_tile() || ctx.has_storage(v)) return ctx.element(v, index);
  const ir::Op& o = ctx.fn.op(ctx.fn.value(v).def);
  std::vector<std::string> operands;
  for (ir::ValueId operand : o.operands) {
    std::string element = tile_element(ctx, operand, index);
    bool computed = ctx.fn.type(operand).is_tile() && !ctx.has_storage(operand);
    operands.push_back(computed ? nested(ctx, operand, element) : element);
  }
  if (o.kind == OpKind::Constant || o.kind == OpKind::Splat || o.kind == OpKind::Arange)
    return value_source_element(ctx, o, operands, index);
  if (is_view(o)) return operands[0];
  TEGULA_ASSERT(ir::is_elementwise(o.kind), "a tile without array that is not computed elementwise");
  return recomputed_element(ctx, v, o, operands);
}

void emit_fused(CodegenContext& ctx, const std::vector<ir::OpId>& ops) {
  TEGULA_ASSERT(!ops.empty(), "empty fused run");
  FusedRun(ctx, ops).emit();
}

}  // namespace tegula::backends::cpu
