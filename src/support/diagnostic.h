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

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/source.h"

namespace tegula {

// Every user error has a stable code (support/diagnostic_codes.def lists them
// and says how they are numbered); the enumerators are the table's names.
enum class Diag : uint16_t {
#define DIAG(code, name, summary) name,
#include "support/diagnostic_codes.def"
#undef DIAG
};

struct DiagInfo {
  Diag diag;
  std::string_view code;     // "E0401"
  std::string_view name;     // "WrongArgumentCount"
  std::string_view summary;  // one line, for `tegula explain` and the docs
};

const DiagInfo& info(Diag d);
inline std::string_view code_of(Diag d) { return info(d).code; }
// Every row of the table, in code order.
std::span<const DiagInfo> all_diagnostics();
// The entry for "E0401" (also "e0401" or "0401"), if there is one.
std::optional<Diag> find_diagnostic(std::string_view code);

enum class ErrorKind {
  Compile,  // bad kernel source: CompilationError in Python
  Type,     // wrong kind of launch argument: TypeError in Python
  Value,    // wrong launch value (count, dtype...): ValueError in Python
};

// One @jit function a compile error is inside (Diagnostic::stack).
struct CallFrame {
  std::string function;
  SourceLoc def;     // the function's name in its `def` line
  SourceLoc called;  // where its caller called it; invalid for the kernel
};

struct Diagnostic {
  SourceLoc loc;
  Diag code;
  std::string message;  // what is wrong, one sentence, no trailing period needed
  std::string hint;     // what to do about it; may be empty
  ErrorKind kind = ErrorKind::Compile;
  // A warning: the kernel compiles; rendered "warning: ..." without a code.
  bool warning = false;
  // The functions the error is inside, innermost first, up to the kernel:
  // rendered as the calls that led to it, each position also counted from
  // its function's `def` as Triton does ("at 2:4:").
  std::vector<CallFrame> stack = {};
};

// Renders the diagnostic the way compilers do:
//   kernel.py:12:15: error[E0401]: message
//      12 |     x = tl.load(ptr + offs, mask=m)
//         |               ^~~~~~~~~~~
//   hint: ...
//   note: in `helper` at 2:4:
//   kernel.py:30:9: note: called from `kernel` at 7:8:
//      30 |         y = helper(x)
//         |         ^~~~~~~~~~~~~
// The first `depth` frames of the stack only, when given (the error as seen
// inside a called function).
std::string render(const Diagnostic& d, const SourceManager* sources, size_t depth = SIZE_MAX);
// Whether stack[k] was called where stack[k - 1] was, by the same function
// (recursion until the nesting limit): one repeated call, rendered once.
bool repeats_call(const std::vector<CallFrame>& stack, size_t k);

class UserError : public std::runtime_error {
 public:
  explicit UserError(Diagnostic d)
      : std::runtime_error(d.message), diagnostic_(std::move(d)) {}
  const Diagnostic& diagnostic() const { return diagnostic_; }
  // On the way out of a function's body: the function, for the stack.
  void add_frame(CallFrame frame) { diagnostic_.stack.push_back(std::move(frame)); }

 private:
  Diagnostic diagnostic_;
};

// Throws a located compile error (ErrorKind::Compile) with its code.
[[noreturn]] void error_at(const SourceLoc& loc, Diag code, std::string message, std::string hint = {});

// A broken invariant. It may learn the kernel source location of the op or
// statement being compiled on its way out (see at_source), so the internal
// compiler error report can point at the user's line that triggered the bug.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
  const SourceLoc& loc() const { return loc_; }
  // The innermost location wins: an outer handler never overwrites it.
  void locate(const SourceLoc& loc) {
    if (!loc_.valid()) loc_ = loc;
  }

 private:
  SourceLoc loc_;
};

// Runs `work`, which compiles the op or statement written at `loc`; an
// internal error escaping it without a location gets `loc`.
template <class Work>
decltype(auto) at_source(const SourceLoc& loc, Work&& work) {
  try {
    return work();
  } catch (InternalError& e) {
    e.locate(loc);
    throw;
  }
}

[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

}  // namespace tegula

#define TEGULA_ASSERT(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) ::tegula::internal_error(__FILE__, __LINE__, std::string("assertion `" #cond "` failed: ") + (msg)); \
  } while (0)
