// The syntax tree of the kernel subset of Python.
//
// One uniform node type for expressions and one for statements, in the spirit
// of a small compiler: the meaning of `children` depends on `kind` and is
// documented next to each kind. Every node carries the span of source it came
// from so that later stages can point at it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/source.h"

namespace tegula::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

enum class BinaryOp {
  Add, Sub, Mul, Div, FloorDiv, Mod, Pow, MatMul,  // + - * / // % ** @
  LShift, RShift, BitAnd, BitOr, BitXor,           // << >> & | ^
};
enum class UnaryOp { Neg, Pos, Invert, Not };     // -x +x ~x not x
enum class BoolOpKind { And, Or };
enum class CmpOp { Eq, NotEq, Lt, LtE, Gt, GtE, Is, IsNot, In, NotIn };

const char* to_string(BinaryOp op);  // "+", "//", ...
const char* to_string(UnaryOp op);   // "-", "not", ...
const char* to_string(CmpOp op);     // "<", "is not", ...

enum class ExprKind {
  Name,       // `name`
  Int,        // int_value (literals above INT64_MAX up to UINT64_MAX: is_unsigned, bits in int_value)
  Float,      // float_value
  Bool,       // bool_value
  None,       // None
  Str,        // name holds the (unescaped, concatenated) string value
  JoinedStr,  // an f-string (with the literals around it): children are Str and FormattedValue
              //   pieces, concatenated at compile time
  FormattedValue,  // a field `{children[0]!name:children[1]}` of a JoinedStr: name is the conversion
                   //   ("r", "s", "a" or empty), children[1] the format spec (a JoinedStr) or nullptr
  Attribute,  // children[0] . name
  Subscript,  // children[0] [ children[1..] ]  (one child per comma-separated index;
              //   each is an expression, a Slice, or None)
  Slice,      // lo:hi:step; children[0..2] are lo, hi, step, each possibly nullptr
  Call,       // children[0] ( children[1..] , keywords )
  Binary,     // children[0] binary_op children[1]
  Unary,      // unary_op children[0]
  BoolOp,     // children joined by bool_op (`a and b and c`)
  Compare,    // children[0] cmp_ops[0] children[1] cmp_ops[1] children[2] ...
  IfExp,      // children[1] if children[0] else children[2]
  Tuple,      // (children...)
  List,       // [children...]
  Starred,    // *children[0]: a tuple unpacked into a call's positional arguments
  Comprehension,  // [children[0] for target in iterable if condition ...] (or its (...) and f(...) forms):
                  //   children[0] the element, then per `for` clause three children: its target (a
                  //   Name or Tuple), its iterable and its condition (the clause's `if`s joined by
                  //   `and`; nullptr without one). Unrolled at compile time into a tuple.
  Lambda,     // lambda keywords...: children[0]; each keyword is a parameter (name, default value or
              //   nullptr)
  NamedExpr,  // children[0] := children[1] (children[0] a Name)
};

struct Keyword {
  std::string name;
  ExprPtr value;
  SourceLoc loc;  // span of `name=value`
};

struct Expr {
  ExprKind kind;
  SourceLoc loc;
  std::string name;
  int64_t int_value = 0;
  bool is_unsigned = false;
  double float_value = 0.0;
  bool bool_value = false;
  BinaryOp binary_op = BinaryOp::Add;
  UnaryOp unary_op = UnaryOp::Neg;
  BoolOpKind bool_op = BoolOpKind::And;
  std::vector<CmpOp> cmp_ops;
  std::vector<ExprPtr> children;
  std::vector<Keyword> keywords;

  Expr(ExprKind k, SourceLoc l) : kind(k), loc(l) {}
};

enum class StmtKind {
  Expr,       // value
  Assign,     // targets[0] = targets[1] = ... = value   (each target: Name, Tuple/List of
              //   targets, Subscript, Attribute)
  AugAssign,  // targets[0] aug_op= value
  AnnAssign,  // targets[0] : annotation [= value]
  If,         // if test: body  else: orelse   (elif is a nested If in orelse)
  For,        // for targets[0] in value: body  [else: orelse]
  While,      // while test: body  [else: orelse]
  With,       // with value: body   (only `with tl.async_task(...)`: the parser refuses other context managers)
  Return,     // return [value]
  Assert,     // assert test [, msg]
  Pass,
  Break,
  Continue,
  Unsupported,  // a statement outside the kernel subset (name = its keyword, e.g. "with");
                // the parser records it so the builder can report it with a location
};

struct Stmt {
  StmtKind kind;
  SourceLoc loc;
  std::vector<ExprPtr> targets;
  ExprPtr value;
  ExprPtr test;
  ExprPtr msg;
  ExprPtr annotation;
  BinaryOp aug_op = BinaryOp::Add;
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> orelse;
  std::string name;

  Stmt(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
};

struct Param {
  std::string name;
  bool star = false;      // `*name`: the positional arguments past the others, as a tuple
  ExprPtr annotation;     // may be null
  ExprPtr default_value;  // may be null
  SourceLoc loc;
};

struct FunctionDef {
  std::string name;
  std::vector<Param> params;
  std::vector<ExprPtr> decorators;
  ExprPtr returns;        // `-> annotation`, may be null
  std::string docstring;  // removed from body
  std::vector<StmtPtr> body;
  SourceLoc loc;          // span of the name in `def name(`
  int32_t file = -1;
};

// What the CLI reads from a whole Python file: the top level, kept only as far
// as kernels need it. Other top-level statements are skipped (they are host
// code); their text is never interpreted.
struct Import {
  std::string module;  // "triton.language", "tegula", "math"
  std::string alias;   // name bound in the module scope ("tl"); for `from a import b as c`: c
  std::string member;  // for `from module import member`; empty otherwise
  SourceLoc loc;
};
struct ModuleAssign {
  std::string name;
  ExprPtr value;       // a literal-ish expression (the CLI evaluates constants only)
  SourceLoc loc;
};
struct Module {
  std::vector<Import> imports;
  std::vector<ModuleAssign> assigns;
  std::vector<FunctionDef> functions;
};

// Human-readable indented dump, one node per line, for `--emit ast` and tests.
std::string dump(const FunctionDef& fn);

}  // namespace tegula::ast
