// Private to the parser: the recursive-descent Parser class, whose grammar
// functions are spread over three files by topic:
//   parser.cpp         functions, blocks and statements (and parse_function)
//   parser_expr.cpp    expressions, from `a if c else b` down to atoms
//   parser_module.cpp  the top level of a whole file for the CLI (parse_module)
// Grammar functions are named after the rules of Python's grammar.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontend/ast.h"
#include "frontend/lexer.h"
#include "support/stack_room.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

// A Python construct a kernel cannot express, rejected where its keyword
// appears, with what to write instead.
struct Rejection {
  std::string_view keyword;
  std::string_view message;
  std::string_view hint;
};
// The rejection for keyword token `t`, or null.
const Rejection* find_rejection(const Token& t);

// How a token reads in a message: "'x'", "the end of the line"...
std::string describe(const Token& t);

class Parser {
 public:
  Parser(int32_t file, std::vector<Token> tokens) : file_(file), tokens_(std::move(tokens)) {}

  // The whole token stream is one (decorated) function definition.
  ast::FunctionDef function_source();
  // The whole token stream is one top-level simple statement line.
  std::vector<ast::StmtPtr> simple_statement_line();
  // The whole token stream is `import a.b as c, d` or `from a.b import c as d, e`.
  std::vector<ast::Import> import_statement();

 private:
  using Expr = ast::Expr;
  using ExprKind = ast::ExprKind;
  using ExprPtr = ast::ExprPtr;
  using Stmt = ast::Stmt;
  using StmtKind = ast::StmtKind;
  using StmtPtr = ast::StmtPtr;
  using BinaryTable = std::initializer_list<std::pair<std::string_view, ast::BinaryOp>>;

  // Every later pass walks the tree recursively, and so does its destructor:
  // bounding nesting here means no input can overflow the stack there.
  // Deep trees are left-leaning chains (`a + b + ...`, `x.f(...).g(...)`),
  // whose binary spine lowering walks in a loop; 3,000 is about where
  // CPython's compiler stops on a flat sum, so any kernel Python compiles
  // fits.
  static constexpr int32_t kMaxTreeDepth = 3000;
  static constexpr int32_t kMaxNesting = 200;

