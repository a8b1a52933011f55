// Entry points of lowering, @jit function inlining and name resolution.
#include "frontend/lower.h"

#include "frontend/builtins.h"
#include "frontend/builtins_block_ptr.h"
#include "frontend/builtins_python.h"
#include "frontend/lowering.h"
#include "frontend/parser.h"
#include "frontend/symbol_leaves.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

constexpr int kMaxInlineDepth = 64;
// Every call is inlined, so a helper that calls itself twice per level makes
// 2^depth calls; the bound turns what would be an endless compile into an
// error (as kMaxKernelStaticTrips does for unrolled loops).
constexpr int64_t kMaxKernelInlinedCalls = int64_t{1} << 20;

bool is_constexpr_annotation(const ast::Expr* e) {
  if (!e) return false;
  switch (e->kind) {
    case ast::ExprKind::Name:
    case ast::ExprKind::Attribute: return e->name == "constexpr";
    case ast::ExprKind::Str: return e->name.find("constexpr") != std::string::npos;
    default: return false;
  }
}

// `x_ptr: tl.const`: a pointer the kernel only reads.
bool is_const_annotation(const ast::Expr* e) {
  return e && (e->kind == ast::ExprKind::Name || e->kind == ast::ExprKind::Attribute) && e->name == "const";
}

// Names Python provides without an import that kernels commonly use: the
// registry's "py." rows.
bool is_python_builtin(const std::string& name) { return find_builtin("py." + name) != nullptr; }

ConstValue const_from_global(const GlobalValue& g, const SourceLoc& loc) {
  switch (g.kind) {
    case GlobalValue::Kind::Int: return ConstValue::integer(g.int_value);
    case GlobalValue::Kind::Float: return ConstValue::real(g.float_value);
    case GlobalValue::Kind::Bool: return ConstValue::boolean(g.int_value != 0);
    case GlobalValue::Kind::None: return ConstValue::none();
    case GlobalValue::Kind::Str: return ConstValue::string(g.text);
    case GlobalValue::Kind::DType: {
      auto t = dtype_from_name(g.text);
      if (!t) error_at(loc, Diag::UnknownDtype, "unsupported dtype `" + g.text + "`");
      return ConstValue::type(*t);
    }
    default: break;
  }
  TEGULA_ASSERT(false, "not a constant global");
}

}  // namespace

std::vector<SignatureParam> parse_signature(const FunctionSource& fn, SourceManager& sources) {
  int32_t file = sources.add(fn.filename, fn.source, fn.first_line);
  ast::FunctionDef def = parse_function(sources, file);
  std::vector<SignatureParam> out;
  for (const ast::Param& p : def.params)
    out.push_back(SignatureParam{p.name, is_constexpr_annotation(p.annotation.get()), p.default_value != nullptr});
  return out;
}

ir::Function lower_kernel(const KernelRequest& request, SourceManager& sources, const TargetInfo& target) {
  Lowerer lowerer(request, sources, target);
  return lowerer.run();
}

Lowerer::Lowerer(const KernelRequest& request, SourceManager& sources, const TargetInfo& target)
    : request_(request), sources_(sources), target_(target), builder_(fn_) {
  file_ids_.assign(request.functions.size(), -1);
  asts_.resize(request.functions.size());
}

const ast::FunctionDef& Lowerer::function_ast(int32_t index) {
  TEGULA_ASSERT(index >= 0 && static_cast<size_t>(index) < request_.functions.size(), "bad function index");
  auto& slot = asts_[static_cast<size_t>(index)];
  if (!slot) {
    const FunctionSource& fs = request_.functions[static_cast<size_t>(index)];
    int32_t file = sources_.add(fs.filename, fs.source, fs.first_line);
    file_ids_[static_cast<size_t>(index)] = file;
    slot = std::make_unique<ast::FunctionDef>(parse_function(sources_, file));
  }
  return *slot;
}

