// Layouts: their bit-level distribution, the default layout of a shape, and
// the assignment of one layout per tile value (LayoutAssigner).
//
// Assignment walks the kernel backwards, so that every use of a value has
// said which layout it wants before the value's definition picks one:
//  * stores want the default layout of their shape (coalesced, vectorized);
//  * an elementwise op, a load, a broadcast want their operands in their own
//    layout; expand_dims wants the slice of its layout at the new axis, so
//    `x[:, None]` of a reduction result costs nothing;
//  * a reduce wants its operand in the layout whose slice its users want;
//  * a value takes the layout most of its uses want (the default of its shape
//    when none does); every other wanted layout is made once, right after the
//    definition: recomputed when the value is cheap (constants, aranges,
//    index arithmetic on them), else converted through shared memory.
// Loops pick one layout per carried value for the init, the body argument,
// the yield and the result: the body is walked once to learn what the body
// argument's uses want, then again with that choice fixed.
#include "backends/cuda/layout.h"

#include <algorithm>
#include <functional>

#include "backends/c_family/tile_index.h"
#include "ir/atomic.h"
#include "ir/printer.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using c_family::log2_exact;
using ir::OpKind;

namespace {

std::string int_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int Layout::parent_dim(int value_dim) const {
  int seen = -1;
  for (int p = 0; p < parent_rank(); ++p) {
    if (std::find(sliced.begin(), sliced.end(), p) != sliced.end()) continue;
    if (++seen == value_dim) return p;
  }
  TEGULA_ASSERT(false, "value dim out of the layout's range");
}

std::string to_string(const Layout& layout) {
  const BlockedLayout& b = layout.parent;
  std::string text = layout.mma      ? to_string(*layout.mma)
                     : layout.linear ? to_string(*layout.linear)
                                     : "blocked{spt=" + int_list(b.size_per_thread) + ", tpw=" + int_list(b.threads_per_warp) +
                                      ", wpc=" + int_list(b.warps_per_cta) + ", order=" + int_list(b.order) + "}";
  if (layout.sliced.empty()) return text;
  std::string dims = layout.sliced.size() == 1 ? std::to_string(layout.sliced[0]) : int_list(layout.sliced);
  return "slice{dim=" + dims + ", parent=" + text + "}";
}

Layout slice(const Layout& layout, int value_dim) {
  Layout out = layout;
  out.sliced.push_back(layout.parent_dim(value_dim));
  std::sort(out.sliced.begin(), out.sliced.end());
  return out;
}

std::optional<Layout> unslice(const Layout& layout, int value_dim) {
  for (size_t k = 0; k < layout.sliced.size(); ++k) {
    Layout candidate = layout;
    int p = candidate.sliced[k];
    candidate.sliced.erase(candidate.sliced.begin() + static_cast<std::ptrdiff_t>(k));
    if (candidate.parent_dim(value_dim) == p) return candidate;
  }
  return std::nullopt;
}

// --- distributions ------------------------------------------------------------

int64_t Distribution::register_offset(int r) const {
  int64_t offset = 0;
  for (size_t k = 0; k < register_bits.size(); ++k)
    if ((r >> k) & 1) offset |= int64_t{1} << register_bits[k];
  return offset;
}

bool Distribution::replicated() const {
  for (int b : lane_bits)
    if (b < 0) return true;
  for (int b : warp_bits)
    if (b < 0) return true;
  return false;
}

// Value dim i (parent dim p) of size S: a thread holds min(spt, S) consecutive
// elements at (pos * spt) mod S, repeated every CTA tile (spt * tpw * wpc)
// when S is larger; `pos` = warp_p * tpw_p + lane_p. Bits of pos*spt at or
// above log2(S) are dropped by the mod: those lanes and warps replicate.
Distribution distribute(const Layout& layout, const std::vector<int64_t>& shape) {
  if (layout.mma) return distribute_mma(layout, shape);
  if (layout.linear) return distribute_linear(layout, shape);
  const BlockedLayout& b = layout.parent;
  int rank = layout.rank();
  TEGULA_ASSERT(static_cast<int>(shape.size()) == rank, "layout rank differs from the tile's");
  int parent_rank = static_cast<int>(b.order.size());
  std::vector<int> value_dim(static_cast<size_t>(parent_rank), -1);
  for (int i = 0; i < rank; ++i) value_dim[static_cast<size_t>(layout.parent_dim(i))] = i;
  std::vector<int> shape_bits, linear_offset(static_cast<size_t>(rank), 0);
  for (int64_t s : shape) shape_bits.push_back(log2_exact(s));
  for (int i = rank - 2; i >= 0; --i)
    linear_offset[static_cast<size_t>(i)] = linear_offset[static_cast<size_t>(i + 1)] + shape_bits[static_cast<size_t>(i + 1)];

  Distribution d;
  d.numel = 1;
  for (int64_t s : shape) d.numel *= s;
  for (int p : b.order) {
    int i = value_dim[static_cast<size_t>(p)];
    if (i < 0) continue;
    size_t pu = static_cast<size_t>(p), iu = static_cast<size_t>(i);
    int spt_bits = log2_exact(b.size_per_thread[pu]);
    int cta_bits = spt_bits + log2_exact(b.threads_per_warp[pu]) + log2_exact(b.warps_per_cta[pu]);
    for (int k = 0; k < std::min(spt_bits, shape_bits[iu]); ++k) d.register_bits.push_back(linear_offset[iu] + k);
    for (int k = cta_bits; k < shape_bits[iu]; ++k) d.register_bits.push_back(linear_offset[iu] + k);
  }
  auto thread_bits = [&](const std::vector<int>& per_dim, bool warps) {
    std::vector<int> bits;
    for (int p : b.order) {
      size_t pu = static_cast<size_t>(p);
      int i = value_dim[pu];
      int first = log2_exact(b.size_per_thread[pu]) + (warps ? log2_exact(b.threads_per_warp[pu]) : 0);
      for (int k = 0; k < log2_exact(per_dim[pu]); ++k) {
        int coordinate_bit = first + k;
        bool kept = i >= 0 && coordinate_bit < shape_bits[static_cast<size_t>(i)];
        bits.push_back(kept ? linear_offset[static_cast<size_t>(i)] + coordinate_bit : -1);
      }
    }
    return bits;
  };
  d.lane_bits = thread_bits(b.threads_per_warp, false);
  d.warp_bits = thread_bits(b.warps_per_cta, true);
  return d;
}

int linear_offset_of(const std::vector<int64_t>& shape, int dim) {
  int offset = 0;
  for (size_t j = static_cast<size_t>(dim) + 1; j < shape.size(); ++j) offset += log2_exact(shape[j]);
  return offset;
}

CoordinateBit coordinate_bit(const std::vector<int64_t>& shape, int linear_bit) {
  for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
    int base = linear_offset_of(shape, dim);
    int bits = log2_exact(shape[static_cast<size_t>(dim)]);
    if (linear_bit >= base && linear_bit < base + bits) return {dim, linear_bit - base};
  }
  return {};
}

