#include "passes/work_count.h"

#include <cassert>
#include <set>
#include <utility>

#include "passes/fold_constants.h"
#include "passes/pointer_provenance.h"

namespace tegula::passes {
namespace {

using ir::OpKind;

// An evaluated integer value: row-major elements of a tile, one for a scalar.
using Elements = std::vector<int64_t>;

struct OverBudget {};  // thrown when tile evaluation passes its budget

bool is_index_type(const ir::Type& t) { return !t.is_pointer() && ir::is_integer(t.scalar); }
bool is_float_type(const ir::Type& t) { return !t.is_pointer() && ir::is_float(t.scalar); }

// Wraps `v` to the bits of `s` (sign- or zero-extended back to 64 bits); i1 is 0 or 1.
int64_t wrap(int64_t v, ir::Scalar s) {
  int bits = ir::bit_width(s);
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (ir::is_signed(s) && (u >> (bits - 1)) & 1) u |= ~mask;
  return static_cast<int64_t>(u);
}

// Elementwise float ops that are one ordinary arithmetic instruction; every
// other float op (exp, sqrt, tanh, the libdevice functions, ...) counts as
// transcendental.
bool is_plain_arithmetic(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
    case OpKind::Min: case OpKind::Max: case OpKind::Neg: case OpKind::Abs: case OpKind::Fma:
    case OpKind::Cmp: case OpKind::Floor: case OpKind::Ceil: case OpKind::Rint: case OpKind::Round:
    case OpKind::Trunc: case OpKind::Copysign: case OpKind::AddRound: case OpKind::SubRound:
    case OpKind::MulRound: case OpKind::DivRound: case OpKind::FmaRound: case OpKind::Fdim:
    case OpKind::Saturatef:
      return true;
    default:
      return false;
  }
}

// Elementwise ops that move or reinterpret values without computing.
bool is_data_movement(OpKind k) {
  return k == OpKind::Cast || k == OpKind::Bitcast || k == OpKind::Hint || k == OpKind::Select ||
         k == OpKind::AddPtr;
}

// Operations per element of an elementwise op on floats (0: not counted).
int ops_per_element(const ir::Function& fn, const ir::Op& op) {
  if (!ir::is_elementwise(op.kind) || is_data_movement(op.kind) || op.operands.empty()) return 0;
  if (!is_float_type(fn.type(op.operands[0]).element())) return 0;
  return op.kind == OpKind::Fma || op.kind == OpKind::FmaRound ? 2 : 1;
}

class Counter {
 public:
  Counter(const ir::Function& fn, const LaunchValues& launch, bool evaluate_tiles, int64_t tile_budget)
      : fn_(fn), launch_(launch), provenance_(fn), evaluate_tiles_(evaluate_tiles), budget_(tile_budget),
        values_(fn.num_values()) {
    count_.params.resize(fn.params.size());
  }

  WorkCount run() {
    const ir::Block& body = fn_.block(fn_.body());
    for (int64_t z = 0; z < launch_.grid[2]; ++z)
      for (int64_t y = 0; y < launch_.grid[1]; ++y)
        for (int64_t x = 0; x < launch_.grid[0]; ++x) {
          pid_ = {x, y, z};
          for (size_t i = 0; i < body.args.size() && i < launch_.scalars.size(); ++i)
            set(body.args[i], launch_.scalars[i] ? std::optional<Elements>(Elements{*launch_.scalars[i]})
                                                 : std::nullopt);
          run_block(fn_.body());
        }
    return std::move(count_);
  }

 private:
  const ir::Function& fn_;
  const LaunchValues& launch_;
  PointerProvenance provenance_;
  bool evaluate_tiles_;
  int64_t budget_;
  std::vector<std::optional<Elements>> values_;
  std::array<int64_t, 3> pid_{};
  WorkCount count_;
  std::set<std::string> noted_;

  // --- values -----------------------------------------------------------------

