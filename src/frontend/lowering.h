// The internal state of AST -> tile IR lowering (see lower.h for the entry
// points). Split by concern across lower.cpp (functions, inlining, entry),
// lower_stmt.cpp (statements and structured control flow), lower_expr.cpp
// (expressions, typing, broadcasting) and builtins.cpp (the tl.* functions).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/ast.h"
#include "frontend/request.h"
#include "frontend/symbol.h"
#include "ir/builder.h"
#include "ir/ir.h"
#include "support/diagnostic.h"
#include "support/interrupt.h"
#include "support/stack_room.h"

namespace tegula::frontend {

// Arguments of a call as evaluated at the call site.
struct CallArgs {
  std::vector<Symbol> positional;
  std::vector<SourceLoc> positional_locs;
  std::vector<std::pair<std::string, Symbol>> keywords;
  std::vector<SourceLoc> keyword_locs;
  SourceLoc loc;  // the whole call
};

// Binds CallArgs to a builtin's parameter list the way Python would, with
// errors that name the builtin and the parameter.
class BoundArgs {
 public:
  // `params`: names in order; a leading '?' marks an optional parameter.
  BoundArgs(const std::string& callee, const std::vector<std::string>& params, const CallArgs& args);
  bool has(const std::string& name) const;  // given and not None
  const Symbol& get(const std::string& name) const;  // asserts has()
  SourceLoc loc(const std::string& name) const;      // the argument's location (call loc if absent)

 private:
  std::string callee_;
  std::map<std::string, std::pair<Symbol, SourceLoc>> bound_;
  SourceLoc call_loc_;
};

// The hint of an unexpected keyword argument `keyword` of `callee`: the
// parameter it may misspell, then the parameters `callee` takes.
std::string parameters_hint(const std::string& callee, const std::string& keyword,
                            const std::vector<std::string>& params);

// For a host function described `np.exp` or `math.exp` (python/tegula/_globals.py
// names NumPy's and the math module's so), "tl.exp" where the tile language has a
// function of that name (or of its NumPy alias: np.absolute is tl.abs); "" otherwise.
std::string language_counterpart(const std::string& description);

// Whether a `return` appears anywhere in `body`, nested blocks included.
bool contains_return(const std::vector<ast::StmtPtr>& body);

class Lowerer {
 public:
  Lowerer(const KernelRequest& request, SourceManager& sources, const TargetInfo& target);
  ir::Function run();

  // --- functions and scopes (lower.cpp) ---------------------------------------
  const ast::FunctionDef& function_ast(int32_t index);
  // `aggregate_init`: the function is an aggregate's __init__, args.positional[0] the instance it
  // fills (`self.f = v` sets a field); the result is that instance once the body has run.
  Symbol call_jit(int32_t index, const CallArgs& args, bool aggregate_init = false);
  // A @constexpr_function called on constants: run on the host through
  // KernelRequest::call_host (lower_host_call.cpp).
  Symbol call_host_function(const Symbol& callee, const CallArgs& args);
  Symbol from_host(const GlobalValue& result, const std::vector<Symbol>& stand_ins, const std::string& what,
                   const SourceLoc& loc);
  static std::string host_function_name(const Symbol& s);
  // A named tuple built in the kernel, `Pair(ptr, n)` or `Pair(data=ptr, count=n)` (lower_host_call.cpp).
  Symbol make_named_tuple(const Symbol& type, const CallArgs& args);
  // --- @aggregate classes (lower_aggregate.cpp) ------------------------------------
  // `Cls(...)`: the fields by position or name (defaults after), or the class's own __init__.
  Symbol make_aggregate(const Symbol& cls, const CallArgs& args);
  // An instance built on the host and passed to the kernel: its class and its fields' symbols.
  Symbol host_aggregate(const GlobalValue& cls, std::vector<Symbol> fields, const SourceLoc& loc);
  // `obj.f` (a field, a method bound to obj) and `Cls.m` (a member, a field's default).
  Symbol aggregate_attribute(const Symbol& base, const std::string& attr, const SourceLoc& loc);
  // `obj[i]`: the class's __getitem__.
  Symbol aggregate_subscript(const Symbol& base, const std::vector<Symbol>& index, const std::vector<SourceLoc>& locs,
                             const SourceLoc& loc);
  // `self.f = value` in an aggregate's __init__ (`target` is the Attribute expression).
  void set_aggregate_field(const ast::Expr& target, const Symbol& value);
  // E0xxx if `field` of `cls` is a tl.constexpr and `value` is not known at compile time.
  void check_field_value(const Symbol& cls, const std::string& field, const Symbol& value, const SourceLoc& loc);
  // "Pair": the class of an instance (or a class) as errors name it.
  static std::string aggregate_name(const Symbol& s);
  // `lambda ...: body` written in the kernel, and a call of one (lower_lambda.cpp).
  Symbol make_lambda(const ast::Expr& e);
  Symbol call_lambda(const Symbol& callee, const CallArgs& args);
  // call_jit for tl.map_elementwise: inside it (and the helpers it calls) an
  // `if` on a tile condition chooses per element (lower_elementwise_if.cpp).
  Symbol call_jit_per_element(int32_t index, const CallArgs& args);
  Symbol lookup(const std::string& name, const SourceLoc& loc);
  Symbol member_global(const Symbol& module, const std::string& attr, const SourceLoc& loc);
  void assign(const std::string& name, Symbol value);
  Symbol global_symbol(const GlobalValue& g, const SourceLoc& loc);