int contiguous_registers(const Distribution& d, const std::vector<int64_t>& shape, int dim) {
  int base = linear_offset_of(shape, dim);
  int bits = log2_exact(shape[static_cast<size_t>(dim)]);
  int k = 0;
  while (k < static_cast<int>(d.register_bits.size()) && k < bits && d.register_bits[static_cast<size_t>(k)] == base + k)
    ++k;
  return 1 << k;
}

int fastest_register_dim(const Distribution& d, const std::vector<int64_t>& shape) {
  if (d.register_bits.empty()) return -1;
  for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
    int base = linear_offset_of(shape, dim);
    int bit = d.register_bits[0];
    if (bit >= base && bit < base + log2_exact(shape[static_cast<size_t>(dim)])) return dim;
  }
  return -1;
}

// --- the default layout of a shape ----------------------------------------------

namespace {

// Lanes, then warps, go to the fastest dims first, each dim taking at most
// what it has room for; what is left over replicates along the slowest dim.
BlockedLayout make_blocked(const std::vector<int64_t>& shape, int vector, const std::vector<int>& order,
                           int num_warps) {
  size_t rank = shape.size();
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  BlockedLayout b;
  b.order = order;
  b.size_per_thread.assign(rank, 1);
  b.threads_per_warp.assign(rank, 1);
  b.warps_per_cta.assign(rank, 1);
  size_t fast = static_cast<size_t>(order[0]);
  int64_t per_thread = std::max<int64_t>(1, numel / (32 * num_warps));
  b.size_per_thread[fast] = static_cast<int>(std::min<int64_t>({vector, shape[fast], per_thread}));
  int lanes = 32, warps = num_warps;
  for (int p : order) {
    size_t d = static_cast<size_t>(p);
    int64_t room = std::max<int64_t>(1, shape[d] / b.size_per_thread[d]);
    b.threads_per_warp[d] = static_cast<int>(std::min<int64_t>(lanes, room));
    lanes /= b.threads_per_warp[d];
  }
  b.threads_per_warp[static_cast<size_t>(order.back())] *= lanes;
  for (int p : order) {
    size_t d = static_cast<size_t>(p);
    int64_t room = std::max<int64_t>(1, shape[d] / (int64_t{b.size_per_thread[d]} * b.threads_per_warp[d]));
    b.warps_per_cta[d] = static_cast<int>(std::min<int64_t>(warps, room));
    warps /= b.warps_per_cta[d];
  }
  b.warps_per_cta[static_cast<size_t>(order.back())] *= warps;
  return b;
}

std::vector<int> row_major_order(size_t rank) {
  std::vector<int> order;
  for (size_t d = rank; d-- > 0;) order.push_back(static_cast<int>(d));
  return order;
}

}  // namespace

