// Early returns as structured control flow.
//
// The tile IR has no branch out of a region, so a `return` under a runtime
// `if` or loop becomes data: it sets the hidden variable kReturned to true and
// kResult to the returned value, and stops lowering its block. Both variables
// cross `if`s and loops like any other (lower_stmt.cpp):
//  * after a statement on whose paths kReturned is only known at run time, the
//    rest of the block runs under `if not returned`;
//  * a branch that returned yields stand-ins for the variables the other branch
//    changed, since only the other branch's values are read afterwards;
//  * a runtime `for` whose body returns carries both variables; an iteration
//    after the one that returned does nothing. A `while` condition is false
//    once kReturned is set;
//  * a @jit helper's value is kResult at its end.
// A `return` outside runtime control flow (at the top of a function, or under
// a constexpr `if`) ends the function at compile time, as before, so a
// function without early returns lowers to the same IR.
#include <optional>

#include "frontend/lowering.h"
#include "frontend/symbol_leaves.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

bool contains_return(const std::vector<ast::StmtPtr>& body) {
  for (const auto& s : body)
    if (s->kind == ast::StmtKind::Return || contains_return(s->body) || contains_return(s->orelse)) return true;
  return false;
}

namespace {

bool returns_value(const std::vector<ast::StmtPtr>& body) {
  for (const auto& s : body)
    if ((s->kind == ast::StmtKind::Return && s->value) || returns_value(s->body) || returns_value(s->orelse))
      return true;
  return false;
}

}  // namespace

std::string Lowerer::variable_title(const std::string& name) {
  if (name == kResult) return "the return value";
  if (name == kIfExpression) return "the value of `x if c else y`";
  return "`" + name + "`";
}

std::string Lowerer::mismatch_subject(const std::string& name) {
  if (name == kResult) return "Return type mismatch: " + variable_title(name);
  if (name == kIfExpression) return "Ternary expression with dynamic condition has inconsistent type: " + variable_title(name);
  return "Mismatched type for " + name + ": " + variable_title(name);
}

void Lowerer::lower_return(const ast::Stmt& s) {
  Symbol v = s.value ? eval(*s.value) : Symbol::of(ConstValue::none());
  if (frame().tensor_if_depth > 0) v.mark_assigned();
  if (frames_.size() == 1 && !v.is_none())
    error_at(s.loc, Diag::InvalidReturn, "a kernel cannot return a value", "write results to memory with tl.store");
  frame().returned = true;
  if (frame().runtime_control_depth == 0) {
    frame().result = v;
    return;
  }
  if (!v.is_none()) {
    if (!is_carriable(v))
      error_at(s.value->loc, Diag::InvalidReturn,
               "a `return` inside a runtime `if` or loop can return tensors and numbers (or tuples of them), not " +
                   describe(v),
               "return compile-time values outside runtime control flow, or under a constexpr `if`");
    frame().vars[kResult] = v;
  }
  frame().vars[kReturned] = Symbol::of(ConstValue::boolean(true));
}

bool Lowerer::may_have_returned() {
  auto it = frame().vars.find(kReturned);
  return it != frame().vars.end() && it->second.is_value();
}

ir::ValueId Lowerer::has_not_returned(const SourceLoc& loc) {
  // A tile under a per-element `if` of tl.map_elementwise (lower_elementwise_if.cpp).
  ir::ValueId returned = frame().vars.at(kReturned).value;
  const ir::Type& flag = type(returned);
  ir::ValueId no = broadcast_to(constant(ConstValue::boolean(false), ir::Type::of(Scalar::I1), loc), flag.shape, loc);
  return create(OpKind::Cmp, {returned, no}, flag, loc, {{"pred", ir::Attr{std::string("eq")}}});
}

