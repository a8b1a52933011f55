// The tokenizer for the kernel subset of Python.
//
// Turns the text of a kernel (or one top-level statement of a Python file)
// into the token stream the parser reads: names, keywords, numbers, strings,
// operators, and the layout tokens NEWLINE / INDENT / DEDENT that Python's
// grammar uses for blocks. Every token carries its span in the user's real
// file, so a kernel cut out of a method keeps its true line and column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/source.h"

namespace tegula::frontend {

enum class TokenKind {
  Name,       // identifier (also soft keywords such as `match`, and `print`)
  Keyword,    // a reserved word of Python (`def`, `if`, `not`, `True`, `lambda`...)
  Int,        // integer literal: int_value / is_unsigned
  Float,      // floating-point literal: float_value
  String,     // one string literal; `value` is the decoded text (adjacent literals
              //   stay separate tokens; the parser concatenates them). An f-string
              //   has its pieces in `fstring` and an empty `value`.
  Op,         // operator or delimiter; `text` is its spelling ("**=", "(", "->"...)
  Newline,    // end of a logical line
  Indent,     // the logical line starts one block deeper
  Dedent,     // the logical line closes one block
  EndOfFile,
};

struct Token;

// A piece of an f-string: literal text, or a replacement field
// `{expression!conversion:spec}` whose expression is lexed on its own (its
// tokens keep their places in the file and end with NEWLINE, EndOfFile).
struct FStringPart {
  bool is_field = false;
  std::string literal;             // literal text (decoded), when !is_field
  std::vector<Token> expression;   // the field's expression
  char conversion = 0;             // 'r', 's', 'a', or 0 for none
  std::vector<FStringPart> spec;   // the format spec after ':', itself text and fields
  SourceLoc loc;                   // the field's span, braces included
};

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  std::string text;   // the token as written (for multi-line strings: the whole literal)
  std::string value;  // String: decoded contents
  bool is_fstring = false;
  std::vector<FStringPart> fstring;  // an f-string's literal text and fields, in order
  int64_t int_value = 0;
  bool is_unsigned = false;  // Int above INT64_MAX: the bits are in int_value
  double float_value = 0.0;
  SourceLoc loc;  // spans the token; a token running over several lines ends at its first line's end

  bool is(TokenKind k, std::string_view spelling) const { return kind == k && text == spelling; }
  bool is_op(std::string_view spelling) const { return is(TokenKind::Op, spelling); }
  bool is_keyword(std::string_view spelling) const { return is(TokenKind::Keyword, spelling); }
};

// A slice of a source file's text, as byte offsets. The default is the whole text.
struct TextRange {
  size_t begin = 0;
  size_t end = std::string_view::npos;
};

// Tokenizes `range` of file `file`. The indentation of the first logical line
// is the base level (inspect.getsource keeps a method's indentation), so a
// uniformly indented function tokenizes like an unindented one. The stream
// always ends with NEWLINE, the DEDENTs that close open blocks, and EndOfFile.
// Throws UserError on a lexical error (unterminated string, bad number,
// unmatched bracket, inconsistent dedent, malformed f-string...).
std::vector<Token> tokenize(const SourceManager& sources, int32_t file, TextRange range = {});

// Splits the text of a whole Python file into its top-level statements
// without interpreting them: a statement starts on a line whose first column
// holds code and that is not inside brackets, a string, or a backslash
// continuation. Decorator lines are kept together with the definition they
// decorate. Never throws: arbitrary (even invalid) Python splits somewhere.
std::vector<TextRange> split_top_level(std::string_view text);

// Whether `word` is a reserved word of Python.
bool is_python_keyword(std::string_view word);

}  // namespace tegula::frontend