Layout LayoutPlan::default_layout(const std::vector<int64_t>& shape) const {
  int vector = 1;
  std::vector<int> order = row_major_order(shape.size());
  for (const ShapePreference& p : preferences_) {
    if (p.shape != shape) continue;
    vector = p.vector;
    order = p.order;
  }
  return Layout{make_blocked(shape, vector, order, num_warps_), {}};
}

Layout LayoutPlan::access_layout(ir::OpId op) const {
  const std::optional<ShapePreference>& a = accesses_.at(op.index);
  if (!a) return default_layout(fn_.type(fn_.op(op).results.empty() ? fn_.op(op).operands[0] : fn_.op(op).results[0]).shape);
  return Layout{make_blocked(a->shape, a->vector, a->order, num_warps_), {}};
}

// --- assignment -------------------------------------------------------------------

class LayoutAssigner {
 public:
  LayoutAssigner(const ir::Function& fn, LayoutPlan& plan) : fn_(fn), plan_(plan) {
    wants_.resize(fn.num_values());
    cheap_.assign(fn.num_values(), false);
    deferred_.assign(fn.num_ops(), false);
    fn.walk([&](ir::OpId id) { mark_cheap(fn.op(id)); });
    // Values computed from a tensor-core dot's accumulator stay in its layout
    // (layout_mma.cpp): they outweigh any use, so epilogues run in place and
    // the conversion happens at the store, on the narrowest type.
    std::vector<std::optional<Layout>> affinity = tensor_core_affinity(fn, plan.num_warps_, plan.arch_);
    for (size_t v = 0; v < affinity.size(); ++v)
      if (affinity[v]) wants_[v].push_back({*affinity[v], kTensorCoreAffinity});
    // A load outside loops whose value only ends in uses that take any
    // layout (dot operands, staged through shared memory; reshape, trans) is loaded as
    // wide as its own contiguity allows, and so are the values computed
    // elementwise from it on the way (dot_scaled's upcasts): one conversion,
    // at their end, where one was due anyway.
    natural_.resize(fn.num_values());
    std::vector<std::vector<const ir::Op*>> users(fn.num_values());
    fn.walk([&](ir::OpId id) {
      const ir::Op& op = fn.op(id);
      for (ir::ValueId v : op.operands) users[v.index].push_back(&op);
      if (op.results.size() != 1 || !is_tile(op.results[0])) return;
      ir::ValueId r = op.results[0];
      // Not in loops: a K loop's loads are pipelined in the layout their
      // loop-carried pointers have (codegen_pipeline.cpp), converted
      // every iteration in any other.
      if (op.kind == OpKind::Load && op.parent == fn.body()) {
        natural_[r.index] = plan.access_layout(id);
      } else if (ir::is_elementwise(op.kind)) {
        for (ir::ValueId v : op.operands)
          if (is_tile(v) && natural_[v.index] && shape(v) == shape(r)) {
            natural_[r.index] = natural_[v.index];
            break;
          }
      }
    });
    std::vector<int> any_layout(fn.num_values(), -1);  // -1: not known yet
    std::function<bool(ir::ValueId)> takes_any_layout = [&](ir::ValueId v) {
      int& known = any_layout[v.index];
      if (known >= 0) return known != 0;
      known = 0;  // a cycle through loop-carried values: no
      bool any = !users[v.index].empty();
      for (const ir::Op* u : users[v.index]) {
        bool operand_ab = u->kind == OpKind::Dot && u->operands[2] != v;
        bool moved = u->kind == OpKind::Trans || u->kind == OpKind::Reshape;
        bool on_the_way = ir::is_elementwise(u->kind) && u->results.size() == 1 && is_tile(u->results[0]) &&
                          shape(u->results[0]) == shape(v) && takes_any_layout(u->results[0]);
        any = any && (operand_ab || moved || on_the_way);
      }
      known = any ? 1 : 0;
      return any;
    };
    for (size_t v = 0; v < natural_.size(); ++v)
      if (natural_[v] && !takes_any_layout(ir::ValueId{static_cast<uint32_t>(v)})) natural_[v].reset();
  }