  void set(ir::ValueId v, std::optional<Elements> e) { values_[v.index] = std::move(e); }
  const std::optional<Elements>& get(ir::ValueId v) const { return values_[v.index]; }
  std::optional<int64_t> scalar(ir::ValueId v) const {
    const auto& e = get(v);
    if (!e || e->size() != 1) return std::nullopt;
    return (*e)[0];
  }

  void note(const ir::Op& op, const std::string& what) {
    std::string where;
    if (op.loc.valid()) {
      std::string file = op.loc.file < static_cast<int32_t>(fn_.files.size()) ? fn_.files[op.loc.file] : "<ir>";
      where = file + ":" + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col) + ": ";
    }
    std::string text = where + ir::name(op.kind) + ": " + what;
    if (noted_.insert(text).second) count_.notes.push_back(std::move(text));
  }

  // --- walking ----------------------------------------------------------------

  void run_block(ir::BlockId b) {
    for (ir::OpId id : fn_.block(b).ops) {
      const ir::Op& op = fn_.op(id);
      if (!op.erased) run_op(op);
    }
  }

  std::vector<std::optional<Elements>> terminator_values(ir::BlockId b, size_t skip = 0) const {
    const ir::Op& term = fn_.op(fn_.block(b).ops.back());
    std::vector<std::optional<Elements>> out;
    for (size_t i = skip; i < term.operands.size(); ++i) out.push_back(get(term.operands[i]));
    return out;
  }

  void assign(const std::vector<ir::ValueId>& to, const std::vector<std::optional<Elements>>& from) {
    for (size_t i = 0; i < to.size(); ++i) set(to[i], i < from.size() ? from[i] : std::nullopt);
  }

  void forget(const std::vector<ir::ValueId>& values) {
    for (ir::ValueId v : values) set(v, std::nullopt);
  }

  void run_op(const ir::Op& op) {
    count(op);
    switch (op.kind) {
      case OpKind::For: return run_for(op);
      case OpKind::If: return run_if(op);
      case OpKind::While: return run_while(op);
      default: break;
    }
    for (ir::ValueId r : op.results) set(r, std::nullopt);
    if (op.results.size() == 1 && is_index_type(fn_.type(op.results[0]))) {
      const ir::Type& type = fn_.type(op.results[0]);
      if (type.is_tile() && !evaluate_tiles_) return;
      if (type.is_tile()) {
        budget_ -= type.numel();
        if (budget_ < 0) throw OverBudget{};
      }
      set(op.results[0], evaluate(op, type));
    }
  }

  void run_for(const ir::Op& op) {
    const ir::Block& body = fn_.block(op.regions[0]);
    std::optional<int64_t> lb = scalar(op.operands[0]), ub = scalar(op.operands[1]), step = scalar(op.operands[2]);
    if (!lb || !ub || !step) {
      count_.known = false;
      note(op, "the trip count depends on values the launch does not give: its body is not counted");
      return forget(op.results);
    }
    std::vector<std::optional<Elements>> iters;
    for (size_t i = 3; i < op.operands.size(); ++i) iters.push_back(get(op.operands[i]));
    // docs/ir.md: iv = lb + k*step while iv < ub (step > 0) or iv > ub (step < 0); step 0 runs nothing.
    int64_t trips = 0;
    if (*step > 0 && *ub > *lb) trips = (*ub - *lb + *step - 1) / *step;
    if (*step < 0 && *lb > *ub) trips = (*lb - *ub - *step - 1) / -*step;
    for (int64_t t = 0; t < trips; ++t) {
      set(body.args[0], Elements{*lb + t * *step});
      assign({body.args.begin() + 1, body.args.end()}, iters);
      run_block(op.regions[0]);
      iters = terminator_values(op.regions[0]);
    }
    assign(op.results, iters);
  }

