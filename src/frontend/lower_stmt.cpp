// Statements and structured control flow.
//
// Python variables are tracked in the frame as symbols; SSA values cross
// regions explicitly:
//  * a runtime `if` yields every variable that either branch changed;
//  * a runtime `for`/`while` carries every variable that its body assigns and
//    that existed before the loop (found by a syntactic scan of the body);
//  * tuples, block pointers and tensor descriptors cross both as their leaves
//    (symbol_leaves.h): one result or iteration value per IR value they hold;
//  * `if` on a constant condition and `tl.static_range` loops are resolved at
//    compile time (only the taken branch is lowered; static loops unrolled).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "frontend/builtins.h"
#include "frontend/builtins_tile.h"
#include "frontend/lowering.h"
#include "frontend/symbol_leaves.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

constexpr int64_t kMaxStaticTrips = 4096;
// Nested static loops multiply: the kernel as a whole has a budget too (the
// loops' bodies are lowered once per iteration, however little they emit).
constexpr int64_t kMaxKernelStaticTrips = int64_t{1} << 20;

// Why the number `c`, assigned on one path, cannot become a value of type
// `to` (another path's) without changing: "" when it can. Materialized as
// it was, 1.5 became 1 in an i32, 300 became 44 in an i8, 5 a pointer.
std::string changes_as(const ConstValue& c, const ir::Type& to) {
  if (to.is_pointer()) return "a number cannot stand for a pointer";
  double d = c.as_double();
  if (ir::is_float(to.scalar)) {
    double max = to.scalar == Scalar::F16    ? 65504.0
                 : to.scalar == Scalar::F32  ? static_cast<double>(std::numeric_limits<float>::max())
                 : to.scalar == Scalar::BF16 ? 3.3895313892515355e38
                                             : std::numeric_limits<double>::infinity();
    return std::isfinite(d) && std::fabs(d) > max ? "it does not fit in " + triton_name(to.scalar) : "";
  }
  if (c.kind == ConstValue::Kind::Float) {
    if (!std::isfinite(d) || d != std::trunc(d)) return "it is not an integer";
    if (std::fabs(d) >= 0x1p63) return "it does not fit in " + triton_name(to.scalar);
    ConstValue whole = ConstValue::integer(static_cast<int64_t>(d));
    return changes_as(whole, to);
  }
  if (to.scalar == Scalar::I1)
    return c.is_unsigned || (c.i != 0 && c.i != 1) ? "an int1 holds only 0 and 1 (False and True)" : "";
  std::string problem = literal_fit_problem(c, to.scalar);
  return problem.empty() ? "" : "it does not fit in " + triton_name(to.scalar);
}

// The type of a variable that holds the number `a` on one path and `b` on
// the other: one that holds both unchanged (not the first's, which made
// `v = 1` / `v = 1.5` an i32 holding 1). nullopt when none does.
std::optional<Scalar> type_holding(const ConstValue& a, const ConstValue& b) {
  Scalar ta = literal_type(a), tb = literal_type(b);
  if (ir::is_float(ta) || ir::is_float(tb)) {
    Scalar wider = ta == Scalar::F64 || tb == Scalar::F64 ? Scalar::F64 : Scalar::F32;
    if (changes_as(a, ir::Type::of(wider)).empty() && changes_as(b, ir::Type::of(wider)).empty()) return wider;
    return Scalar::F64;
  }
  if (ta == Scalar::I1 && tb == Scalar::I1) return Scalar::I1;
  for (Scalar t : {Scalar::I32, Scalar::I64, Scalar::U64})
    if (changes_as(a, ir::Type::of(t)).empty() && changes_as(b, ir::Type::of(t)).empty()) return t;
  return std::nullopt;  // a negative number and one above INT64_MAX
}

void collect_target_names(const ast::Expr& target, std::set<std::string>& out) {
  if (target.kind == ast::ExprKind::Name) out.insert(target.name);
  if (target.kind == ast::ExprKind::Tuple || target.kind == ast::ExprKind::List)
    for (const auto& c : target.children) collect_target_names(*c, out);
}

// The targets of the `:=` in `e` (not those inside a lambda, which are the lambda's own).
void collect_named_expr_targets(const ast::Expr& e, std::set<std::string>& out) {
  if (e.kind == ast::ExprKind::Lambda) return;
  if (e.kind == ast::ExprKind::NamedExpr) out.insert(e.children[0]->name);
  for (const ast::ExprPtr& c : e.children)
    if (c) collect_named_expr_targets(*c, out);
  for (const ast::Keyword& k : e.keywords)
    if (k.value) collect_named_expr_targets(*k.value, out);
}

// Names a statement list may assign, including inside nested blocks.
void collect_assigned(const std::vector<ast::StmtPtr>& body, std::set<std::string>& out) {
  for (const auto& s : body) {
    for (const ast::Expr* e : {s->value.get(), s->test.get(), s->msg.get()})
      if (e) collect_named_expr_targets(*e, out);
    for (const auto& t : s->targets) collect_named_expr_targets(*t, out);
    switch (s->kind) {
      case ast::StmtKind::Assign:
      case ast::StmtKind::AugAssign:
      case ast::StmtKind::AnnAssign:
      case ast::StmtKind::For:
        for (const auto& t : s->targets) collect_target_names(*t, out);
        break;
      default: break;
    }
    collect_assigned(s->body, out);
    collect_assigned(s->orelse, out);
  }
}

// Whether `a` and `b` are carriable with leaves of the same types (a number
// leaf matches only the same number).
bool same_leaf_types(const ir::Function& fn, const Symbol& a, const Symbol& b) {
  if (!is_carriable(a) || !is_carriable(b) || !same_structure(a, b)) return false;
  std::vector<Symbol> la = leaves_of(a), lb = leaves_of(b);
  for (size_t i = 0; i < la.size(); ++i) {
    if (la[i].is_value() != lb[i].is_value()) return false;
    if (la[i].is_value() ? !(fn.type(la[i].value) == fn.type(lb[i].value)) : !same_symbol(la[i], lb[i])) return false;
  }
  return true;
}

