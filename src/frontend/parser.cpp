#include "frontend/parser.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

#include "frontend/lexer.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtKind;
using ast::StmtPtr;

// Python constructs a kernel cannot express, rejected where their keyword
// appears, with what to write instead.
struct Rejection {
  std::string_view keyword;
  std::string_view message;
  std::string_view hint;
};
constexpr std::array<Rejection, 16> kRejectedKeywords = {{
    {"lambda", "`lambda` expressions are not supported inside a kernel",
     "define a @tegula.jit function at module level and call it"},
    {"class", "`class` definitions are not supported inside a kernel",
     "define classes outside the kernel and pass their values as arguments"},
    {"global", "`global` statements are not supported inside a kernel",
     "a kernel reads module-level constants directly but cannot rebind them"},
    {"nonlocal", "`nonlocal` statements are not supported inside a kernel",
     "a kernel has no enclosing function scope; pass values as arguments"},
    {"with", "`with` statements are not supported inside a kernel",
     "a kernel has no context managers; write the body directly"},
    {"try", "`try` statements are not supported inside a kernel",
     "a kernel cannot catch exceptions; check conditions with `tl.device_assert`"},
    {"except", "`except` clauses are not supported inside a kernel",
     "a kernel cannot catch exceptions; check conditions with `tl.device_assert`"},
    {"finally", "`finally` clauses are not supported inside a kernel",
     "a kernel cannot catch exceptions; check conditions with `tl.device_assert`"},
    {"raise", "`raise` statements are not supported inside a kernel",
     "use `assert`, `tl.static_assert` or `tl.device_assert`"},
    {"del", "`del` statements are not supported inside a kernel",
     "leave the name unused, or rebind it"},
    {"import", "`import` statements are not supported inside a kernel",
     "import at module level; the kernel sees the module's globals"},
    {"from", "`import` statements are not supported inside a kernel",
     "import at module level; the kernel sees the module's globals"},
    {"yield", "`yield` is not supported inside a kernel",
     "a kernel is not a generator; write results through a pointer with tl.store"},
    {"async", "`async` is not supported inside a kernel", "kernels are plain functions"},
    {"await", "`await` is not supported inside a kernel", "kernels are plain functions"},
    {"def", "nested function definitions are not supported inside a kernel",
     "define the helper at module level with @tegula.jit and call it from the kernel"},
}};

const Rejection* find_rejection(const Token& t) {
  if (t.kind != TokenKind::Keyword) return nullptr;
  for (const Rejection& r : kRejectedKeywords)
    if (r.keyword == t.text) return &r;
  return nullptr;
}

constexpr std::array<std::pair<std::string_view, ast::BinaryOp>, 13> kAugmentedOps = {{
    {"+=", ast::BinaryOp::Add},       {"-=", ast::BinaryOp::Sub},     {"*=", ast::BinaryOp::Mul},
    {"/=", ast::BinaryOp::Div},       {"//=", ast::BinaryOp::FloorDiv}, {"%=", ast::BinaryOp::Mod},
    {"**=", ast::BinaryOp::Pow},      {"@=", ast::BinaryOp::MatMul},  {"<<=", ast::BinaryOp::LShift},
    {">>=", ast::BinaryOp::RShift},   {"&=", ast::BinaryOp::BitAnd},  {"|=", ast::BinaryOp::BitOr},
    {"^=", ast::BinaryOp::BitXor},
}};

using BinaryTable = std::initializer_list<std::pair<std::string_view, ast::BinaryOp>>;

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Newline: return "the end of the line";
    case TokenKind::Indent: return "an indent";
    case TokenKind::Dedent: return "the end of the block";
    case TokenKind::EndOfFile: return "the end of the source";
    case TokenKind::String: return "a string";
    default: return "'" + t.text + "'";
  }
}

class Parser {
 public:
  Parser(int32_t file, std::vector<Token> tokens) : file_(file), tokens_(std::move(tokens)) {}

  // The whole token stream is one (decorated) function definition.
  ast::FunctionDef function_source() {
    ast::FunctionDef fn = decorated_function_def();
    if (peek().kind != TokenKind::EndOfFile)
      fail(peek(), "unexpected code after the function",
           "the source must hold exactly one function definition");
    return fn;
  }

  // The whole token stream is one top-level simple statement.
  std::vector<StmtPtr> simple_statement_line() {
    std::vector<StmtPtr> out;
    simple_stmts(out);
    if (peek().kind != TokenKind::EndOfFile) fail(peek(), "unexpected code after the statement");
    return out;
  }