  // --- statements (lower_stmt.cpp) ----------------------------------------------
  // Lowers body[first..]; once this path may have returned, the rest runs
  // under `if not returned` (lower_return.cpp).
  void lower_body(const std::vector<ast::StmtPtr>& body, size_t first = 0);
  void lower_stmt(const ast::Stmt& s);
  // An expression statement that drops the result of a @must_use_result function or of tl.advance
  // is an error (E0410), as in Triton.
  void check_result_used(const ast::Expr& e);
  // A warning at `loc`: the kernel compiles, and the caller shows the text
  // (tegula.CompileWarning in Python) once the kernel is built.
  void warn_at(const SourceLoc& loc, std::string message, std::string hint = {});
  // A runtime `if` at `loc`: each callback lowers one branch; variables that
  // differ between the branches become the results.
  void lower_runtime_if(const SourceLoc& loc, ir::ValueId cond, const std::function<void()>& then_branch,
                        const std::function<void()>& else_branch);
  // The per-element `if` of a tl.map_elementwise function: both branches,
  // then tl.where(cond, ...) of what they change (lower_elementwise_if.cpp).
  void lower_elementwise_if(const SourceLoc& loc, ir::ValueId cond, const std::function<void()>& then_branch,
                            const std::function<void()>& else_branch);
  // `x if c else y` as an `if` under a runtime scalar `cond` (lower_expr.cpp):
  // `side(1)` and `side(2)` give the arms' values inside their branches
  // (evaluating an arm there runs it only when chosen).
  Symbol runtime_if_expression(const ast::Expr& e, ir::ValueId cond, const std::function<Symbol(size_t)>& side);
  void lower_for(const ast::Stmt& s);
  void lower_while(const ast::Stmt& s);
  // Names the body assigns that exist before the loop (they become iter args).
  // The names a loop body assigns that hold carriable values before it (carried), and those that hold
  // other values (None, a function, a string...): those must come out of the body unchanged, which only
  // lowering it shows (an assignment under a constexpr `if` that is false never happens).
  struct LoopNames {
    std::vector<std::string> carried;
    std::vector<std::pair<std::string, Symbol>> fixed;
  };
  LoopNames loop_carried(const std::vector<ast::StmtPtr>& body, const SourceLoc& loc);
  // Loop-carried names, one iteration value per leaf of their symbols
  // (symbol_leaves.h): a block pointer carries its base, shape, strides and offsets.
  struct Carried {
    std::vector<std::string> names;
    std::vector<Symbol> before;      // per name: its symbol before the loop
    std::vector<ir::ValueId> inits;  // per leaf
    std::vector<ir::Type> types;     // per leaf
    std::vector<bool> structured;    // per leaf: part of a tuple, block pointer or descriptor
    std::vector<std::pair<std::string, Symbol>> fixed;  // LoopNames::fixed, checked by carried_yields
  };
  Carried carry(const LoopNames& names, const SourceLoc& loc);
  // A runtime loop's variable read after the loop (lower_stmt.cpp).
  void remember_last_induction_value(const std::string& name, const Carried& carried, ir::ValueId lb, ir::ValueId ub,
                                     ir::ValueId st);
  std::optional<Symbol> last_induction_value(const std::string& name, const SourceLoc& loc);
  void forget_inner_loop_last(const std::map<std::string, std::array<ir::ValueId, 3>>& outer);
  // Binds every carried name to its symbol rebuilt from `values` (one per leaf).
  void bind_carried(const Carried& carried, const std::vector<ir::ValueId>& values);
  // The leaves of the carried names' symbols now, as values of the carried types.
  std::vector<ir::ValueId> carried_yields(const Carried& carried, const SourceLoc& loc);
  // After a loop: names first defined inside become undefined, carried names
  // take the loop's results (`results`: one per leaf).
  void finish_loop_scope(const std::map<std::string, Symbol>& before, const Carried& carried,
                         const std::vector<ir::ValueId>& results, const SourceLoc& loc);
  ir::ValueId materialize_as(const Symbol& s, const ir::Type& type, const std::string& name, const SourceLoc& loc);

