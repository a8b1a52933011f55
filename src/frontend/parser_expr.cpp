#include "frontend/parser_internal.h"

namespace tegula::frontend {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;

// A pathological `a+a+...+a` is a deep tree although no grammar function
// recursed to build it; its depth is bounded here, where it is built.
void Parser::finish(Expr& node, const SourceLoc& start) {
  node.loc = span_from(start);
  record_depth(node);
}

void Parser::record_depth(Expr& node) {
  int32_t depth = 0;
  for (const ExprPtr& child : node.children)
    if (child) depth = std::max(depth, depth_of(*child));
  for (const ast::Keyword& k : node.keywords)
    if (k.value) depth = std::max(depth, depth_of(*k.value));
  if (depth + 1 > kMaxTreeDepth)
    error_at(node.loc, Diag::NestedTooDeeply, "expression is too deeply nested", "split it into several statements");
  tree_depth_[&node] = depth + 1;
}

int32_t Parser::depth_of(const Expr& e) const {
  auto it = tree_depth_.find(&e);
  return it == tree_depth_.end() ? 1 : it->second;
}

bool Parser::starts_expression(const Token& t) const {
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

// `a, b` without parentheses (assignment values, return values, for iterators).
ExprPtr Parser::star_expressions() {
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
ExprPtr Parser::target_list() {
  SourceLoc start = peek().loc;
  ExprPtr first = bitwise_or();
  if (!peek().is_op(",")) return first;
  auto tuple = make(ExprKind::Tuple, start);
  tuple->children.push_back(std::move(first));
  while (accept_op(",") && starts_expression(peek())) tuple->children.push_back(bitwise_or());
  finish(*tuple, start);
  return tuple;
}

ExprPtr Parser::expression() {
  NestingGuard guard(*this, peek());
  SourceLoc start = peek().loc;
  if (peek().is_keyword("lambda")) return lambda_expression();
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
  if (peek().is_op(":=")) {
    if (body->kind != ExprKind::Name)
      fail(peek(), Diag::InvalidSyntax, "an assignment expression (`:=`) assigns to a plain name",
           "assign the value on its own line first");
    advance();
    auto node = make(ExprKind::NamedExpr, start);
    node->children.push_back(std::move(body));
    node->children.push_back(expression());
    finish(*node, start);
    body = std::move(node);
  }
  if (peek().is_keyword("async") && !brackets_.empty())
    fail(peek(), Diag::UnsupportedSyntax, "asynchronous comprehensions are not supported inside a kernel",
         "write a `for` loop (over `tl.static_range` to unroll it) instead");
  // A `for` after an expression inside brackets is a comprehension, which the
  // list, parentheses and call that hold it parse (comprehension()).
  return body;
}

// `lambda a, b=1: body`: parameters by name, with defaults; no star parameters.
ExprPtr Parser::lambda_expression() {
  SourceLoc start = peek().loc;
  advance();  // `lambda`
  auto node = make(ExprKind::Lambda, start);
  while (!peek().is_op(":")) {
    if (peek().is_op("*") || peek().is_op("**") || peek().is_op("/"))
      fail(peek(), Diag::UnsupportedSyntax, "a `lambda` in a kernel takes its parameters by name only",
           "list every parameter by name");
    SourceLoc at = peek().loc;
    const Token& name = name_token("a parameter name of the lambda");
    for (const ast::Keyword& other : node->keywords)
      if (other.name == name.text) fail(name, Diag::InvalidSignature,
                                        "duplicate parameter '" + name.text + "' in the lambda");
    ast::Keyword param;
    param.name = name.text;
    if (accept_op("=")) {
      param.value = expression();
    } else if (!node->keywords.empty() && node->keywords.back().value) {
      fail(name, Diag::InvalidSignature,
           "parameter '" + param.name + "' without a default follows a parameter with a default");
    }
    param.loc = span_from(at);
    node->keywords.push_back(std::move(param));
    if (!accept_op(",")) break;
  }
  expect_op(":", "expected ':' after the parameters of the lambda, found " + describe(peek()));
  node->children.push_back(expression());
  finish(*node, start);
  return node;
}

ExprPtr Parser::comprehension(ExprPtr element, SourceLoc start) {
  auto node = make(ExprKind::Comprehension, start);
  node->children.push_back(std::move(element));
  while (accept_keyword("for")) {
    ExprPtr target = target_list();
    check_target(*target, "comprehension");
    expect_keyword("in", "expected 'in' after the comprehension's target, found " + describe(peek()));
    node->children.push_back(std::move(target));
    node->children.push_back(disjunction());
    ExprPtr condition;
    while (accept_keyword("if")) {
      SourceLoc at = peek().loc;
      ExprPtr test = disjunction();
      if (!condition) {
        condition = std::move(test);
        continue;
      }
      auto both = make(ExprKind::BoolOp, at);
      both->bool_op = ast::BoolOpKind::And;
      both->children.push_back(std::move(condition));
      both->children.push_back(std::move(test));
      finish(*both, at);
      condition = std::move(both);
    }
    node->children.push_back(std::move(condition));
  }
  if (peek().is_keyword("async"))
    fail(peek(), Diag::UnsupportedSyntax, "asynchronous comprehensions are not supported inside a kernel");
  finish(*node, start);
  return node;
}

ExprPtr Parser::bool_op(ExprPtr (Parser::*operand)(), std::string_view keyword, ast::BoolOpKind kind) {
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

ExprPtr Parser::disjunction() { return bool_op(&Parser::conjunction, "or", ast::BoolOpKind::Or); }
ExprPtr Parser::conjunction() { return bool_op(&Parser::inversion, "and", ast::BoolOpKind::And); }

ExprPtr Parser::inversion() {
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
bool Parser::comparison_operator(ast::CmpOp& op) {
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

ExprPtr Parser::comparison() {
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
ExprPtr Parser::binary_level(ExprPtr (Parser::*operand)(), BinaryTable ops) {
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

ExprPtr Parser::bitwise_or() { return binary_level(&Parser::bitwise_xor, {{"|", ast::BinaryOp::BitOr}}); }
ExprPtr Parser::bitwise_xor() { return binary_level(&Parser::bitwise_and, {{"^", ast::BinaryOp::BitXor}}); }
ExprPtr Parser::bitwise_and() { return binary_level(&Parser::shift_expr, {{"&", ast::BinaryOp::BitAnd}}); }
ExprPtr Parser::shift_expr() {
  return binary_level(&Parser::sum, {{"<<", ast::BinaryOp::LShift}, {">>", ast::BinaryOp::RShift}});
}

ExprPtr Parser::sum() { return binary_level(&Parser::term, {{"+", ast::BinaryOp::Add}, {"-", ast::BinaryOp::Sub}}); }

ExprPtr Parser::term() {
  return binary_level(&Parser::factor, {{"*", ast::BinaryOp::Mul},
                                        {"/", ast::BinaryOp::Div},
                                        {"//", ast::BinaryOp::FloorDiv},
                                        {"%", ast::BinaryOp::Mod},
                                        {"@", ast::BinaryOp::MatMul}});
}

ExprPtr Parser::factor() {
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
ExprPtr Parser::power() {
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

ExprPtr Parser::primary() {
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

ExprPtr Parser::call(ExprPtr callee, SourceLoc start) {
  const Token& open = advance();
  brackets_.push_back('(');
  auto node = make(ExprKind::Call, start);
  node->children.push_back(std::move(callee));
  while (!peek().is_op(")")) {
    if (peek().kind == TokenKind::Name && peek(1).is_op("=")) {
      const Token& name = advance();
      advance();
      for (const ast::Keyword& k : node->keywords)
        if (k.name == name.text) fail(name, Diag::InvalidCallArguments,
                                      "keyword argument repeated: '" + name.text + "'");
      ast::Keyword keyword;
      keyword.name = name.text;
      keyword.value = expression();
      keyword.loc = span_from(name.loc);
      node->keywords.push_back(std::move(keyword));
    } else if (peek().is_op("*")) {  // f(x, *t): t's elements as positional arguments
      SourceLoc star = advance().loc;
      auto node_star = make(ExprKind::Starred, star);
      node_star->children.push_back(expression());
      finish(*node_star, star);
      if (!node->keywords.empty())
        error_at(node_star->loc, Diag::InvalidCallArguments, "positional argument follows keyword argument",
                 "pass it by name, or move it before the keyword arguments");
      node->children.push_back(std::move(node_star));
    } else {
      SourceLoc arg_start = peek().loc;
      ExprPtr arg = expression();
      if (peek().is_keyword("for")) {  // f(x for x in t): the generator is the call's one argument
        if (node->children.size() > 1 || !node->keywords.empty())
          fail(peek(), Diag::InvalidSyntax, "a generator expression must be parenthesized unless it is the only "
                                            "argument of the call");
        arg = comprehension(std::move(arg), arg_start);
        if (!peek().is_op(")"))
          fail(peek(), Diag::InvalidSyntax, "a generator expression must be parenthesized unless it is the only "
                                            "argument of the call");
      }
      if (!node->keywords.empty())
        error_at(span_from(arg_start), Diag::InvalidCallArguments, "positional argument follows keyword argument",
                 "pass it by name, or move it before the keyword arguments");
      node->children.push_back(std::move(arg));
    }
    if (!accept_op(",")) break;
  }
  if (!peek().is_op(")"))
    fail(peek(), Diag::InvalidSyntax, "invalid syntax: expected ',' or ')' in the call on line " +
                     std::to_string(open.loc.line) + ", found " + describe(peek()));
  advance();
  brackets_.pop_back();
  finish(*node, start);
  return node;
}

ExprPtr Parser::subscript(ExprPtr value, SourceLoc start) {
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
ExprPtr Parser::slice() {
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

ExprPtr Parser::atom() {
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
      // Adjacent literals are one string ("a" "b" == "ab"); with an f-string among them, a JoinedStr.
      std::vector<FStringPart> parts;
      bool joined = false;
      while (peek().kind == TokenKind::String) {
        const Token& s = advance();
        joined |= s.is_fstring;
        if (!s.is_fstring) {
          FStringPart part;
          part.literal = s.value;
          parts.push_back(std::move(part));
        } else {
          parts.insert(parts.end(), s.fstring.begin(), s.fstring.end());
        }
      }
      SourceLoc loc = span_from(t.loc);
      if (!joined) {
        auto node = make(ExprKind::Str, loc);
        for (const FStringPart& part : parts) node->name += part.literal;
        finish(*node, t.loc);
        return node;
      }
      ExprPtr node = joined_string(parts, loc);
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
        fail(t, Diag::UnsupportedSyntax, "dict and set literals are not supported inside a kernel",
             "use a tuple, or separate variables");
      if (t.text == "...")
        fail(t, Diag::UnsupportedSyntax,
             "`...` (Ellipsis) is not supported inside a kernel", "spell out the slices, e.g. x[:, :]");
      if (t.text == "*" || t.text == "**")
        fail(t, Diag::UnsupportedSyntax, "star expressions (`*x`, `**x`) are not supported inside a kernel",
             "pass or unpack the values one by one");
      break;
    }
    default:
      break;
  }
  fail(t, Diag::InvalidSyntax, "invalid syntax: expected an expression, found " + describe(t));
}

ExprPtr Parser::parenthesized() {
  const Token& open = advance();
  brackets_.push_back('(');
  if (accept_op(")")) {
    brackets_.pop_back();
    return make(ExprKind::Tuple, span_from(open.loc));
  }
  ExprPtr first = expression();
  if (peek().is_keyword("for")) {  // a generator expression: unrolled into a tuple as well
    ExprPtr made = comprehension(std::move(first), open.loc);
    expect_op(")", "invalid syntax: expected ')' after the generator expression on line " +
                       std::to_string(open.loc.line) + ", found " + describe(peek()));
    brackets_.pop_back();
    finish(*made, open.loc);
    return made;
  }
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

ExprPtr Parser::list() {
  const Token& open = advance();
  brackets_.push_back('[');
  auto node = make(ExprKind::List, open.loc);
  while (!peek().is_op("]")) {
    node->children.push_back(expression());
    if (node->children.size() == 1 && peek().is_keyword("for")) {
      ExprPtr made = comprehension(std::move(node->children[0]), open.loc);
      expect_op("]", "invalid syntax: expected ']' after the comprehension on line " +
                         std::to_string(open.loc.line) + ", found " + describe(peek()));
      brackets_.pop_back();
      finish(*made, open.loc);
      return made;
    }
    if (!accept_op(",")) break;
  }
  expect_op("]", "invalid syntax: expected ',' or ']' in the list on line " + std::to_string(open.loc.line) +
                     ", found " + describe(peek()));
  brackets_.pop_back();
  finish(*node, open.loc);
  return node;
}

// An f-string's pieces as a JoinedStr: adjacent literal text merged into one Str, each field a
// FormattedValue whose expression is parsed from its own tokens.
ast::ExprPtr Parser::joined_string(const std::vector<FStringPart>& parts, const SourceLoc& loc) {
  auto node = make(ExprKind::JoinedStr, loc);
  for (const FStringPart& part : parts) {
    if (part.is_field) {
      node->children.push_back(fstring_field(part));
    } else if (!node->children.empty() && node->children.back()->kind == ExprKind::Str) {
      node->children.back()->name += part.literal;
    } else {
      auto text = make(ExprKind::Str, loc);
      text->name = part.literal;
      node->children.push_back(std::move(text));
    }
  }
  record_depth(*node);
  return node;
}

ast::ExprPtr Parser::fstring_field(const FStringPart& part) {
  const Token& first = part.expression.front();
  NestingGuard guard(*this, first);
  auto node = make(ExprKind::FormattedValue, part.loc);
  if (part.conversion) node->name = std::string(1, part.conversion);
  // The field's tokens stand in for the stream while its expression is parsed.
  std::vector<Token> outer_tokens = std::exchange(tokens_, part.expression);
  size_t outer_pos = std::exchange(pos_, 0);
  std::vector<char> outer_brackets = std::exchange(brackets_, {});
  ExprPtr value = star_expressions();
  if (peek().kind != TokenKind::Newline)
    fail(peek(), Diag::InvalidSyntax, "f-string: expected '}' after the field's expression, found " + describe(peek()),
         "a replacement field holds one expression");
  tokens_ = std::move(outer_tokens);
  pos_ = outer_pos;
  brackets_ = std::move(outer_brackets);
  node->children.push_back(std::move(value));
  node->children.push_back(part.spec.empty() ? nullptr : joined_string(part.spec, part.loc));
  record_depth(*node);
  return node;
}

}  // namespace tegula::frontend