  void run() {
    walk_block(fn_.body());
    // Reduce results whose users wanted no particular slice take the slice of
    // whatever layout the operand ended up with (known only now).
    fn_.walk([&](ir::OpId id) {
      if (!deferred_[id.index]) return;
      const ir::Op& op = fn_.op(id);
      Layout operand = plan_.primary(op.operands[0]);
      for (size_t k = 1; k < op.operands.size(); ++k) {
        plan_.requests_[id.index][k] = operand;
        add_extra(op.operands[k], operand);
      }
      int axis = static_cast<int>(op.int_attr("axis"));
      for (ir::ValueId r : op.results)
        if (fn_.type(r).is_tile()) finish(r, slice(operand, axis));
    });
  }

 private:
  bool is_tile(ir::ValueId v) const { return fn_.type(v).is_tile(); }
  const std::vector<int64_t>& shape(ir::ValueId v) const { return fn_.type(v).shape; }

  // Values recomputed rather than converted when another layout is wanted:
  // functions of scalars only (constants, aranges, splats and pure
  // elementwise/shape ops over them).
  void mark_cheap(const ir::Op& op) {
    if (op.results.size() != 1 || !is_tile(op.results[0])) return;
    bool cheap = false;
    switch (op.kind) {
      case OpKind::Constant:
      case OpKind::Arange:
      case OpKind::Splat: cheap = true; break;
      case OpKind::Broadcast:
      case OpKind::ExpandDims: cheap = true; break;  // a register copy: its operand converts instead
      default:
        if (ir::is_elementwise(op.kind)) {
          cheap = true;
          for (ir::ValueId v : op.operands) cheap = cheap && (!is_tile(v) || cheap_[v.index]);
        }
    }
    cheap_[op.results[0].index] = cheap;
  }

  void want(ir::ValueId v, const Layout& layout, int weight = 1) {
    if (!is_tile(v)) return;
    Distribution d = distribute(layout, shape(v));
    for (LayoutPlan::Want& w : wants_[v.index]) {
      if (distribute(w.layout, shape(v)) == d) {
        w.weight += weight;
        return;
      }
    }
    wants_[v.index].push_back({layout, weight});
  }

  void request(ir::OpId op, size_t k, const Layout& layout) {
    auto& slots = plan_.requests_[op.index];
    if (slots.size() <= k) slots.resize(fn_.op(op).operands.size());
    slots[k] = layout;
    want(fn_.op(op).operands[k], layout);
  }

  // The most wanted layout among `wants` (ties: the shape's default, then the
  // first wanted), or the default when nothing is wanted.
  Layout choose(const std::vector<LayoutPlan::Want>& wants, const std::vector<int64_t>& s) const {
    Layout fallback = plan_.default_layout(s);
    if (wants.empty()) return fallback;
    Distribution d_default = distribute(fallback, s);
    const LayoutPlan::Want* best = &wants[0];
    for (const LayoutPlan::Want& w : wants) {
      bool is_default = distribute(w.layout, s) == d_default;
      bool best_is_default = distribute(best->layout, s) == d_default;
      if (w.weight > best->weight || (w.weight == best->weight && is_default && !best_is_default)) best = &w;
    }
    return best->layout;
  }
  Layout choose(ir::ValueId v) const {
    if (wants_[v.index].empty() && natural_[v.index]) return *natural_[v.index];
    return choose(wants_[v.index], shape(v));
  }

  // A store reads its operands in the default layout of their shape, or in
  // its own access layout when the value takes a tensor-core layout (it is
  // converted for the store anyway) or when the default runs along another
  // dim than the store's addresses (it would store element by element).
  Layout store_layout(ir::OpId id) const {
    const ir::Op& op = fn_.op(id);
    const std::vector<int64_t>& s = shape(op.operands[0]);
    Layout fallback = plan_.default_layout(s), own = plan_.access_layout(id);
    bool converted = std::any_of(wants_[op.operands[1].index].begin(), wants_[op.operands[1].index].end(),
                                 [](const LayoutPlan::Want& w) { return w.weight >= kTensorCoreAffinity; });
    size_t fast = static_cast<size_t>(own.parent.order[0]);
    bool across = own.parent.order[0] != fallback.parent.order[0] && own.parent.size_per_thread[fast] > 1;
    return converted || across ? own : fallback;
  }

  void add_extra(ir::ValueId v, const Layout& layout) {
    Distribution d = distribute(layout, shape(v));
    if (distribute(plan_.primary(v), shape(v)) == d) return;
    for (const Layout& e : plan_.extras_[v.index])
      if (distribute(e, shape(v)) == d) return;
    plan_.extras_[v.index].push_back(layout);
  }

  // Fixes v's primary layout; every other wanted layout becomes an extra.
  void finish(ir::ValueId v, const Layout& primary) {
    plan_.primary_[v.index] = primary;
    plan_.extras_[v.index].clear();
    for (const LayoutPlan::Want& w : wants_[v.index]) add_extra(v, w.layout);
  }