// Whether same_symbol tells a value of `s`'s kind from another one: for those the loop body may keep an
// uncarriable value unchanged (checked after lowering it), for the rest an assignment in the body is an error.
bool comparable(const Symbol& s) {
  switch (s.kind) {
    case Symbol::Kind::Const:
    case Symbol::Kind::JitFunction:
    case Symbol::Kind::HostModule:
    case Symbol::Kind::Module:
    case Symbol::Kind::Builtin:
    case Symbol::Kind::Opaque:
    case Symbol::Kind::NamedTupleType:
    case Symbol::Kind::AggregateType:
    case Symbol::Kind::HostFunction:
    case Symbol::Kind::Lambda:
    case Symbol::Kind::Value: return true;
    case Symbol::Kind::Tuple:
    case Symbol::Kind::Aggregate:
      for (const Symbol& e : s.elements)
        if (!comparable(e)) return false;
      return true;
    default: return false;
  }
}

}  // namespace

void Lowerer::lower_body(const std::vector<ast::StmtPtr>& body, size_t first) {
  if (first >= body.size()) return;
  // Bodies nest across inlined @jit functions and early returns, which the
  // parser's per-function bound does not see: 20 helpers each ending an
  // `elif` chain of 190 in a call to the next overflowed the stack here,
  // and 1,200 flat `if c: return` lines the IR's region depth.
  if (block_depth_ >= kMaxBlockDepth)
    error_at(body[first]->loc, Diag::NestedTooDeeply,
             "blocks nest more than " + std::to_string(kMaxBlockDepth) +
                 " deep here, counting those of the @jit functions that call this one (each `elif`, and the "
                 "rest of a function after an `if` that may return, nests one more)",
             "split a long `elif` chain into a lookup (a tuple indexed by a constexpr, tl.where), and nest "
             "fewer helpers");
  check_stack_room(body[first]->loc);
  ++block_depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{block_depth_};
  for (size_t i = first; i < body.size(); ++i) {
    if (frame().returned) return;
    if (may_have_returned()) {
      lower_unless_returned(body, i);
      return;
    }
    const ast::Stmt& s = *body[i];
    at_source(s.loc, [&] { lower_stmt(s); });  // an internal error names the statement
  }
}

void Lowerer::check_stack_room(const SourceLoc& loc) const {
  if (stack_room_.low())
    error_at(loc, Diag::NestedTooDeeply,
             "the code nests too deeply here for the compiler's stack: the expressions, calls and blocks of "
             "the @jit functions inlined into one another add up",
             "nest fewer calls inside one another, or split deep expressions into several statements");
}

void bind_target(Lowerer& l, const ast::Expr& target, const Symbol& value) {
  switch (target.kind) {
    case ast::ExprKind::Name: {
      Symbol bound = value;
      // A name annotated `x: tl.constexpr` earlier stays a constexpr.
      if (l.frame().constexpr_names.count(target.name)) bound.mark_assigned(false);
      l.assign(target.name, std::move(bound));
      return;
    }
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List: {
      if (value.kind != Symbol::Kind::Tuple)
        error_at(target.loc, Diag::UnpackMismatch, "cannot unpack " + l.describe(value) + " into " +
                                 std::to_string(target.children.size()) + " names");
      if (value.elements.size() != target.children.size())
        error_at(target.loc, Diag::UnpackMismatch,
                 "cannot unpack a tuple of " + std::to_string(value.elements.size()) + " values into " +
                                 std::to_string(target.children.size()) + " names");
      for (size_t i = 0; i < target.children.size(); ++i) bind_target(l, *target.children[i], value.elements[i]);
      return;
    }
    case ast::ExprKind::Subscript:
      if (const ast::Expr& object = *target.children[0]; object.kind == ast::ExprKind::Name)
        if (auto it = l.frame().vars.find(object.name); it != l.frame().vars.end() &&
                                                         it->second.kind == Symbol::Kind::Aggregate)
          error_at(target.loc, Diag::UnsupportedStatement,
                   "an instance of `" + Lowerer::aggregate_name(it->second) + "` cannot be assigned to by index",
                   "aggregates are immutable: make a changed copy with tl.aggregate_replace(" + object.name +
                       ", field=...)");
      error_at(target.loc, Diag::UnsupportedStatement, "assigning to an element or slice of a tile is not supported",
               "tiles are values: build a new tile with tl.where, or write memory with tl.store");
    case ast::ExprKind::Attribute: l.set_aggregate_field(target, value); return;
    default: error_at(target.loc, Diag::UnsupportedStatement, "cannot assign to this expression");
  }
}

void Lowerer::check_result_used(const ast::Expr& e) {
  if (e.kind != ast::ExprKind::Call) return;
  const ast::Expr& callee_expr = *e.children[0];
  // Only a name or a dotted chain of names: looking it up twice lowers
  // nothing (a callee such as `f(x).g` would run f(x) twice).
  for (const ast::Expr* part = &callee_expr; part->kind != ast::ExprKind::Name; part = part->children[0].get())
    if (part->kind != ast::ExprKind::Attribute) return;
  Symbol callee = eval(callee_expr);
  std::string note;
  if (callee.kind == Symbol::Kind::Method && !callee.elements.empty()) callee = callee.elements[0];  // obj.method
  if (callee.kind == Symbol::Kind::JitFunction) {
    note = request_.functions[static_cast<size_t>(callee.function)].must_use_result;
  } else if ((callee.kind == Symbol::Kind::Builtin || callee.kind == Symbol::Kind::Method) &&
             callee.name == "advance") {
    note = "Note that tl.advance does not have any side effects. To move the block pointer, you need to assign "
           "the result of tl.advance to a variable.";
  }
  if (note.empty()) return;
  std::string name = callee_expr.kind == ast::ExprKind::Name ? callee_expr.name
                     : callee_expr.kind == ast::ExprKind::Attribute && callee_expr.children[0]->kind == ast::ExprKind::Name
                         ? callee_expr.children[0]->name + "." + callee_expr.name
                         : describe(callee);
  bool words = note != " ";
  error_at(e.loc, Diag::ResultNotUsed, "The result of " + name + " is not being used." + (words ? " " + note : ""),
           "assign the result to a variable, or drop the call");
}