  // --- early returns (lower_return.cpp) -------------------------------------------
  // A `return` under runtime control flow sets two hidden variables, which
  // cross `if`s and loops like any other: kReturned (this path has returned)
  // and kResult (the value it returned).
  static constexpr const char* kReturned = "$returned";
  static constexpr const char* kResult = "$result";
  static constexpr const char* kIfExpression = "$ifexp";  // the value of a runtime `x if c else y`
  void lower_return(const ast::Stmt& s);
  // The kReturned of the current path is only known at run time.
  bool may_have_returned();
  // An i1 value: kReturned (a run-time value here) is false.
  ir::ValueId has_not_returned(const SourceLoc& loc);
  // Lowers body[first..] under `if not returned`.
  void lower_unless_returned(const std::vector<ast::StmtPtr>& body, size_t first);
  // Before a runtime loop whose body returns a value that has no variable yet:
  // defines kResult with the value's type (found by lowering the loop once
  // into a copy of the function), so the loop can carry it.
  void prepare_loop_result(const ast::Stmt& loop);
  // Records kResult's type at the end of the loop body when `loop` is the
  // loop prepare_loop_result is lowering.
  void probe_loop_result(const ast::Stmt& loop);
  // A stand-in of the same type as `s` (zeros for values, constants as they
  // are) for a path on which `s` is never read.
  Symbol stand_in_for(const Symbol& s, const std::string& name, const SourceLoc& loc);
  // `shape` with each value leaf replaced by zeros of leaf_types[i].
  Symbol zeros_like(const Symbol& shape, const std::vector<ir::Type>& leaf_types, const std::string& name,
                    const SourceLoc& loc);
  // "`x`", "the return value" for kResult, "the value of `x if c else y`"
  // for kIfExpression: how errors name a variable.
  static std::string variable_title(const std::string& name);
  // How an error about a variable whose type differs between paths begins:
  // Triton's words ("Mismatched type for x", "Return type mismatch",
  // "Ternary expression with dynamic condition has inconsistent type"), then
  // variable_title.
  static std::string mismatch_subject(const std::string& name);
  // --- expressions (lower_expr.cpp) ---------------------------------------------
  // An expression's value; a tuple or aggregate past the bounds of
  // value_bounds.h is an error there.
  Symbol eval(const ast::Expr& e);
  Symbol eval_expression(const ast::Expr& e);  // eval without the bounds check
  // An f-string's text, built at compile time from its fields' constant values (lower_fstring.cpp).
  Symbol joined_string(const ast::Expr& e);
  // A comprehension or generator expression, unrolled at compile time into a tuple (lower_expr.cpp).
  Symbol comprehension(const ast::Expr& e);
  Symbol eval_binary_chain(const ast::Expr& e);  // an ExprKind::Binary, its left spine in a loop
  Symbol attribute(const Symbol& base, const std::string& attr, const SourceLoc& loc);
  Symbol call(const Symbol& callee, const CallArgs& args);
  Symbol binary(ast::BinaryOp op, const Symbol& a, const Symbol& b, const SourceLoc& loc);
  Symbol unary(ast::UnaryOp op, const Symbol& a, const SourceLoc& loc);
  Symbol compare(ast::CmpOp op, const Symbol& a, const Symbol& b, const SourceLoc& loc);
  Symbol subscript(const Symbol& base, const std::vector<Symbol>& index, const std::vector<SourceLoc>& locs,
                   const SourceLoc& loc);
  bool truth_constant(const Symbol& s, const SourceLoc& loc, bool* value);  // false if not constexpr
  // Python's truth of a value, element by element, as an i1 of its shape: a
  // boolean as it is, a number != 0, a pointer not null (Triton casts it to
  // int1). What `if`, `while`, `x if c else y`, `and`/`or` and masks test.
  ir::ValueId truth_of(ir::ValueId v, const SourceLoc& loc);