  // `import a.b as c, d` / `from a.b import c as d, e`.
  std::vector<ast::Import> import_statement() {
    std::vector<ast::Import> imports;
    if (accept_keyword("import")) {
      do {
        SourceLoc start = peek().loc;
        std::string module = dotted_name();
        ast::Import imp;
        if (accept_keyword("as")) {
          imp.module = module;
          imp.alias = name_token("a name after `as`").text;
        } else {
          // `import a.b` binds the name `a` to the top-level package `a`.
          imp.module = module.substr(0, module.find('.'));
          imp.alias = imp.module;
        }
        imp.loc = span_from(start);
        imports.push_back(std::move(imp));
      } while (accept_op(","));
    } else {
      expect_keyword("from", "expected an import statement");
      std::string module;
      while (peek().is_op(".") || peek().is_op("...")) module += advance().text;
      if (!peek().is_keyword("import")) module += dotted_name();
      expect_keyword("import", "expected `import` after the module name");
      bool parenthesized = accept_op("(");
      do {
        if (parenthesized && peek().is_op(")")) break;
        SourceLoc start = peek().loc;
        if (accept_op("*")) continue;  // binds names we cannot know; nothing to record
        ast::Import imp;
        imp.module = module;
        imp.member = name_token("a name to import").text;
        imp.alias = accept_keyword("as") ? name_token("a name after `as`").text : imp.member;
        imp.loc = span_from(start);
        imports.push_back(std::move(imp));
      } while (accept_op(","));
      if (parenthesized) expect_op(")", "expected ')' to close the import list");
    }
    expect_end_of_statement();
    if (peek().kind != TokenKind::EndOfFile) fail(peek(), "unexpected code after the import");
    return imports;
  }

