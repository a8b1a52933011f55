// What `tegula compile` reads from a Python file: one kernel, the @jit
// functions it calls (transitively), and the module-level names each of them
// uses, turned into the FunctionSources the Python package would hand over
// for the same file. No Python runs: imports are classified by module name and
// only literal constants are evaluated.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/ast.h"
#include "frontend/request.h"
#include "support/source.h"
#include "cli/signature.h"

namespace tegula::tools {

// A problem with the file itself (unreadable, or a syntax error in a @jit
// function), already rendered: `file:line:col: error: ...`, the line, a caret.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class KernelFile {
 public:
  // Reads and parses `path`. Throws FileError.
  explicit KernelFile(std::string path);
  KernelFile(const KernelFile&) = delete;  // bindings point into module()
  KernelFile& operator=(const KernelFile&) = delete;

  const std::string& path() const { return path_; }
  const SourceManager& sources() const { return sources_; }
  const ast::Module& module() const { return module_; }

  // The definition Python would bind to `name` (the last one); null if none.
  const ast::FunctionDef* find_function(std::string_view name) const;
  // Every function decorated with a `jit`, in file order.
  std::vector<const ast::FunctionDef*> jit_functions() const;

  // functions[0] is `kernel`; then each @jit function it reaches, once.
  std::vector<frontend::FunctionSource> collect_functions(const ast::FunctionDef& kernel) const;

  // The kernel's parameters for the signature. `kernel_source` is
  // collect_functions(kernel)[0]; constexpr-ness is decided by the front end.
  std::vector<KernelParam> kernel_params(const ast::FunctionDef& kernel,
                                         const frontend::FunctionSource& kernel_source) const;

 private:
  // What a module-level name is bound to, after the whole file ran.
  struct Binding {
    const ast::Import* import = nullptr;
    const ast::ModuleAssign* assign = nullptr;
    const ast::FunctionDef* function = nullptr;
  };

  std::optional<frontend::GlobalValue> literal_value(const ast::Expr& e, int hops = 8) const;
  frontend::GlobalValue import_value(const ast::Import& import) const;
  std::string source_text(const ast::FunctionDef& fn, int32_t* first_line) const;

  std::string path_;
  SourceManager sources_;
  int32_t file_ = -1;
  ast::Module module_;
  std::map<std::string, Binding, std::less<>> bindings_;
};

// Whether a decorator list marks a @jit function (`@tegula.jit`, `@triton.jit(...)`, `@jit`).
bool is_jit_decorated(const ast::FunctionDef& fn);

}  // namespace tegula::tools
