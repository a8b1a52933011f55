// User-facing errors.
//
// Two channels, never mixed:
//  * UserError: something wrong in the user's kernel or launch. Carries a
//    location and a hint, is thrown by the front end / compiler and caught at
//    the API boundary, where it becomes `tegula.CompilationError` in Python or a
//    non-zero exit in the CLI.
//  * TEGULA_ASSERT: a broken invariant inside the compiler. Throws
//    InternalError (never abort()), reported as an internal compiler error.
#pragma once

#include <stdexcept>
#include <string>

#include "support/source.h"

namespace tegula {

enum class ErrorKind {
  Compile,  // bad kernel source: CompilationError in Python
  Type,     // wrong kind of launch argument: TypeError in Python
  Value,    // wrong launch value (count, dtype...): ValueError in Python
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;  // what is wrong, one sentence, no trailing period needed
  std::string hint;     // what to do about it; may be empty
  ErrorKind kind = ErrorKind::Compile;
};

// Renders the diagnostic the way compilers do:
//   kernel.py:12:15: error: message
//      12 |     x = tl.load(ptr + offs, mask=m)
//         |               ^~~~~~~~~~~
//   hint: ...
std::string render(const Diagnostic& d, const SourceManager* sources);

class UserError : public std::runtime_error {
 public:
  explicit UserError(Diagnostic d)
      : std::runtime_error(d.message), diagnostic_(std::move(d)) {}
  const Diagnostic& diagnostic() const { return diagnostic_; }

 private:
  Diagnostic diagnostic_;
};

// Convenience: throw a located compile error.
[[noreturn]] void error_at(const SourceLoc& loc, std::string message, std::string hint = {});

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

}  // namespace tegula

#define TEGULA_ASSERT(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) ::tegula::internal_error(__FILE__, __LINE__, std::string("assertion `" #cond "` failed: ") + (msg)); \
  } while (0)
