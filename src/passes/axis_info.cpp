// Axis-info rules, one function per op family.
//
// Facts are per dimension and use tile positions aligned to powers of two: a
// contiguity of c means the dim splits into aligned runs of c elements that
// step by 1; divisibility d is a power of two dividing the first element of
// every such run (so with c == 1, every element); a constancy of k means
// aligned runs of k equal elements. All three are powers of two because tile
// dims are.
//
// The recurring argument: if a result's runs have length s and an operand's
// runs are longer (c > s), the result's runs start inside the operand's runs at
// offsets that are multiples of s, where the operand holds start + m*s, which
// is divisible by min(d, s). That is `divisibility_at` below.
//
// Index arithmetic is assumed not to wrap, and `//` and `%` by a power of two
// assume a non-negative dividend (see docs/passes.md).
#include "passes/axis_info.h"

#include <algorithm>

#include "ir/hint.h"
#include "passes/fold_constants.h"
#include "passes/rewrite_utils.h"

namespace tegula::passes {

using ir::OpKind;

namespace {

// The divisibility of 0 (and the cap of every product of divisibilities).
constexpr int64_t kMaxDivisibility = int64_t{1} << 62;

int64_t largest_pow2_divisor(int64_t v) {
  if (v == 0) return kMaxDivisibility;
  auto bits = static_cast<uint64_t>(v);
  uint64_t lowest = bits & (~bits + 1);
  return lowest > static_cast<uint64_t>(kMaxDivisibility) ? kMaxDivisibility : static_cast<int64_t>(lowest);
}

int64_t saturating_product(int64_t a, int64_t b) { return a > kMaxDivisibility / b ? kMaxDivisibility : a * b; }

int rank_of(const ir::Type& t) { return std::max(1, t.rank()); }

AxisInfo uniform(int rank, int64_t contiguity, int64_t divisibility, int64_t constancy) {
  auto n = static_cast<size_t>(rank);
  return AxisInfo{std::vector<int64_t>(n, contiguity), std::vector<int64_t>(n, divisibility),
                  std::vector<int64_t>(n, constancy)};
}

AxisInfo unknown(const ir::Type& t) { return uniform(rank_of(t), 1, 1, 1); }

bool is_tracked(const ir::Type& t) { return t.is_pointer() || ir::is_integer(t.scalar); }

// Divisibility of `x` at the starts of result runs of length `run` along `dim`.
int64_t divisibility_at(const AxisInfo& x, size_t dim, int64_t run) {
  if (x.contiguity[dim] <= run) return x.divisibility[dim];
  return std::min(x.divisibility[dim], largest_pow2_divisor(run));
}

// A divisibility every element has: along a dim with contiguity 1 every
// element starts a run.
int64_t element_divisibility(const AxisInfo& x) {
  int64_t best = 1;
  for (size_t d = 0; d < x.contiguity.size(); ++d)
    if (x.contiguity[d] == 1) best = std::max(best, x.divisibility[d]);
  return best;
}

bool same_rank(const AxisInfo& a, const AxisInfo& b) { return a.contiguity.size() == b.contiguity.size(); }

std::string bracketed_list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

class Analyzer {
 public:
  Analyzer(const ir::Function& fn, std::vector<AxisInfo>& info, Hints hints)
      : fn_(fn), info_(info), hints_(hints) {}

  void run() {
    for (uint32_t i = 0; i < fn_.num_values(); ++i) info_.push_back(unknown(fn_.type(ir::ValueId{i})));
    const ir::Block& body = fn_.block(fn_.body());
    for (size_t i = 0; i < body.args.size() && i < fn_.params.size(); ++i) {
      const ir::Type& t = fn_.type(body.args[i]);
      if (is_tracked(t) && fn_.params[i].divisibility > 1)
        info_[body.args[i].index] = uniform(1, 1, fn_.params[i].divisibility, 1);
    }
    // Loop-carried values of `for` start at what enters the loop and narrow
    // to what the body yields until nothing changes. Facts only shrink and
    // are powers of two, so this ends; every op result is recomputed from
    // scratch each round, so the last round is consistent with the fixed point.
    seeded_.assign(fn_.num_values(), false);
    for (int round = 0;; ++round) {
      if (round > 0) fn_.walk([&](ir::OpId id) { reset_results(fn_.op(id)); });
      fn_.walk([&](ir::OpId id) { visit(fn_.op(id)); });
      if (!narrow_loop_carried_values()) break;
    }
  }