  void run_if(const ir::Op& op) {
    std::optional<int64_t> cond = scalar(op.operands[0]);
    if (cond) {
      ir::BlockId taken = op.regions[*cond ? 0 : 1];
      run_block(taken);
      return assign(op.results, terminator_values(taken));
    }
    note(op, "the condition depends on loaded data or on an argument the launch does not give: both branches "
             "counted (an upper bound)");
    run_block(op.regions[0]);
    run_block(op.regions[1]);
    forget(op.results);
  }

  void run_while(const ir::Op& op) {
    constexpr int kMaxTrips = 1 << 20;
    const ir::Block& before = fn_.block(op.regions[0]);
    const ir::Block& after = fn_.block(op.regions[1]);
    std::vector<std::optional<Elements>> current;
    for (ir::ValueId v : op.operands) current.push_back(get(v));
    for (int trip = 0; trip <= kMaxTrips; ++trip) {
      assign(before.args, current);
      run_block(op.regions[0]);
      const ir::Op& condition = fn_.op(before.ops.back());
      std::optional<int64_t> cond = scalar(condition.operands[0]);
      std::vector<std::optional<Elements>> passed = terminator_values(op.regions[0], 1);
      if (!cond || trip == kMaxTrips) {
        count_.known = false;
        note(op, "the loop's end depends on values the launch does not give: its later trips are not counted");
        return forget(op.results);
      }
      if (!*cond) return assign(op.results, passed);
      assign(after.args, passed);
      run_block(op.regions[1]);
      current = terminator_values(op.regions[1]);
    }
  }

  // --- counting -----------------------------------------------------------------

  // Elements of an access of `numel` lanes under `mask` (invalid: none).
  int64_t active(const ir::Op& op, ir::ValueId mask, int64_t numel) {
    if (!mask.valid()) return numel;
    const std::optional<Elements>& m = get(mask);
    if (!m) {
      note(op, evaluate_tiles_ ? "the mask depends on loaded data or on an argument the launch does not give: whole "
                                 "tiles counted (an upper bound)"
                               : "the launch is too large to evaluate every mask: whole tiles counted");
      return numel;
    }
    if (m->size() == 1) return (*m)[0] ? numel : 0;
    int64_t n = 0;
    for (int64_t bit : *m) n += bit != 0;
    return n;
  }

  void moved(ir::ValueId pointer, int64_t loaded, int64_t stored) {
    count_.loaded_bytes += loaded;
    count_.stored_bytes += stored;
    const std::vector<int32_t>& sources = provenance_.sources(pointer);
    if (provenance_.unknown(pointer) || sources.size() != 1) return;
    ParamTraffic& p = count_.params[static_cast<size_t>(sources[0])];
    p.loaded_bytes += loaded;
    p.stored_bytes += stored;
  }

  // Float operations of a combiner region, once per combination.
  int64_t combiner_ops(ir::BlockId b, int64_t* transcendental) const {
    int64_t plain = 0;
    fn_.walk_block(b, [&](ir::OpId id) {
      const ir::Op& op = fn_.op(id);
      int n = ops_per_element(fn_, op);
      if (is_plain_arithmetic(op.kind)) plain += n; else *transcendental += n;
    });
    return plain;
  }