 private:
  // ---- token helpers ----------------------------------------------------

  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
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
    if (!peek().is_op(op)) fail(peek(), std::move(message), std::move(hint));
    return advance();
  }
  const Token& expect_keyword(std::string_view kw, std::string message) {
    if (!peek().is_keyword(kw)) fail(peek(), std::move(message));
    return advance();
  }
  const Token& name_token(std::string_view what) {
    if (peek().kind != TokenKind::Name)
      fail(peek(), "expected " + std::string(what) + ", found " + describe(peek()));
    return advance();
  }
  std::string dotted_name() {
    std::string name = name_token("a module name").text;
    while (accept_op(".")) name += "." + name_token("a module name after '.'").text;
    return name;
  }

  [[noreturn]] void fail(const Token& t, std::string message, std::string hint = {}) const {
    error_at(t.loc, std::move(message), std::move(hint));
  }
  [[noreturn]] void reject(const Token& t, const Rejection& r) const {
    fail(t, std::string(r.message), std::string(r.hint));
  }

  // The span from `start` to the end of the last consumed token. A construct
  // running over several lines ends at its last token on the first line.
  SourceLoc span_from(const SourceLoc& start) const {
    SourceLoc loc = start;
    for (size_t i = pos_; i-- > 0;) {
      const Token& t = tokens_[i];
      if (t.kind == TokenKind::Newline || t.kind == TokenKind::Indent || t.kind == TokenKind::Dedent) continue;
      if (t.loc.line < start.line || (t.loc.line == start.line && t.loc.col < start.col)) break;
      if (t.loc.line == start.line) {
        loc.end_col = std::max(start.end_col, t.loc.end_col);
        break;
      }
    }
    return loc;
  }

  ExprPtr make(ExprKind kind, SourceLoc loc) { return std::make_unique<Expr>(kind, loc); }

  // Sets the span of a finished composite node and bounds the depth of the
  // tree. Every later pass walks the tree recursively (so does its
  // destructor), so a pathological `a+a+...+a` must stop here, not overflow
  // the stack there.
  void finish(Expr& node, const SourceLoc& start) {
    node.loc = span_from(start);
    int32_t depth = 0;
    for (const ExprPtr& child : node.children)
      if (child) depth = std::max(depth, depth_of(*child));
    for (const ast::Keyword& k : node.keywords) depth = std::max(depth, depth_of(*k.value));
    if (depth + 1 > kMaxTreeDepth)
      error_at(node.loc, "expression is too deeply nested", "split it into several statements");
    tree_depth_[&node] = depth + 1;
  }
  int32_t depth_of(const Expr& e) const {
    auto it = tree_depth_.find(&e);
    return it == tree_depth_.end() ? 1 : it->second;
  }

  // Counts the recursion of the grammar functions that can nest without
  // bound (parentheses, unary operators, `**`, conditional expressions,
  // blocks and `elif` chains), so that no input overflows the stack.
  class NestingGuard {
   public:
    NestingGuard(Parser& parser, const Token& at) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting)
        error_at(at.loc, "the code is nested too deeply here", "split it into several statements");
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& parser_;
  };

  bool at_end_of_statement() const { return peek().kind == TokenKind::Newline || peek().is_op(";"); }

  bool starts_expression(const Token& t) const {
    switch (t.kind) {
      case TokenKind::Name:
      case TokenKind::Int:
      case TokenKind::Float:
      case TokenKind::String:
        return true;
      case TokenKind::Keyword:
        return t.text == "True" || t.text == "False" || t.text == "None" || t.text == "not" ||
               t.text == "lambda" || t.text == "await" || t.text == "yield";
      case TokenKind::Op:
        return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+" ||
               t.text == "~" || t.text == "..." || t.text == "*" || t.text == "**";
      default:
        return false;
    }
  }

  // ---- functions and blocks ---------------------------------------------

  ast::FunctionDef decorated_function_def() {
    ast::FunctionDef fn;
    fn.file = file_;
    while (accept_op("@")) {
      fn.decorators.push_back(expression());
      if (peek().kind != TokenKind::Newline)
        fail(peek(), "expected a new line after the decorator, found " + describe(peek()));
      advance();
    }
    if (peek().is_keyword("async")) fail(peek(), "`async` functions cannot be kernels", "remove `async`");
    expect_keyword("def", "expected a function definition (`def`), found " + describe(peek()));
    const Token& name = name_token("the function name after `def`");
    fn.name = name.text;
    fn.loc = name.loc;
    expect_op("(", "expected '(' after the function name");
    fn.params = parameters();
    expect_op(")", "expected ',' or ')' in the parameter list, found " + describe(peek()));
    if (accept_op("->")) fn.returns = expression();
    expect_op(":", "expected ':' after the function signature, found " + describe(peek()));
    fn.body = block("the function definition", name.loc.line);
    if (!fn.body.empty() && fn.body.front()->kind == StmtKind::Expr &&
        fn.body.front()->value->kind == ExprKind::Str) {
      fn.docstring = fn.body.front()->value->name;
      fn.body.erase(fn.body.begin());
    }
    return fn;
  }

  std::vector<ast::Param> parameters() {
    std::vector<ast::Param> params;
    while (!peek().is_op(")")) {
      if (peek().is_op("*") || peek().is_op("**"))
        fail(peek(), "star parameters (`*args`, `**kwargs`) are not supported in a kernel signature",
             "list every parameter by name");
      if (peek().is_op("/"))
        fail(peek(), "the positional-only marker `/` is not supported in a kernel signature",
             "remove the `/`");
      SourceLoc start = peek().loc;
      ast::Param p;
      const Token& name = name_token("a parameter name");
      p.name = name.text;
      for (const ast::Param& other : params)
        if (other.name == p.name) fail(name, "duplicate parameter '" + p.name + "' in the function definition");
      if (accept_op(":")) p.annotation = expression();
      if (accept_op("=")) {
        p.default_value = expression();
      } else if (!params.empty() && params.back().default_value) {
        fail(name, "parameter '" + p.name + "' without a default follows a parameter with a default",
             "give it a default value or move it before the defaulted parameters");
      }
      p.loc = span_from(start);
      params.push_back(std::move(p));
      if (!accept_op(",")) break;
    }
    return params;
  }

  // The body after a compound statement's ':' — an indented block, or simple
  // statements on the same line (`if x: y = 1`).
  std::vector<StmtPtr> block(std::string_view what, int32_t header_line) {
    std::vector<StmtPtr> body;
    if (peek().kind != TokenKind::Newline) {
      static constexpr std::array<std::string_view, 6> kCompound = {"if", "for", "while", "def", "with", "try"};
      if (peek().kind == TokenKind::Keyword &&
          std::find(kCompound.begin(), kCompound.end(), peek().text) != kCompound.end())
        fail(peek(), "invalid syntax: a compound statement cannot follow ':' on the same line",
             "start it on a new, indented line");
      simple_stmts(body);
      return body;
    }
    advance();
    if (peek().kind != TokenKind::Indent)
      fail(peek(), "expected an indented block after " + std::string(what) + " on line " +
                       std::to_string(header_line));
    advance();
    while (peek().kind != TokenKind::Dedent && peek().kind != TokenKind::EndOfFile) statement(body);
    advance();
    return body;
  }

  // ---- statements ---------------------------------------------------------

  void statement(std::vector<StmtPtr>& out) {
    const Token& t = peek();
    NestingGuard guard(*this, t);
    if (t.kind == TokenKind::Indent) fail(t, "unexpected indent", "line this statement up with the one before it");
    if (t.is_op("@"))
      fail(t, "decorators are not supported on nested functions",
           "define the helper at module level with @tegula.jit and call it from the kernel");
    if (t.is_keyword("if")) {
      out.push_back(if_stmt());
    } else if (t.is_keyword("for")) {
      out.push_back(for_stmt());
    } else if (t.is_keyword("while")) {
      out.push_back(while_stmt());
    } else if (t.is_keyword("elif") || t.is_keyword("else")) {
      fail(t, "invalid syntax: `" + t.text + "` without a matching `if`",
           "line it up with its `if` (or `for` / `while` for `else`)");
    } else {
      simple_stmts(out);
    }
  }

  StmtPtr if_stmt() {
    NestingGuard guard(*this, peek());
    const Token& keyword = advance();  // `if` or `elif`
    auto stmt = std::make_unique<Stmt>(StmtKind::If, keyword.loc);
    stmt->test = expression();
    expect_op(":", "expected ':' after the `" + keyword.text + "` condition, found " + describe(peek()));
    stmt->loc = span_from(keyword.loc);
    stmt->body = block("the `" + keyword.text + "` statement", keyword.loc.line);
    if (peek().is_keyword("elif")) {
      stmt->orelse.push_back(if_stmt());
    } else if (peek().is_keyword("else")) {
      const Token& else_token = advance();
      expect_op(":", "expected ':' after `else`, found " + describe(peek()));
      stmt->orelse = block("`else`", else_token.loc.line);
    }
    return stmt;
  }

  StmtPtr for_stmt() {
    const Token& keyword = advance();
    auto stmt = std::make_unique<Stmt>(StmtKind::For, keyword.loc);
    stmt->targets.push_back(target_list());
    check_target(*stmt->targets[0], "`for` loop");
    expect_keyword("in", "expected 'in' after the `for` target, found " + describe(peek()));
    stmt->value = star_expressions();
    expect_op(":", "expected ':' after the `for` iterator, found " + describe(peek()));
    stmt->loc = span_from(keyword.loc);
    stmt->body = block("the `for` statement", keyword.loc.line);
    loop_else(*stmt);
    return stmt;
  }

  StmtPtr while_stmt() {
    const Token& keyword = advance();
    auto stmt = std::make_unique<Stmt>(StmtKind::While, keyword.loc);
    stmt->test = expression();
    expect_op(":", "expected ':' after the `while` condition, found " + describe(peek()));
    stmt->loc = span_from(keyword.loc);
    stmt->body = block("the `while` statement", keyword.loc.line);
    loop_else(*stmt);
    return stmt;
  }

  void loop_else(Stmt& loop) {
    if (!peek().is_keyword("else")) return;
    const Token& else_token = advance();
    expect_op(":", "expected ':' after `else`, found " + describe(peek()));
    loop.orelse = block("`else`", else_token.loc.line);
  }

  void simple_stmts(std::vector<StmtPtr>& out) {
    while (true) {
      out.push_back(simple_stmt());
      if (!accept_op(";") || peek().kind == TokenKind::Newline) break;
    }
    expect_end_of_statement();
  }

  void expect_end_of_statement() {
    if (peek().kind != TokenKind::Newline)
      fail(peek(), "invalid syntax: expected the end of the statement, found " + describe(peek()),
           "is an operator or a comma missing?");
    advance();
  }

  StmtPtr simple_stmt() {
    const Token& t = peek();
    if (const Rejection* r = find_rejection(t)) reject(t, *r);
    if (t.is_keyword("pass") || t.is_keyword("break") || t.is_keyword("continue")) {
      advance();
      return std::make_unique<Stmt>(t.text == "pass"    ? StmtKind::Pass
                                    : t.text == "break" ? StmtKind::Break
                                                        : StmtKind::Continue,
                                    t.loc);
    }
    if (t.is_keyword("return")) {
      advance();
      auto stmt = std::make_unique<Stmt>(StmtKind::Return, t.loc);
      if (!at_end_of_statement()) stmt->value = star_expressions();
      stmt->loc = span_from(t.loc);
      return stmt;
    }
    if (t.is_keyword("assert")) {
      advance();
      auto stmt = std::make_unique<Stmt>(StmtKind::Assert, t.loc);
      stmt->test = expression();
      if (accept_op(",")) stmt->msg = expression();
      stmt->loc = span_from(t.loc);
      return stmt;
    }
    return expression_or_assignment();
  }

  StmtPtr expression_or_assignment() {
    SourceLoc start = peek().loc;
    ExprPtr first = star_expressions();
    if (peek().is_op(":")) {
      advance();
      if (first->kind != ExprKind::Name && first->kind != ExprKind::Attribute &&
          first->kind != ExprKind::Subscript)
        error_at(first->loc, "only a single name, attribute or subscript can be annotated");
      auto stmt = std::make_unique<Stmt>(StmtKind::AnnAssign, start);
      stmt->targets.push_back(std::move(first));
      stmt->annotation = expression();
      if (accept_op("=")) stmt->value = star_expressions();
      stmt->loc = span_from(start);
      return stmt;
    }
    for (const auto& [spelling, op] : kAugmentedOps) {
      if (!peek().is_op(spelling)) continue;
      advance();
      if (first->kind != ExprKind::Name && first->kind != ExprKind::Attribute &&
          first->kind != ExprKind::Subscript)
        error_at(first->loc, "invalid target for augmented assignment `" + std::string(spelling) + "`",
                 "an augmented assignment updates one name, attribute or subscript");
      auto stmt = std::make_unique<Stmt>(StmtKind::AugAssign, start);
      stmt->aug_op = op;
      stmt->targets.push_back(std::move(first));
      stmt->value = star_expressions();
      stmt->loc = span_from(start);
      return stmt;
    }
    if (peek().is_op("=")) {
      auto stmt = std::make_unique<Stmt>(StmtKind::Assign, start);
      stmt->targets.push_back(std::move(first));
      while (accept_op("=")) stmt->targets.push_back(star_expressions());
      stmt->value = std::move(stmt->targets.back());
      stmt->targets.pop_back();
      for (const ExprPtr& target : stmt->targets) check_target(*target, "assignment");
      stmt->loc = span_from(start);
      return stmt;
    }
    auto stmt = std::make_unique<Stmt>(StmtKind::Expr, start);
    stmt->value = std::move(first);
    stmt->loc = span_from(start);
    return stmt;
  }

  void check_target(const Expr& target, std::string_view where) {
    switch (target.kind) {
      case ExprKind::Name:
      case ExprKind::Attribute:
      case ExprKind::Subscript:
        return;
      case ExprKind::Tuple:
      case ExprKind::List:
        for (const ExprPtr& child : target.children) check_target(*child, where);
        return;
      case ExprKind::Call:
        error_at(target.loc, "cannot assign to a function call in " + std::string(where),
                 "did you mean '==' instead of '='?");
      case ExprKind::Compare:
        error_at(target.loc, "cannot assign to a comparison in " + std::string(where),
                 "did you mean '==' instead of '='?");
      case ExprKind::Int:
      case ExprKind::Float:
      case ExprKind::Bool:
      case ExprKind::None:
      case ExprKind::Str:
        error_at(target.loc, "cannot assign to a literal in " + std::string(where));
      default:
        error_at(target.loc, "cannot assign to an expression in " + std::string(where),
                 "the left side must be a name, a subscript, an attribute, or a tuple of them");
    }
  }

  // ---- expressions ----------------------------------------------------------

  // `a, b` without parentheses (assignment values, return values, for iterators).
  ExprPtr star_expressions() {
    SourceLoc start = peek().loc;
    ExprPtr first = expression();
    if (!peek().is_op(",")) return first;
    auto tuple = make(ExprKind::Tuple, start);
    tuple->children.push_back(std::move(first));
    while (accept_op(",") && starts_expression(peek())) tuple->children.push_back(expression());
    finish(*tuple, start);
    return tuple;
  }

  // A `for` target: like star_expressions, but stops before `in`.
  ExprPtr target_list() {
    SourceLoc start = peek().loc;
    ExprPtr first = bitwise_or();
    if (!peek().is_op(",")) return first;
    auto tuple = make(ExprKind::Tuple, start);
    tuple->children.push_back(std::move(first));
    while (accept_op(",") && starts_expression(peek())) tuple->children.push_back(bitwise_or());
    finish(*tuple, start);
    return tuple;
  }

  ExprPtr expression() {
    NestingGuard guard(*this, peek());
    SourceLoc start = peek().loc;
    ExprPtr body = disjunction();
    if (accept_keyword("if")) {
      auto node = make(ExprKind::IfExp, start);
      node->children.push_back(disjunction());
      expect_keyword("else", "expected 'else' in the conditional expression, found " + describe(peek()));
      node->children.push_back(std::move(body));
      node->children.push_back(expression());
      finish(*node, start);
      body = std::move(node);
    }
    if (peek().is_op(":="))
      fail(peek(), "assignment expressions (`:=`) are not supported inside a kernel",
           "assign the value on its own line first");
    if (peek().is_keyword("for") || peek().is_keyword("async")) {
      // Only reached inside brackets or call parentheses: `[x for x in y]`, `f(x for x in y)`.
      if (!brackets_.empty())
        fail(peek(), "comprehensions are not supported inside a kernel",
             "write a `for` loop (over `tl.static_range` to unroll it) instead");
    }
    return body;
  }

  ExprPtr bool_op(ExprPtr (Parser::*operand)(), std::string_view keyword, ast::BoolOpKind kind) {
    SourceLoc start = peek().loc;
    ExprPtr first = (this->*operand)();
    if (!peek().is_keyword(keyword)) return first;
    auto node = make(ExprKind::BoolOp, start);
    node->bool_op = kind;
    node->children.push_back(std::move(first));
    while (accept_keyword(keyword)) node->children.push_back((this->*operand)());
    finish(*node, start);
    return node;
  }
  ExprPtr disjunction() { return bool_op(&Parser::conjunction, "or", ast::BoolOpKind::Or); }
  ExprPtr conjunction() { return bool_op(&Parser::inversion, "and", ast::BoolOpKind::And); }

  ExprPtr inversion() {
    if (!peek().is_keyword("not")) return comparison();
    NestingGuard guard(*this, peek());
    const Token& op = advance();
    auto node = make(ExprKind::Unary, op.loc);
    node->unary_op = ast::UnaryOp::Not;
    node->children.push_back(inversion());
    finish(*node, op.loc);
    return node;
  }

  // Consumes a comparison operator if one is next.
  bool comparison_operator(ast::CmpOp& op) {
    static constexpr std::array<std::pair<std::string_view, ast::CmpOp>, 6> kSymbols = {{
        {"==", ast::CmpOp::Eq}, {"!=", ast::CmpOp::NotEq}, {"<", ast::CmpOp::Lt},
        {"<=", ast::CmpOp::LtE}, {">", ast::CmpOp::Gt}, {">=", ast::CmpOp::GtE},
    }};
    for (const auto& [spelling, cmp] : kSymbols) {
      if (accept_op(spelling)) {
        op = cmp;
        return true;
      }
    }
    if (accept_keyword("in")) {
      op = ast::CmpOp::In;
      return true;
    }
    if (peek().is_keyword("not") && peek(1).is_keyword("in")) {
      advance();
      advance();
      op = ast::CmpOp::NotIn;
      return true;
    }
    if (accept_keyword("is")) {
      op = accept_keyword("not") ? ast::CmpOp::IsNot : ast::CmpOp::Is;
      return true;
    }
    return false;
  }

  ExprPtr comparison() {
    SourceLoc start = peek().loc;
    ExprPtr first = bitwise_or();
    ast::CmpOp op;
    if (!comparison_operator(op)) return first;
    auto node = make(ExprKind::Compare, start);
    node->children.push_back(std::move(first));
    do {
      node->cmp_ops.push_back(op);
      node->children.push_back(bitwise_or());
    } while (comparison_operator(op));
    finish(*node, start);
    return node;
  }

  // One left-associative level of binary operators.
  ExprPtr binary_level(ExprPtr (Parser::*operand)(), BinaryTable ops) {
    SourceLoc start = peek().loc;
    ExprPtr left = (this->*operand)();
    while (true) {
      const auto* match = std::find_if(ops.begin(), ops.end(),
                                       [&](const auto& entry) { return peek().is_op(entry.first); });
      if (match == ops.end()) return left;
      advance();
      auto node = make(ExprKind::Binary, start);
      node->binary_op = match->second;
      node->children.push_back(std::move(left));
      node->children.push_back((this->*operand)());
      finish(*node, start);
      left = std::move(node);
    }
  }
  ExprPtr bitwise_or() { return binary_level(&Parser::bitwise_xor, {{"|", ast::BinaryOp::BitOr}}); }
  ExprPtr bitwise_xor() { return binary_level(&Parser::bitwise_and, {{"^", ast::BinaryOp::BitXor}}); }
  ExprPtr bitwise_and() { return binary_level(&Parser::shift_expr, {{"&", ast::BinaryOp::BitAnd}}); }
  ExprPtr shift_expr() {
    return binary_level(&Parser::sum, {{"<<", ast::BinaryOp::LShift}, {">>", ast::BinaryOp::RShift}});
  }
  ExprPtr sum() { return binary_level(&Parser::term, {{"+", ast::BinaryOp::Add}, {"-", ast::BinaryOp::Sub}}); }
  ExprPtr term() {
    return binary_level(&Parser::factor, {{"*", ast::BinaryOp::Mul},
                                          {"/", ast::BinaryOp::Div},
                                          {"//", ast::BinaryOp::FloorDiv},
                                          {"%", ast::BinaryOp::Mod},
                                          {"@", ast::BinaryOp::MatMul}});
  }

  ExprPtr factor() {
    const Token& t = peek();
    ast::UnaryOp op;
    if (t.is_op("-")) op = ast::UnaryOp::Neg;
    else if (t.is_op("+")) op = ast::UnaryOp::Pos;
    else if (t.is_op("~")) op = ast::UnaryOp::Invert;
    else return power();
    NestingGuard guard(*this, t);
    advance();
    auto node = make(ExprKind::Unary, t.loc);
    node->unary_op = op;
    node->children.push_back(factor());
    finish(*node, t.loc);
    return node;
  }

  // `**` binds tighter than a unary operator on its left and looser than one on
  // its right: -x**2 == -(x**2), 2**-1 == 2**(-1). It is right-associative.
  ExprPtr power() {
    SourceLoc start = peek().loc;
    ExprPtr base = primary();
    if (!peek().is_op("**")) return base;
    NestingGuard guard(*this, advance());
    auto node = make(ExprKind::Binary, start);
    node->binary_op = ast::BinaryOp::Pow;
    node->children.push_back(std::move(base));
    node->children.push_back(factor());
    finish(*node, start);
    return node;
  }

  ExprPtr primary() {
    SourceLoc start = peek().loc;
    ExprPtr value = atom();
    while (true) {
      if (accept_op(".")) {
        auto node = make(ExprKind::Attribute, start);
        node->name = name_token("an attribute name after '.'").text;
        node->children.push_back(std::move(value));
        finish(*node, start);
        value = std::move(node);
      } else if (peek().is_op("(")) {
        value = call(std::move(value), start);
      } else if (peek().is_op("[")) {
        value = subscript(std::move(value), start);
      } else {
        return value;
      }
    }
  }

  ExprPtr call(ExprPtr callee, SourceLoc start) {
    const Token& open = advance();
    brackets_.push_back('(');
    auto node = make(ExprKind::Call, start);
    node->children.push_back(std::move(callee));
    while (!peek().is_op(")")) {
      if (peek().kind == TokenKind::Name && peek(1).is_op("=")) {
        const Token& name = advance();
        advance();
        for (const ast::Keyword& k : node->keywords)
          if (k.name == name.text) fail(name, "keyword argument repeated: '" + name.text + "'");
        ast::Keyword keyword;
        keyword.name = name.text;
        keyword.value = expression();
        keyword.loc = span_from(name.loc);
        node->keywords.push_back(std::move(keyword));
      } else {
        SourceLoc arg_start = peek().loc;
        ExprPtr arg = expression();
        if (!node->keywords.empty())
          error_at(span_from(arg_start), "positional argument follows keyword argument",
                   "pass it by name, or move it before the keyword arguments");
        node->children.push_back(std::move(arg));
      }
      if (!accept_op(",")) break;
    }
    if (!peek().is_op(")"))
      fail(peek(), "invalid syntax: expected ',' or ')' in the call on line " +
                       std::to_string(open.loc.line) + ", found " + describe(peek()));
    advance();
    brackets_.pop_back();
    finish(*node, start);
    return node;
  }

  ExprPtr subscript(ExprPtr value, SourceLoc start) {
    advance();
    brackets_.push_back('[');
    auto node = make(ExprKind::Subscript, start);
    node->children.push_back(std::move(value));
    do {
      if (peek().is_op("]") && node->children.size() > 1) break;
      node->children.push_back(slice());
    } while (accept_op(","));
    expect_op("]", "invalid syntax: expected ',' or ']' in the subscript, found " + describe(peek()));
    brackets_.pop_back();
    finish(*node, start);
    return node;
  }

  // One index of a subscript: an expression or `lo:hi:step` with parts optional.
  ExprPtr slice() {
    SourceLoc start = peek().loc;
    ExprPtr lo;
    if (!peek().is_op(":")) {
      lo = expression();
      if (!peek().is_op(":")) return lo;
    }
    advance();
    auto node = make(ExprKind::Slice, start);
    auto bound_follows = [&] { return !peek().is_op(":") && !peek().is_op(",") && !peek().is_op("]"); };
    ExprPtr hi = bound_follows() ? expression() : nullptr;
    ExprPtr step;
    if (accept_op(":") && bound_follows()) step = expression();
    node->children.push_back(std::move(lo));
    node->children.push_back(std::move(hi));
    node->children.push_back(std::move(step));
    finish(*node, start);
    return node;
  }

  ExprPtr atom() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::Name: {
        advance();
        auto node = make(ExprKind::Name, t.loc);
        node->name = t.text;
        return node;
      }
      case TokenKind::Int: {
        advance();
        auto node = make(ExprKind::Int, t.loc);
        node->int_value = t.int_value;
        node->is_unsigned = t.is_unsigned;
        return node;
      }
      case TokenKind::Float: {
        advance();
        auto node = make(ExprKind::Float, t.loc);
        node->float_value = t.float_value;
        return node;
      }
      case TokenKind::String: {
        auto node = make(ExprKind::Str, t.loc);
        while (peek().kind == TokenKind::String) node->name += advance().value;  // "a" "b" == "ab"
        finish(*node, t.loc);
        return node;
      }
      case TokenKind::Keyword: {
        if (t.text == "True" || t.text == "False") {
          advance();
          auto node = make(ExprKind::Bool, t.loc);
          node->bool_value = t.text == "True";
          return node;
        }
        if (t.text == "None") {
          advance();
          return make(ExprKind::None, t.loc);
        }
        if (const Rejection* r = find_rejection(t)) reject(t, *r);
        break;
      }
      case TokenKind::Op: {
        if (t.text == "(") return parenthesized();
        if (t.text == "[") return list();
        if (t.text == "{")
          fail(t, "dict and set literals are not supported inside a kernel",
               "use a tuple, or separate variables");
        if (t.text == "...")
          fail(t, "`...` (Ellipsis) is not supported inside a kernel", "spell out the slices, e.g. x[:, :]");
        if (t.text == "*" || t.text == "**")
          fail(t, "star expressions (`*x`, `**x`) are not supported inside a kernel",
               "pass or unpack the values one by one");
        break;
      }
      default:
        break;
    }
    fail(t, "invalid syntax: expected an expression, found " + describe(t));
  }

  ExprPtr parenthesized() {
    const Token& open = advance();
    brackets_.push_back('(');
    if (accept_op(")")) {
      brackets_.pop_back();
      return make(ExprKind::Tuple, span_from(open.loc));
    }
    ExprPtr first = expression();
    if (accept_op(")")) {
      brackets_.pop_back();
      return first;  // a parenthesized expression keeps its own span, as in Python
    }
    auto tuple = make(ExprKind::Tuple, open.loc);
    tuple->children.push_back(std::move(first));
    while (accept_op(",") && !peek().is_op(")")) tuple->children.push_back(expression());
    expect_op(")", "invalid syntax: expected ',' or ')' in the parenthesized expression on line " +
                       std::to_string(open.loc.line) + ", found " + describe(peek()));
    brackets_.pop_back();
    finish(*tuple, open.loc);
    return tuple;
  }

  ExprPtr list() {
    const Token& open = advance();
    brackets_.push_back('[');
    auto node = make(ExprKind::List, open.loc);
    while (!peek().is_op("]")) {
      node->children.push_back(expression());
      if (!accept_op(",")) break;
    }
    expect_op("]", "invalid syntax: expected ',' or ']' in the list on line " + std::to_string(open.loc.line) +
                       ", found " + describe(peek()));
    brackets_.pop_back();
    finish(*node, open.loc);
    return node;
  }

  static constexpr int32_t kMaxTreeDepth = 300;
  static constexpr int32_t kMaxNesting = 200;

  int32_t file_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int32_t nesting_ = 0;
  std::unordered_map<const Expr*, int32_t> tree_depth_;
  std::vector<char> brackets_;  // open brackets around the current expression
};