  // Materializes a constant (or passes a value through). `what` names the
  // operand in errors ("the mask of tl.load").
  ir::ValueId to_value(const Symbol& s, const SourceLoc& loc, const std::string& what);
  ConstValue to_const(const Symbol& s, const SourceLoc& loc, const std::string& what);
  int64_t to_int_const(const Symbol& s, const SourceLoc& loc, const std::string& what);
  ir::Scalar to_dtype(const Symbol& s, const SourceLoc& loc, const std::string& what);
  std::vector<int64_t> to_shape(const Symbol& s, const SourceLoc& loc, const std::string& what);
  void check_shape(const std::vector<int64_t>& shape, const SourceLoc& loc);

  // By value: callers keep the type while creating ops, which grows the
  // value table and would leave a reference dangling (`const ir::Type& t =
  // type(v)` binds the copy and stays valid).
  ir::Type type(ir::ValueId v) const { return fn_.type(v); }
  ir::ValueId cast(ir::ValueId v, ir::Scalar to, const SourceLoc& loc);
  ir::ValueId broadcast_to(ir::ValueId v, const std::vector<int64_t>& shape, const SourceLoc& loc);
  // Broadcasts both to a common shape (error at loc if incompatible).
  std::pair<ir::ValueId, ir::ValueId> broadcast_pair(ir::ValueId a, ir::ValueId b, const SourceLoc& loc);
  // Promotes and broadcasts two operands of an arithmetic op; returns the
  // converted values. `literal` flags come from the symbols.
  std::pair<ir::ValueId, ir::ValueId> arith_operands(const Symbol& a, const Symbol& b, bool div_or_mod,
                                                     const SourceLoc& loc, const char* op_text);
  // Every op the lowering makes with results is made here, so a result over
  // the tile size limit (a broadcast, tl.join, tl.cat, a reshape...) is the
  // user's error E0503 at `loc` rather than the verifier's.
  ir::OpId create_op(ir::OpKind kind, std::vector<ir::ValueId> operands, const std::vector<ir::Type>& results,
                     const SourceLoc& loc, std::vector<ir::NamedAttr> attrs = {});
  // The same for an op of one result; returns the result.
  ir::ValueId create(ir::OpKind kind, std::vector<ir::ValueId> operands, ir::Type result,
                     const SourceLoc& loc, std::vector<ir::NamedAttr> attrs = {});
  // E0503 at `loc` if `t` has more than ir::kMaxTileElements elements.
  void check_result_size(const ir::Type& t, const SourceLoc& loc);
  // The one place a Python constant becomes an IR value. A string, None or a
  // dtype is refused (E0309) rather than read as 0; `what` names the operand.
  ir::ValueId constant(const ConstValue& c, ir::Type type, const SourceLoc& loc,
                       const std::string& what = "a constant");
  std::string describe(const Symbol& s) const;  // "a tile<128xf32>", "the constexpr 4", "module tl"
  // E0309: `what` (an operand that becomes a value) is `s`, which is not one.
  [[noreturn]] void not_a_tensor(const Symbol& s, const SourceLoc& loc, const std::string& what) const;