void Lowerer::lower_stmt(const ast::Stmt& s) {
  using ast::StmtKind;
  switch (s.kind) {
    case StmtKind::Expr:
      check_result_used(*s.value);
      eval(*s.value);
      return;
    case StmtKind::Pass: return;
    case StmtKind::Assign: {
      Symbol v = eval(*s.value);
      v.mark_assigned();
      for (const auto& t : s.targets) bind_target(*this, *t, v);
      return;
    }
    case StmtKind::AugAssign: {
      const ast::Expr& t = *s.targets[0];
      if (t.kind == ast::ExprKind::Attribute) {  // `self.count += 1` in an aggregate's __init__
        Symbol current = eval(t);
        Symbol rhs = eval(*s.value);
        set_aggregate_field(t, binary(s.aug_op, current, rhs, s.loc));
        return;
      }
      if (t.kind != ast::ExprKind::Name)
        error_at(t.loc, Diag::UnsupportedStatement, "augmented assignment needs a plain name on the left",
                 "tiles are values: compute a new tile instead of updating part of one");
      Symbol current = lookup(t.name, t.loc);
      Symbol rhs = eval(*s.value);
      assign(t.name, binary(s.aug_op, current, rhs, s.loc));
      return;
    }
    case StmtKind::AnnAssign: {
      const ast::Expr& t = *s.targets[0];
      if (t.kind != ast::ExprKind::Name) error_at(t.loc, Diag::UnsupportedStatement,
                                                  "annotated assignment needs a plain name on the left");
      if (!s.value) {
        Symbol ann = eval(*s.annotation);
        if (ann.kind == Symbol::Kind::Builtin && ann.name == "constexpr") frame().constexpr_names.insert(t.name);
        return;
      }
      Symbol v = eval(*s.value);
      Symbol ann = eval(*s.annotation);
      if (ann.kind == Symbol::Kind::Builtin && ann.name == "constexpr") {
        frame().constexpr_names.insert(t.name);
        v.mark_assigned(false);  // stays a constexpr: `.type` is its constexpr_type
        // A tuple of constants (a shape: `shape: tl.constexpr = (N // 2, 2)`) is one too.
        auto constant = [](const Symbol& x, const auto& self) -> bool {
          if (x.kind != Symbol::Kind::Tuple) return x.is_const();
          return std::all_of(x.elements.begin(), x.elements.end(), [&](const Symbol& e) { return self(e, self); });
        };
        // Triton wraps whatever the value is and goes on with it, and libraries rely on that
        // (`CTA_TILE_N: tl.constexpr = TILE_N * tiles_per_cta`, the latter a runtime argument).
        if (!constant(v, constant))
          warn_at(s.value->loc,
                  "`" + t.name + "` is annotated constexpr but " + describe(v) +
                      " is not a constant: it stays a runtime value",
                  "drop the annotation, or compute it from tl.constexpr parameters only");
      } else if (ann.is_const() && ann.constant.kind == ConstValue::Kind::DType) {
        v = Symbol::of(cast(to_value(v, s.value->loc, "the assigned value"), ann.constant.dtype, s.loc));
      }
      assign(t.name, v);
      return;
    }
    case StmtKind::If: {
      Symbol cond = eval(*s.test);
      bool truth;
      if (truth_constant(cond, s.test->loc, &truth)) {
        // On a number Triton holds as a tensor, its `if` is a runtime one: what it returns is a tensor.
        frame().tensor_if_depth += cond.assigned;
        lower_body(truth ? s.body : s.orelse);
        frame().tensor_if_depth -= cond.assigned;
        return;
      }
      ir::ValueId c = to_value(cond, s.test->loc, "the `if` condition");
      if (type(c).is_tile() && type(c).numel() == 1) c = only_element(*this, c, s.test->loc);
      if (type(c).is_tile() && elementwise_depth_ == 0)
        error_at(s.test->loc, Diag::ConditionNotScalar,
                 "the `if` condition must be a scalar, but it is " + describe(cond),
                 "to choose per element use tl.where(cond, a, b); to test a whole tile reduce it first");
      c = truth_of(c, s.test->loc);
      lower_runtime_if(s.loc, c, [&] { lower_body(s.body); }, [&] { lower_body(s.orelse); });
      return;
    }
    case StmtKind::For: lower_for(s); return;
    case StmtKind::While: lower_while(s); return;
    case StmtKind::With: {
      // `with tl.async_task(ids):` assigns the block to warp groups in
      // Triton's warp specialization; every thread runs it here, which
      // computes the same values.
      Symbol context = eval(*s.value);
      if (!(context.kind == Symbol::Kind::Builtin && context.name == "async_task"))
        error_at(s.value->loc, Diag::UnsupportedSyntax, "`with` statements are not supported inside a kernel",
                 "a kernel has no context managers; write the body directly");
      lower_body(s.body);
      return;
    }
    case StmtKind::Return: lower_return(s); return;
    case StmtKind::Assert: {
      Symbol cond = eval(*s.test);
      std::string message = "assertion failed";
      if (s.msg) {
        Symbol m = eval(*s.msg);
        if (m.is_const() && m.constant.kind == ConstValue::Kind::Str) message = m.constant.s;
      }
      bool truth;
      if (truth_constant(cond, s.test->loc, &truth)) {
        if (!truth) error_at(s.test->loc, Diag::AssertionFailsAtCompileTime, "static assertion failed: " + message);
        return;
      }
      // A message that fails at compile time is the diagnostic's, which keeps a NUL; one the kernel holds cannot.
      if (s.msg) refuse_nul(message, s.msg->loc, "the message of an `assert`");
      if (!debug()) return;  // like Triton: runtime asserts are checked only in debug mode
      ir::ValueId c = as_condition(*this, to_value(cond, s.test->loc, "the assertion"), s.test->loc, "the assertion");
      builder_.set_loc(s.loc);
      builder_.create(OpKind::Assert, {c}, {}, {{"message", ir::Attr{message}}});
      return;
    }
    case StmtKind::Break:
    case StmtKind::Continue:
      error_at(s.loc, Diag::UnsupportedLoop, std::string("`") + (s.kind == StmtKind::Break ? "break" : "continue") +
                          "` is not supported inside kernels",
               "loops have static trip structure; use a `while` loop with a condition variable instead");
    case StmtKind::Unsupported:
      if (s.name == "raise")
        error_at(s.loc, Diag::UnsupportedSyntax, "`raise` statements are not supported inside a kernel",
                 "use `assert`, `tl.static_assert` or `tl.device_assert`; a `raise` may stand only in a branch "
                 "that a constexpr condition leaves out");
      error_at(s.loc, Diag::UnsupportedStatement, "`" + s.name + "` statements are not supported inside a kernel");
  }
}