ExprPtr clone(const Expr& e) {
  auto copy = std::make_unique<Expr>(e.kind, e.loc);
  copy->name = e.name;
  copy->int_value = e.int_value;
  copy->is_unsigned = e.is_unsigned;
  copy->float_value = e.float_value;
  copy->bool_value = e.bool_value;
  copy->binary_op = e.binary_op;
  copy->unary_op = e.unary_op;
  copy->bool_op = e.bool_op;
  copy->cmp_ops = e.cmp_ops;
  for (const ExprPtr& child : e.children) copy->children.push_back(child ? clone(*child) : nullptr);
  for (const ast::Keyword& k : e.keywords) copy->keywords.push_back(ast::Keyword{k.name, clone(*k.value), k.loc});
  return copy;
}

// Whether the name `jit` appears as a word in the decorator lines at the start
// of `text` (used only when the definition does not even tokenize).
bool decorator_text_mentions_jit(std::string_view text) {
  size_t line = 0;
  while (line < text.size() && text[line] == '@') {
    size_t end = std::min(text.find('\n', line), text.size());
    for (size_t at = text.find("jit", line); at != std::string_view::npos && at < end;
         at = text.find("jit", at + 1)) {
      auto word_char = [&](size_t i) {
        char c = text[i];
        return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      };
      if ((at == 0 || !word_char(at - 1)) && (at + 3 >= text.size() || !word_char(at + 3))) return true;
    }
    line = end + 1;
  }
  return false;
}