  // The layout in which `op` reads tile operand `k` to produce its result in
  // `result` (elementwise ops, loads, broadcast, expand_dims).
  Layout operand_layout(const ir::Op& op, const Layout& result) const {
    if (op.kind == OpKind::ExpandDims) return slice(result, static_cast<int>(op.int_attr("axis")));
    return result;
  }

  void walk_block(ir::BlockId block) {
    const std::vector<ir::OpId>& ops = fn_.block(block).ops;
    for (size_t i = ops.size(); i-- > 0;) {
      const ir::Op& op = fn_.op(ops[i]);
      if (op.erased || ir::is_terminator(op.kind)) continue;
      visit(ops[i]);
    }
  }

  void visit(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    plan_.requests_[id.index].assign(op.operands.size(), std::nullopt);
    switch (op.kind) {
      case OpKind::Store: {
        if (!is_tile(op.operands[0])) return;
        Layout layout = store_layout(id);
        for (size_t k = 0; k < op.operands.size(); ++k)
          if (is_tile(op.operands[k])) request(id, k, layout);
        return;
      }
      case OpKind::Reduce: return visit_reduce(id);
      case OpKind::Scan: return visit_scan(id);
      case OpKind::Gather:
      case OpKind::Histogram: return visit_indexed(id);
      case OpKind::Dot: {
        ir::ValueId r = op.results[0];
        std::optional<MmaLayout> mma = tensor_core_layout(fn_, op, plan_.num_warps_, plan_.arch_);
        Layout layout = mma ? Layout{{}, {}, mma} : choose(r);
        finish(r, layout);
        if (op.operands.size() > 2) request(id, 2, layout);
        return;
      }
      case OpKind::AtomicRmw:
      case OpKind::AtomicCas:
        if (visit_atomic_in_place(id)) return;
        break;
      case OpKind::For: return visit_for(id);
      case OpKind::If: return visit_if(id);
      case OpKind::While: return visit_while(id);
      case OpKind::Print:
      case OpKind::Assert: return;
      case OpKind::InlineAsm: {
        // Elementwise with several results: results and operands share the layout the results' users want most.
        if (!is_tile(op.results[0])) return;
        std::vector<LayoutPlan::Want> all;
        for (ir::ValueId r : op.results) all.insert(all.end(), wants_[r.index].begin(), wants_[r.index].end());
        Layout layout = choose(all, shape(op.results[0]));
        for (ir::ValueId r : op.results) finish(r, layout);
        for (size_t k = 0; k < op.operands.size(); ++k) request(id, k, layout);
        return;
      }
      case OpKind::Reshape:
      case OpKind::Trans:
      case OpKind::Join:
      case OpKind::Split:
      case OpKind::Sort: {
        // Converted through shared memory from whatever layout the operand has.
        std::vector<LayoutPlan::Want> all;
        for (ir::ValueId r : op.results)
          if (is_tile(r)) all.insert(all.end(), wants_[r.index].begin(), wants_[r.index].end());
        for (ir::ValueId r : op.results)
          if (is_tile(r)) finish(r, choose(all, shape(r)));
        return;
      }
      default: break;
    }
    // Elementwise ops, value sources, loads, broadcast, expand_dims.
    if (op.results.size() != 1 || !is_tile(op.results[0])) return;
    ir::ValueId r = op.results[0];
    Layout layout = choose(r);
    finish(r, layout);
    for (size_t k = 0; k < op.operands.size(); ++k) {
      if (!is_tile(op.operands[k])) continue;
      request(id, k, operand_layout(op, layout));
      // A cheap value is recomputed in its extra layouts, from its operands
      // in those layouts.
      if (cheap_[r.index])
        for (const Layout& extra : plan_.extras_[r.index]) want(op.operands[k], operand_layout(op, extra));
    }
  }

  // An atomic whose old values nobody reads, adding a value computed from a
  // tensor-core accumulator (a split-K partial, a gradient added by many
  // programs), runs in the accumulator's layout, as a store of it would be
  // converted: no round trip through shared memory and its barriers (in a
  // TMA ring, on the consumers' named barrier) for values the atomics
  // send to L2 one element at a time anyway.
  bool visit_atomic_in_place(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    ir::ValueId r = op.results[0];
    size_t value = op.kind == OpKind::AtomicCas ? 2 : 1;
    if (!is_tile(r) || !wants_[r.index].empty() || op.operands.size() <= value) return false;
    const std::vector<LayoutPlan::Want>& wants = wants_[op.operands[value].index];
    auto mma = std::find_if(wants.begin(), wants.end(),
                            [](const LayoutPlan::Want& w) { return w.weight >= kTensorCoreAffinity; });
    if (mma == wants.end()) return false;
    Layout layout = mma->layout;
    finish(r, layout);
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (is_tile(op.operands[k])) request(id, k, layout);
    return true;
  }