ir::Function Lowerer::run() {
  TEGULA_ASSERT(!request_.functions.empty(), "request without a kernel");
  const ast::FunctionDef& kernel = function_ast(0);
  fn_.name = request_.name.empty() ? kernel.name : request_.name;
  builder_.set_insertion_end(fn_.body());
  builder_.set_loc(kernel.loc);

  auto frame = std::make_unique<Frame>();
  frame->function = 0;
  frames_.push_back(std::move(frame));

  if (request_.args.size() != kernel.params.size()) {
    throw UserError(Diagnostic{kernel.loc, Diag::LaunchArgumentCount,
                               "kernel `" + kernel.name + "` takes " + std::to_string(kernel.params.size()) +
                                   " arguments but " + std::to_string(request_.args.size()) + " were given",
                               "", ErrorKind::Value});
  }
  for (const ast::Param& p : kernel.params)
    if (p.star)
      error_at(p.loc, Diag::InvalidSignature, "a launched kernel cannot take `*" + p.name + "`",
               "list every parameter by name; a @jit helper the kernel calls may take `*args`");
  std::vector<std::string> param_names;
  for (const ast::Param& p : kernel.params) param_names.push_back(p.name);
  ElementParamNames element_name(param_names);
  // The symbol of an argument: a constant, a descriptor, a tuple of the
  // symbols of its elements (parameters NAME__i), or a new parameter.
  auto bind = [&](auto& self, const std::string& name, const ArgSpec& a, const SourceLoc& loc,
                  bool read_only) -> Symbol {
    switch (a.kind) {
      case ArgSpec::Kind::Constexpr: return global_symbol(a.value, loc);
      case ArgSpec::Kind::TensorDescriptor: return bind_descriptor_param(*this, name, a, loc);
      case ArgSpec::Kind::Tuple: {
        std::vector<Symbol> elements;
        for (size_t i = 0; i < a.parts.size(); ++i)
          elements.push_back(self(self, element_name(name, i), a.parts[i], loc, read_only));
        if (a.value.kind == GlobalValue::Kind::AggregateType) return host_aggregate(a.value, std::move(elements), loc);
        Symbol t = Symbol::tuple(std::move(elements));
        t.name = a.value.text;  // a named tuple's fields, for attribute reads
        return t;
      }
      default: break;
    }
    ir::Type t = a.kind == ArgSpec::Kind::Pointer ? ir::Type::ptr(a.dtype) : ir::Type::of(a.dtype);
    fn_.params.push_back(
        ir::Param{name, t, a.divisibility, read_only && a.kind == ArgSpec::Kind::Pointer, a.by_value_bytes});
    ir::ValueId v = fn_.add_block_arg(fn_.body(), t);
    if (a.kind == ArgSpec::Kind::Int && a.is_one) {
      // A declared type (s: tl.uint8) keeps the 1 a value of that type, so `s + 255` wraps as it would
      // for any other value; an unannotated int is specialized like a constexpr, as Triton does.
      if (a.typed_one) return Symbol::of(constant(ConstValue::integer(1), t, loc));
      return Symbol::of(ConstValue::integer(1));
    }
    return Symbol::of(v);
  };
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const ast::Param& p = kernel.params[i];
    const ArgSpec& a = request_.args[i];
    bool aggregate = a.kind == ArgSpec::Kind::Tuple && a.value.kind == GlobalValue::Kind::AggregateType;
    if (a.kind != ArgSpec::Kind::Constexpr && !aggregate && is_constexpr_annotation(p.annotation.get()))
      error_at(p.loc, Diag::ConstexprGotRuntimeValue,
               "parameter `" + p.name + "` is a constexpr but received a runtime value",
               "constexpr parameters are specialized at compile time; pass a Python int, float, bool, str or dtype");
    bool read_only = is_const_annotation(p.annotation.get());
    if (read_only && (a.kind == ArgSpec::Kind::Int || a.kind == ArgSpec::Kind::Float || a.kind == ArgSpec::Kind::Bool))
      error_at(p.loc, Diag::WrongArgumentKind, "parameter `" + p.name + "` is annotated tl.const but is not a pointer",
               "tl.const marks pointers whose memory the kernel only reads");
    assign(p.name, bind(bind, p.name, a, p.loc, read_only));
  }

  try {
    lower_body(kernel.body);
  } catch (UserError& e) {
    e.add_frame(CallFrame{kernel.name, kernel.loc, SourceLoc{}});
    throw;
  }
  builder_.set_loc(SourceLoc{});
  builder_.create(ir::OpKind::Return, {}, {});
  for (size_t f = 0; f < sources_.size(); ++f) fn_.files.push_back(sources_.file(static_cast<int32_t>(f)).name);
  for (const Diagnostic& w : warnings_) fn_.warnings.push_back(render(w, &sources_));
  frames_.pop_back();
  return std::move(fn_);
}