// Materializes `s` as a value of `type` at the current insertion point.
ir::ValueId Lowerer::materialize_as(const Symbol& s, const ir::Type& type, const std::string& name,
                                    const SourceLoc& loc) {
  if (s.is_const()) {
    if (!s.constant.is_numeric()) error_at(loc, Diag::VariableChangesType,
                                           variable_title(name) + " cannot hold " + describe(s) + " here");
    if (std::string why = changes_as(s.constant, type); !why.empty())
      error_at(loc, Diag::VariableChangesType,
               mismatch_subject(name) + " is " + ir::to_string(type) + " on one path and " + describe(s) +
                   " on another, and " + why,
               "a variable keeps one type across control flow: give it that type on every path (`1.0` rather "
               "than `1`), or convert with .to(...)");
    ir::ValueId c = constant(s.constant, type.element(), loc);
    return broadcast_to(c, type.shape, loc);
  }
  ir::ValueId v = to_value(s, loc, "`" + name + "`");
  if (!(fn_.type(v) == type))
    error_at(loc, Diag::VariableChangesType,
             mismatch_subject(name) + " changes type from " + ir::to_string(type) + " to " + ir::to_string(fn_.type(v)),
             "a variable keeps one type across control flow: initialize it with its final type "
             "(e.g. tl.zeros(shape, dtype=...)) or convert with .to(...)");
  return v;
}

void Lowerer::lower_runtime_if(const SourceLoc& loc, ir::ValueId cond, const std::function<void()>& then_branch,
                               const std::function<void()>& else_branch) {
  if (type(cond).is_tile()) return lower_elementwise_if(loc, cond, then_branch, else_branch);
  const auto before = frame().vars;
  const auto before_maybe = frame().maybe_undefined;
  const auto before_last = frame().loop_last;
  ir::BlockId outer = builder_.insertion_block();
  ir::BlockId then_block = fn_.add_block(ir::OpId{});
  ir::BlockId else_block = fn_.add_block(ir::OpId{});

  ++frame().runtime_control_depth;
  builder_.set_insertion_end(then_block);
  then_branch();
  forget_inner_loop_last(before_last);
  auto then_vars = frame().vars;
  const bool then_returned = frame().returned;
  frame().vars = before;
  frame().maybe_undefined = before_maybe;
  frame().returned = false;
  builder_.set_insertion_end(else_block);
  else_branch();
  forget_inner_loop_last(before_last);
  auto else_vars = frame().vars;
  const bool else_returned = frame().returned;
  frame().returned = false;
  --frame().runtime_control_depth;

  // A branch that returned yields stand-ins for what the other one changed:
  // after the `if` only the other branch's values are read.
  auto returned_side = [&](std::map<std::string, Symbol>& dead, const std::map<std::string, Symbol>& live,
                           ir::BlockId dead_block) {
    builder_.set_insertion_end(dead_block);
    for (const auto& [n, sym] : live) {
      if (n == kReturned || n == kResult) continue;
      auto d = dead.find(n);
      if (d != dead.end() && same_symbol(d->second, sym)) continue;
      auto b = before.find(n);
      dead[n] = b != before.end() && same_leaf_types(fn_, b->second, sym) ? b->second : stand_in_for(sym, n, loc);
    }
  };
  if (then_returned && else_returned) {
    for (auto* side : {&then_vars, &else_vars})
      for (auto it = side->begin(); it != side->end();) {
        if (it->first == kReturned || it->first == kResult) ++it;
        else it = side->erase(it);
      }
    for (const auto& [n, sym] : before) then_vars.emplace(n, sym), else_vars.emplace(n, sym);
  } else if (then_returned) {
    returned_side(then_vars, else_vars, then_block);
  } else if (else_returned) {
    returned_side(else_vars, then_vars, else_block);
  }
  // The returned value is read only where kReturned is set: a path without it
  // yields a stand-in.
  if (then_vars.count(kResult) != else_vars.count(kResult)) {
    bool then_has = then_vars.count(kResult) > 0;
    builder_.set_insertion_end(then_has ? else_block : then_block);
    const Symbol& present = (then_has ? then_vars : else_vars).at(kResult);
    (then_has ? else_vars : then_vars)[kResult] = stand_in_for(present, kResult, loc);
  }

  // Decide which names become results of the `if`: one result per leaf that
  // differs between the branches.
  struct Yielded {
    std::string name;
    Symbol then_symbol;
    std::vector<Symbol> then_leaves, else_leaves;
    std::vector<int> result;  // per leaf: index of its result, or -1 when both branches agree
  };
  std::vector<Yielded> yielded;
  std::vector<ir::Type> result_types;
  std::map<std::string, Symbol> merged;
  std::set<std::string> names;
  for (const auto& [n, _] : then_vars) names.insert(n);
  for (const auto& [n, _] : else_vars) names.insert(n);
  for (const std::string& n : names) {
    auto t = then_vars.find(n);
    auto e = else_vars.find(n);
    if (t == then_vars.end() || e == else_vars.end()) {
      frame().maybe_undefined[n] = loc;
      continue;
    }
    if (same_symbol(t->second, e->second)) {
      merged[n] = t->second;
      continue;
    }
    if (!is_carriable(t->second) || !is_carriable(e->second) || !same_structure(t->second, e->second))
      error_at(loc, Diag::VariableChangesType,
               mismatch_subject(n) + " is " + describe(t->second) + " in one branch and " + describe(e->second) +
                          " in the other; only tensors and numbers (or tuples, block pointers and tensor "
                          "descriptors of the same shape) can differ between branches of a runtime `if`");
    Yielded y{n, t->second, leaves_of(t->second), leaves_of(e->second), {}};
    for (size_t k = 0; k < y.then_leaves.size(); ++k) {
      const Symbol& a = y.then_leaves[k];
      const Symbol& b = y.else_leaves[k];
      if (same_symbol(a, b)) {
        y.result.push_back(-1);
        continue;
      }
      ir::Type ty;
      if (a.is_value()) {
        ty = fn_.type(a.value);
      } else if (b.is_value()) {
        ty = fn_.type(b.value);
      } else if (std::optional<Scalar> both = type_holding(a.constant, b.constant)) {
        ty = ir::Type::of(*both);
      } else {
        error_at(loc, Diag::VariableChangesType,
                 mismatch_subject(n) + " is " + describe(a) + " in one branch and " + describe(b) +
                     " in the other, and no integer type holds both",
                 "convert one of them with .to(...)");
      }
      y.result.push_back(static_cast<int>(result_types.size()));
      result_types.push_back(ty);
    }
    yielded.push_back(std::move(y));
  }
  auto yield_in = [&](ir::BlockId block, bool then_side) {
    builder_.set_insertion_end(block);
    std::vector<ir::ValueId> values;
    for (const Yielded& y : yielded)
      for (size_t k = 0; k < y.result.size(); ++k)
        if (y.result[k] >= 0)
          values.push_back(materialize_as(then_side ? y.then_leaves[k] : y.else_leaves[k],
                                          result_types[static_cast<size_t>(y.result[k])], y.name, loc));
    builder_.set_loc(loc);
    builder_.create(OpKind::Yield, values, {});
  };
  yield_in(then_block, true);
  yield_in(else_block, false);

  builder_.set_insertion_end(outer);
  builder_.set_loc(loc);
  ir::OpId op = builder_.create(OpKind::If, {cond}, result_types);
  fn_.op(op).regions = {then_block, else_block};
  fn_.block(then_block).parent = op;
  fn_.block(else_block).parent = op;
  for (const auto& [n, sym] : merged) frame().vars[n] = sym;
  for (const Yielded& y : yielded) {
    std::vector<Symbol> leaves;
    for (size_t k = 0; k < y.result.size(); ++k)
      leaves.push_back(y.result[k] < 0 ? y.then_leaves[k]
                                       : Symbol::of(fn_.op(op).results[static_cast<size_t>(y.result[k])]));
    size_t next = 0;
    frame().vars[y.name] = with_leaves(y.then_symbol, leaves, &next);
    frame().maybe_undefined.erase(y.name);
  }
  for (auto it = frame().vars.begin(); it != frame().vars.end();) {
    if (frame().maybe_undefined.count(it->first)) it = frame().vars.erase(it);
    else ++it;
  }
  frame().returned = then_returned && else_returned;
}

