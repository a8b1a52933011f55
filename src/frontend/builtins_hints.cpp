// tl.multiple_of / max_contiguous / max_constancy and tl.assume (see
// builtins_hints.h).
//
// Facts are powers of two (axis info's unit): a promised value v becomes
// the largest power of two dividing it. For divisibility that is exactly
// what v promises; for runs, aligned runs of v elements starting at
// multiples of v contain aligned runs of that power of two.
#include "frontend/builtins_hints.h"

#include <algorithm>

#include "ir/hint.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;

namespace {

int64_t largest_pow2_divisor(int64_t v) { return v & -v; }

const char* fact_of(const std::string& hint) {
  if (hint == "multiple_of") return ir::kHintDivisibility;
  if (hint == "max_contiguous") return ir::kHintContiguity;
  return ir::kHintConstancy;
}

// `values`: an int constant or a tuple of them, each positive.
std::vector<int64_t> promised_values(Lowerer& l, const Symbol& values, const SourceLoc& loc, const std::string& hint) {
  std::vector<Symbol> items = values.kind == Symbol::Kind::Tuple ? values.elements : std::vector<Symbol>{values};
  std::vector<int64_t> out;
  for (const Symbol& item : items) {
    int64_t v = l.to_int_const(item, loc, "each value of tl." + hint);
    if (v <= 0) error_at(loc, Diag::ArgumentOutOfRange,
                         "the values of tl." + hint + " must be positive, got " + std::to_string(v));
    out.push_back(v);
  }
  return out;
}

// The integer a value holds everywhere when it is a constant (or a splat
// of one), as the front end builds them.
std::optional<int64_t> splat_constant(Lowerer& l, ir::ValueId v) {
  ir::Function& fn = l.function();
  ir::OpId def = fn.value(v).def;
  if (def.valid() && fn.op(def).kind == OpKind::Splat) {
    v = fn.op(def).operands[0];
    def = fn.value(v).def;
  }
  if (!def.valid() || fn.op(def).kind != OpKind::Constant) return std::nullopt;
  const ir::Attr* a = fn.op(def).attr("value");
  const auto* i = a ? std::get_if<int64_t>(a) : nullptr;
  if (i == nullptr) return std::nullopt;
  return *i;
}

struct Divisibility {
  ir::ValueId value;
  int64_t by;  // a power of two
};

// x % k == 0 (k > 0) and (x & (2^n - 1)) == 0, alone or joined by `and`.
void collect_divisibility(Lowerer& l, ir::ValueId cond, std::vector<Divisibility>& out) {
  ir::Function& fn = l.function();
  ir::OpId def = fn.value(cond).def;
  if (!def.valid()) return;
  const ir::Op& op = fn.op(def);
  if (op.kind == OpKind::And) {
    collect_divisibility(l, op.operands[0], out);
    collect_divisibility(l, op.operands[1], out);
    return;
  }
  const ir::Attr* pred = op.attr("pred");
  if (op.kind != OpKind::Cmp || pred == nullptr || std::get_if<std::string>(pred) == nullptr ||
      std::get<std::string>(*pred) != "eq")
    return;
  for (size_t side = 0; side < 2; ++side) {
    if (splat_constant(l, op.operands[1 - side]) != 0) continue;
    ir::OpId inner_def = fn.value(op.operands[side]).def;
    if (!inner_def.valid()) continue;
    const ir::Op& inner = fn.op(inner_def);
    std::optional<int64_t> k = inner.operands.size() == 2 ? splat_constant(l, inner.operands[1]) : std::nullopt;
    if (!k || *k <= 0) continue;
    if (inner.kind == OpKind::Rem) out.push_back({inner.operands[0], largest_pow2_divisor(*k)});
    if (inner.kind == OpKind::And && ((*k + 1) & *k) == 0) out.push_back({inner.operands[0], *k + 1});
  }
}

// x >= c, x > c and their mirrors (c <= x, c < x) for an integer scalar x
// and a constant c, alone or joined by `and`: x's least value, where it is
// at least 0.
struct LowerBoundFact {
  ir::ValueId value;
  int64_t at_least;
};
void collect_lower_bounds(Lowerer& l, ir::ValueId cond, std::vector<LowerBoundFact>& out) {
  ir::Function& fn = l.function();
  ir::OpId def = fn.value(cond).def;
  if (!def.valid()) return;
  const ir::Op& op = fn.op(def);
  if (op.kind == OpKind::And) {
    collect_lower_bounds(l, op.operands[0], out);
    collect_lower_bounds(l, op.operands[1], out);
    return;
  }
  const ir::Attr* pred = op.attr("pred");
  if (op.kind != OpKind::Cmp || pred == nullptr || std::get_if<std::string>(pred) == nullptr) return;
  const std::string& p = std::get<std::string>(*pred);
  for (size_t side = 0; side < 2; ++side) {  // x on the left: x >= c, x > c; on the right: c <= x, c < x
    bool inclusive = p == (side == 0 ? "ge" : "le"), strict = p == (side == 0 ? "gt" : "lt");
    std::optional<int64_t> c = splat_constant(l, op.operands[1 - side]);
    ir::ValueId x = op.operands[side];
    const ir::Type t = l.type(x);
    if (!c || !(inclusive || strict) || t.is_tile() || t.is_pointer() || !ir::is_integer(t.scalar)) continue;
    int64_t least = strict ? *c + 1 : *c;
    if (least >= 0 && least <= (int64_t{1} << 40)) out.push_back({x, least});
  }
}

// Whether the variables holding `value` may take a hinted copy of it here:
// outside runtime branches and loops always; inside one, when the value is
// computed in the block being lowered, so the copy lives where the value
// does (a value from outside would be replaced by a copy that exists in
// this region only).
bool hintable_here(Lowerer& l, ir::ValueId value) {
  if (l.frame().runtime_control_depth == 0) return true;
  const ir::Value& v = l.function().value(value);
  ir::BlockId here = l.builder().insertion_block();
  return v.def.valid() ? l.function().op(v.def).parent == here : v.block == here;
}

// The variables of the current function that hold `value` now hold
// `hinted`, where hintable_here allows it.
void rebind_to_hinted(Lowerer& l, ir::ValueId value, ir::ValueId hinted) {
  if (!hintable_here(l, value)) return;
  for (auto& [name, symbol] : l.frame().vars)
    if (symbol.is_value() && symbol.value == value) symbol = Symbol::of(hinted);
}

}  // namespace

