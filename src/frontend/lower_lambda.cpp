// `lambda` expressions in kernels (combine functions of tl.reduce and
// tl.associative_scan, tl.map_elementwise, arguments of @jit helpers): a
// compile-time function value, inlined where it is called like a @jit
// function. As in Triton it captures only compile-time values of the names
// of the function it is written in; the module's names it reads are looked
// up when it is called, in that function's globals.
#include <functional>
#include <set>

#include "frontend/lowering.h"
#include "frontend/symbol_leaves.h"

namespace tegula::frontend {

namespace {

// The names `e` reads that it does not bind itself (a lambda's parameters, a
// comprehension's targets, the target of `:=`), each with where it is first read.
void free_names(const ast::Expr& e, const std::set<std::string>& bound, std::map<std::string, SourceLoc>& out) {
  switch (e.kind) {
    case ast::ExprKind::Name:
      if (!bound.count(e.name)) out.emplace(e.name, e.loc);
      return;
    case ast::ExprKind::Lambda: {
      std::set<std::string> inner = bound;
      for (const ast::Keyword& p : e.keywords) {
        if (p.value) free_names(*p.value, bound, out);  // defaults: read where the lambda is written
        inner.insert(p.name);
      }
      free_names(*e.children[0], inner, out);
      return;
    }
    case ast::ExprKind::Comprehension: {
      std::set<std::string> inner = bound;
      std::function<void(const ast::Expr&)> targets = [&](const ast::Expr& t) {
        if (t.kind == ast::ExprKind::Name) inner.insert(t.name);
        for (const ast::ExprPtr& c : t.children)
          if (c) targets(*c);
      };
      for (size_t i = 1; i < e.children.size(); i += 3)
        if (e.children[i]) targets(*e.children[i]);
      for (size_t i = 0; i < e.children.size(); ++i)
        if (e.children[i] && (i == 0 || (i - 1) % 3 != 0)) free_names(*e.children[i], inner, out);
      return;
    }
    case ast::ExprKind::NamedExpr:
      free_names(*e.children[1], bound, out);
      return;
    default:
      for (const ast::ExprPtr& c : e.children)
        if (c) free_names(*c, bound, out);
      for (const ast::Keyword& k : e.keywords)
        if (k.value) free_names(*k.value, bound, out);
  }
}

}  // namespace

Symbol Lowerer::make_lambda(const ast::Expr& e) {
  auto closure = std::make_shared<LambdaClosure>();
  closure->node = &e;
  closure->function = frame().function;
  for (const ast::Keyword& p : e.keywords)
    closure->defaults.push_back(p.value ? std::optional<Symbol>(eval(*p.value)) : std::nullopt);
  std::set<std::string> params;
  for (const ast::Keyword& p : e.keywords) params.insert(p.name);
  std::map<std::string, SourceLoc> reads;
  free_names(*e.children[0], params, reads);
  for (const auto& [name, loc] : reads) {
    if (!frame().vars.count(name) && !frame().maybe_undefined.count(name)) continue;  // a global
    Symbol s = lookup(name, loc);
    if (!is_compile_time(s))
      error_at(loc, Diag::UnsupportedSyntax,
               "a lambda can only capture constexpr values of the function it is written in, but `" + name +
                   "` is " + describe(s),
               "pass `" + name + "` to the lambda as a parameter, or use a @jit function");
    closure->captured.emplace(name, std::move(s));
  }
  Symbol s;
  s.kind = Symbol::Kind::Lambda;
  s.closure = std::move(closure);
  return s;
}

Symbol Lowerer::call_lambda(const Symbol& callee, const CallArgs& args) {
  const LambdaClosure& c = *callee.closure;
  const ast::Expr& e = *c.node;
  const size_t n = e.keywords.size();
  if (args.positional.size() > n)
    error_at(args.loc, Diag::WrongArgumentCount, "the lambda takes " + std::to_string(n) + " arguments but " +
                                                     std::to_string(args.positional.size()) + " were given");
  std::vector<std::optional<Symbol>> bound(n);
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto& [name, value] = args.keywords[k];
    size_t i = 0;
    while (i < n && e.keywords[i].name != name) ++i;
    if (i == n) error_at(args.keyword_locs[k], Diag::UnknownKeywordArgument,
                         "the lambda has no parameter named `" + name + "`");
    if (bound[i]) error_at(args.keyword_locs[k], Diag::DuplicateArgument,
                           "the lambda got multiple values for `" + name + "`");
    bound[i] = value;
  }
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    if (!c.defaults[i])
      error_at(args.loc, Diag::WrongArgumentCount, "the lambda is missing the argument `" + e.keywords[i].name + "`");
    bound[i] = c.defaults[i];
  }
  if (inline_depth_ >= 64)
    error_at(args.loc, Diag::InliningTooDeep, "calls to lambdas and @jit functions are nested too deeply");
  auto callee_frame = std::make_unique<Frame>();
  callee_frame->function = c.function;
  for (const auto& [name, s] : c.captured) callee_frame->vars[name] = s;
  for (size_t i = 0; i < n; ++i) callee_frame->vars[e.keywords[i].name] = *bound[i];
  frames_.push_back(std::move(callee_frame));
  ++inline_depth_;
  Symbol result = eval(*e.children[0]);
  --inline_depth_;
  frames_.pop_back();
  return result;
}

}  // namespace tegula::frontend