Lowerer::LoopNames Lowerer::loop_carried(const std::vector<ast::StmtPtr>& body, const SourceLoc& loc) {
  std::set<std::string> assigned;
  collect_assigned(body, assigned);
  LoopNames names;
  for (const std::string& n : assigned) {
    auto it = frame().vars.find(n);
    if (it == frame().vars.end()) continue;
    if (is_carriable(it->second)) {
      names.carried.push_back(n);
    } else if (comparable(it->second)) {
      names.fixed.emplace_back(n, it->second);
    } else {
      error_at(loc, Diag::VariableChangesType,
               "`" + n + "` (" + describe(it->second) + ") is reassigned inside a runtime loop",
               "only tensors, numbers, block pointers, tensor descriptors and tuples of them can change from "
               "one iteration to the next; use a new name");
    }
  }
  // A body that returns carries whether (and what) it returned.
  if (contains_return(body))
    for (const char* hidden : {kReturned, kResult})
      if (frame().vars.count(hidden)) names.carried.push_back(hidden);
  return names;
}

Lowerer::Carried Lowerer::carry(const LoopNames& loop_names, const SourceLoc& loc) {
  Carried c;
  c.names = loop_names.carried;
  c.fixed = loop_names.fixed;
  for (const std::string& n : c.names) {
    const Symbol& sym = frame().vars.at(n);
    c.before.push_back(sym);
    for (const Symbol& leaf : leaves_of(sym)) {
      ir::ValueId v = to_value(leaf, loc, "`" + n + "`");
      c.inits.push_back(v);
      c.types.push_back(fn_.type(v));
      c.structured.push_back(is_structured(sym));
    }
  }
  return c;
}

void Lowerer::bind_carried(const Carried& c, const std::vector<ir::ValueId>& values) {
  std::vector<Symbol> leaves;
  for (ir::ValueId v : values) leaves.push_back(Symbol::of(v));
  size_t next = 0;
  for (size_t i = 0; i < c.names.size(); ++i) frame().vars[c.names[i]] = with_leaves(c.before[i], leaves, &next);
}

std::vector<ir::ValueId> Lowerer::carried_yields(const Carried& c, const SourceLoc& loc) {
  for (const auto& [n, before] : c.fixed) {
    auto it = frame().vars.find(n);
    if (it == frame().vars.end() || !same_symbol(it->second, before))
      error_at(loc, Diag::VariableChangesType,
               "`" + n + "` (" + describe(before) + ") is reassigned inside a runtime loop",
               "only tensors, numbers, block pointers, tensor descriptors and tuples of them can change from "
               "one iteration to the next; use a new name");
  }
  std::vector<ir::ValueId> out;
  for (size_t i = 0; i < c.names.size(); ++i) {
    const std::string& n = c.names[i];
    const Symbol& now = frame().vars.at(n);
    if (!is_carriable(now) || !same_structure(c.before[i], now))
      error_at(loc, Diag::VariableChangesType,
               mismatch_subject(n) + " is " + describe(c.before[i]) + " before the loop and " + describe(now) + " inside it",
               "a variable keeps its kind across a loop: use a new name for the new value");
    for (const Symbol& leaf : leaves_of(now)) out.push_back(materialize_as(leaf, c.types[out.size()], n, loc));
  }
  return out;
}

