// Calls of @constexpr_function host functions: the arguments must be
// constants (as GlobalValues they cross to the host), the host runs the
// function (KernelRequest::call_host) and its result comes back as a global
// would: a constant, a dtype, a tuple of them. One of Triton's builtins
// (__triton_builtin__) may also be given tiles and run-time scalars: each
// crosses as a stand-in, which the builtin may inspect (dtype, shape) and
// return but not compute on, and a stand-in returned means its value.
#include <functional>
#include <map>

#include "frontend/builtins.h"
#include "frontend/lowering.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

// What stands in for a symbol without a host value: nullopt where none may.
using StandInMaker = std::function<std::optional<GlobalValue>(const Symbol&)>;

// `s` as the GlobalValue the host receives, or nullopt for what has no host
// value (tiles, pointers, functions...) and no stand-in.
std::optional<GlobalValue> host_value(const Symbol& s, const StandInMaker& stand_in) {
  GlobalValue g;
  if (s.kind == Symbol::Kind::Tuple) {
    g.kind = GlobalValue::Kind::Tuple;
    g.text = s.name;  // a named tuple's fields, comma-separated
    for (const Symbol& e : s.elements) {
      std::optional<GlobalValue> v = host_value(e, stand_in);
      if (!v) return std::nullopt;
      g.elements.push_back(std::move(*v));
    }
    return g;
  }
  if (s.kind != Symbol::Kind::Const) return stand_in(s);
  const ConstValue& c = s.constant;
  switch (c.kind) {
    case ConstValue::Kind::Int:
      if (c.is_unsigned) return std::nullopt;
      g.kind = GlobalValue::Kind::Int;
      g.int_value = c.i;
      return g;
    case ConstValue::Kind::Float: g.kind = GlobalValue::Kind::Float; g.float_value = c.f; return g;
    case ConstValue::Kind::Bool: g.kind = GlobalValue::Kind::Bool; g.int_value = c.i != 0; return g;
    case ConstValue::Kind::Str: g.kind = GlobalValue::Kind::Str; g.text = c.s; return g;
    case ConstValue::Kind::None: g.kind = GlobalValue::Kind::None; return g;
    case ConstValue::Kind::DType:
      if (c.pointer || c.type_form != ConstValue::TypeForm::Scalar) return std::nullopt;
      g.kind = GlobalValue::Kind::DType;
      g.text = ir::scalar_info(c.dtype).tl_name;
      return g;
  }
  return std::nullopt;
}

// A plain Python function's reference (one the host wrapped because a kernel names it, not a
// @constexpr_function) has a fourth part, after the third '#': how errors name it. Empty otherwise.
std::string plain_function_description(const std::string& reference) {
  size_t at = 0;
  for (int part = 0; part < 3; ++part) {
    at = reference.find('#', at);
    if (at == std::string::npos) return "";
    ++at;
  }
  return reference.substr(at);
}

}  // namespace

// The tile language's counterpart of a NumPy or math function (lowering.h).
std::string language_counterpart(const std::string& description) {
  size_t dot = description.find('.');
  std::string module = description.substr(0, dot);
  if (dot == std::string::npos || (module != "np" && module != "math")) return "";
  static const std::map<std::string, std::string> kAliases = {
      {"absolute", "abs"}, {"fabs", "abs"}, {"arcsin", "asin"}, {"arccos", "acos"}, {"arctan", "atan"},
      {"arctan2", "atan2"}, {"arcsinh", "asinh"}, {"arccosh", "acosh"}, {"arctanh", "atanh"},
      {"power", "pow"}, {"clip", "clamp"}, {"amax", "max"}, {"amin", "min"}, {"true_divide", "fdiv"}};
  std::string name = description.substr(dot + 1);
  if (auto it = kAliases.find(name); it != kAliases.end()) name = it->second;
  const Builtin* b = find_builtin(name);
  return b != nullptr && b->lower != nullptr && (b->forms & kLanguage) != 0 ? "tl." + name : "";
}

std::string Lowerer::host_function_name(const Symbol& s) {
  // The reference is "qualname#module#id": the part before '#' names it.
  return s.name.substr(0, s.name.find('#'));
}