  // A scan computes in its operands' layout: results and operands share the
  // layout the results' users want most.
  void visit_scan(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    std::vector<LayoutPlan::Want> all;
    for (ir::ValueId r : op.results) all.insert(all.end(), wants_[r.index].begin(), wants_[r.index].end());
    Layout layout = choose(all, shape(op.results[0]));
    for (ir::ValueId r : op.results) finish(r, layout);
    for (size_t k = 0; k < op.operands.size(); ++k) request(id, k, layout);
  }

  // gather and histogram stage through shared memory. gather reads its index
  // in the result's layout (src in any); histogram reads its input and mask
  // in one layout, the default of their shape.
  void visit_indexed(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    ir::ValueId r = op.results[0];
    Layout layout = choose(r);
    finish(r, layout);
    if (op.kind == OpKind::Gather) return request(id, 1, layout);
    for (size_t k = 0; k < op.operands.size(); ++k) request(id, k, plan_.default_layout(shape(op.operands[k])));
  }

  void visit_reduce(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    int axis = static_cast<int>(op.int_attr("axis"));
    std::optional<Layout> operand;
    if (is_tile(op.results[0])) {
      std::vector<LayoutPlan::Want> all;
      for (ir::ValueId r : op.results) all.insert(all.end(), wants_[r.index].begin(), wants_[r.index].end());
      if (!all.empty()) operand = unslice(choose(all, shape(op.results[0])), axis);
    }
    if (!operand) {
      deferred_[id.index] = true;
      return;
    }
    deferred_[id.index] = false;
    for (size_t k = 0; k < op.operands.size(); ++k) request(id, k, *operand);
    for (ir::ValueId r : op.results) finish(r, slice(*operand, axis));
  }

  // Merged wants of several values of one shape.
  std::vector<LayoutPlan::Want> merged(std::initializer_list<ir::ValueId> values) const {
    std::vector<LayoutPlan::Want> all;
    for (ir::ValueId v : values) all.insert(all.end(), wants_[v.index].begin(), wants_[v.index].end());
    return all;
  }

  // Walks `regions` once without the terminators' requests, to learn what the
  // uses of their arguments want; restores every other want afterwards.
  std::vector<std::vector<LayoutPlan::Want>> probe_arguments(const std::vector<ir::BlockId>& regions) {
    std::vector<std::vector<LayoutPlan::Want>> saved = wants_;
    for (size_t i = regions.size(); i-- > 0;) walk_block(regions[i]);
    std::vector<std::vector<LayoutPlan::Want>> probed = wants_;
    wants_ = std::move(saved);
    return probed;
  }

  void request_terminator(ir::BlockId block, size_t first, const std::vector<std::optional<Layout>>& layouts) {
    ir::OpId term = fn_.block(block).ops.back();
    plan_.requests_[term.index].assign(fn_.op(term).operands.size(), std::nullopt);
    for (size_t i = 0; i < layouts.size(); ++i)
      if (layouts[i]) request(term, first + i, *layouts[i]);
  }

  void visit_for(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    ir::BlockId body = op.regions[0];
    const std::vector<ir::ValueId>& args = fn_.block(body).args;
    std::vector<std::vector<LayoutPlan::Want>> probed = probe_arguments({body});
    std::vector<std::optional<Layout>> carried(op.results.size());
    for (size_t i = 0; i < op.results.size(); ++i) {
      ir::ValueId r = op.results[i], arg = args[i + 1];
      if (!is_tile(r)) continue;
      std::vector<LayoutPlan::Want> all = wants_[r.index];
      all.insert(all.end(), probed[arg.index].begin(), probed[arg.index].end());
      carried[i] = choose(all, shape(r));
    }
    request_terminator(body, 0, carried);
    walk_block(body);
    for (size_t i = 0; i < carried.size(); ++i) {
      if (!carried[i]) continue;
      finish(args[i + 1], *carried[i]);
      finish(op.results[i], *carried[i]);
      request(id, 3 + i, *carried[i]);
    }
  }

  void visit_if(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    std::vector<std::optional<Layout>> layouts(op.results.size());
    for (size_t i = 0; i < op.results.size(); ++i)
      if (is_tile(op.results[i])) {
        layouts[i] = choose(op.results[i]);
        finish(op.results[i], *layouts[i]);
      }
    for (size_t i = op.regions.size(); i-- > 0;) {
      request_terminator(op.regions[i], 0, layouts);
      walk_block(op.regions[i]);
    }
  }