void Lowerer::finish_loop_scope(const std::map<std::string, Symbol>& before, const Carried& carried,
                                const std::vector<ir::ValueId>& results, const SourceLoc& loc) {
  auto inside = frame().vars;
  frame().vars = before;
  for (const auto& [n, _] : inside)
    if (!before.count(n)) frame().maybe_undefined[n] = loc;
  bind_carried(carried, results);
}

namespace {

// A leaf of a tuple, block pointer or descriptor that the body yields as it
// got it (a block pointer's base, shape and strides across tl.advance) is
// loop-invariant: its uses read the initial value and it is not carried, so
// the passes and backends see the constants and invariants it holds. Returns
// each leaf's value after the loop, with kept leaves left invalid; `yields`,
// `inits`, `types` and the body's arguments keep only the carried leaves.
std::vector<ir::ValueId> drop_unchanged_leaves(ir::Function& fn, ir::BlockId body, const std::vector<bool>& structured,
                                               std::vector<ir::ValueId>& yields, std::vector<ir::ValueId>& inits,
                                               std::vector<ir::Type>& types) {
  std::vector<ir::ValueId> after(yields.size());
  std::vector<ir::ValueId> args = fn.block(body).args;  // [induction variable, one per leaf]
  std::vector<ir::ValueId> kept_yields, kept_inits, kept_args = {args[0]};
  std::vector<ir::Type> kept_types;
  for (size_t i = 0; i < yields.size(); ++i) {
    if (structured[i] && yields[i] == args[i + 1]) {
      fn.replace_all_uses(args[i + 1], inits[i]);
      fn.value(args[i + 1]).block = ir::BlockId{};
      after[i] = inits[i];
      continue;
    }
    kept_yields.push_back(yields[i]);
    kept_inits.push_back(inits[i]);
    kept_types.push_back(types[i]);
    kept_args.push_back(args[i + 1]);
  }
  for (size_t k = 0; k < kept_args.size(); ++k) fn.value(kept_args[k]).position = static_cast<uint32_t>(k);
  fn.block(body).args = std::move(kept_args);
  yields = std::move(kept_yields);
  inits = std::move(kept_inits);
  types = std::move(kept_types);
  return after;
}

}  // namespace