  // Counts the recursion of the grammar functions that can nest without
  // bound (parentheses, unary operators, `**`, conditional expressions,
  // statements and `elif` chains).
  class NestingGuard {
   public:
    NestingGuard(Parser& parser, const Token& at) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting)
        error_at(at.loc, Diag::NestedTooDeeply,
                 "the code is nested too deeply here", "split it into several statements");
      // The count bounds the grammar's recursion, not the stack it takes: each
      // level is some twenty frames, so a thread with a small stack (1 MB)
      // overflowed below the count. Measured, the bound holds on any thread.
      if (parser_.stack_room_.low())
        error_at(at.loc, Diag::NestedTooDeeply,
                 "the code nests too deeply here for the compiler's stack: the @jit functions inlined into "
                 "one another before it, or a thread with a small stack, have spent it",
                 "nest fewer calls inside one another, split deep expressions into several statements, or "
                 "compile on a thread with a larger stack");
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& parser_;
  };

  // ---- tokens (parser.cpp) ---------------------------------------------------
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept_op(std::string_view op) {
    if (!peek().is_op(op)) return false;
    advance();
    return true;
  }
  bool accept_keyword(std::string_view kw) {
    if (!peek().is_keyword(kw)) return false;
    advance();
    return true;
  }
  const Token& expect_op(std::string_view op, std::string message, std::string hint = {}) {
    if (!peek().is_op(op)) fail(peek(), Diag::InvalidSyntax, std::move(message), std::move(hint));
    return advance();
  }
  const Token& expect_keyword(std::string_view kw, std::string message) {
    if (!peek().is_keyword(kw)) fail(peek(), Diag::InvalidSyntax, std::move(message));
    return advance();
  }
  const Token& name_token(std::string_view what) {
    if (peek().kind != TokenKind::Name) fail(peek(), Diag::InvalidSyntax,
                                             "expected " + std::string(what) + ", found " + describe(peek()));
    return advance();
  }
  bool at_end_of_statement() const { return peek().kind == TokenKind::Newline || peek().is_op(";"); }
  [[noreturn]] void fail(const Token& t, Diag code, std::string message, std::string hint = {}) const {
    error_at(t.loc, code, std::move(message), std::move(hint));
  }
  bool starts_match_statement() const;
  [[noreturn]] void reject(const Token& t, const Rejection& r) const {
    fail(t, Diag::UnsupportedSyntax, std::string(r.message), std::string(r.hint));
  }

  // The span from `start` to the end of the last consumed token. A construct
  // running over several lines ends at its last token on the first line.
  SourceLoc span_from(const SourceLoc& start) const;

  // ---- functions and statements (parser.cpp) -------------------------------
  ast::FunctionDef decorated_function_def();
  bool decorator_is_host_only() const;  // the decorator after `@` holds what kernel expressions refuse
  std::vector<ast::Param> parameters();
  // The body after a compound statement's ':': an indented block, or simple
  // statements on the same line (`if x: y = 1`).
  std::vector<StmtPtr> block(std::string_view what, int32_t header_line);
  void statement(std::vector<StmtPtr>& out);
  StmtPtr if_stmt();
  StmtPtr for_stmt();
  StmtPtr while_stmt();
  // `with tl.async_task(...):` (Triton's warp-specialization blocks) is the
  // one `with` kernels may write; any other is refused like other unsupported keywords.
  bool at_async_task_block() const;
  StmtPtr with_stmt();
  void loop_else(Stmt& loop);
  void simple_stmts(std::vector<StmtPtr>& out);
  void expect_end_of_statement();
  StmtPtr simple_stmt();
  StmtPtr expression_or_assignment();
  void check_target(const Expr& target, std::string_view where);

  // ---- expressions (parser_expr.cpp) -----------------------------------------
  ExprPtr make(ExprKind kind, SourceLoc loc) { return std::make_unique<Expr>(kind, loc); }
  // Sets the span of a finished composite node and records (and bounds) the
  // depth of its tree.
  void finish(Expr& node, const SourceLoc& start);
  void record_depth(Expr& node);  // finish without changing the span
  int32_t depth_of(const Expr& e) const;
  bool starts_expression(const Token& t) const;

  // `a, b` without parentheses (assignment values, return values, for iterators).
  ExprPtr star_expressions();
  // A `for` target: like star_expressions, but stops before `in`.
  ExprPtr target_list();
  ExprPtr expression();
  ExprPtr lambda_expression();
  ExprPtr bool_op(ExprPtr (Parser::*operand)(), std::string_view keyword, ast::BoolOpKind kind);
  ExprPtr disjunction();
  ExprPtr conjunction();
  ExprPtr inversion();
  bool comparison_operator(ast::CmpOp& op);
  ExprPtr comparison();
  ExprPtr binary_level(ExprPtr (Parser::*operand)(), BinaryTable ops);
  ExprPtr bitwise_or();
  ExprPtr bitwise_xor();
  ExprPtr bitwise_and();
  ExprPtr shift_expr();
  ExprPtr sum();
  ExprPtr term();
  ExprPtr factor();
  ExprPtr power();
  ExprPtr primary();
  ExprPtr call(ExprPtr callee, SourceLoc start);
  ExprPtr subscript(ExprPtr value, SourceLoc start);
  ExprPtr slice();
  ExprPtr atom();
  ExprPtr parenthesized();
  // An f-string (with the literals beside it) and one of its fields.
  ExprPtr joined_string(const std::vector<FStringPart>& parts, const SourceLoc& loc);
  ExprPtr fstring_field(const FStringPart& part);
  ExprPtr list();
  // The `for ... in ... if ...` clauses after `element` inside brackets (the caller closes them).
  ExprPtr comprehension(ExprPtr element, SourceLoc start);

  // ---- the top level of a file (parser_module.cpp) ---------------------------
  std::string dotted_name();

  int32_t file_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int32_t nesting_ = 0;
  std::unordered_map<const Expr*, int32_t> tree_depth_;
  StackRoom stack_room_;  // of the thread that parses: a Parser is made and used on one thread
  std::vector<char> brackets_;  // brackets open around the current expression
};

}  // namespace tegula::frontend