void Lowerer::lower_unless_returned(const std::vector<ast::StmtPtr>& body, size_t first) {
  const SourceLoc& loc = body[first]->loc;
  // The empty side is the path that has returned: nothing after this reads
  // its values, so the rest may give a variable a new type (a pointer
  // argument offset into a tile of pointers after `if ...: return`).
  lower_runtime_if(
      loc, has_not_returned(loc),
      [&] {
        frame().vars[kReturned] = Symbol::of(ConstValue::boolean(false));
        lower_body(body, first);
      },
      [this] { frame().returned = true; });
}

namespace {

// A pointer parameter of the kernel, if it has one: the base of a stand-in
// pointer (the IR has no null pointer constant).
std::optional<ir::ValueId> pointer_parameter(const ir::Function& fn) {
  const std::vector<ir::ValueId>& args = fn.block(fn.body()).args;
  for (size_t i = 0; i < fn.params.size() && i < args.size(); ++i)
    if (fn.params[i].type.is_pointer() && !fn.params[i].type.is_tile()) return args[i];
  return std::nullopt;
}

}  // namespace

Symbol Lowerer::zeros_like(const Symbol& shape, const std::vector<ir::Type>& leaf_types, const std::string& name,
                           const SourceLoc& loc) {
  std::vector<Symbol> leaves = leaves_of(shape);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].is_value()) continue;  // a number is valid on every path
    const ir::Type& t = leaf_types[i];
    if (!t.is_pointer()) {
      leaves[i] = Symbol::of(materialize_as(Symbol::of(ConstValue::integer(0)), t, name, loc));
      continue;
    }
    std::optional<ir::ValueId> base = pointer_parameter(fn_);
    if (!base)
      error_at(loc, Diag::InvalidReturn,
               variable_title(name) + " is a pointer that gets its value only on some paths of this `return`",
               "assign it before the runtime `if` or loop that returns");
    ir::ValueId p = *base;
    if (!(type(p) == t.element())) p = create(OpKind::Bitcast, {p}, t.element(), loc);
    leaves[i] = Symbol::of(broadcast_to(p, t.shape, loc));
  }
  size_t next = 0;
  return with_leaves(shape, leaves, &next);
}

Symbol Lowerer::stand_in_for(const Symbol& s, const std::string& name, const SourceLoc& loc) {
  if (!is_carriable(s)) return s;
  std::vector<ir::Type> types;
  for (const Symbol& leaf : leaves_of(s)) types.push_back(leaf.is_value() ? type(leaf.value) : ir::Type{});
  return zeros_like(s, types, name, loc);
}

void Lowerer::prepare_loop_result(const ast::Stmt& loop) {
  if (probe_ && probe_->loop == &loop) return;  // this is the trial lowering
  if (frame().vars.count(kResult) || !returns_value(loop.body)) return;
  LoopResultProbe probe{&loop, std::nullopt, {}};
  LoopResultProbe* outer_probe = probe_;
  {
    const ir::Function saved_function = fn_;
    const Frame saved_frame = frame();
    const ir::BlockId block = builder_.insertion_block();
    const SourceLoc loc = builder_.loc();
    probe_ = &probe;
    try {
      lower_stmt(loop);
    } catch (...) {
      probe_ = outer_probe;
      throw;
    }
    probe_ = outer_probe;
    fn_ = saved_function;
    frame() = saved_frame;
    builder_.set_insertion_end(block);
    builder_.set_loc(loc);
  }
  if (probe.result) frame().vars[kResult] = zeros_like(*probe.result, probe.leaf_types, kResult, loop.loc);
}

void Lowerer::probe_loop_result(const ast::Stmt& loop) {
  if (!probe_ || probe_->loop != &loop) return;
  auto it = frame().vars.find(kResult);
  if (it == frame().vars.end()) return;
  probe_->result = it->second;
  probe_->leaf_types.clear();
  for (const Symbol& leaf : leaves_of(it->second))
    probe_->leaf_types.push_back(leaf.is_value() ? type(leaf.value) : ir::Type{});
}

}  // namespace tegula::frontend