void Lowerer::lower_for(const ast::Stmt& s) {
  const ast::Expr& target = *s.targets[0];
  if (target.kind != ast::ExprKind::Name)
    error_at(target.loc, Diag::UnsupportedLoop, "the loop variable must be a single name");
  if (!s.orelse.empty()) error_at(s.loc, Diag::UnsupportedLoop, "`for ... else` is not supported inside kernels");
  const ast::Expr& iter = *s.value;
  if (iter.kind != ast::ExprKind::Call)
    error_at(iter.loc, Diag::UnsupportedLoop,
             "kernels can only loop over range(...), tl.range(...) or tl.static_range(...)");
  Symbol callee = eval(*iter.children[0]);
  bool is_static = callee.kind == Symbol::Kind::Builtin && callee.name == "static_range";
  bool is_range = callee.kind == Symbol::Kind::Builtin && (callee.name == "py.range" || callee.name == "range");
  if (!is_static && !is_range)
    error_at(iter.loc, Diag::UnsupportedLoop,
             "kernels can only loop over range(...), tl.range(...) or tl.static_range(...)");
  std::vector<Symbol> bounds;
  std::vector<SourceLoc> locs;
  for (size_t i = 1; i < iter.children.size(); ++i) {
    bounds.push_back(eval(*iter.children[i]));
    locs.push_back(iter.children[i]->loc);
  }
  std::optional<bool> warp_specialize;  // tl.range(..., warp_specialize=): kept on the loop for the CUDA backend
  for (const ast::Keyword& k : iter.keywords) {
    if (callee.name == "range" && k.name == "warp_specialize") {
      Symbol v = eval(*k.value);
      bool none = v.is_const() && v.constant.kind == ConstValue::Kind::None;
      if (!none && (!v.is_const() || (v.constant.kind != ConstValue::Kind::Bool && v.constant.kind != ConstValue::Kind::Int)))
        error_at(k.loc, Diag::NotConstexpr, "warp_specialize of tl.range must be True, False or None, known when compiling");
      if (!none) warp_specialize = v.constant.i != 0;
      continue;
    }
    // tl.range tuning hints (num_stages, loop_unroll_factor, flatten, ...) do not change meaning.
    if (callee.name == "range" &&
        (k.name == "num_stages" || k.name == "loop_unroll_factor" || k.name == "disallow_acc_multi_buffer" ||
         k.name == "flatten" || k.name == "disable_licm"))
      continue;
    if (k.name == "arg1" || k.name == "arg2" || k.name == "arg3" || k.name == "start" || k.name == "end" || k.name == "step") {
      bounds.push_back(eval(*k.value));
      locs.push_back(k.loc);
      continue;
    }
    error_at(k.loc, Diag::UnknownKeywordArgument, "unexpected keyword `" + k.name + "` for the loop range");
  }
  if (bounds.empty() || bounds.size() > 3) error_at(iter.loc, Diag::WrongArgumentCount, "range takes 1 to 3 arguments");
  Symbol start = bounds.size() == 1 ? Symbol::of(ConstValue::integer(0)) : bounds[0];
  Symbol end = bounds.size() == 1 ? bounds[0] : bounds[1];
  Symbol step = bounds.size() == 3 ? bounds[2] : Symbol::of(ConstValue::integer(1));
  SourceLoc step_loc = bounds.size() == 3 ? locs[2] : iter.loc;

  if (is_static) {
    int64_t a = to_int_const(start, iter.loc, "the start of tl.static_range");
    int64_t b = to_int_const(end, iter.loc, "the end of tl.static_range");
    int64_t c = to_int_const(step, step_loc, "the step of tl.static_range");
    if (c == 0) error_at(step_loc, Diag::UnsupportedLoop, "the step of a range cannot be zero");
    // In 128 bits: `b - a` of int64 bounds can pass int64 (the loop then
    // unrolled no iteration at all).
    __int128 span = c > 0 ? __int128{b} - a : __int128{a} - b, stride = c > 0 ? __int128{c} : -__int128{c};
    __int128 all_trips = span > 0 ? (span + stride - 1) / stride : 0;  // at most 2^64 - 1
    if (all_trips > kMaxStaticTrips)
      error_at(iter.loc, Diag::StaticLoopTooLong,
               "tl.static_range would unroll " + std::to_string(static_cast<uint64_t>(all_trips)) + " iterations",
               "use range(...) for long loops");
    auto trips = static_cast<int64_t>(all_trips);
    for (int64_t k = 0; k < trips && !frame().returned; ++k) {
      if (++static_trips_ > kMaxKernelStaticTrips)
        error_at(iter.loc, Diag::StaticLoopTooLong,
                 "the tl.static_range loops of this kernel unroll more than " +
                     std::to_string(kMaxKernelStaticTrips) + " iterations in all (nested loops multiply)",
                 "use range(...) for the outer loops");
      if (interrupt_watch_.interrupted()) throw Interrupted();
      assign(target.name, Symbol::of(ConstValue::integer(static_cast<int64_t>(a + __int128{k} * c))));
      lower_body(s.body);
    }
    return;
  }

  if (step.is_const() && step.constant.is_numeric() && step.constant.kind != ConstValue::Kind::Float &&
      step.constant.i == 0)
    error_at(step_loc, Diag::UnsupportedLoop, "the step of a range cannot be zero");
  auto int_operand = [&](const Symbol& sym, const SourceLoc& l, const char* what) {
    ir::ValueId v = to_value(sym, l, std::string("the ") + what + " of the range");
    if (type(v).is_tile() || !ir::is_integer(type(v).scalar) || type(v).scalar == Scalar::I1)
      error_at(l, Diag::NotInteger,
               std::string("the ") + what + " of a range must be an integer scalar, but it is " + describe(sym));
    return v;
  };
  builder_.set_loc(s.loc);
  ir::ValueId lb = int_operand(start, bounds.size() == 1 ? iter.loc : locs[0], "start");
  ir::ValueId ub = int_operand(end, bounds.size() == 1 ? locs[0] : locs[1], "end");
  ir::ValueId st = int_operand(step, step_loc, "step");
  Scalar iv_type = promote_integers(promote_integers(type(lb).scalar, type(ub).scalar), type(st).scalar);
  lb = cast(lb, iv_type, s.loc);
  ub = cast(ub, iv_type, s.loc);
  st = cast(st, iv_type, s.loc);
  if (debug() && !step.is_const()) {
    // Python refuses range(a, b, 0); without debug mode such a loop runs no iteration.
    ir::ValueId zero = constant(ConstValue::integer(0), ir::Type::of(iv_type), step_loc);
    ir::ValueId nonzero =
        create(OpKind::Cmp, {st, zero}, ir::Type::of(Scalar::I1), step_loc, {{"pred", ir::Attr{std::string("ne")}}});
    builder_.set_loc(step_loc);
    builder_.create(OpKind::Assert, {nonzero}, {}, {{"message", ir::Attr{std::string("range() step must not be zero")}}});
  }

  prepare_loop_result(s);
  Carried carried = carry(loop_carried(s.body, s.loc), s.loc);
  const auto before = frame().vars;
  const auto before_last = frame().loop_last;
  ir::BlockId outer = builder_.insertion_block();
  ir::BlockId body = fn_.add_block(ir::OpId{});
  ir::ValueId iv = fn_.add_block_arg(body, ir::Type::of(iv_type));
  std::vector<ir::ValueId> args;
  for (const ir::Type& t : carried.types) args.push_back(fn_.add_block_arg(body, t));
  bind_carried(carried, args);
  frame().vars[target.name] = Symbol::of(iv);

  ++frame().runtime_control_depth;
  builder_.set_insertion_end(body);
  lower_body(s.body);  // a later iteration of a loop that returned finds kReturned set and does nothing
  forget_inner_loop_last(before_last);
  probe_loop_result(s);
  frame().returned = false;  // the loop may run no iteration
  std::vector<ir::ValueId> yields = carried_yields(carried, s.loc);
  std::vector<ir::ValueId> inits = carried.inits;
  std::vector<ir::Type> types = carried.types;
  std::vector<ir::ValueId> after = drop_unchanged_leaves(fn_, body, carried.structured, yields, inits, types);
  builder_.set_loc(s.loc);
  builder_.create(OpKind::Yield, yields, {});
  --frame().runtime_control_depth;

  builder_.set_insertion_end(outer);
  std::vector<ir::ValueId> operands = {lb, ub, st};
  operands.insert(operands.end(), inits.begin(), inits.end());
  builder_.set_loc(s.loc);
  ir::OpId op = builder_.create(OpKind::For, operands, types);
  if (warp_specialize) fn_.op(op).set_attr("warp_specialize", int64_t{*warp_specialize});
  fn_.op(op).regions = {body};
  fn_.block(body).parent = op;
  size_t next_result = 0;
  for (ir::ValueId& v : after)
    if (!v.valid()) v = fn_.op(op).results[next_result++];
  finish_loop_scope(before, carried, after, s.loc);
  remember_last_induction_value(target.name, carried, lb, ub, st);
}