 private:
  const AxisInfo& of(ir::ValueId v) const { return info_[v.index]; }

  // The integer value of `v` when it is a constant or a splat of one.
  std::optional<int64_t> known_int(ir::ValueId v) const {
    if (const ir::Op* splat = defining_op(fn_, v, OpKind::Splat)) v = splat->operands[0];
    std::optional<ConstantValue> c = constant_value(fn_, v);
    if (!c || c->is_float()) return std::nullopt;
    return c->int_value;
  }

  // A power of two p > 0 that `v` holds everywhere.
  std::optional<int64_t> known_pow2(ir::ValueId v) const {
    std::optional<int64_t> k = known_int(v);
    if (!k || *k <= 0 || (*k & (*k - 1)) != 0) return std::nullopt;
    return *k;
  }

  void visit(const ir::Op& op) {
    if (op.kind == OpKind::For) {
      seed_induction_variable(op);
      seed_loop_carried_values(op);
    }
    if (op.results.size() != 1) return;  // multi-result ops and region ops: conservative
    ir::ValueId result = op.results[0];
    const ir::Type& type = fn_.type(result);
    if (!is_tracked(type)) return;
    if (std::optional<AxisInfo> facts = infer(op, type)) info_[result.index] = std::move(*facts);
  }

  void reset_results(const ir::Op& op) {
    for (ir::ValueId r : op.results) info_[r.index] = unknown(fn_.type(r));
  }

  // What holds of both a and b (one of them, unknown which).
  static AxisInfo meet(const AxisInfo& a, const AxisInfo& b) {
    AxisInfo m = a;
    for (size_t d = 0; d < a.contiguity.size() && d < b.contiguity.size(); ++d) {
      m.contiguity[d] = std::min(a.contiguity[d], b.contiguity[d]);
      m.divisibility[d] = std::min(divisibility_at(a, d, m.contiguity[d]), divisibility_at(b, d, m.contiguity[d]));
      m.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
    }
    return m;
  }

  // Body argument i + 1 holds the init value or a value the body yielded:
  // first the init's facts, then their meet with the yield's (narrowed after
  // each round). The results hold the same.
  void seed_loop_carried_values(const ir::Op& op) {
    if (op.regions.size() != 1) return;
    const ir::Block& body = fn_.block(op.regions[0]);
    for (size_t i = 0; i < op.results.size() && 3 + i < op.operands.size() && i + 1 < body.args.size(); ++i) {
      ir::ValueId arg = body.args[i + 1];
      if (!is_tracked(fn_.type(arg))) continue;
      const AxisInfo& init = of(op.operands[3 + i]);
      info_[arg.index] = seeded_[op.results[i].index] ? meet(of(arg), init) : init;
      info_[op.results[i].index] = of(arg);
    }
    for (size_t i = 0; i < op.results.size(); ++i) seeded_[op.results[i].index] = true;
  }