  void count(const ir::Op& op) {
    auto lanes = [&](ir::ValueId v) { return fn_.type(v).numel(); };
    auto bytes = [&](ir::ValueId pointer) { return ir::byte_size(fn_.type(pointer).scalar); };
    auto operand = [&](size_t i) { return i < op.operands.size() ? op.operands[i] : ir::ValueId{}; };
    switch (op.kind) {
      case OpKind::Load: {
        ir::ValueId p = op.operands[0];
        return moved(p, active(op, operand(1), lanes(p)) * bytes(p), 0);
      }
      case OpKind::Store: {
        ir::ValueId p = op.operands[0];
        return moved(p, 0, active(op, operand(2), lanes(p)) * bytes(p));
      }
      case OpKind::AtomicRmw: case OpKind::AtomicCas: {
        ir::ValueId p = op.operands[0];
        int64_t b = active(op, op.kind == OpKind::AtomicRmw ? operand(2) : ir::ValueId{}, lanes(p)) * bytes(p);
        return moved(p, b, b);
      }
      case OpKind::DescLoad: {
        ir::ValueId r = op.results[0];
        note(op, "a tensor descriptor's block counts whole, padding included");
        return moved(op.operands[0], lanes(r) * ir::byte_size(fn_.type(r).scalar), 0);
      }
      case OpKind::DescStore: {
        ir::ValueId v = op.operands.back();
        note(op, "a tensor descriptor's block counts whole, padding included");
        return moved(op.operands[0], 0, lanes(v) * ir::byte_size(fn_.type(v).scalar));
      }
      case OpKind::DescAtomic: {
        ir::ValueId v = op.operands.back();
        note(op, "a tensor descriptor's block counts whole, padding included");
        int64_t b = lanes(v) * ir::byte_size(fn_.type(v).scalar);
        return moved(op.operands[0], b, b);
      }
      case OpKind::Dot: {
        const ir::Type& a = fn_.type(op.operands[0]);
        count_.dot_ops += 2 * lanes(op.results[0]) * a.shape.back();
        return;
      }
      case OpKind::Reduce: case OpKind::Scan: {
        int64_t transcendental = 0;
        int64_t plain = combiner_ops(op.regions[0], &transcendental);
        count_.arithmetic_ops += plain * lanes(op.operands[0]);
        count_.transcendental_ops += transcendental * lanes(op.operands[0]);
        return;
      }
      default: break;
    }
    int n = ops_per_element(fn_, op);
    if (n == 0) return;
    int64_t ops = n * lanes(op.results[0]);
    if (is_plain_arithmetic(op.kind)) count_.arithmetic_ops += ops; else count_.transcendental_ops += ops;
  }

  // --- evaluation of integer values --------------------------------------------------

  // The value of `op`'s integer result of `type`, or nullopt when an operand
  // is not known or the op is not one evaluated here.
  std::optional<Elements> evaluate(const ir::Op& op, const ir::Type& type) {
    const int64_t numel = type.numel();
    switch (op.kind) {
      case OpKind::Constant: {
        const ir::Attr* value = op.attr("value");
        if (!value || !std::holds_alternative<int64_t>(*value)) return std::nullopt;
        return Elements(numel, wrap(std::get<int64_t>(*value), type.scalar));
      }
      case OpKind::ProgramId: return Elements{pid_[op.int_attr("axis")]};
      case OpKind::NumPrograms: return Elements{launch_.grid[op.int_attr("axis")]};
      case OpKind::Arange: {
        Elements e(numel);
        for (int64_t i = 0; i < numel; ++i) e[i] = op.int_attr("start") + i;
        return e;
      }
      default: break;
    }
    std::vector<const Elements*> in;
    for (ir::ValueId v : op.operands) {
      const std::optional<Elements>& e = get(v);
      if (!e) return std::nullopt;
      in.push_back(&*e);
    }
    switch (op.kind) {
      case OpKind::Splat: return Elements(numel, (*in[0])[0]);
      case OpKind::ExpandDims: case OpKind::Reshape: case OpKind::Hint: return *in[0];
      case OpKind::Broadcast: return broadcast(*in[0], fn_.type(op.operands[0]).shape, type.shape);
      case OpKind::Trans: return transpose(*in[0], fn_.type(op.operands[0]).shape, op.ints_attr("perm"));
      case OpKind::Reduce: return reduce(op, type, *in[0]);
      default: break;
    }
    if (!ir::is_elementwise(op.kind)) return std::nullopt;
    for (ir::ValueId v : op.operands)
      if (fn_.type(v).is_pointer() || ir::is_float(fn_.type(v).scalar)) return std::nullopt;
    Elements out(numel);
    const ir::Scalar operand_scalar = fn_.type(op.operands[0]).scalar;
    const std::optional<Predicate> pred = op.kind == OpKind::Cmp ? predicate_of(op) : std::nullopt;
    for (int64_t i = 0; i < numel; ++i) {
      std::optional<int64_t> r = element(op, pred, operand_scalar, type.scalar, in, static_cast<size_t>(i));
      if (!r) return std::nullopt;
      out[i] = *r;
    }
    return out;
  }