// Python leaves a loop's variable at its last value, which kernels read after
// the loop (chunked attention kernels compute the last block's offsets); Triton
// compiles such a read, with an undefined value. A variable the loop alone
// defines keeps the range's bounds here, and a read after the loop computes the
// last value the range gave, lb + ((ub - lb - sign(st)) / st) * st (unspecified,
// as in Triton, when the loop ran no iteration). Computed only where read, so
// loops whose variable is not read after them lower as before. A body that
// assigns the variable itself carries it instead; unsigned ranges stay undefined.
void Lowerer::remember_last_induction_value(const std::string& name, const Carried& carried, ir::ValueId lb,
                                            ir::ValueId ub, ir::ValueId st) {
  if (!ir::is_signed(type(lb).scalar) || frame().vars.count(name) || !frame().maybe_undefined.count(name) ||
      std::find(carried.names.begin(), carried.names.end(), name) != carried.names.end())
    return;
  frame().loop_last[name] = {lb, ub, st};
}

void Lowerer::forget_inner_loop_last(const std::map<std::string, std::array<ir::ValueId, 3>>& outer) {
  auto& last = frame().loop_last;
  for (auto it = last.begin(); it != last.end();) {
    auto o = outer.find(it->first);
    it = o != outer.end() && o->second == it->second ? std::next(it) : last.erase(it);
  }
}

std::optional<Symbol> Lowerer::last_induction_value(const std::string& name, const SourceLoc& loc) {
  auto it = frame().loop_last.find(name);
  if (it == frame().loop_last.end()) return std::nullopt;
  const auto [lb, ub, st] = it->second;
  const ir::Type t = type(lb);
  ir::ValueId one = constant(ConstValue::integer(1), t, loc);
  ir::ValueId minus_one = constant(ConstValue::integer(-1), t, loc);
  ir::ValueId zero = constant(ConstValue::integer(0), t, loc);
  ir::ValueId up = create(OpKind::Cmp, {st, zero}, ir::Type::of(Scalar::I1), loc, {{"pred", ir::Attr{std::string("gt")}}});
  ir::ValueId sign = create(OpKind::Select, {up, one, minus_one}, t, loc);
  ir::ValueId span = create(OpKind::Sub, {create(OpKind::Sub, {ub, lb}, t, loc), sign}, t, loc);
  ir::ValueId steps = create(OpKind::Div, {span, st}, t, loc);
  return Symbol::of(create(OpKind::Add, {lb, create(OpKind::Mul, {steps, st}, t, loc)}, t, loc));
}

void Lowerer::lower_while(const ast::Stmt& s) {
  if (!s.orelse.empty()) error_at(s.loc, Diag::UnsupportedLoop, "`while ... else` is not supported inside kernels");
  std::set<std::string> in_condition;
  collect_named_expr_targets(*s.test, in_condition);
  if (!in_condition.empty())
    error_at(s.test->loc, Diag::UnsupportedSyntax,
             "an assignment expression (`:=`) in a `while` condition is not supported inside a kernel",
             "assign `" + *in_condition.begin() + "` before the loop and again at the end of its body");
  prepare_loop_result(s);
  Carried carried = carry(loop_carried(s.body, s.loc), s.loc);
  const auto before = frame().vars;
  const auto before_last = frame().loop_last;
  ir::BlockId outer = builder_.insertion_block();
  ir::BlockId cond_block = fn_.add_block(ir::OpId{});
  ir::BlockId body = fn_.add_block(ir::OpId{});
  std::vector<ir::ValueId> cond_args;
  for (const ir::Type& t : carried.types) cond_args.push_back(fn_.add_block_arg(cond_block, t));
  bind_carried(carried, cond_args);

  ++frame().runtime_control_depth;
  builder_.set_insertion_end(cond_block);
  auto condition = [&] {
    Symbol cond = eval(*s.test);
    ir::ValueId c = to_value(cond, s.test->loc, "the `while` condition");
    if (type(c).is_tile() && type(c).numel() == 1) c = only_element(*this, c, s.test->loc);
    if (type(c).is_tile())
      error_at(s.test->loc, Diag::ConditionNotScalar,
               "the `while` condition must be a scalar, but it is " + describe(cond));
    return truth_of(c, s.test->loc);
  };
  ir::ValueId c;
  if (may_have_returned()) {  // a loop that returned stops, without evaluating its condition again
    const std::string going_on = "$while";
    lower_runtime_if(
        s.loc, has_not_returned(s.loc), [&] { frame().vars[going_on] = Symbol::of(condition()); },
        [&] { frame().vars[going_on] = Symbol::of(ConstValue::boolean(false)); });
    c = to_value(frame().vars.at(going_on), s.loc, "the `while` condition");
    frame().vars.erase(going_on);
  } else {
    c = condition();
  }
  std::vector<ir::ValueId> cond_operands = {c};
  cond_operands.insert(cond_operands.end(), cond_args.begin(), cond_args.end());
  builder_.set_loc(s.loc);
  builder_.create(OpKind::Condition, cond_operands, {});

  std::vector<ir::ValueId> body_args;
  for (const ir::Type& t : carried.types) body_args.push_back(fn_.add_block_arg(body, t));
  bind_carried(carried, body_args);
  if (may_have_returned())  // the condition lets in only iterations that have not returned
    frame().vars[kReturned] = Symbol::of(ConstValue::boolean(false));
  builder_.set_insertion_end(body);
  lower_body(s.body);
  forget_inner_loop_last(before_last);
  probe_loop_result(s);
  frame().returned = false;  // the loop may run no iteration
  std::vector<ir::ValueId> yields = carried_yields(carried, s.loc);
  builder_.set_loc(s.loc);
  builder_.create(OpKind::Yield, yields, {});
  --frame().runtime_control_depth;

  builder_.set_insertion_end(outer);
  builder_.set_loc(s.loc);
  ir::OpId op = builder_.create(OpKind::While, carried.inits, carried.types);
  fn_.op(op).regions = {cond_block, body};
  fn_.block(cond_block).parent = op;
  fn_.block(body).parent = op;
  finish_loop_scope(before, carried, fn_.op(op).results, s.loc);
}

}  // namespace tegula::frontend