Symbol Lowerer::call_jit(int32_t index, const CallArgs& args, bool aggregate_init) {
  const ast::FunctionDef* parsed = nullptr;
  try {
    parsed = &function_ast(index);  // parsed on its first call, as deep in the stack as that call is
  } catch (UserError& e) {
    // The callee's own frame, so that an error in its text (the parser's stack bound) shows its callers.
    const FunctionSource& fs = request_.functions[static_cast<size_t>(index)];
    e.add_frame(CallFrame{fs.name, SourceLoc{file_ids_[static_cast<size_t>(index)], fs.first_line, 1, 1}, args.loc});
    throw;
  }
  const ast::FunctionDef& def = *parsed;
  if (inline_depth_ >= kMaxInlineDepth)
    error_at(args.loc, Diag::InliningTooDeep,
             "calls to @jit functions are nested too deeply (recursion?) while inlining `" + def.name + "`",
             "Tegula inlines every @jit function; recursive kernels are not supported");
  if (++inlined_calls_ > kMaxKernelInlinedCalls)
    error_at(args.loc, Diag::InliningTooDeep,
             "this kernel inlines more than " + std::to_string(kMaxKernelInlinedCalls) +
                 " calls to @jit functions (at `" + def.name + "`); a function that calls others more than once " +
                 "per level makes exponentially many",
             "Tegula inlines every @jit call: compute the repeated value once and reuse it, or turn the "
             "recursion into a loop");
  if (interrupt_watch_.interrupted()) throw Interrupted();

  // Bind like Python: positional (the extra ones into a `*args` parameter's tuple), then keywords,
  // then defaults.
  std::vector<std::optional<Symbol>> bound(def.params.size());
  size_t star = 0;
  while (star < def.params.size() && !def.params[star].star) ++star;
  const size_t positional_params = star;  // all of them without a `*args`
  if (args.positional.size() > positional_params && star == def.params.size())
    error_at(args.loc, Diag::WrongArgumentCount,
             "`" + def.name + "` takes " + std::to_string(def.params.size()) + " arguments but " +
                           std::to_string(args.positional.size()) + " were given");
  for (size_t i = 0; i < args.positional.size() && i < positional_params; ++i) bound[i] = args.positional[i];
  if (star < def.params.size()) {
    std::vector<Symbol> rest;
    for (size_t i = positional_params; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    bound[star] = Symbol::tuple(std::move(rest));
  }
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto& [name, value] = args.keywords[k];
    size_t i = 0;
    while (i < def.params.size() && (def.params[i].name != name || def.params[i].star)) ++i;
    if (i == def.params.size()) {
      std::vector<std::string> params;
      for (const auto& p : def.params) params.push_back(p.name);
      error_at(args.keyword_locs[k], Diag::UnknownKeywordArgument,
               "`" + def.name + "` has no parameter named `" + name + "`", parameters_hint(def.name, name, params));
    }
    if (bound[i]) error_at(args.keyword_locs[k], Diag::DuplicateArgument,
                           "`" + def.name + "` got multiple values for `" + name + "`");
    bound[i] = value;
  }

  std::optional<size_t> runtime_constexpr;  // the first constexpr-annotated parameter given a run-time value
  auto callee = std::make_unique<Frame>();
  callee->function = index;
  frames_.push_back(std::move(callee));
  for (size_t i = 0; i < def.params.size(); ++i) {
    const ast::Param& p = def.params[i];
    if (!bound[i]) {
      if (!p.default_value)
        error_at(args.loc, Diag::WrongArgumentCount, "`" + def.name + "` is missing the argument `" + p.name + "`");
      bound[i] = eval(*p.default_value);  // evaluated in the callee's global scope
    }
    // Triton takes a callee's constexprs from its arguments, not its annotations: a parameter annotated
    // tl.constexpr that receives a run-time value holds that value (Triton's attention tutorial passes
    // tensors so). Only if the callee then needs it constant is that an error, said below.
    if (is_constexpr_annotation(p.annotation.get()) && !is_compile_time(*bound[i]) && !runtime_constexpr)
      runtime_constexpr = i;
  }
  for (size_t i = 0; i < def.params.size(); ++i) assign(def.params[i].name, *bound[i]);
  if (aggregate_init) frame().aggregate_init_self = def.params.empty() ? std::string() : def.params[0].name;
  if (aggregate_init && def.params.empty())
    error_at(def.loc, Diag::WrongArgumentCount, "an aggregate's __init__ takes the instance first: def __init__(self, ...)");

  ++inline_depth_;
  try {
    lower_body(def.body);
  } catch (UserError& e) {
    if (!runtime_constexpr || e.diagnostic().code != Diag::NotConstexpr) {
      e.add_frame(CallFrame{def.name, def.loc, args.loc});
      throw;
    }
    size_t i = *runtime_constexpr;
    const SourceLoc& at = e.diagnostic().loc;
    error_at(i < args.positional_locs.size() ? args.positional_locs[i] : args.loc, Diag::ConstexprGotRuntimeValue,
             "parameter `" + def.params[i].name + "` of `" + def.name + "` is a constexpr but received " +
                 describe(*bound[i]) + ", and `" + def.name + "` needs a compile-time constant at line " +
                 std::to_string(at.line) + ":" + std::to_string(at.col) + " (" + e.diagnostic().message + ")",
             "pass a compile-time constant");
  }
  --inline_depth_;
  Symbol result = frame().result ? *frame().result : Symbol::of(ConstValue::none());
  if (auto it = frame().vars.find(kResult); it != frame().vars.end()) result = it->second;  // an early return
  if (aggregate_init) {  // what __init__ made of its instance, not its (None) result
    if (!result.is_none())
      error_at(def.loc, Diag::WrongArgumentKind, "an aggregate's __init__ must return None, but `" + def.name +
                                                     "` returns " + describe(result));
    result = frame().vars.at(frame().aggregate_init_self);
  }
  frames_.pop_back();
  return result;
}