  static std::optional<int64_t> element(const ir::Op& op, std::optional<Predicate> p, ir::Scalar operand,
                                        ir::Scalar result,
                                        const std::vector<const Elements*>& in, size_t i) {
    const int64_t a = (*in[0])[in[0]->size() == 1 ? 0 : i];
    const int64_t b = in.size() > 1 ? (*in[1])[in[1]->size() == 1 ? 0 : i] : 0;
    const bool is_signed = ir::is_signed(operand);
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    int64_t r = 0;
    switch (op.kind) {
      case OpKind::Add: r = static_cast<int64_t>(ua + ub); break;
      case OpKind::Sub: r = static_cast<int64_t>(ua - ub); break;
      case OpKind::Mul: r = static_cast<int64_t>(ua * ub); break;
      case OpKind::Div: case OpKind::Rem:
        if (b == 0 || (is_signed && b == -1)) return std::nullopt;
        if (op.kind == OpKind::Div) r = is_signed ? a / b : static_cast<int64_t>(ua / ub);
        else r = is_signed ? a % b : static_cast<int64_t>(ua % ub);
        break;
      case OpKind::And: r = a & b; break;
      case OpKind::Or: r = a | b; break;
      case OpKind::Xor: r = a ^ b; break;
      case OpKind::Shl: case OpKind::Shr:
        if (b < 0 || b >= ir::bit_width(operand)) return std::nullopt;
        if (op.kind == OpKind::Shl) r = static_cast<int64_t>(ua << b);
        else r = is_signed ? a >> b : static_cast<int64_t>(ua >> b);
        break;
      case OpKind::Min: r = (is_signed ? a < b : ua < ub) ? a : b; break;
      case OpKind::Max: r = (is_signed ? a > b : ua > ub) ? a : b; break;
      case OpKind::Neg: r = static_cast<int64_t>(0 - ua); break;
      case OpKind::Not: r = ~a; break;
      case OpKind::Abs: r = a < 0 ? static_cast<int64_t>(0 - ua) : a; break;
      case OpKind::Cmp: {
        if (!p) return std::nullopt;
        bool lt = is_signed ? a < b : ua < ub;
        switch (*p) {
          case Predicate::Eq: r = a == b; break;
          case Predicate::Ne: r = a != b; break;
          case Predicate::Lt: r = lt; break;
          case Predicate::Le: r = lt || a == b; break;
          case Predicate::Gt: r = !lt && a != b; break;
          case Predicate::Ge: r = !lt; break;
        }
        return r;
      }
      case OpKind::Select: {
        const int64_t c = (*in[2])[in[2]->size() == 1 ? 0 : i];
        r = a ? b : c;
        break;
      }
      case OpKind::Cast:
        if (result == ir::Scalar::I1) return a != 0;
        r = a;
        break;
      default: return std::nullopt;
    }
    return wrap(r, result);
  }