Symbol lower_hint(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "values"}, c);
  const Symbol& input = a.get("input");
  std::vector<int64_t> values = promised_values(l, a.get("values"), a.loc("values"), n);
  if (input.is_const()) return input;  // a constant's facts are known exactly
  ir::ValueId x = l.to_value(input, a.loc("input"), "the input of tl." + n);
  const ir::Type t = l.type(x);
  size_t rank = t.is_tile() ? t.shape.size() : 1;
  if (values.size() != rank)
    error_at(a.loc("values"), Diag::WrongRank,
             "tl." + n + " needs one value per dimension of its input (" + std::to_string(rank) + "), got " +
                 std::to_string(values.size()),
             rank > 1 ? "give a tuple, e.g. tl." + n + "(x, (1, 16))" : "give one integer, e.g. tl." + n + "(x, 16)");
  if (!t.is_pointer() && ir::is_float(t.scalar)) return input;  // axis facts describe integers and pointers
  for (int64_t& v : values) v = largest_pow2_divisor(v);
  ir::ValueId hinted = l.create(OpKind::Hint, {x}, t, c.loc, {{fact_of(n), ir::Attr{values}}});
  // Triton's hints annotate the value itself, so `tl.multiple_of(offs, 16)`
  // as a statement promises the fact for every later use of offs: the
  // variables holding it are rebound to the hinted copy (as tl.assume does;
  // inside runtime control flow only for a value computed there).
  rebind_to_hinted(l, x, hinted);
  return Symbol::of(hinted);
}

// Recognized conditions rebind the variables of the current function that
// hold the value to a hinted copy, so later uses carry the fact; inside a
// runtime branch or loop only for a value computed there (hintable_here).
// Other conditions are accepted and have no effect (like Triton's, they are
// not checked at run time).
Symbol lower_assume(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"cond"}, c);
  const Symbol& cond = a.get("cond");
  bool truth = false;
  if (l.truth_constant(cond, a.loc("cond"), &truth)) {
    if (!truth) error_at(a.loc("cond"), Diag::AssertionFailsAtCompileTime,
                         "tl.assume's condition is false at compile time");
    return Symbol::of(ConstValue::none());
  }
  ir::ValueId v = l.to_value(cond, a.loc("cond"), "the condition of tl.assume");
  // One hint per value, holding everything the condition says of it (several facts about one value, as
  // in `(x % 16 == 0) & (x >= 0)`, must reach the one copy its variables are rebound to).
  struct Facts {
    ir::ValueId value;
    int64_t divisibility = 0, at_least = -1;
  };
  std::vector<Facts> facts;
  auto facts_of = [&](ir::ValueId x) -> Facts& {
    for (Facts& f : facts)
      if (f.value == x) return f;
    return facts.emplace_back(Facts{x});
  };
  std::vector<Divisibility> divisible;
  collect_divisibility(l, v, divisible);
  for (const Divisibility& d : divisible)
    if (!l.type(d.value).is_pointer()) facts_of(d.value).divisibility = std::max(facts_of(d.value).divisibility, d.by);
  std::vector<LowerBoundFact> bounds;
  collect_lower_bounds(l, v, bounds);
  for (const LowerBoundFact& b : bounds) facts_of(b.value).at_least = std::max(facts_of(b.value).at_least, b.at_least);
  for (const Facts& f : facts) {
    if (!hintable_here(l, f.value)) continue;
    const ir::Type t = l.type(f.value);
    std::vector<ir::NamedAttr> attrs;
    if (f.divisibility > 0)
      attrs.push_back({ir::kHintDivisibility, ir::Attr{std::vector<int64_t>(t.is_tile() ? t.shape.size() : 1, f.divisibility)}});
    if (f.at_least >= 0) attrs.push_back({ir::kHintAtLeast, ir::Attr{std::vector<int64_t>{f.at_least}}});
    rebind_to_hinted(l, f.value, l.create(OpKind::Hint, {f.value}, t, c.loc, std::move(attrs)));
  }
  return Symbol::of(ConstValue::none());
}

}  // namespace tegula::frontend
