// Compile-time Python builtins of kernels (see builtins_python.h).
#include "frontend/builtins_python.h"

#include <map>
#include <set>

#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

std::string attribute_name(Lowerer& l, const CallArgs& c, const char* fn) {
  if (c.positional.size() < 2)
    error_at(c.loc, Diag::WrongArgumentCount, std::string(fn) + "() takes an object and an attribute name");
  const Symbol& name = c.positional[1];
  if (!name.is_const() || name.constant.kind != ConstValue::Kind::Str)
    error_at(c.positional_locs[1], Diag::NotConstexpr,
             std::string(fn) + "()'s attribute name must be a constexpr string, but it is " + l.describe(name),
             "pass the name as a string literal or a tl.constexpr parameter");
  return name.constant.s;
}

// What `cls` of isinstance(obj, cls) names, as a test of obj's symbol.
bool is_instance(Lowerer& l, const Symbol& obj, const Symbol& cls, const SourceLoc& loc) {
  if (cls.kind == Symbol::Kind::Tuple) {
    for (const Symbol& c : cls.elements)
      if (is_instance(l, obj, c, loc)) return true;
    return false;
  }
  using K = ConstValue::Kind;
  auto constant_of = [&](std::initializer_list<K> kinds) {
    if (!obj.is_const()) return false;
    for (K k : kinds)
      if (obj.constant.kind == k) return true;
    return false;
  };
  if (cls.kind == Symbol::Kind::Builtin) {
    const std::string& n = cls.name;
    if (n == "py.int") return constant_of({K::Int, K::Bool});  // Python's bool is an int
    if (n == "py.float") return constant_of({K::Float});
    if (n == "py.bool") return constant_of({K::Bool});
    if (n == "py.str") return constant_of({K::Str});
    if (n == "py.tuple" || n == "py.list") return obj.kind == Symbol::Kind::Tuple;
    if (n == "constexpr") return obj.is_const();
    if (n == "tensor") return obj.is_value();
    if (n == "dtype" || n == "pointer_type") return constant_of({K::DType});
  }
  error_at(loc, Diag::InvalidOperandType, "isinstance() cannot test for " + l.describe(cls),
           "kernels test for int, float, bool, str, tuple, tl.tensor, tl.constexpr or tl.dtype");
}

}  // namespace

Symbol py_getattr(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::string attr = attribute_name(l, c, "getattr");
  if (c.positional.size() > 3 || !c.keywords.empty())
    error_at(c.loc, Diag::WrongArgumentCount, "getattr() takes an object, a name and an optional default");
  if (c.positional.size() == 2) return l.attribute(c.positional[0], attr, c.loc);
  try {
    return l.attribute(c.positional[0], attr, c.loc);
  } catch (const UserError& e) {
    if (e.diagnostic().code != Diag::NoSuchAttribute) throw;
    return c.positional[2];
  }
}

Symbol py_hasattr(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::string attr = attribute_name(l, c, "hasattr");
  if (c.positional.size() != 2 || !c.keywords.empty())
    error_at(c.loc, Diag::WrongArgumentCount, "hasattr() takes an object and a name");
  try {
    l.attribute(c.positional[0], attr, c.loc);
    return Symbol::of(ConstValue::boolean(true));
  } catch (const UserError& e) {
    Diag code = e.diagnostic().code;
    if (code != Diag::NoSuchAttribute && code != Diag::UnsupportedLanguageName) throw;
    return Symbol::of(ConstValue::boolean(false));
  }
}

Symbol py_isinstance(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a("isinstance", {"obj", "class_or_tuple"}, c);
  return Symbol::of(ConstValue::boolean(is_instance(l, a.get("obj"), a.get("class_or_tuple"), a.loc("class_or_tuple"))));
}

Symbol py_list(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a("list", {"iterable"}, c);
  const Symbol& s = a.get("iterable");
  if (s.kind != Symbol::Kind::Tuple)
    error_at(a.loc("iterable"), Diag::InvalidOperandType, "list() of " + l.describe(s) + " is not defined in kernels",
             "kernels make lists of tuples only; index tiles with masks");
  return s;
}

std::optional<std::pair<std::string, std::string>> refused_python_builtin(const std::string& name) {
  // Where the language has an equivalent, the hint names it.
  static const std::map<std::string, std::string> kInstead = {
      {"sum", "use tl.sum(x, axis) for tiles; add constants with `+`"},
      {"any", "use tl.reduce_or(x, axis) or tl.max(x.to(tl.int1), axis)"},
      {"all", "use tl.min(x.to(tl.int1), axis)"},
      {"round", "use tl.extra.libdevice.round (or rint for round-half-even)"},
      {"pow", "use `**` on constants or tl.extra.libdevice.pow on tiles"},
      {"divmod", "use `//` and `%`"},
      {"type", "use isinstance(x, ...) or x.dtype"},
      {"str", "kernels take strings only as literals or tl.constexpr arguments"},
      {"enumerate", "loop with `for i in tl.static_range(len(t))` and index the tuple"},
      {"zip", "loop with `for i in tl.static_range(len(t))` and index the tuples"},
      {"sorted", "use tl.sort on tiles"},
      {"reversed", "use tl.flip on tiles"},
  };
  static const std::set<std::string> kOthers = {
      "map", "filter", "dict", "set", "frozenset", "repr", "id", "hash", "iter", "next", "input", "open",
      "callable", "vars", "dir", "globals", "locals", "setattr", "delattr", "super", "object", "slice",
      "complex", "bytes", "bytearray", "chr", "ord", "hex", "oct", "bin", "format", "issubclass", "eval",
      "exec", "compile", "memoryview", "property", "staticmethod", "classmethod", "ascii", "__import__"};
  auto it = kInstead.find(name);
  if (it == kInstead.end() && !kOthers.count(name)) return std::nullopt;
  std::string message = "the Python builtin `" + name + "` cannot be used inside a kernel";
  std::string hint = it != kInstead.end() ? it->second
                                          : "kernels evaluate only len, min, max, int, float, bool, abs, print, range, "
                                            "list, isinstance, getattr and hasattr; compute the value on the host and "
                                            "pass it as a tl.constexpr argument";
  return std::make_pair(message, hint);
}

}  // namespace tegula::frontend