  // Meets every loop-carried fact with its yield; whether one changed.
  bool narrow_loop_carried_values() {
    bool changed = false;
    fn_.walk([&](ir::OpId id) {
      const ir::Op& op = fn_.op(id);
      if (op.kind != OpKind::For || op.regions.size() != 1) return;
      const ir::Block& body = fn_.block(op.regions[0]);
      const ir::Op& yield = fn_.op(body.ops.back());
      for (size_t i = 0; i < yield.operands.size() && i + 1 < body.args.size(); ++i) {
        ir::ValueId arg = body.args[i + 1];
        if (!is_tracked(fn_.type(arg))) continue;
        AxisInfo narrowed = meet(of(arg), of(yield.operands[i]));
        if (narrowed.contiguity == of(arg).contiguity && narrowed.divisibility == of(arg).divisibility &&
            narrowed.constancy == of(arg).constancy)
          continue;
        info_[arg.index] = std::move(narrowed);
        changed = true;
      }
    });
    return changed;
  }

  // iv = lb + k * step: divisible by both.
  void seed_induction_variable(const ir::Op& op) {
    if (op.regions.empty() || op.operands.size() < 3) return;
    const ir::Block& body = fn_.block(op.regions[0]);
    if (body.args.empty() || !is_tracked(fn_.type(body.args[0]))) return;
    int64_t div = std::min(of(op.operands[0]).divisibility[0], of(op.operands[2]).divisibility[0]);
    info_[body.args[0].index] = uniform(1, 1, div, 1);
  }

  static size_t arity(OpKind kind) {
    switch (kind) {
      case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims: case OpKind::Trans:
      case OpKind::Reshape: case OpKind::Cast: case OpKind::Bitcast:
        return 1;
      case OpKind::Add: case OpKind::Sub: case OpKind::AddPtr: case OpKind::Mul: case OpKind::Div:
      case OpKind::Rem: case OpKind::And: case OpKind::Shl: case OpKind::Shr: case OpKind::Cmp:
        return 2;
      case OpKind::Select:
        return 3;
      default:
        return 0;  // not checked here
    }
  }

  std::optional<AxisInfo> infer(const ir::Op& op, const ir::Type& type) const {
    size_t expected = arity(op.kind);
    if (expected != 0 && op.operands.size() != expected) return std::nullopt;  // malformed: the verifier's job
    switch (op.kind) {
      case OpKind::Constant: return constant(op, type);
      case OpKind::Arange: return arange(op);
      case OpKind::Splat: return splat(op, type);
      case OpKind::Broadcast: return broadcast(op, type);
      case OpKind::ExpandDims: return expand_dims(op);
      case OpKind::Trans: return trans(op);
      case OpKind::Reshape: return reshape(op, type);
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::AddPtr: return add_like(op);
      case OpKind::Mul: return mul(op);
      case OpKind::Div: return div_by_pow2(op);
      case OpKind::Rem: return rem_by_pow2(op);
      case OpKind::And: return bit_and(op);
      case OpKind::Shl: return shl(op);
      case OpKind::Shr: return shr(op);
      case OpKind::Cmp: return cmp(op);
      case OpKind::Select: return select(op);
      case OpKind::Cast:
      case OpKind::Bitcast: return int_conversion(op, type);
      case OpKind::Hint: return hint(op, type);
      default: return elementwise_constancy(op, type);
    }
  }

  // --- sources --------------------------------------------------------------------

  // constant c: divisible by c, constant everywhere.
  std::optional<AxisInfo> constant(const ir::Op& op, const ir::Type& type) const {
    std::optional<ConstantValue> c = constant_value(fn_, op.results[0]);
    if (!c || c->is_float()) return std::nullopt;
    AxisInfo facts = uniform(rank_of(type), 1, largest_pow2_divisor(c->int_value), 1);
    if (type.is_tile()) facts.constancy = type.shape;
    return facts;
  }

  // arange(start, end): one run of end - start, starting at start.
  std::optional<AxisInfo> arange(const ir::Op& op) const {
    if (!op.has_attr("start") || !op.has_attr("end")) return std::nullopt;
    int64_t start = op.int_attr("start"), end = op.int_attr("end");
    return uniform(1, std::max<int64_t>(1, end - start), largest_pow2_divisor(start), 1);
  }

  // --- shape ops ------------------------------------------------------------------