  void visit_while(ir::OpId id) {
    const ir::Op& op = fn_.op(id);
    ir::BlockId before = op.regions[0], after = op.regions[1];
    const std::vector<ir::ValueId>& before_args = fn_.block(before).args;
    const std::vector<ir::ValueId>& after_args = fn_.block(after).args;
    std::vector<std::vector<LayoutPlan::Want>> probed = probe_arguments({before, after});
    std::vector<std::optional<Layout>> carried(before_args.size()), passed(after_args.size());
    for (size_t i = 0; i < before_args.size(); ++i)
      if (is_tile(before_args[i])) carried[i] = choose(probed[before_args[i].index], shape(before_args[i]));
    for (size_t j = 0; j < after_args.size(); ++j) {
      if (!is_tile(after_args[j])) continue;
      std::vector<LayoutPlan::Want> all = wants_[op.results[j].index];
      all.insert(all.end(), probed[after_args[j].index].begin(), probed[after_args[j].index].end());
      passed[j] = choose(all, shape(after_args[j]));
    }
    request_terminator(after, 0, carried);
    walk_block(after);
    request_terminator(before, 1, passed);
    walk_block(before);
    for (size_t j = 0; j < after_args.size(); ++j) {
      if (!passed[j]) continue;
      finish(after_args[j], *passed[j]);
      finish(op.results[j], *passed[j]);
    }
    for (size_t i = 0; i < before_args.size(); ++i) {
      if (!carried[i]) continue;
      finish(before_args[i], *carried[i]);
      request(id, i, *carried[i]);
    }
  }

  // Outweighs the wants of all uses of a value together.
  static constexpr int kTensorCoreAffinity = 1 << 20;

  const ir::Function& fn_;
  LayoutPlan& plan_;
  std::vector<std::vector<LayoutPlan::Want>> wants_;
  std::vector<std::optional<Layout>> natural_;  // by value index: the layout of the load it is computed from
  std::vector<bool> cheap_;
  std::vector<bool> deferred_;  // by op index: reduce results set after the walk
};

// --- LayoutPlan -------------------------------------------------------------------

namespace {

int element_bytes(const ir::Type& pointer_tile) { return ir::byte_size(pointer_tile.scalar); }

}  // namespace

bool vector_reduction(const ir::Function& fn, const ir::Op& op, int arch) {
  if (op.kind != OpKind::AtomicRmw || arch < 90) return false;
  ir::AtomicInfo a = ir::atomic_info(op);
  return a.op == ir::AtomicOp::Add && (a.sem == ir::MemorySem::Relaxed || a.sem == ir::MemorySem::Release) &&
         fn.type(op.results[0]).scalar == ir::Scalar::F32;
}

