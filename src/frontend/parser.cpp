#include "frontend/parser.h"

#include "frontend/parser_internal.h"

namespace tegula::frontend {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtKind;
using ast::StmtPtr;

namespace {

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

constexpr std::array<std::pair<std::string_view, ast::BinaryOp>, 13> kAugmentedOps = {{
    {"+=", ast::BinaryOp::Add},       {"-=", ast::BinaryOp::Sub},     {"*=", ast::BinaryOp::Mul},
    {"/=", ast::BinaryOp::Div},       {"//=", ast::BinaryOp::FloorDiv}, {"%=", ast::BinaryOp::Mod},
    {"**=", ast::BinaryOp::Pow},      {"@=", ast::BinaryOp::MatMul},  {"<<=", ast::BinaryOp::LShift},
    {">>=", ast::BinaryOp::RShift},   {"&=", ast::BinaryOp::BitAnd},  {"|=", ast::BinaryOp::BitOr},
    {"^=", ast::BinaryOp::BitXor},
}};

}  // namespace

const Rejection* find_rejection(const Token& t) {
  if (t.kind != TokenKind::Keyword) return nullptr;
  for (const Rejection& r : kRejectedKeywords)
    if (r.keyword == t.text) return &r;
  return nullptr;
}

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

// The whole token stream is one (decorated) function definition.
ast::FunctionDef Parser::function_source() {
  ast::FunctionDef fn = decorated_function_def();
  if (peek().kind != TokenKind::EndOfFile)
    fail(peek(), Diag::InvalidSyntax, "unexpected code after the function",
         "the source must hold exactly one function definition");
  return fn;
}

// The span from `start` to the end of the last consumed token. A construct
// running over several lines ends at its last token on the first line.
SourceLoc Parser::span_from(const SourceLoc& start) const {
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

bool Parser::decorator_is_host_only() const {
  for (size_t ahead = 0;; ++ahead) {
    const Token& t = peek(ahead);
    if (t.kind == TokenKind::Newline || t.kind == TokenKind::EndOfFile) return false;
    if (t.is_op("*") || t.is_op("**") || t.is_op("{") || t.is_op("...") || t.is_keyword("lambda")) return true;
  }
}

ast::FunctionDef Parser::decorated_function_def() {
  ast::FunctionDef fn;
  fn.file = file_;
  while (accept_op("@")) {
    // A decorator runs on the host (`@jit(**options)`): where it holds what
    // kernel expressions refuse, it is kept as its first name, unparsed.
    if (decorator_is_host_only()) {
      const Token& first = peek();
      auto name = std::make_unique<ast::Expr>(ast::ExprKind::Name, first.loc);
      name->name = first.kind == TokenKind::Name ? first.text : "decorator";
      while (peek().kind != TokenKind::Newline && peek().kind != TokenKind::EndOfFile) advance();
      fn.decorators.push_back(std::move(name));
    } else {
      fn.decorators.push_back(expression());
    }
    if (peek().kind != TokenKind::Newline)
      fail(peek(), Diag::InvalidSyntax, "expected a new line after the decorator, found " + describe(peek()));
    advance();
  }
  if (peek().is_keyword("async")) fail(peek(), Diag::UnsupportedSyntax,
                                       "`async` functions cannot be kernels", "remove `async`");
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

std::vector<ast::Param> Parser::parameters() {
  std::vector<ast::Param> params;
  while (!peek().is_op(")")) {
    // `*name` gathers the extra positional arguments of a call of a @jit helper into a tuple.
    bool star = peek().is_op("*") && peek(1).kind == TokenKind::Name;
    if (star && std::any_of(params.begin(), params.end(), [](const ast::Param& q) { return q.star; }))
      fail(peek(), Diag::InvalidSignature, "a function has at most one `*` parameter");
    if (star) advance();
    if (!star && (peek().is_op("*") || peek().is_op("**")))
      fail(peek(), Diag::UnsupportedSyntax,
           "`**kwargs` and the bare `*` marker are not supported in a kernel signature",
           "list every parameter by name (a @jit helper may take `*args`)");
    if (peek().is_op("/"))
      fail(peek(), Diag::UnsupportedSyntax, "the positional-only marker `/` is not supported in a kernel signature",
           "remove the `/`");
    SourceLoc start = peek().loc;
    ast::Param p;
    const Token& name = name_token("a parameter name");
    p.name = name.text;
    p.star = star;
    for (const ast::Param& other : params)
      if (other.name == p.name) fail(name, Diag::InvalidSignature,
                                     "duplicate parameter '" + p.name + "' in the function definition");
    if (accept_op(":")) p.annotation = expression();
    if (accept_op("=")) {
      p.default_value = expression();
    } else if (!params.empty() && params.back().default_value && !star &&
               !std::any_of(params.begin(), params.end(), [](const ast::Param& q) { return q.star; })) {
      fail(name, Diag::InvalidSignature,
           "parameter '" + p.name + "' without a default follows a parameter with a default",
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
std::vector<StmtPtr> Parser::block(std::string_view what, int32_t header_line) {
  std::vector<StmtPtr> body;
  if (peek().kind != TokenKind::Newline) {
    static constexpr std::array<std::string_view, 6> kCompound = {"if", "for", "while", "def", "with", "try"};
    if (peek().kind == TokenKind::Keyword &&
        std::find(kCompound.begin(), kCompound.end(), peek().text) != kCompound.end())
      fail(peek(), Diag::InvalidSyntax, "invalid syntax: a compound statement cannot follow ':' on the same line",
           "start it on a new, indented line");
    simple_stmts(body);
    return body;
  }
  advance();
  if (peek().kind != TokenKind::Indent)
    fail(peek(), Diag::BadIndentation, "expected an indented block after " + std::string(what) + " on line " +
                     std::to_string(header_line));
  advance();
  while (peek().kind != TokenKind::Dedent && peek().kind != TokenKind::EndOfFile) statement(body);
  advance();
  return body;
}

void Parser::statement(std::vector<StmtPtr>& out) {
  const Token& t = peek();
  NestingGuard guard(*this, t);
  if (t.kind == TokenKind::Indent) fail(t, Diag::BadIndentation,
                                        "unexpected indent", "line this statement up with the one before it");
  if (t.is_op("@"))
    fail(t, Diag::UnsupportedSyntax, "decorators are not supported on nested functions",
         "define the helper at module level with @tegula.jit and call it from the kernel");
  if (t.is_keyword("if")) {
    out.push_back(if_stmt());
  } else if (t.is_keyword("for")) {
    out.push_back(for_stmt());
  } else if (t.is_keyword("while")) {
    out.push_back(while_stmt());
  } else if (t.is_keyword("with") && at_async_task_block()) {
    out.push_back(with_stmt());
  } else if (t.is_keyword("elif") || t.is_keyword("else")) {
    fail(t, Diag::InvalidSyntax, "invalid syntax: `" + t.text + "` without a matching `if`",
         "line it up with its `if` (or `for` / `while` for `else`)");
  } else if (starts_match_statement()) {
    fail(t, Diag::UnsupportedSyntax, "`match` statements are not supported inside a kernel",
         "test the value with if / elif / else");
  } else {
    simple_stmts(out);
  }
}

// `match` is a soft keyword: a line that starts with the name and ends with
// ':' (`match x:`, `match (a, b):`) is Python's match statement, while
// `match = f(x)`, `match(x)` or `match: int = 1` use the name.
bool Parser::starts_match_statement() const {
  const Token& t = peek();
  if (t.kind != TokenKind::Name || t.text != "match" || peek(1).kind == TokenKind::Newline ||
      peek(1).is_op(":") || peek(1).is_op("=") || peek(1).is_op("."))
    return false;
  size_t k = 1;
  while (peek(k).kind != TokenKind::Newline && peek(k).kind != TokenKind::EndOfFile) ++k;
  return peek(k - 1).is_op(":") && peek(k).kind == TokenKind::Newline;
}

StmtPtr Parser::if_stmt() {
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

StmtPtr Parser::for_stmt() {
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

StmtPtr Parser::while_stmt() {
  const Token& keyword = advance();
  auto stmt = std::make_unique<Stmt>(StmtKind::While, keyword.loc);
  stmt->test = expression();
  expect_op(":", "expected ':' after the `while` condition, found " + describe(peek()));
  stmt->loc = span_from(keyword.loc);
  stmt->body = block("the `while` statement", keyword.loc.line);
  loop_else(*stmt);
  return stmt;
}

bool Parser::at_async_task_block() const {
  // with NAME(.NAME)* ( ... where the last name is async_task
  size_t k = 1;
  std::string last;
  while (peek(k).kind == TokenKind::Name) {
    last = peek(k).text;
    if (!peek(k + 1).is_op(".")) break;
    k += 2;
  }
  return last == "async_task" && peek(k + 1).is_op("(");
}

StmtPtr Parser::with_stmt() {
  const Token& keyword = advance();
  auto stmt = std::make_unique<Stmt>(StmtKind::With, keyword.loc);
  stmt->value = expression();
  expect_op(":", "expected ':' after the `with` context, found " + describe(peek()));
  stmt->loc = span_from(keyword.loc);
  stmt->body = block("the `with` statement", keyword.loc.line);
  return stmt;
}

void Parser::loop_else(Stmt& loop) {
  if (!peek().is_keyword("else")) return;
  const Token& else_token = advance();
  expect_op(":", "expected ':' after `else`, found " + describe(peek()));
  loop.orelse = block("`else`", else_token.loc.line);
}

void Parser::simple_stmts(std::vector<StmtPtr>& out) {
  while (true) {
    out.push_back(simple_stmt());
    if (!accept_op(";") || peek().kind == TokenKind::Newline) break;
  }
  expect_end_of_statement();
}

void Parser::expect_end_of_statement() {
  if (peek().kind != TokenKind::Newline)
    fail(peek(), Diag::InvalidSyntax, "invalid syntax: expected the end of the statement, found " + describe(peek()),
         "is an operator or a comma missing?");
  advance();
}

StmtPtr Parser::simple_stmt() {
  const Token& t = peek();
  if (t.is_keyword("raise")) {
    // Host code, as in Triton: an error only where it is lowered, so one in a
    // branch a constexpr condition leaves out costs nothing. Its exception is
    // never evaluated, so it is skipped whole.
    auto stmt = std::make_unique<Stmt>(StmtKind::Unsupported, t.loc);
    stmt->name = "raise";
    advance();
    while (!at_end_of_statement()) advance();
    return stmt;
  }
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

StmtPtr Parser::expression_or_assignment() {
  SourceLoc start = peek().loc;
  ExprPtr first = star_expressions();
  if (peek().is_op(":")) {
    advance();
    if (first->kind != ExprKind::Name && first->kind != ExprKind::Attribute &&
        first->kind != ExprKind::Subscript)
      error_at(first->loc, Diag::InvalidAssignmentTarget,
               "only a single name, attribute or subscript can be annotated");
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
      error_at(first->loc, Diag::InvalidAssignmentTarget,
               "invalid target for augmented assignment `" + std::string(spelling) + "`",
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

void Parser::check_target(const Expr& target, std::string_view where) {
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
      error_at(target.loc, Diag::InvalidAssignmentTarget, "cannot assign to a function call in " + std::string(where),
               "did you mean '==' instead of '='?");
    case ExprKind::Compare:
      error_at(target.loc, Diag::InvalidAssignmentTarget, "cannot assign to a comparison in " + std::string(where),
               "did you mean '==' instead of '='?");
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::Bool:
    case ExprKind::None:
    case ExprKind::Str:
      error_at(target.loc, Diag::InvalidAssignmentTarget, "cannot assign to a literal in " + std::string(where));
    default:
      error_at(target.loc, Diag::InvalidAssignmentTarget, "cannot assign to an expression in " + std::string(where),
               "the left side must be a name, a subscript, an attribute, or a tuple of them");
  }
}

ast::FunctionDef parse_function(const SourceManager& sources, int32_t file) {
  return Parser(file, tokenize(sources, file)).function_source();
}

}  // namespace tegula::frontend
