// Lexer + recursive-descent parser for the kernel subset of Python.
//
// Grammar functions are named after Python's grammar rules (statement,
// compound_stmt, expression, disjunction, ..., primary, atom). Indentation is
// tracked by the lexer as INDENT/DEDENT tokens; parentheses, brackets and
// braces suspend it (implicit line joining), as does a backslash at line end.
#pragma once

#include "frontend/ast.h"
#include "support/source.h"

namespace tegula::frontend {

// Parses file `file` of `sources`, which must hold exactly one (possibly
// decorated, possibly uniformly indented) function definition, as
// `inspect.getsource` returns it. Throws UserError with a location on any
// syntax error or construct outside the subset that can be rejected at parse
// time (lambda, class, star-args, walrus...).
ast::FunctionDef parse_function(const SourceManager& sources, int32_t file);

// Parses a whole Python file for the CLI: keeps imports, top-level
// assignments and function definitions; skips every other top-level
// statement without interpreting it. A function that fails to parse is only
// an error if it is decorated with a `jit`.
ast::Module parse_module(const SourceManager& sources, int32_t file);

}  // namespace tegula::frontend