bool decorators_mention_jit(const std::vector<Token>& tokens) {
  for (const Token& t : tokens) {
    if (t.is_keyword("def")) return false;
    if (t.kind == TokenKind::Name && t.text == "jit") return true;
  }
  return false;
}

void parse_top_level_statement(const SourceManager& sources, int32_t file, TextRange range,
                               ast::Module& module) {
  std::string_view text = std::string_view(sources.file(file).text).substr(range.begin, range.end - range.begin);
  std::vector<Token> tokens;
  try {
    tokens = tokenize(sources, file, range);
  } catch (const UserError&) {
    if (decorator_text_mentions_jit(text)) throw;
    return;  // host code we do not need to understand
  }
  const Token& first = tokens.front();
  if (first.is_op("@") || first.is_keyword("def")) {
    try {
      module.functions.push_back(Parser(file, tokens).function_source());
    } catch (const UserError&) {
      if (decorators_mention_jit(tokens)) throw;
    }
    return;
  }
  try {
    if (first.is_keyword("import") || first.is_keyword("from")) {
      for (ast::Import& imp : Parser(file, tokens).import_statement())
        module.imports.push_back(std::move(imp));
      return;
    }
    if (first.kind != TokenKind::Name) return;
    for (StmtPtr& stmt : Parser(file, tokens).simple_statement_line()) {
      if (stmt->kind == StmtKind::AnnAssign && stmt->value && stmt->targets[0]->kind == ExprKind::Name) {
        module.assigns.push_back(ast::ModuleAssign{stmt->targets[0]->name, std::move(stmt->value), stmt->loc});
      } else if (stmt->kind == StmtKind::Assign) {
        // `A = B = 1` binds both names; a tuple target is host code we skip.
        for (const ExprPtr& target : stmt->targets)
          if (target->kind == ExprKind::Name)
            module.assigns.push_back(ast::ModuleAssign{target->name, clone(*stmt->value), stmt->loc});
      }
    }
  } catch (const UserError&) {
    // Not a statement of the kernel subset: host code, skipped.
  }
}

}  // namespace

ast::FunctionDef parse_function(const SourceManager& sources, int32_t file) {
  return Parser(file, tokenize(sources, file)).function_source();
}

ast::Module parse_module(const SourceManager& sources, int32_t file) {
  ast::Module module;
  for (TextRange range : split_top_level(sources.file(file).text))
    parse_top_level_statement(sources, file, range, module);
  return module;
}

}  // namespace tegula::frontend
