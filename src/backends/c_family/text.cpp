#include "backends/c_family/text.h"

#include <cstdio>

namespace tegula::backends::c_family {

std::string escape(std::string_view text, TextIn where, Dialect dialect) {
  bool literal = where == TextIn::StringLiteral;
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '"':
        out += literal ? "\\\"" : "\"";
        continue;
      case '\\':
        // In a comment a doubled backslash could still end the line and
        // splice the next one into the comment: octal there.
        if (literal) {
          out += "\\\\";
          continue;
        }
        break;
      default: break;
    }
    bool octal_anywhere = c < 0x20 || c == 0x7f || c == '\\';  // a literal's backslash is doubled above
    bool octal_in_literal = c >= 0x80 || c == '?' || (c == '%' && dialect == Dialect::Cuda);
    if (octal_anywhere || (literal && octal_in_literal)) {
      // Octal escapes take at most 3 digits, so the next character can never
      // be read as part of the escape.
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string string_literal(std::string_view text, Dialect dialect) {
  return "\"" + escape(text, TextIn::StringLiteral, dialect) + "\"";
}

std::string comment_text(std::string_view text) { return escape(text, TextIn::Comment, Dialect::Cpu); }

}  // namespace tegula::backends::c_family