Symbol Lowerer::call_host_function(const Symbol& callee, const CallArgs& args) {
  std::string name = host_function_name(callee);
  std::string plain = plain_function_description(callee.name);
  std::string what = plain.empty() ? "the constexpr function `" + name + "`" : "the host function `" + name + "`";
  std::vector<Symbol> stand_ins;
  StandInMaker stand_in = [&](const Symbol& s) -> std::optional<GlobalValue> {
    // A tensor descriptor stands in as its element type ("desc:" first) and block shape.
    bool descriptor = s.kind == Symbol::Kind::TensorDescriptor && s.block && !s.elements.empty() &&
                      s.elements[0].is_value();
    if (!callee.takes_stand_ins || !(s.is_value() || descriptor)) return std::nullopt;
    const ir::Type& t = fn_.type(descriptor ? s.elements[0].value : s.value);
    GlobalValue g;
    g.kind = GlobalValue::Kind::StandIn;
    g.int_value = static_cast<int64_t>(stand_ins.size());
    g.text = std::string(descriptor ? "desc:" : t.is_pointer() ? "*" : "") + ir::scalar_info(t.scalar).tl_name;
    for (int64_t d : descriptor ? s.block->block_shape : t.shape) {
      GlobalValue dim;
      dim.kind = GlobalValue::Kind::Int;
      dim.int_value = d;
      g.elements.push_back(dim);
    }
    stand_ins.push_back(s);
    return g;
  };
  auto argument = [&](const Symbol& s, const SourceLoc& loc, const std::string& which) {
    std::optional<GlobalValue> v = host_value(s, stand_in);
    if (!v && !plain.empty()) {
      std::string counterpart = language_counterpart(plain);
      error_at(loc, Diag::HostObjectInKernel,
               "`" + plain + "` is a host object and cannot be called inside a kernel on " + describe(s) +
                   " (argument " + which + ")",
               !counterpart.empty()
                   ? "use `" + counterpart + "` inside a kernel: `" + plain +
                         "` runs on the host while the kernel compiles, on constants only"
                   : "a Python function that is not @tegula.jit runs while the kernel compiles, on constants only: "
                     "decorate it with @tegula.jit to call it on tiles, or call a tl function");
    }
    if (!v)
      error_at(loc, Diag::ConstexprGotRuntimeValue,
               "argument " + which + " of " + what + " is " + describe(s) +
                   ", which is not known when the kernel compiles",
               "a @constexpr_function runs on the host while the kernel compiles: pass constants (constexpr "
               "parameters, literals, dtypes, tuples of them)");
    return std::move(*v);
  };
  std::vector<GlobalValue> positional;
  for (size_t i = 0; i < args.positional.size(); ++i)
    positional.push_back(argument(args.positional[i], i < args.positional_locs.size() ? args.positional_locs[i] : args.loc,
                                  std::to_string(i + 1)));
  std::vector<std::pair<std::string, GlobalValue>> keywords;
  for (size_t k = 0; k < args.keywords.size(); ++k)
    keywords.emplace_back(args.keywords[k].first,
                          argument(args.keywords[k].second, k < args.keyword_locs.size() ? args.keyword_locs[k] : args.loc,
                                   "`" + args.keywords[k].first + "`"));
  if (!request_.call_host)
    error_at(args.loc, Diag::HostObjectInKernel,
             what + " runs in Python, and this compile has no Python to run it",
             "compile the kernel from Python (kernel[grid](...), kernel.warmup(...))");
  GlobalValue result;
  try {
    result = request_.call_host(callee.name, positional, keywords);
  } catch (const HostCallError& e) {
    error_at(args.loc, Diag::ConstexprFunctionFailed, what + " " + e.what());
  }
  return from_host(result, stand_ins, what, args.loc);
}

// A host function's result as a symbol: its stand-ins back as the values
// they stood for, the rest as globals are.
Symbol Lowerer::from_host(const GlobalValue& result, const std::vector<Symbol>& stand_ins, const std::string& what,
                          const SourceLoc& loc) {
  if (result.kind == GlobalValue::Kind::StandIn) {
    if (result.int_value < 0 || static_cast<size_t>(result.int_value) >= stand_ins.size())
      error_at(loc, Diag::ConstexprFunctionFailed, what + " returned a stand-in of another call");
    return stand_ins[static_cast<size_t>(result.int_value)];
  }
  if (result.kind != GlobalValue::Kind::Tuple) return global_symbol(result, loc);
  std::vector<Symbol> elements;
  for (const GlobalValue& e : result.elements) elements.push_back(from_host(e, stand_ins, what, loc));
  Symbol t = Symbol::tuple(std::move(elements));
  t.name = result.text;
  return t;
}

Symbol Lowerer::make_named_tuple(const Symbol& type, const CallArgs& args) {
  std::string name = type.name.substr(0, type.name.find(':'));
  std::vector<std::string> fields;
  std::string list = type.name.substr(type.name.find(':') + 1);
  for (size_t start = 0; !list.empty() && start <= list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    fields.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  if (args.positional.size() > fields.size())
    error_at(args.loc, Diag::WrongArgumentCount,
             "`" + name + "` takes " + std::to_string(fields.size()) + " fields but " +
                 std::to_string(args.positional.size()) + " were given");
  std::vector<std::optional<Symbol>> bound(fields.size());
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto& [field, value] = args.keywords[k];
    size_t i = 0;
    while (i < fields.size() && fields[i] != field) ++i;
    if (i == fields.size())
      error_at(args.keyword_locs[k], Diag::UnknownKeywordArgument, "`" + name + "` has no field named `" + field + "`");
    if (bound[i])
      error_at(args.keyword_locs[k], Diag::DuplicateArgument, "`" + name + "` got multiple values for `" + field + "`");
    bound[i] = value;
  }
  std::vector<Symbol> elements;
  size_t first_default = fields.size() - type.elements.size();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!bound[i] && i >= first_default) bound[i] = type.elements[i - first_default];
    if (!bound[i])
      error_at(args.loc, Diag::WrongArgumentCount, "`" + name + "` is missing the field `" + fields[i] + "`");
    elements.push_back(*bound[i]);
  }
  Symbol t = Symbol::tuple(std::move(elements));
  t.name = list;  // its fields, read by attribute (lower_expr.cpp)
  return t;
}

}  // namespace tegula::frontend