LayoutPlan::LayoutPlan(const ir::Function& fn, const passes::AxisInfoAnalysis& info, int num_warps, int arch)
    : fn_(fn), num_warps_(num_warps), arch_(arch) {
  primary_.resize(fn.num_values());
  extras_.resize(fn.num_values());
  requests_.resize(fn.num_ops());
  accesses_.resize(fn.num_ops());
  // Vector width and order per shape, from the memory ops on tiles of it.
  // The layout is shared by every tile of the shape, and a warp's access is
  // coalesced only when each lane holds at most one access's worth of
  // consecutive elements: a lane holding 16 bf16 (32 bytes) issues two
  // 16-byte accesses whose lanes are 32 bytes apart, so each touches twice
  // the sectors it uses (on the H200 the fused chain went from 81% to 86% of
  // copy bandwidth with this rule). So the width is the narrowest natural
  // width (16 bytes, or the contiguity) of the accesses that stream, i.e.
  // whose address depends on the program id; accesses every program makes
  // alike (a bias row) mostly hit in L1 and do not vote. Without streaming
  // accesses, all contiguous accesses vote.
  struct Access {
    int64_t width;  // elements per access the contiguity allows, up to 16 bytes
    std::vector<int> order;
    bool contiguous;
    bool streams;
    int bytes;
  };
  std::vector<std::pair<std::vector<int64_t>, std::vector<Access>>> accesses;
  std::vector<int> program_dependence(fn.num_values(), -1);
  std::function<bool(ir::ValueId)> depends_on_program = [&](ir::ValueId v) -> bool {
    int& known = program_dependence[v.index];
    if (known >= 0) return known != 0;
    known = 1;  // loop-carried values (cycles) count as dependent
    ir::OpId def = fn.value(v).def;
    bool result;
    if (!def.valid()) {  // a kernel parameter does not; a loop's block argument may
      const ir::Block& body = fn.block(fn.body());
      result = std::find(body.args.begin(), body.args.end(), v) == body.args.end();
    } else {
      const ir::Op& d = fn.op(def);
      result = d.kind == OpKind::ProgramId || d.kind == OpKind::NumPrograms || d.kind == OpKind::GlobalTimer ||
               d.kind == OpKind::Smid || !d.regions.empty();
      for (ir::ValueId u : d.operands) result = result || depends_on_program(u);
    }
    program_dependence[v.index] = result ? 1 : 0;
    return result;
  };
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    if (op.kind != OpKind::Load && op.kind != OpKind::Store && !vector_reduction(fn, op, arch_)) return;
    const ir::Type& ptr = fn.type(op.operands[0]);
    if (!ptr.is_tile()) return;
    const passes::AxisInfo& facts = info.get(op.operands[0]);
    int rank = ptr.rank();
    int fastest = rank - 1;
    for (int d = rank - 1; d >= 0; --d)
      if (facts.contiguity[static_cast<size_t>(d)] > facts.contiguity[static_cast<size_t>(fastest)]) fastest = d;
    size_t f = static_cast<size_t>(fastest);
    int bytes = element_bytes(ptr);
    int64_t width = std::min<int64_t>({16 / bytes, facts.contiguity[f], ptr.shape[f]});
    std::vector<int> order = {fastest};
    for (int d = rank - 1; d >= 0; --d)
      if (d != fastest) order.push_back(d);
    bool contiguous = facts.contiguity[f] > 1;
    Access a{width, contiguous ? order : row_major_order(ptr.shape.size()), contiguous,
             depends_on_program(op.operands[0]), bytes};
    accesses_[id.index] = ShapePreference{ptr.shape, static_cast<int>(contiguous ? width : 1), a.order, bytes};
    for (auto& [shape, list] : accesses) {
      if (shape != ptr.shape) continue;
      list.push_back(a);
      return;
    }
    accesses.push_back({ptr.shape, {a}});
  });
  for (auto& [shape, list] : accesses) {
    bool any_streams = std::any_of(list.begin(), list.end(), [](const Access& a) { return a.contiguous && a.streams; });
    auto votes = [&](const Access& a) { return a.contiguous && (a.streams || !any_streams); };
    const Access* chosen = &list.front();
    for (const Access& a : list)
      if (votes(a) && (!votes(*chosen) || a.width < chosen->width)) chosen = &a;
    preferences_.push_back({shape, static_cast<int>(chosen->width), chosen->order, chosen->bytes});
  }
  LayoutAssigner(fn, *this).run();
}

const Layout& LayoutPlan::primary(ir::ValueId v) const {
  const std::optional<Layout>& l = primary_.at(v.index);
  TEGULA_ASSERT(l.has_value(), "tile value without a layout");
  return *l;
}

const Layout& LayoutPlan::request(ir::OpId op, size_t k) const {
  const auto& slots = requests_.at(op.index);
  if (k < slots.size() && slots[k]) return *slots[k];
  return primary(fn_.op(op).operands.at(k));
}

namespace {

void number_block(const ir::Function& fn, ir::BlockId block, std::vector<std::string>& names, int& next) {
  for (ir::OpId id : fn.block(block).ops) {
    const ir::Op& op = fn.op(id);
    for (ir::ValueId r : op.results)
      if (names[r.index].empty()) names[r.index] = std::to_string(next++);
    for (ir::BlockId region : op.regions) {
      for (ir::ValueId a : fn.block(region).args)
        if (names[a.index].empty()) names[a.index] = std::to_string(next++);
      number_block(fn, region, names, next);
    }
  }
}

}  // namespace

std::vector<std::string> printed_names(const ir::Function& fn) {
  std::vector<std::string> names(fn.num_values());
  int next = 0;
  const ir::Block& body = fn.block(fn.body());
  for (size_t i = 0; i < body.args.size(); ++i)
    names[body.args[i].index] =
        i < fn.params.size() && !fn.params[i].name.empty() ? fn.params[i].name : std::to_string(next++);
  number_block(fn, fn.body(), names, next);
  return names;
}

std::string LayoutPlan::describe() const {
  std::vector<std::string> names = printed_names(fn_);
  std::string text;
  auto line = [&](ir::ValueId v) {
    if (!fn_.type(v).is_tile() || !primary_[v.index]) return;
    text += "%" + names[v.index] + " " + ir::to_string(fn_.type(v)) + ": " + to_string(*primary_[v.index]);
    for (const Layout& e : extras_[v.index]) text += "; also " + to_string(e);
    text += "\n";
  };
  std::function<void(ir::BlockId)> walk = [&](ir::BlockId block) {
    for (ir::OpId id : fn_.block(block).ops) {
      const ir::Op& op = fn_.op(id);
      for (ir::ValueId r : op.results) line(r);
      for (ir::BlockId region : op.regions) {
        for (ir::ValueId a : fn_.block(region).args) line(a);
        walk(region);
      }
    }
  };
  walk(fn_.body());
  return text;
}

}  // namespace tegula::backends::cuda
