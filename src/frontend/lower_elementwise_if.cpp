// An `if` on a tile condition inside the function tl.map_elementwise
// applies (Triton calls it once per element, so its `if`s are per element).
// Tegula lowers the mapped function on whole tiles; there such an `if` runs
// both branches, straight-line, and every variable they change (and the
// hidden early-return pair of lower_return.cpp) becomes
// `tl.where(cond, then, else)`. Lanes a branch did not choose compute values
// nobody reads, so the branches must be free of effects: a memory access, an
// atomic or a print there is refused where it is written.
#include <set>

#include "frontend/lowering.h"
#include "frontend/symbol_leaves.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

// The first op in `ops[first..]` (regions included) that has an effect.
const ir::Op* first_effect(const ir::Function& fn, const std::vector<ir::OpId>& ops, size_t first) {
  for (size_t i = first; i < ops.size(); ++i) {
    const ir::Op& op = fn.op(ops[i]);
    if (ir::has_regions(op.kind)) {
      for (ir::BlockId region : op.regions)
        if (const ir::Op* inner = first_effect(fn, fn.block(region).ops, 0)) return inner;
      continue;
    }
    if (!ir::is_pure(op.kind) && !ir::is_terminator(op.kind)) return &op;
  }
  return nullptr;
}

}  // namespace

Symbol Lowerer::call_jit_per_element(int32_t index, const CallArgs& args) {
  ++elementwise_depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{elementwise_depth_};
  return call_jit(index, args);
}

void Lowerer::lower_elementwise_if(const SourceLoc& loc, ir::ValueId cond, const std::function<void()>& then_branch,
                                   const std::function<void()>& else_branch) {
  const auto before = frame().vars;
  const auto before_maybe = frame().maybe_undefined;
  const ir::BlockId block = builder_.insertion_block();
  const size_t first_op = fn_.block(block).ops.size();

  ++frame().runtime_control_depth;  // a `return` in a branch sets kReturned and kResult
  then_branch();
  auto then_vars = frame().vars;
  const bool then_returned = frame().returned;
  frame().vars = before;
  frame().maybe_undefined = before_maybe;
  frame().returned = false;
  else_branch();
  auto else_vars = frame().vars;
  const bool else_returned = frame().returned;
  frame().returned = false;
  --frame().runtime_control_depth;
  builder_.set_insertion_end(block);

  if (const ir::Op* effect = first_effect(fn_, fn_.block(block).ops, first_op))
    error_at(effect->loc, Diag::UnsupportedStatement,
             std::string("`") + ir::name(effect->kind) +
                 "` under a per-element `if` of a tl.map_elementwise function: both branches run for every "
                 "element, so they cannot access memory or print",
             "load the values before tl.map_elementwise and pass them in; store its results after it");

  // A branch that returned leaves what it returned; the other one a stand-in
  // that the merged kReturned never selects.
  for (auto [side, other] : {std::pair{&then_vars, &else_vars}, std::pair{&else_vars, &then_vars}})
    if (side->count(kResult) == 0 && other->count(kResult) > 0)
      (*side)[kResult] = stand_in_for(other->at(kResult), kResult, loc);

  const std::vector<int64_t> shape = type(cond).shape;
  // `leaf` as a tile of the lanes' shape with the element type `element`.
  auto lanes = [&](const Symbol& leaf, Scalar element, const std::string& name) {
    ir::Type want = ir::Type::tile(element, shape);
    if (leaf.is_value() && !type(leaf.value).is_tile() && type(leaf.value).scalar == element)
      return broadcast_to(leaf.value, shape, loc);
    return materialize_as(leaf, want, name, loc);
  };
  std::set<std::string> names;
  for (const auto& [n, _] : then_vars) names.insert(n);
  for (const auto& [n, _] : else_vars) names.insert(n);
  for (const std::string& n : names) {
    auto t = then_vars.find(n);
    auto e = else_vars.find(n);
    if (t == then_vars.end() || e == else_vars.end()) {
      frame().maybe_undefined[n] = loc;
      frame().vars.erase(n);
      continue;
    }
    if (same_symbol(t->second, e->second)) {
      frame().vars[n] = t->second;
      continue;
    }
    if (!is_carriable(t->second) || !is_carriable(e->second) || !same_structure(t->second, e->second))
      error_at(loc, Diag::VariableChangesType,
               mismatch_subject(n) + " is " + describe(t->second) + " in one branch and " + describe(e->second) +
                   " in the other; a per-element `if` can only choose between numbers and tensors");
    std::vector<Symbol> a = leaves_of(t->second), b = leaves_of(e->second), merged;
    for (size_t k = 0; k < a.size(); ++k) {
      if (same_symbol(a[k], b[k])) {
        merged.push_back(a[k]);
        continue;
      }
      Scalar element = a[k].is_value()   ? type(a[k].value).scalar
                       : b[k].is_value() ? type(b[k].value).scalar
                                         : literal_type(a[k].constant);
      ir::ValueId x = lanes(a[k], element, n), y = lanes(b[k], element, n);
      merged.push_back(Symbol::of(create(OpKind::Select, {cond, x, y}, type(x), loc)));
    }
    size_t next = 0;
    frame().vars[n] = with_leaves(t->second, merged, &next);
    frame().maybe_undefined.erase(n);
  }
  frame().returned = then_returned && else_returned;
}

}  // namespace tegula::frontend