  // splat x: every element is x.
  std::optional<AxisInfo> splat(const ir::Op& op, const ir::Type& type) const {
    AxisInfo facts = uniform(rank_of(type), 1, of(op.operands[0]).divisibility[0], 1);
    facts.constancy = type.shape;
    return facts;
  }

  // broadcast: a stretched size-1 dim is constant along its new size.
  std::optional<AxisInfo> broadcast(const ir::Op& op, const ir::Type& type) const {
    const ir::Type& source = fn_.type(op.operands[0]);
    AxisInfo facts = of(op.operands[0]);
    if (source.rank() != type.rank()) return std::nullopt;
    for (size_t d = 0; d < type.shape.size(); ++d) {
      if (source.shape[d] == 1 && type.shape[d] > 1) {
        facts.contiguity[d] = 1;
        facts.constancy[d] = type.shape[d];
      }
    }
    return facts;
  }

  // expand_dims: the new size-1 dim makes every element a run start.
  std::optional<AxisInfo> expand_dims(const ir::Op& op) const {
    const AxisInfo& source = of(op.operands[0]);
    if (!op.has_attr("axis")) return std::nullopt;
    int64_t axis = op.int_attr("axis");
    if (axis < 0 || axis > static_cast<int64_t>(source.contiguity.size())) return std::nullopt;
    AxisInfo facts = source;
    auto at = [axis](std::vector<int64_t>& v) { return v.begin() + axis; };
    facts.contiguity.insert(at(facts.contiguity), 1);
    facts.divisibility.insert(at(facts.divisibility), element_divisibility(source));
    facts.constancy.insert(at(facts.constancy), 1);
    return facts;
  }

  // trans: result dim i is source dim perm[i].
  std::optional<AxisInfo> trans(const ir::Op& op) const {
    const AxisInfo& source = of(op.operands[0]);
    if (!op.has_attr("perm")) return std::nullopt;
    const std::vector<int64_t>& perm = op.ints_attr("perm");
    if (perm.size() != source.contiguity.size()) return std::nullopt;
    AxisInfo facts = source;
    for (size_t i = 0; i < perm.size(); ++i) {
      auto from = static_cast<size_t>(perm[i]);
      if (from >= perm.size()) return std::nullopt;
      facts.contiguity[i] = source.contiguity[from];
      facts.divisibility[i] = source.divisibility[from];
      facts.constancy[i] = source.constancy[from];
    }
    return facts;
  }

  // reshape of a tile that is constant everywhere stays constant everywhere;
  // anything else is not tracked.
  std::optional<AxisInfo> reshape(const ir::Op& op, const ir::Type& type) const {
    const ir::Type& source_type = fn_.type(op.operands[0]);
    const AxisInfo& source = of(op.operands[0]);
    if (source.constancy != source_type.shape) return std::nullopt;
    AxisInfo facts = uniform(rank_of(type), 1, element_divisibility(source), 1);
    facts.constancy = type.shape;
    return facts;
  }

  // --- arithmetic -----------------------------------------------------------------

  // x + y, x - y, addptr(p, off) (p + off * element size):
  // contiguous + constant is contiguous over the shorter of the two runs
  // (for sub, only with the constant on the right).
  std::optional<AxisInfo> add_like(const ir::Op& op) const {
    if (op.operands.size() != 2) return std::nullopt;
    const AxisInfo& l = of(op.operands[0]);
    const AxisInfo& r = of(op.operands[1]);
    if (!same_rank(l, r)) return std::nullopt;
    int64_t scale = 1;
    if (op.kind == OpKind::AddPtr) scale = ir::byte_size(fn_.type(op.operands[0]).scalar);
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      int64_t contig = std::min(l.contiguity[d], r.constancy[d]);
      if (op.kind != OpKind::Sub) contig = std::max(contig, std::min(r.contiguity[d], l.constancy[d]));
      facts.contiguity[d] = contig;
      facts.divisibility[d] =
          std::min(divisibility_at(l, d, contig), saturating_product(divisibility_at(r, d, contig), scale));
      facts.constancy[d] = std::min(l.constancy[d], r.constancy[d]);
    }
    return facts;
  }

