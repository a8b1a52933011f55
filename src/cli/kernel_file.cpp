#include "cli/kernel_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <sys/stat.h>

#include "frontend/lexer.h"
#include "frontend/lower.h"
#include "frontend/parser.h"
#include "support/diagnostic.h"

namespace tegula::tools {

using frontend::GlobalValue;

namespace {

bool mentions_jit(const ast::Expr& e) {
  if ((e.kind == ast::ExprKind::Name || e.kind == ast::ExprKind::Attribute) && e.name == "jit") return true;
  return std::any_of(e.children.begin(), e.children.end(), [](const ast::ExprPtr& c) { return c && mentions_jit(*c); });
}

void collect_names(const ast::Expr& e, std::set<std::string>& out) {
  if (e.kind == ast::ExprKind::Name) out.insert(e.name);
  for (const ast::ExprPtr& c : e.children)
    if (c) collect_names(*c, out);
  for (const ast::Keyword& k : e.keywords)
    if (k.value) collect_names(*k.value, out);
}

void collect_names(const ast::Stmt& s, std::set<std::string>& out) {
  for (const ast::ExprPtr& t : s.targets) collect_names(*t, out);
  for (const ast::Expr* e : {s.value.get(), s.test.get(), s.msg.get(), s.annotation.get()})
    if (e) collect_names(*e, out);
  for (const ast::StmtPtr& b : s.body) collect_names(*b, out);
  for (const ast::StmtPtr& b : s.orelse) collect_names(*b, out);
}

// Every name the function mentions. The front end resolves the ones it reads;
// handing over a few extra (locals that shadow a global) is harmless.
std::set<std::string> referenced_names(const ast::FunctionDef& fn) {
  std::set<std::string> names;
  for (const ast::Param& p : fn.params) {
    if (p.annotation) collect_names(*p.annotation, names);
    if (p.default_value) collect_names(*p.default_value, names);
  }
  for (const ast::StmtPtr& s : fn.body) collect_names(*s, names);
  return names;
}

GlobalValue opaque(std::string description) {
  GlobalValue g;
  g.kind = GlobalValue::Kind::Opaque;
  g.text = std::move(description);
  return g;
}

bool is_language_module(std::string_view module) {
  for (std::string_view root : {"tegula.language", "triton.language"})
    if (module == root || (module.size() > root.size() && module.substr(0, root.size()) == root &&
                           module[root.size()] == '.'))
      return true;
  return false;
}

int32_t line_of_offset(std::string_view text, size_t offset) {
  return 1 + static_cast<int32_t>(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(offset), '\n'));
}

// A Python module of this size is no kernel file; reading it whole would only cost the machine's memory.
constexpr off_t kMaxFileBytes = off_t{64} << 20;

}  // namespace

bool is_jit_decorated(const ast::FunctionDef& fn) {
  return std::any_of(fn.decorators.begin(), fn.decorators.end(), [](const ast::ExprPtr& d) { return mentions_jit(*d); });
}

KernelFile::KernelFile(std::string path) : path_(std::move(path)) {
  // Coded like every other error (E1003, docs/diagnostics.md).
  const std::string cannot_read = "tegula: error[" + std::string(code_of(Diag::CliUnreadableFile)) + "]: cannot read '";
  // Only a regular file: a directory reads as empty, and a device (/dev/zero) never ends.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) throw FileError(cannot_read + path_ + "': " + std::strerror(errno) + "\n");
  if (!S_ISREG(st.st_mode))
    throw FileError(cannot_read + path_ + "': " + (S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file") +
                    "; give the Python file that defines the kernel\n");
  if (st.st_size > kMaxFileBytes)
    throw FileError(cannot_read + path_ + "': it holds " + std::to_string(st.st_size) + " bytes, more than the " +
                    std::to_string(kMaxFileBytes) + " a kernel's source file may\n");
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw FileError(cannot_read + path_ + "': " + std::strerror(errno) + "\n");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FileError(cannot_read + path_ + "'\n");
  file_ = sources_.add(path_, text.str(), 1);
  try {
    module_ = frontend::parse_module(sources_, file_);
  } catch (const UserError& e) {
    throw FileError(render(e.diagnostic(), &sources_));
  }

  // Later bindings replace earlier ones, as when Python runs the module top to bottom.
  struct Event {
    int32_t line;
    std::string name;
    Binding binding;
  };
  std::vector<Event> events;
  for (const ast::Import& imp : module_.imports) events.push_back({imp.loc.line, imp.alias, Binding{&imp, nullptr, nullptr}});
  for (const ast::ModuleAssign& a : module_.assigns) events.push_back({a.loc.line, a.name, Binding{nullptr, &a, nullptr}});
  for (const ast::FunctionDef& f : module_.functions) events.push_back({f.loc.line, f.name, Binding{nullptr, nullptr, &f}});
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.line < b.line; });
  for (const Event& e : events) bindings_[e.name] = e.binding;
}