  // An integer reduction whose combiner is one associative op of its two
  // arguments (add, mul, min, max, and, or, xor): what a loop condition
  // such as `tl.sum(t) > BLOCK` needs; nullopt for any other.
  std::optional<Elements> reduce(const ir::Op& op, const ir::Type& type, const Elements& in) const {
    const ir::Block& combiner = fn_.block(op.regions[0]);
    if (op.operands.size() != 1 || combiner.ops.size() != 2 || combiner.args.size() != 2) return std::nullopt;
    const ir::Op& combine = fn_.op(combiner.ops[0]);
    const ir::Op& yield = fn_.op(combiner.ops[1]);
    bool on_args = combine.operands.size() == 2 &&
                   ((combine.operands[0] == combiner.args[0] && combine.operands[1] == combiner.args[1]) ||
                    (combine.operands[0] == combiner.args[1] && combine.operands[1] == combiner.args[0]));
    if (!on_args || yield.operands.size() != 1 || yield.operands[0] != combine.results[0]) return std::nullopt;
    OpKind k = combine.kind;
    if (k != OpKind::Add && k != OpKind::Mul && k != OpKind::Min && k != OpKind::Max && k != OpKind::And &&
        k != OpKind::Or && k != OpKind::Xor)
      return std::nullopt;
    const std::vector<int64_t>& shape = fn_.type(op.operands[0]).shape;
    int64_t axis = op.int_attr("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) return std::nullopt;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t n = shape[axis];
    if (outer * inner != type.numel()) return std::nullopt;
    const ir::Scalar scalar = fn_.type(op.operands[0]).scalar;
    Elements out(outer * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Elements acc{in[o * n * inner + i]};
        for (int64_t j = 1; j < n; ++j) {
          Elements next{in[(o * n + j) * inner + i]};
          std::optional<int64_t> r = element(combine, std::nullopt, scalar, scalar, {&acc, &next}, 0);
          if (!r) return std::nullopt;
          acc[0] = *r;
        }
        out[o * inner + i] = acc[0];
      }
    return out;
  }

  static std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
    return s;
  }

  static Elements broadcast(const Elements& in, const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
    std::vector<int64_t> in_strides = strides_of(from), out_strides = strides_of(to);
    int64_t numel = 1;
    for (int64_t d : to) numel *= d;
    Elements out(numel);
    for (int64_t i = 0; i < numel; ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < to.size(); ++d)
        if (from[d] != 1) src += (i / out_strides[d] % to[d]) * in_strides[d];
      out[i] = in[src];
    }
    return out;
  }

  // Result dimension k is input dimension perm[k].
  static Elements transpose(const Elements& in, const std::vector<int64_t>& from, const std::vector<int64_t>& perm) {
    std::vector<int64_t> to(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) to[k] = from[perm[k]];
    std::vector<int64_t> in_strides = strides_of(from), out_strides = strides_of(to);
    Elements out(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t src = 0;
      for (size_t k = 0; k < perm.size(); ++k)
        src += (static_cast<int64_t>(i) / out_strides[k] % to[k]) * in_strides[perm[k]];
      out[i] = in[src];
    }
    return out;
  }
};

}  // namespace

WorkCount count_work(const ir::Function& fn, const LaunchValues& launch, int64_t tile_budget) {
  try {
    return Counter(fn, launch, true, tile_budget).run();
  } catch (const OverBudget&) {
    return Counter(fn, launch, false, tile_budget).run();
  }
}

std::string to_string(const WorkCount& count, const ir::Function& fn) {
  std::string out;
  auto line = [&](const std::string& name, int64_t value) { out += name + " " + std::to_string(value) + "\n"; };
  line("loaded_bytes", count.loaded_bytes);
  line("stored_bytes", count.stored_bytes);
  for (size_t i = 0; i < count.params.size() && i < fn.params.size(); ++i) {
    const ParamTraffic& p = count.params[i];
    if (p.loaded_bytes || p.stored_bytes)
      out += "  " + fn.params[i].name + " loaded " + std::to_string(p.loaded_bytes) + " stored " +
             std::to_string(p.stored_bytes) + "\n";
  }
  line("dot_ops", count.dot_ops);
  line("arithmetic_ops", count.arithmetic_ops);
  line("transcendental_ops", count.transcendental_ops);
  out += std::string("known ") + (count.known ? "yes" : "no") + "\n";
  for (const std::string& n : count.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace tegula::passes