  // --- builtins (builtins.cpp) --------------------------------------------------
  Symbol call_builtin(const std::string& name, const CallArgs& args);
  static bool is_language_builtin(const std::string& name);

  ir::Function& function() { return fn_; }
  ir::Builder& builder() { return builder_; }
  const KernelRequest& request() const { return request_; }
  const TargetInfo& target() const { return target_; }
  SourceManager& sources() { return sources_; }
  bool debug() const { return request_.debug; }

  // --- frames -----------------------------------------------------------------------
  struct Frame {
    int32_t function = 0;
    std::map<std::string, Symbol> vars = {{kReturned, Symbol::of(ConstValue::boolean(false))}};
    std::map<std::string, SourceLoc> maybe_undefined;  // defined on only one path
    // Loop variables defined only by their runtime loop, by name: the range's (lb, ub, step), from
    // which a read after the loop computes the last value. Valid in the block that holds the loop
    // and the blocks nested in it; dropped when the name is assigned or that block's scope ends.
    std::map<std::string, std::array<ir::ValueId, 3>> loop_last;
    bool returned = false;  // this path has certainly returned: what follows is not lowered
    std::optional<Symbol> result;
    int runtime_control_depth = 0;  // > 0 inside a runtime if/for/while
    int tensor_if_depth = 0;        // > 0 inside an `if` folded on a number Triton holds as a tensor
    std::string aggregate_init_self;  // in an aggregate's __init__: the name of its instance (`self`)
    std::set<std::string> constexpr_names;  // annotated `name: tl.constexpr`: assignments keep constexprs
  };
  Frame& frame() { return *frames_.back(); }

 private:
  const KernelRequest& request_;
  SourceManager& sources_;
  TargetInfo target_;
  ir::Function fn_;
  ir::Builder builder_;
  std::vector<int32_t> file_ids_;                      // per function index (-1: not parsed yet)
  std::vector<std::unique_ptr<ast::FunctionDef>> asts_;  // per function index
  std::vector<Diagnostic> warnings_;  // see warn_at
  std::vector<std::unique_ptr<Frame>> frames_;
  int inline_depth_ = 0;
  // Bodies being lowered inside one another (lower_body); each costs native
  // stack and most an IR region level, which the verifier bounds at 1,000.
  static constexpr int kMaxBlockDepth = 900;
  int block_depth_ = 0;
  size_t comprehension_elements_ = 0;  // unrolled by every comprehension of the kernel so far
  int64_t static_trips_ = 0;  // iterations unrolled by every tl.static_range of the kernel so far
  int64_t inlined_calls_ = 0;  // @jit calls inlined into the kernel so far
  InterruptWatch interrupt_watch_;  // Ctrl-C while a long unrolling runs
  StackRoom stack_room_;  // the lowering thread's stack, asked by eval and lower_body
  // E0108 at `loc` when the stack is nearly spent.
  void check_stack_room(const SourceLoc& loc) const;
  int elementwise_depth_ = 0;  // > 0 inside a tl.map_elementwise function
  struct LoopResultProbe {
    const ast::Stmt* loop = nullptr;
    std::optional<Symbol> result;    // kResult at the end of the loop body
    std::vector<ir::Type> leaf_types;  // per leaf of `result` (meaningless for constant leaves)
  };
  LoopResultProbe* probe_ = nullptr;
};

// isinstance(obj, Cls) for an aggregate class: obj's class is Cls or has it as a base.
bool is_aggregate_instance_of(const Symbol& obj, const Symbol& cls);

// tl.aggregate_replace(obj, field=value, ...): a copy of the instance with those fields changed
// (lower_aggregate.cpp; a builtin, builtins.h).
Symbol lower_aggregate_replace(Lowerer& l, const CallArgs& c, const std::string& name);

// Binds `value` to an assignment target (a name or nested tuple of names; lower_stmt.cpp).
void bind_target(Lowerer& l, const ast::Expr& target, const Symbol& value);

}  // namespace tegula::frontend