const ast::FunctionDef* KernelFile::find_function(std::string_view name) const {
  auto it = bindings_.find(name);
  return it == bindings_.end() ? nullptr : it->second.function;
}

std::vector<const ast::FunctionDef*> KernelFile::jit_functions() const {
  std::vector<const ast::FunctionDef*> out;
  for (const ast::FunctionDef& f : module_.functions)
    if (is_jit_decorated(f)) out.push_back(&f);
  return out;
}

std::vector<frontend::FunctionSource> KernelFile::collect_functions(const ast::FunctionDef& kernel) const {
  std::vector<frontend::FunctionSource> out;
  std::map<const ast::FunctionDef*, int32_t> index_of;
  // Reserves the function's slot before visiting its callees, so recursion
  // (direct or mutual) refers to an index instead of looping.
  std::function<int32_t(const ast::FunctionDef&)> add = [&](const ast::FunctionDef& fn) -> int32_t {
    if (auto it = index_of.find(&fn); it != index_of.end()) return it->second;
    int32_t index = static_cast<int32_t>(out.size());
    index_of[&fn] = index;
    out.emplace_back();
    frontend::FunctionSource source;
    source.name = fn.name;
    source.filename = path_;
    source.source = source_text(fn, &source.first_line);
    for (const std::string& name : referenced_names(fn)) {
      auto it = bindings_.find(name);
      if (it == bindings_.end()) continue;  // a local, a builtin, or undefined: the front end decides
      const Binding& b = it->second;
      if (b.function && is_jit_decorated(*b.function)) {
        GlobalValue g;
        g.kind = GlobalValue::Kind::JitFunction;
        g.function = add(*b.function);
        source.globals[name] = g;
      } else if (b.function) {
        source.globals[name] = opaque("function '" + name + "' (not a @tegula.jit function)");
      } else if (b.import) {
        source.globals[name] = import_value(*b.import);
      } else {
        std::optional<GlobalValue> value = literal_value(*b.assign->value);
        source.globals[name] =
            value ? *value : opaque("module-level value '" + name + "' (tegula compile evaluates only literal constants)");
      }
    }
    out[static_cast<size_t>(index)] = std::move(source);
    return index;
  };
  add(kernel);
  return out;
}

std::vector<KernelParam> KernelFile::kernel_params(const ast::FunctionDef& kernel,
                                                   const frontend::FunctionSource& kernel_source) const {
  SourceManager scratch;
  std::vector<frontend::SignatureParam> signature = frontend::parse_signature(kernel_source, scratch);
  TEGULA_ASSERT(signature.size() == kernel.params.size(), "the kernel's source re-parsed differently");
  std::vector<KernelParam> params;
  for (size_t i = 0; i < signature.size(); ++i) {
    KernelParam p;
    p.name = signature[i].name;
    p.is_constexpr = signature[i].is_constexpr;
    if (kernel.params[i].default_value) p.default_value = literal_value(*kernel.params[i].default_value);
    params.push_back(std::move(p));
  }
  return params;
}

