#include "frontend/parser.h"
#include "frontend/parser_internal.h"

namespace tegula::frontend {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtKind;
using ast::StmtPtr;

// The whole token stream is one top-level simple statement.
std::vector<StmtPtr> Parser::simple_statement_line() {
  std::vector<StmtPtr> out;
  simple_stmts(out);
  if (peek().kind != TokenKind::EndOfFile) fail(peek(), Diag::InvalidSyntax, "unexpected code after the statement");
  return out;
}

// `import a.b as c, d` / `from a.b import c as d, e`.
std::vector<ast::Import> Parser::import_statement() {
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
  if (peek().kind != TokenKind::EndOfFile) fail(peek(), Diag::InvalidSyntax, "unexpected code after the import");
  return imports;
}

std::string Parser::dotted_name() {
  std::string name = name_token("a module name").text;
  while (accept_op(".")) name += "." + name_token("a module name after '.'").text;
  return name;
}

namespace {

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
  for (const ast::Keyword& k : e.keywords) copy->keywords.push_back(ast::Keyword{k.name, k.value ? clone(*k.value) : nullptr, k.loc});
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

ast::Module parse_module(const SourceManager& sources, int32_t file) {
  ast::Module module;
  for (TextRange range : split_top_level(sources.file(file).text))
    parse_top_level_statement(sources, file, range, module);
  return module;
}

}  // namespace tegula::frontend