void Lowerer::warn_at(const SourceLoc& loc, std::string message, std::string hint) {
  // A warning is rendered without a code; the field only has to hold one.
  Diagnostic d{loc, Diag::InvalidOperandType, std::move(message), std::move(hint), ErrorKind::Compile};
  d.warning = true;
  warnings_.push_back(std::move(d));
}

void Lowerer::assign(const std::string& name, Symbol value) {
  frame().maybe_undefined.erase(name);
  frame().loop_last.erase(name);
  frame().vars[name] = std::move(value);
}

namespace {

// "triton.language.math" -> "language.math": the module path Symbol::module takes.
std::string language_module_path(const std::string& path) {
  size_t pos = path.find("language");
  return pos == std::string::npos ? std::string("language") : path.substr(pos);
}

}  // namespace

Symbol Lowerer::global_symbol(const GlobalValue& g, const SourceLoc& loc) {
  switch (g.kind) {
    case GlobalValue::Kind::Language: return Symbol::module(language_module_path(g.text));
    case GlobalValue::Kind::LanguageMember: {
      // The same symbol as the attribute it was imported from, so `r(x)` after
      // `from ...libdevice import rsqrt as r` is `libdevice.rsqrt(x)` exactly.
      size_t dot = g.text.rfind('.');
      TEGULA_ASSERT(dot != std::string::npos, "a language member's path names its module");
      return attribute(Symbol::module(language_module_path(g.text.substr(0, dot))), g.text.substr(dot + 1), loc);
    }
    case GlobalValue::Kind::Tegula: return Symbol::module("tegula");
    case GlobalValue::Kind::JitFunction: return Symbol::jit(g.function);
    case GlobalValue::Kind::NamedTupleType: {
      Symbol s;
      s.kind = Symbol::Kind::NamedTupleType;
      s.name = g.text;
      for (const GlobalValue& d : g.elements) s.elements.push_back(global_symbol(d, loc));
      return s;
    }
    case GlobalValue::Kind::AggregateType: {
      Symbol s;
      s.kind = Symbol::Kind::AggregateType;
      s.name = g.text;
      for (const GlobalValue& part : g.elements) {
        std::vector<Symbol> items;
        for (const GlobalValue& item : part.elements) items.push_back(global_symbol(item, loc));
        Symbol t = Symbol::tuple(std::move(items));
        t.name = part.text;
        s.elements.push_back(std::move(t));
      }
      if (s.elements.size() != 4)
        error_at(loc, Diag::HostObjectInKernel, "the description of the aggregate class `" + g.text + "` is malformed");
      return s;
    }
    case GlobalValue::Kind::ConstexprFunction: {
      Symbol s;
      s.kind = Symbol::Kind::HostFunction;
      s.name = g.text;
      s.takes_stand_ins = g.elements.size() > 1 && g.elements[1].kind == GlobalValue::Kind::Bool &&
                          g.elements[1].int_value != 0;
      return s;
    }
    case GlobalValue::Kind::Opaque:
    case GlobalValue::Kind::HostModule: return Symbol::opaque(g.text);  // a module only as a global (lookup)
    case GlobalValue::Kind::Tuple: {
      std::vector<Symbol> elements;
      for (const GlobalValue& e : g.elements) elements.push_back(global_symbol(e, loc));
      Symbol t = Symbol::tuple(std::move(elements));
      t.name = g.text;  // a named tuple's fields (a constexpr function's result), or ""
      return t;
    }
    default: return Symbol::of(const_from_global(g, loc));
  }
}

