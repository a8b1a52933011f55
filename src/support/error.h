// What leaves the compiler's API when something goes wrong: the fully
// rendered diagnostic text (location, quoted line, caret, hint) and which
// Python exception it maps to (Compile -> tegula.CompilationError, Type ->
// TypeError, Value -> ValueError). UserError and InternalError never cross
// the API boundary; the compile driver turns them into Error. The code is the
// diagnostic's stable code (Python exposes it as the exception's `.code`).
//
// Every layer that reports to the caller directly (the compile driver, the
// backends' loaders and launchers) throws Error, so one translation at the
// boundary (src/bindings/module.cpp, the CLI) covers all of them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "support/diagnostic.h"

namespace tegula {

class Error : public std::runtime_error {
 public:
  Error(std::string rendered, ErrorKind kind, Diag code, std::string message = {},
        std::vector<std::string> inside = {})
      : std::runtime_error(rendered),
        rendered_(std::move(rendered)),
        kind_(kind),
        code_(code),
        message_(std::move(message)),
        inside_(std::move(inside)) {}
  ErrorKind kind() const { return kind_; }
  Diag code() const { return code_; }
  // what(), whole: user text in it (a static_assert's message) may hold NUL bytes.
  const std::string& text() const { return rendered_; }
  // The diagnostic's message alone, without location, source line or hint
  // (empty when the error was not made from a diagnostic).
  const std::string& message() const { return message_; }
  // An error inside called @jit functions, rendered as seen inside each of
  // them, innermost first (the kernel's own rendering is what()): Python
  // chains them as the CompilationErrors' causes, as Triton does.
  const std::vector<std::string>& inside() const { return inside_; }

 private:
  std::string rendered_;
  ErrorKind kind_;
  Diag code_;
  std::string message_;
  std::vector<std::string> inside_;
};

// The Error for a diagnostic, rendered against `sources` (may be null).
inline Error to_error(const Diagnostic& d, const SourceManager* sources) {
  std::vector<std::string> inside;
  for (size_t depth = 1; sources && depth < d.stack.size(); ++depth)
    if (!repeats_call(d.stack, depth - 1)) inside.push_back(render(d, sources, depth));
  return Error(render(d, sources), d.kind, d.code, d.message, std::move(inside));
}

// A problem found outside the user's kernel source (a launch argument, the
// cache directory, a missing library): a diagnostic located nowhere.
[[noreturn]] inline void fail(ErrorKind kind, Diag code, std::string message, std::string hint = {}) {
  throw to_error(Diagnostic{SourceLoc{}, code, std::move(message), std::move(hint), kind}, nullptr);
}

}  // namespace tegula
