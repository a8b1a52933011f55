// f-strings in kernels: text built at compile time.
//
// A kernel's strings (tl.static_assert's and tl.device_assert's messages,
// tl.static_print's and tl.device_print's text) are compile-time constants, so
// an f-string's fields must be compile-time values: constexprs, dtypes, tuples
// of them. Each field is formatted as Python formats it (conversion, then
// format spec), so `f"{BLOCK=}"`, `f"{x:>8.3f}"` and `f"{dtype!r}"` read as
// they would in Python. A field that holds a tile is an error naming
// tl.device_print, which prints values at run time.
#include <optional>
#include <string>

#include "frontend/lowering.h"
#include "frontend/python_format.h"
#include "frontend/value_bounds.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

// str() or repr() of a compile-time Symbol; nullopt for a Symbol that is not one (a tile, a module...).
std::optional<std::string> constant_text(const Symbol& s, bool repr) {
  if (s.is_const()) return repr ? python_repr(s.constant) : python_str(s.constant);
  if (s.kind != Symbol::Kind::Tuple) return std::nullopt;
  // A tuple shows its elements' reprs, and a one-element tuple its trailing comma; a list its brackets.
  std::string text = s.written_as_list ? "[" : "(";
  for (size_t i = 0; i < s.elements.size(); ++i) {
    std::optional<std::string> element = constant_text(s.elements[i], /*repr=*/true);
    if (!element) return std::nullopt;
    text += (i ? ", " : "") + *element;
  }
  if (s.written_as_list) return text + "]";
  return text + (s.elements.size() == 1 ? ",)" : ")");
}

}  // namespace

Symbol Lowerer::joined_string(const ast::Expr& e) {
  std::string text;
  for (const ast::ExprPtr& piece : e.children) {
    if (piece->kind == ast::ExprKind::Str) {
      text += piece->name;
      check_string_length(text.size(), e.loc);
      continue;
    }
    const ast::Expr& field = *piece->children[0];
    Symbol value = eval(field);
    std::string spec;
    if (piece->children[1]) spec = joined_string(*piece->children[1]).constant.s;
    const std::string& conversion = piece->name;
    std::optional<std::string> converted;  // the text of `!r`, `!s` or `!a`, which the spec then formats
    if (conversion == "a" && value.is_const()) converted = python_ascii(value.constant);
    else if (!conversion.empty()) converted = constant_text(value, /*repr=*/conversion != "s");
    bool constant = value.is_const() || (value.kind == Symbol::Kind::Tuple && constant_text(value, false));
    if (!constant && value.is_value())
      error_at(field.loc, Diag::NotConstexpr,
               "an f-string in a kernel is built at compile time, but this field is " + describe(value) +
                   ", whose value is known only at run time",
               "format constexprs only; print run-time values with tl.device_print(\"x =\", x)");
    if (!constant)
      error_at(field.loc, Diag::WrongArgumentKind,
               "an f-string field must be a compile-time value (a constexpr, a dtype, a tuple of them), but this "
               "one is " + describe(value),
               "format a constexpr, or write the text itself");
    std::string error;
    std::optional<std::string> formatted;
    if (converted) {
      formatted = python_format(ConstValue::string(*converted), spec, &error);
    } else if (value.is_const()) {
      formatted = python_format(value.constant, spec, &error);
    } else if (spec.empty()) {
      formatted = constant_text(value, /*repr=*/false);
    } else {
      error = std::string("unsupported format string passed to ") + (value.written_as_list ? "list" : "tuple") +
              ".__format__";
    }
    if (!formatted)
      error_at(piece->loc, Diag::InvalidFormatSpec,
               "f-string field cannot be formatted with '" + spec + "': " + error,
               "see Python's format specification mini-language; the value here is " + describe(value));
    text += *formatted;
    check_string_length(text.size(), e.loc);
  }
  return Symbol::of(ConstValue::string(std::move(text)));
}

}  // namespace tegula::frontend