  // x * y: divisibilities multiply; x * 1 is x.
  std::optional<AxisInfo> mul(const ir::Op& op) const {
    if (known_int(op.operands[1]) == 1) return of(op.operands[0]);
    if (known_int(op.operands[0]) == 1) return of(op.operands[1]);
    const AxisInfo& l = of(op.operands[0]);
    const AxisInfo& r = of(op.operands[1]);
    if (!same_rank(l, r)) return std::nullopt;
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      facts.contiguity[d] = 1;
      facts.divisibility[d] = saturating_product(divisibility_at(l, d, 1), divisibility_at(r, d, 1));
      facts.constancy[d] = std::min(l.constancy[d], r.constancy[d]);
    }
    return facts;
  }

  // x // p (p a power of two): an aligned block of p consecutive values maps
  // to one value, so blocks of min(c, d, p) are constant.
  std::optional<AxisInfo> div_by_pow2(const ir::Op& op) const {
    std::optional<int64_t> p = known_pow2(op.operands[1]);
    if (!p) return elementwise_constancy(op, fn_.type(op.results[0]));
    const AxisInfo& l = of(op.operands[0]);
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      int64_t block = l.contiguity[d] > 1 ? std::min({l.contiguity[d], l.divisibility[d], *p}) : 1;
      facts.contiguity[d] = 1;
      facts.divisibility[d] = l.contiguity[d] == 1 && l.divisibility[d] >= *p ? l.divisibility[d] / *p : 1;
      facts.constancy[d] = std::max(l.constancy[d], block);
    }
    return facts;
  }

  // x % p (p a power of two): a run starting at a multiple of min(d, p) keeps
  // counting up until it reaches p. x % n for a uniform n divisible by p:
  // the multiples of n are multiples of p, so the same runs never wrap
  // (`rows % M` with M divisible by 16 stays contiguous in runs of 16).
  std::optional<AxisInfo> rem_by_pow2(const ir::Op& op) const {
    std::optional<int64_t> p = known_pow2(op.operands[1]);
    const AxisInfo& n = of(op.operands[1]);
    const ir::Type& n_type = fn_.type(op.operands[1]);
    bool uniform_n = !n_type.is_tile();
    if (n_type.is_tile()) {
      uniform_n = true;
      for (size_t d = 0; d < n.constancy.size(); ++d) uniform_n = uniform_n && n.constancy[d] >= n_type.shape[d];
    }
    if (!p && uniform_n && n.divisibility[0] > 1) p = n.divisibility[0];
    if (!p) return elementwise_constancy(op, fn_.type(op.results[0]));
    return low_bits(of(op.operands[0]), *p);
  }

  // Facts of x mod p, p a power of two, for non-negative x (or for x & (p - 1)).
  static AxisInfo low_bits(const AxisInfo& l, int64_t p) {
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      if (l.contiguity[d] > 1) {
        int64_t run = std::min({l.contiguity[d], l.divisibility[d], p});
        facts.contiguity[d] = run;
        facts.divisibility[d] = run;
        facts.constancy[d] = 1;
      } else {
        facts.divisibility[d] = std::min(l.divisibility[d], p);
      }
    }
    return facts;
  }

  // x & (p - 1) is x mod p exactly (two's complement); otherwise x & y keeps
  // the trailing zeros of either side.
  std::optional<AxisInfo> bit_and(const ir::Op& op) const {
    std::optional<int64_t> mask = known_int(op.operands[1]);
    if (mask && *mask >= 0 && *mask < kMaxDivisibility && ((*mask + 1) & *mask) == 0)
      return low_bits(of(op.operands[0]), *mask + 1);
    const AxisInfo& l = of(op.operands[0]);
    const AxisInfo& r = of(op.operands[1]);
    if (!same_rank(l, r)) return std::nullopt;
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      facts.contiguity[d] = 1;
      facts.divisibility[d] = std::max(divisibility_at(l, d, 1), divisibility_at(r, d, 1));
      facts.constancy[d] = std::min(l.constancy[d], r.constancy[d]);
    }
    return facts;
  }

  // x << k multiplies divisibility by 2^k.
  std::optional<AxisInfo> shl(const ir::Op& op) const {
    std::optional<int64_t> k = known_int(op.operands[1]);
    if (!k || *k < 0 || *k >= 62) return elementwise_constancy(op, fn_.type(op.results[0]));
    if (*k == 0) return of(op.operands[0]);
    const AxisInfo& l = of(op.operands[0]);
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      facts.contiguity[d] = 1;
      facts.divisibility[d] = saturating_product(divisibility_at(l, d, 1), int64_t{1} << *k);
    }
    return facts;
  }

  // x >> k is floor(x / 2^k) for either sign: like // by a power of two.
  std::optional<AxisInfo> shr(const ir::Op& op) const {
    std::optional<int64_t> k = known_int(op.operands[1]);
    if (!k || *k < 0 || *k >= 62) return elementwise_constancy(op, fn_.type(op.results[0]));
    if (*k == 0) return of(op.operands[0]);
    int64_t p = int64_t{1} << *k;
    const AxisInfo& l = of(op.operands[0]);
    AxisInfo facts = l;
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      int64_t block = l.contiguity[d] > 1 ? std::min({l.contiguity[d], l.divisibility[d], p}) : 1;
      facts.contiguity[d] = 1;
      facts.divisibility[d] = l.contiguity[d] == 1 ? std::max<int64_t>(1, l.divisibility[d] / p) : 1;
      facts.constancy[d] = std::max(l.constancy[d], block);
    }
    return facts;
  }

  // x < n with x contiguous from a multiple of s and n a multiple of s: an
  // aligned block of s values is all below n or all at or above it. The same
  // holds for >= and for the mirrored n > x, n <= x. This is what makes masks
  // like `offs < n` uniform over a vector.
  std::optional<AxisInfo> cmp(const ir::Op& op) const {
    const AxisInfo& l = of(op.operands[0]);
    const AxisInfo& r = of(op.operands[1]);
    if (!same_rank(l, r)) return std::nullopt;
    std::optional<Predicate> pred = predicate_of(op);
    bool lhs_runs = pred == Predicate::Lt || pred == Predicate::Ge;
    bool rhs_runs = pred == Predicate::Gt || pred == Predicate::Le;
    AxisInfo facts = uniform(static_cast<int>(l.contiguity.size()), 1, 1, 1);
    for (size_t d = 0; d < l.contiguity.size(); ++d) {
      int64_t constancy = std::min(l.constancy[d], r.constancy[d]);
      auto block = [d](const AxisInfo& runs, const AxisInfo& bound) {
        if (runs.contiguity[d] == 1) return int64_t{1};
        return std::min({runs.contiguity[d], runs.divisibility[d], bound.divisibility[d], bound.constancy[d]});
      };
      if (lhs_runs) constancy = std::max(constancy, block(l, r));
      if (rhs_runs) constancy = std::max(constancy, block(r, l));
      facts.constancy[d] = constancy;
    }
    return facts;
  }

  // select(c, a, b): where c is constant over a run of a and b, the result is
  // one of them there.
  std::optional<AxisInfo> select(const ir::Op& op) const {
    if (op.operands.size() != 3) return std::nullopt;
    const AxisInfo& c = of(op.operands[0]);
    const AxisInfo& a = of(op.operands[1]);
    const AxisInfo& b = of(op.operands[2]);
    if (!same_rank(a, b) || !same_rank(a, c)) return std::nullopt;
    AxisInfo facts = a;
    for (size_t d = 0; d < a.contiguity.size(); ++d) {
      int64_t contig = std::min({a.contiguity[d], b.contiguity[d], c.constancy[d]});
      facts.contiguity[d] = contig;
      facts.divisibility[d] = std::min(divisibility_at(a, d, contig), divisibility_at(b, d, contig));
      facts.constancy[d] = std::min({a.constancy[d], b.constancy[d], c.constancy[d]});
    }
    return facts;
  }

  // Integer to integer conversions keep the facts (index arithmetic does not
  // wrap); conversions to i1 or through floats keep only constancy.
  std::optional<AxisInfo> int_conversion(const ir::Op& op, const ir::Type& type) const {
    const ir::Type& source = fn_.type(op.operands[0]);
    bool int_to_int = !source.is_pointer() && ir::is_integer(source.scalar) && !type.is_pointer() &&
                      ir::is_integer(type.scalar) && type.scalar != ir::Scalar::I1;
    if (int_to_int) return of(op.operands[0]);
    return elementwise_constancy(op, type);
  }

  // hint(x): what is known of x, raised to what the program promises (each
  // fact is a lower bound, so the larger of two true facts is true). Runs
  // never exceed the dimension; a scalar takes only divisibility.
  std::optional<AxisInfo> hint(const ir::Op& op, const ir::Type& type) const {
    AxisInfo facts = of(op.operands[0]);
    if (hints_ == Hints::Ignore) return facts;
    auto raise = [&](const char* name, std::vector<int64_t>& fact, bool is_run) {
      const ir::Attr* a = op.attr(name);
      const auto* promised = a ? std::get_if<std::vector<int64_t>>(a) : nullptr;
      if (promised == nullptr || promised->size() != fact.size()) return;
      if (is_run && !type.is_tile()) return;
      for (size_t d = 0; d < fact.size(); ++d) {
        int64_t value = std::min((*promised)[d], kMaxDivisibility);
        if (is_run) value = std::min(value, type.shape[d]);
        fact[d] = std::max(fact[d], value);
      }
    };
    raise(ir::kHintDivisibility, facts.divisibility, false);
    raise(ir::kHintContiguity, facts.contiguity, true);
    raise(ir::kHintConstancy, facts.constancy, true);
    return facts;
  }

  // Any elementwise op is constant where all its operands are.
  std::optional<AxisInfo> elementwise_constancy(const ir::Op& op, const ir::Type& type) const {
    if (!ir::is_elementwise(op.kind) || op.operands.empty()) return std::nullopt;
    AxisInfo facts = unknown(type);
    for (size_t d = 0; d < facts.constancy.size(); ++d) {
      int64_t constancy = type.is_tile() ? type.shape[d] : 1;
      for (ir::ValueId v : op.operands) {
        const AxisInfo& operand = of(v);
        if (d >= operand.constancy.size()) return std::nullopt;
        constancy = std::min(constancy, operand.constancy[d]);
      }
      facts.constancy[d] = constancy;
    }
    return facts;
  }

  const ir::Function& fn_;
  std::vector<AxisInfo>& info_;
  Hints hints_;
  std::vector<bool> seeded_;  // by value index: loop results whose body argument has facts
};

}  // namespace

AxisInfoAnalysis::AxisInfoAnalysis(const ir::Function& fn, Hints hints) {
  info_.reserve(fn.num_values());
  Analyzer(fn, info_, hints).run();
}

const AxisInfo& AxisInfoAnalysis::get(ir::ValueId v) const { return info_.at(v.index); }

std::string AxisInfoAnalysis::describe(ir::ValueId v) const {
  const AxisInfo& facts = get(v);
  return "contig=" + bracketed_list(facts.contiguity) + " div=" + bracketed_list(facts.divisibility) +
         " const=" + bracketed_list(facts.constancy);
}

}  // namespace tegula::passes