// `module.attr` of a host module: the global the host side resolved under the dotted name, in the
// globals of the function that names the module.
Symbol Lowerer::member_global(const Symbol& module, const std::string& attr, const SourceLoc& loc) {
  const FunctionSource& fs = request_.functions[static_cast<size_t>(module.function)];
  std::string dotted = module.name + "." + attr;
  auto it = fs.globals.find(dotted);
  if (it == fs.globals.end())
    error_at(loc, Diag::NoSuchAttribute, "the module `" + module.name + "` has no attribute `" + attr + "`",
             "a kernel can use a module's @jit functions, constants and modules");
  if (it->second.kind == GlobalValue::Kind::HostModule) return Symbol::host_module(dotted, module.function);
  return global_symbol(it->second, loc);
}

Symbol Lowerer::lookup(const std::string& name, const SourceLoc& loc) {
  Frame& f = frame();
  if (auto it = f.vars.find(name); it != f.vars.end()) return it->second;
  if (auto it = f.maybe_undefined.find(name); it != f.maybe_undefined.end()) {
    if (std::optional<Symbol> last = last_induction_value(name, loc)) return *last;
    error_at(loc, Diag::PossiblyUndefinedName, "`" + name + "` is not defined on every path that reaches this use",
             "assign `" + name + "` before the `if`/loop, or in every branch");
  }
  const FunctionSource& fs = request_.functions[static_cast<size_t>(f.function)];
  if (auto it = fs.globals.find(name); it != fs.globals.end()) {
    if (it->second.kind == GlobalValue::Kind::HostModule) return Symbol::host_module(name, f.function);
    return global_symbol(it->second, loc);
  }
  if (is_python_builtin(name)) return Symbol::builtin("py." + name);
  if (auto refused = refused_python_builtin(name))
    error_at(loc, Diag::UnsupportedLanguageName, refused->first, refused->second);
  std::string hint = "define it before use, pass it as an argument, or make it a module-level constant";
  if (is_language_builtin(name)) hint = "did you mean `tl." + name + "`?";
  error_at(loc, Diag::UndefinedName, "name `" + name + "` is not defined", hint);
}

}  // namespace tegula::frontend