// int/float/bool/str/None literals, negated numbers, `tl.constexpr(literal)`,
// dtypes of the language module (`tl.float16`) and names bound to any of these.
std::optional<GlobalValue> KernelFile::literal_value(const ast::Expr& e, int hops) const {
  GlobalValue g;
  switch (e.kind) {
    case ast::ExprKind::Int:
      if (e.is_unsigned) return std::nullopt;  // beyond int64, as the Python side treats it
      g.kind = GlobalValue::Kind::Int;
      g.int_value = e.int_value;
      return g;
    case ast::ExprKind::Float:
      g.kind = GlobalValue::Kind::Float;
      g.float_value = e.float_value;
      return g;
    case ast::ExprKind::Bool:
      g.kind = GlobalValue::Kind::Bool;
      g.int_value = e.bool_value;
      return g;
    case ast::ExprKind::None:
      return g;
    case ast::ExprKind::Str:
      g.kind = GlobalValue::Kind::Str;
      g.text = e.name;
      return g;
    case ast::ExprKind::Unary: {
      const ast::Expr& operand = *e.children[0];
      bool negate = e.unary_op == ast::UnaryOp::Neg;
      if (!negate && e.unary_op != ast::UnaryOp::Pos) return std::nullopt;
      if (operand.kind == ast::ExprKind::Float) {
        g.kind = GlobalValue::Kind::Float;
        g.float_value = negate ? -operand.float_value : operand.float_value;
        return g;
      }
      if (operand.kind != ast::ExprKind::Int) return std::nullopt;
      uint64_t magnitude = static_cast<uint64_t>(operand.int_value);
      if (operand.is_unsigned && !(negate && magnitude == uint64_t{1} << 63)) return std::nullopt;
      g.kind = GlobalValue::Kind::Int;
      g.int_value = negate ? static_cast<int64_t>(0 - magnitude) : operand.int_value;
      return g;
    }
    case ast::ExprKind::Name: {
      // `BLOCK_N: tl.constexpr = BLOCK` or `B = A`: through module-level
      // constants, a bounded number of steps (`A = B; B = A` must not loop).
      auto it = bindings_.find(e.name);
      if (hops == 0 || it == bindings_.end() || !it->second.assign) return std::nullopt;
      return literal_value(*it->second.assign->value, hops - 1);
    }
    case ast::ExprKind::Call: {
      const ast::Expr& callee = *e.children[0];
      bool is_constexpr = (callee.kind == ast::ExprKind::Name || callee.kind == ast::ExprKind::Attribute) &&
                          callee.name == "constexpr";
      if (!is_constexpr || e.children.size() != 2 || !e.keywords.empty()) return std::nullopt;
      return literal_value(*e.children[1], hops);
    }
    case ast::ExprKind::Attribute: {
      const ast::Expr& base = *e.children[0];
      if (base.kind != ast::ExprKind::Name) return std::nullopt;
      auto it = bindings_.find(base.name);
      if (it == bindings_.end() || !it->second.import ||
          import_value(*it->second.import).kind != GlobalValue::Kind::Language)
        return std::nullopt;
      std::optional<std::string> dtype = canonical_dtype_name(e.name);
      if (!dtype || *dtype != e.name) return std::nullopt;  // only names the module really has
      g.kind = GlobalValue::Kind::DType;
      g.text = *dtype;
      return g;
    }
    default:
      return std::nullopt;
  }
}

GlobalValue KernelFile::import_value(const ast::Import& imp) const {
  std::string full = imp.member.empty() ? imp.module : imp.module + "." + imp.member;
  if (!imp.member.empty() && is_language_module(imp.module)) {
    // `from triton.language import math` is a module; `... import arange` is a
    // function, which means what `tl.arange` (the module's attribute) means.
    static const std::set<std::string> kSubmodules = {"math", "extra", "libdevice", "core", "standard", "random"};
    if (!kSubmodules.count(imp.member)) {
      GlobalValue member;
      member.kind = GlobalValue::Kind::LanguageMember;
      member.text = full;
      return member;
    }
  }
  GlobalValue g;
  g.text = full;
  if (is_language_module(full)) {
    g.kind = GlobalValue::Kind::Language;
  } else if (full == "tegula" || full == "triton") {
    g.kind = GlobalValue::Kind::Tegula;
  } else {
    return opaque(imp.member.empty() ? "module '" + full + "'"
                                     : "'" + imp.member + "' imported from module '" + imp.module + "'");
  }
  return g;
}

// The text of the definition as inspect.getsource would return it: from its
// first decorator to the line where its last token ends.
std::string KernelFile::source_text(const ast::FunctionDef& fn, int32_t* first_line) const {
  std::string_view text = sources_.file(file_).text;
  frontend::TextRange found;
  int32_t found_line = 1;
  for (const frontend::TextRange& range : frontend::split_top_level(text)) {
    int32_t line = line_of_offset(text, range.begin);
    if (line > fn.loc.line) break;
    found = range;
    found_line = line;
  }
  // The range also holds the comments and blank lines up to the next
  // statement; the definition ends where its last token does.
  int32_t last_line = found_line;
  for (const frontend::Token& t : frontend::tokenize(sources_, file_, found))
    if (t.kind != frontend::TokenKind::Newline && t.kind != frontend::TokenKind::Indent &&
        t.kind != frontend::TokenKind::Dedent && t.kind != frontend::TokenKind::EndOfFile)
      last_line = t.loc.line + static_cast<int32_t>(std::count(t.text.begin(), t.text.end(), '\n'));
  size_t end = found.begin;
  for (int32_t line = found_line; line <= last_line && end < text.size(); ++line) {
    size_t nl = text.find('\n', end);
    end = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  *first_line = found_line;
  std::string out(text.substr(found.begin, end - found.begin));
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

}  // namespace tegula::tools
