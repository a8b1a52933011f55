// The one place where text from outside the compiler enters generated code.
//
// Kernel and parameter names, source file paths (the `// file:line:col` of
// every op comment) and the strings of print and assert reach the generated
// source as comments or string literals. Each goes through escape(), so no
// text can end a comment or a literal early: a file named
// "k.py\nsystem(\"...\");" stays inside its comment line instead of becoming
// a statement of the kernel. Ordinary text (printable ASCII without a
// backslash, and UTF-8 in comments) comes out unchanged.
#pragma once

#include <string>
#include <string_view>

#include "backends/c_family/dialect.h"

namespace tegula::backends::c_family {

enum class TextIn {
  // Between the quotes of a C string literal: backslash, quote and control
  // characters escaped (\n, \t or octal); bytes past ASCII and '?' (no
  // trigraph) as octal; in the CUDA dialect '%' too, as the device printf
  // sees these strings.
  StringLiteral,
  // Inside a `//` comment: control characters as in a string literal (a
  // newline or carriage return would end the comment), and backslash as
  // octal (at a line's end, even a doubled one would splice the next line
  // into the comment).
  Comment,
};

std::string escape(std::string_view text, TextIn where, Dialect dialect);

// `text` as a C string literal, quotes included.
std::string string_literal(std::string_view text, Dialect dialect);
// `text` made safe to stand in a `//` comment (the same in every dialect).
std::string comment_text(std::string_view text);

}  // namespace tegula::backends::c_family
