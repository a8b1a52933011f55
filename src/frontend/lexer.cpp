#include "frontend/lexer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>

#include "support/diagnostic.h"
#include "support/utf8.h"

namespace tegula::frontend {

namespace {

constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",   "True",    "and",      "as",       "assert", "async",
    "await", "break",  "class",   "continue", "def",      "del",    "elif",
    "else",  "except", "finally", "for",      "from",     "global", "if",
    "import", "in",    "is",      "lambda",   "nonlocal", "not",    "or",
    "pass",  "raise",  "return",  "try",      "while",    "with",   "yield",
};

// Longest spellings first, so the first match is the longest one.
constexpr std::array<std::string_view, 48> kOperators = {
    "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "<<", ">>", "<=",
    ">=",  "==",  "!=",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "@=",
    "+",   "-",   "*",   "/",   "%",   "@",  "&",  "|",  "^",  "~",  "<",  ">",
    "(",   ")",   "[",   "]",   "{",   "}",  ",",  ":",  ";",  ".",  "=",  "",
};

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;  // UTF-8 bytes of non-ASCII identifiers
}
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}


char closing_for(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

// Python's own limits; they also keep every recursive pass over the tree
// far from the end of the stack.
constexpr size_t kMaxBrackets = 200;
constexpr size_t kMaxIndents = 100;
// f-strings inside the fields of f-strings: each level lexes its fields with a nested Lexer.
constexpr int kMaxFStringNesting = 32;

class Lexer {
 public:
  Lexer(const SourceManager& sources, int32_t file, TextRange range) : sources_(sources), file_(file) {
    const SourceFile& source = sources.file(file);
    text_ = source.text;
    end_ = std::min(range.end, text_.size());
    pos_ = std::min(range.begin, end_);
    line_start_ = pos_ == 0 ? 0 : text_.rfind('\n', pos_ - 1) + 1;  // npos + 1 == 0
    line_ = source.first_line +
            static_cast<int32_t>(std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(pos_), '\n'));
  }

  std::vector<Token> run() {
    bool at_line_start = true;
    while (true) {
      if (at_line_start && !joined()) {
        if (!start_logical_line()) break;
        at_line_start = false;
      }
      skip_blanks();
      if (pos_ >= end_) break;
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < end_ && text_[pos_] != '\n') ++pos_;
      } else if (c == '\n') {
        if (!joined()) {
          emit_newline();
          at_line_start = true;
        }
        next_line(pos_ + 1);
      } else if (c == '\\') {
        lex_continuation();
      } else if (is_ident_start(c)) {
        lex_name_or_prefixed_string();
      } else if (is_digit(c) || (c == '.' && pos_ + 1 < end_ && is_digit(text_[pos_ + 1]))) {
        lex_number();
      } else if (c == '"' || c == '\'') {
        lex_string(pos_, pos_);
      } else {
        lex_operator();
      }
    }
    if (!brackets_.empty()) {
      const OpenBracket& open = brackets_.back();
      error_at(open.loc, Diag::UnbalancedBracket, std::string("'") + open.ch + "' was never closed",
               std::string("add the matching '") + closing_for(open.ch) + "'");
    }
    emit_newline();
    SourceLoc eof = loc_of(std::min(pos_, end_), std::min(pos_, end_) + 1);
    while (indents_.size() > 1) {
      indents_.pop_back();
      push(TokenKind::Dedent, "", eof);
    }
    push(TokenKind::EndOfFile, "", eof);
    return std::move(out_);
  }

 private:
  // Indentation measured two ways: tabs to the next multiple of 8, and tabs as
  // one column. When the two disagree on the block structure, the file mixes
  // tabs and spaces ambiguously.
  struct Indent {
    int32_t width;
    int32_t alt_width;
  };
  struct OpenBracket {
    char ch;
    SourceLoc loc;
  };

  SourceLoc loc_of(size_t begin, size_t end) const {
    end = clip_to_line(begin, end);
    return SourceLoc{file_, line_, static_cast<int32_t>(begin - line_start_ + 1),
                     static_cast<int32_t>(end - line_start_ + 1)};
  }

  // A span running past the end of its first line stops there. Only the span
  // is searched: every token asks, so looking on to the line's end made a
  // line of n tokens cost n times its length.
  size_t clip_to_line(size_t begin, size_t end) const {
    if (begin >= text_.size() || end <= begin) return end;
    size_t nl = text_.substr(begin, end - begin).find('\n');
    return nl == std::string_view::npos ? end : std::max(begin + nl, begin + 1);
  }

  void push(TokenKind kind, std::string text, SourceLoc loc) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.loc = loc;
    out_.push_back(std::move(t));
  }

  void next_line(size_t new_line_start) {
    pos_ = new_line_start;
    line_start_ = new_line_start;
    ++line_;
  }

  void skip_blanks() {
    while (pos_ < end_ && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\f' ||
                           text_[pos_] == '\r'))
      ++pos_;
  }

  // Measures the indentation of the line at pos_, skipping blank and
  // comment-only lines, and emits INDENT / DEDENT. False at the end of input.
  bool start_logical_line() {
    while (pos_ < end_) {
      int32_t width = 0, alt_width = 0;
      size_t p = pos_;
      for (; p < end_; ++p) {
        char c = text_[p];
        if (c == ' ') {
          ++width;
          ++alt_width;
        } else if (c == '\t') {
          width = (width / 8 + 1) * 8;
          ++alt_width;
        } else if (c == '\f') {
          width = alt_width = 0;
        } else if (c != '\r') {
          break;
        }
      }
      if (p >= end_) {
        pos_ = p;
        return false;
      }
      if (text_[p] == '#' || text_[p] == '\n') {
        size_t nl = text_.find('\n', p);
        if (nl == std::string_view::npos || nl >= end_) {
          pos_ = end_;
          return false;
        }
        next_line(nl + 1);
        continue;
      }
      pos_ = p;
      indent_to(Indent{width, alt_width}, loc_of(p, p + 1));
      return true;
    }
    return false;
  }

  void indent_to(Indent level, SourceLoc loc) {
    const char* mixed = "inconsistent use of tabs and spaces in indentation";
    const char* mixed_hint = "indent with spaces only";
    if (indents_.empty()) {
      indents_.push_back(level);  // the base level: the function's own indentation
      return;
    }
    if (level.width < indents_.front().width)
      error_at(loc, Diag::BadIndentation,
               "unexpected unindent: this line is indented less than the function's first line",
               "indent every line of the function at least as deep as its `def`");
    if (level.width > indents_.back().width) {
      if (level.alt_width <= indents_.back().alt_width) error_at(loc, Diag::BadIndentation, mixed, mixed_hint);
      if (indents_.size() > kMaxIndents)
        error_at(loc, Diag::NestedTooDeeply,
                 "too many levels of indentation", "move the inner code into a @tegula.jit helper function");
      indents_.push_back(level);
      push(TokenKind::Indent, "", loc);
      return;
    }
    while (level.width < indents_.back().width) {
      indents_.pop_back();
      push(TokenKind::Dedent, "", loc);
    }
    if (level.width != indents_.back().width)
      error_at(loc, Diag::BadIndentation, "unindent does not match any outer indentation level",
               "line this statement up with the block it belongs to");
    if (level.alt_width != indents_.back().alt_width) error_at(loc, Diag::BadIndentation, mixed, mixed_hint);
  }

  void emit_newline() {
    if (out_.empty() || out_.back().kind == TokenKind::Newline) return;
    const Token& last = out_.back();
    SourceLoc loc;
    if (last.loc.line == line_ && last.kind != TokenKind::Dedent && last.kind != TokenKind::Indent)
      loc = SourceLoc{file_, line_, last.loc.end_col, last.loc.end_col + 1};
    else
      loc = loc_of(std::min(pos_, end_), std::min(pos_, end_) + 1);
    push(TokenKind::Newline, "", loc);
  }

  void lex_continuation() {
    size_t p = pos_ + 1;
    if (p < end_ && text_[p] == '\r') ++p;
    if (p >= end_)
      error_at(loc_of(pos_, pos_ + 1), Diag::InvalidCharacter,
               "unexpected end of file after line continuation character",
               "remove the trailing backslash");
    if (text_[p] != '\n')
      error_at(loc_of(pos_, pos_ + 1), Diag::InvalidCharacter, "unexpected character after line continuation character",
               "a backslash continues a line only as the last character of the line");
    next_line(p + 1);
  }

  void lex_name_or_prefixed_string() {
    size_t start = pos_;
    size_t p = pos_;
    while (p < end_ && is_ident_char(text_[p])) ++p;
    std::string_view word = text_.substr(start, p - start);
    if (p < end_ && (text_[p] == '"' || text_[p] == '\'') && word.size() <= 2) {
      std::string lower;
      for (char c : word) lower += static_cast<char>(c | 0x20);
      static constexpr std::array<std::string_view, 8> kPrefixes = {"r", "u", "b", "f",
                                                                     "br", "rb", "fr", "rf"};
      if (std::find(kPrefixes.begin(), kPrefixes.end(), lower) != kPrefixes.end()) {
        lex_string(start, p);
        return;
      }
    }
    pos_ = p;
    push(is_python_keyword(word) ? TokenKind::Keyword : TokenKind::Name, std::string(word),
         loc_of(start, p));
  }

  // Reads digits accepted by `valid`, allowing single underscores between them.
  std::string read_digits(size_t& p, bool (*valid)(char), size_t start) {
    std::string digits;
    while (p < end_) {
      if (valid(text_[p])) {
        digits += text_[p++];
      } else if (text_[p] == '_' && !digits.empty() && p + 1 < end_ && valid(text_[p + 1])) {
        ++p;
      } else {
        break;
      }
    }
    if (p < end_ && text_[p] == '_')
      error_at(loc_of(start, p + 1), Diag::InvalidNumberLiteral,
               "invalid number literal: `_` must separate two digits");
    return digits;
  }

  void lex_number() {
    size_t start = pos_;
    size_t p = pos_;
    Token t;
    if (text_[p] == '0' && p + 1 < end_ && std::string_view("xXoObB").find(text_[p + 1]) != std::string_view::npos) {
      char base_char = static_cast<char>(text_[p + 1] | 0x20);
      int base = base_char == 'x' ? 16 : base_char == 'o' ? 8 : 2;
      p += 2;
      if (p < end_ && text_[p] == '_') ++p;  // `0x_ff` is valid Python
      bool (*valid)(char) = base == 16 ? +[](char c) { return is_hex_digit(c); }
                            : base == 8 ? +[](char c) { return c >= '0' && c <= '7'; }
                                        : +[](char c) { return c == '0' || c == '1'; };
      std::string digits = read_digits(p, valid, start);
      if (digits.empty() || (p < end_ && is_ident_char(text_[p])))
        error_at(loc_of(start, std::max(p + 1, start + 2)), Diag::InvalidNumberLiteral,
                 std::string("invalid ") + (base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary") +
                     " literal");
      set_integer(t, digits, base, start, p);
    } else {
      std::string digits = read_digits(p, is_digit, start);
      bool is_float = false;
      std::string spelled = digits;
      if (p < end_ && text_[p] == '.') {
        is_float = true;
        ++p;
        spelled += '.';
        spelled += read_digits(p, is_digit, start);
      }
      if (p < end_ && (text_[p] == 'e' || text_[p] == 'E')) {
        size_t q = p + 1;
        if (q < end_ && (text_[q] == '+' || text_[q] == '-')) ++q;
        if (q < end_ && is_digit(text_[q])) {
          is_float = true;
          spelled += 'e';
          if (text_[p + 1] == '-') spelled += '-';
          p = q;
          spelled += read_digits(p, is_digit, start);
        }
      }
      if (p < end_ && (text_[p] == 'j' || text_[p] == 'J'))
        error_at(loc_of(start, p + 1), Diag::UnsupportedSyntax, "complex literals are not supported inside a kernel");
      if (p < end_ && is_ident_char(text_[p]))
        error_at(loc_of(start, p + 1), Diag::InvalidNumberLiteral, "invalid decimal literal",
                 "a name cannot start with a digit");
      if (is_float) {
        t.kind = TokenKind::Float;
        // from_chars wants digits on both sides of the point: `.5` and `1.` become 0.5 and 1.0.
        if (spelled.front() == '.') spelled.insert(spelled.begin(), '0');
        size_t point = spelled.find('.');
        if (point != std::string::npos && (point + 1 == spelled.size() || !is_digit(spelled[point + 1])))
          spelled.insert(point + 1, "0");
        auto [ptr, ec] = std::from_chars(spelled.data(), spelled.data() + spelled.size(), t.float_value);
        if (ec == std::errc::result_out_of_range) {
          // Overflow reads as inf like Python; underflow reads as 0.
          t.float_value = spelled.find("e-") != std::string::npos ? 0.0 : std::numeric_limits<double>::infinity();
        }
      } else {
        if (digits.size() > 1 && digits.find_first_not_of('0') != std::string::npos && digits[0] == '0')
          error_at(loc_of(start, p), Diag::InvalidNumberLiteral,
                   "leading zeros in decimal integer literals are not permitted",
                   "write 0o... for an octal number");
        set_integer(t, digits, 10, start, p);
      }
    }
    t.text = std::string(text_.substr(start, p - start));
    t.loc = loc_of(start, p);
    out_.push_back(std::move(t));
    pos_ = p;
  }

  void set_integer(Token& t, const std::string& digits, int base, size_t start, size_t end) {
    uint64_t value = 0;
    for (char c : digits) {
      uint64_t d = static_cast<uint64_t>(hex_value(c));
      if (value > (std::numeric_limits<uint64_t>::max() - d) / static_cast<uint64_t>(base))
        error_at(loc_of(start, end), Diag::IntegerLiteralTooLarge,
                 "integer literal is too large: kernels use at most 64-bit integers");
      value = value * static_cast<uint64_t>(base) + d;
    }
    t.kind = TokenKind::Int;
    t.int_value = static_cast<int64_t>(value);
    t.is_unsigned = value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  }

  // `start` is where the prefix begins, `quote` where the quote is.
  void lex_string(size_t start, size_t quote) {
    std::string prefix;
    for (size_t i = start; i < quote; ++i) prefix += static_cast<char>(text_[i] | 0x20);
    bool raw = prefix.find('r') != std::string::npos;
    bool bytes = prefix.find('b') != std::string::npos;
    if (prefix.find('f') != std::string::npos) {
      lex_fstring(start, quote, raw);
      return;
    }
    char q = text_[quote];
    bool triple = quote + 2 < end_ && text_[quote + 1] == q && text_[quote + 2] == q;
    size_t p = quote + (triple ? 3 : 1);
    SourceLoc start_loc = loc_of(start, end_);
    int32_t start_line = line_;
    std::string value;
    while (true) {
      if (p >= end_) {
        error_at(start_loc, Diag::UnterminatedString,
                 triple ? "unterminated triple-quoted string literal" : "unterminated string literal",
                 std::string("close the string with ") + (triple ? std::string(3, q) : std::string(1, q)));
      }
      char c = text_[p];
      if (c == q) {
        if (!triple) {
          ++p;
          break;
        }
        if (p + 2 < end_ && text_[p + 1] == q && text_[p + 2] == q) {
          p += 3;
          break;
        }
        value += c;
        ++p;
      } else if (c == '\n') {
        if (!triple)
          error_at(start_loc, Diag::UnterminatedString, "unterminated string literal",
                   std::string("close the string with ") + q + " on the same line, or use a triple-quoted string");
        value += '\n';
        ++p;
        line_start_ = p;
        ++line_;
      } else if (c == '\\' && p + 1 < end_) {
        p = lex_escape(p, raw, bytes, value);
      } else {
        if (c != '\r' || !(p + 1 < end_ && text_[p + 1] == '\n')) value += c;
        ++p;
      }
    }
    Token t;
    t.kind = TokenKind::String;
    t.text = std::string(text_.substr(start, p - start));
    t.value = std::move(value);
    t.loc = start_loc;
    t.loc.end_col = start_line == line_ ? static_cast<int32_t>(p - line_start_ + 1) : start_loc.end_col;
    out_.push_back(std::move(t));
    pos_ = p;
  }

  // ---- f-strings ----------------------------------------------------------
  // An f-string is one String token whose `fstring` holds its literal text and
  // fields. A field's expression is lexed by a nested Lexer over its span, in
  // which newlines join lines as inside brackets. Quotes inside a field start
  // strings of their own, as Python 3.12 reads them.

  void lex_fstring(size_t start, size_t quote, bool raw) {
    char q = text_[quote];
    bool triple = quote + 2 < end_ && text_[quote + 1] == q && text_[quote + 2] == q;
    SourceLoc start_loc = loc_of(start, end_);
    int32_t start_line = line_;
    Token t;
    t.kind = TokenKind::String;
    t.is_fstring = true;
    FStringQuote fq{q, triple, raw, start_loc};
    size_t p = fstring_parts(quote + (triple ? 3 : 1), fq, /*spec_level=*/0, t.fstring);
    t.text = std::string(text_.substr(start, p - start));
    t.loc = start_loc;
    t.loc.end_col = start_line == line_ ? static_cast<int32_t>(p - line_start_ + 1) : start_loc.end_col;
    out_.push_back(std::move(t));
    pos_ = p;
  }

  struct FStringQuote {
    char q;
    bool triple;
    bool raw;
    SourceLoc start_loc;
  };

  // Whether text_[p] closes the literal.
  bool closes(size_t p, const FStringQuote& fq) const {
    if (text_[p] != fq.q) return false;
    return !fq.triple || (p + 2 < end_ && text_[p + 1] == fq.q && text_[p + 2] == fq.q);
  }

  [[noreturn]] void unterminated(const FStringQuote& fq) const {
    error_at(fq.start_loc, Diag::UnterminatedString,
             fq.triple ? "unterminated triple-quoted f-string" : "unterminated f-string",
             std::string("close the f-string with ") + (fq.triple ? std::string(3, fq.q) : std::string(1, fq.q)));
  }

  // Reads literal text and fields from p into `parts`, up to the closing quote (returns the offset after
  // it) or, in a format spec (spec_level 1, or 2 for the spec of a field inside a spec), up to the '}'
  // that ends the field (returns its offset).
  size_t fstring_parts(size_t p, const FStringQuote& fq, int spec_level, std::vector<FStringPart>& parts) {
    bool in_spec = spec_level > 0;
    std::string literal;
    auto flush = [&] {
      if (literal.empty()) return;
      FStringPart part;
      part.literal = std::move(literal);
      parts.push_back(std::move(part));
      literal.clear();
    };
    while (true) {
      if (p >= end_) unterminated(fq);
      char c = text_[p];
      if (closes(p, fq)) {
        if (in_spec)
          error_at(loc_of(p, p + 1), Diag::InvalidSyntax, "f-string: expecting '}' before the end of the string",
                   "close the replacement field with '}'");
        flush();
        return p + (fq.triple ? 3 : 1);
      }
      if (c == '{' && !in_spec && p + 1 < end_ && text_[p + 1] == '{') {
        literal += '{';
        p += 2;
      } else if (c == '{') {
        if (spec_level >= 2)
          error_at(loc_of(p, p + 1), Diag::NestedTooDeeply, "f-string: expressions nested too deeply",
                   "compute the inner format spec into a constexpr first");
        flush();
        p = fstring_field(p, fq, spec_level, parts);
      } else if (c == '}' && in_spec) {
        flush();
        return p;
      } else if (c == '}') {
        if (!(p + 1 < end_ && text_[p + 1] == '}'))
          error_at(loc_of(p, p + 1), Diag::InvalidSyntax, "f-string: single '}' is not allowed",
                   "write '}}' for a literal brace");
        literal += '}';
        p += 2;
      } else if (c == '\n') {
        if (!fq.triple)
          error_at(fq.start_loc, Diag::UnterminatedString, "unterminated f-string",
                   std::string("close the f-string with ") + fq.q + " on the same line, or use a triple-quoted string");
        literal += '\n';
        ++p;
        line_start_ = p;
        ++line_;
      } else if (c == '\\' && p + 1 < end_ && (text_[p + 1] == '{' || text_[p + 1] == '}')) {
        literal += '\\';  // a backslash does not escape a brace: the brace still opens or closes a field
        ++p;
      } else if (c == '\\' && p + 1 < end_) {
        p = lex_escape(p, fq.raw, /*bytes=*/false, literal);
      } else {
        if (c != '\r' || !(p + 1 < end_ && text_[p + 1] == '\n')) literal += c;
        ++p;
      }
    }
  }

  // Reads the field whose '{' is at p into `parts`; returns the offset after its '}'.
  size_t fstring_field(size_t p, const FStringQuote& fq, int spec_level, std::vector<FStringPart>& parts) {
    size_t open = p;
    int32_t open_line = line_;
    size_t open_line_start = line_start_;
    size_t begin = p + 1;
    size_t end = field_expression_end(begin, fq);
    std::string_view expression = text_.substr(begin, end - begin);
    if (expression.find_first_not_of(" \t\r\n\f") == std::string_view::npos)
      error_at(loc_of_at(open, end + 1, open_line, open_line_start), Diag::InvalidSyntax,
               "f-string: empty expression in a replacement field", "write an expression between the braces");
    if (field_depth_ + 1 > kMaxFStringNesting)
      error_at(loc_of_at(open, end + 1, open_line, open_line_start), Diag::NestedTooDeeply,
               "f-strings are nested too deeply here", "build the text in several steps");
    FStringPart field;
    field.is_field = true;
    Lexer nested(sources_, file_, TextRange{begin, end});
    nested.in_field_ = true;
    nested.field_depth_ = field_depth_ + 1;
    field.expression = nested.run();
    p = end;
    if (text_[p] == '=') {
      // `{x=}`, `{x = }`: the text up to and after '=' as written, then the value's repr by default.
      ++p;
      while (p < end_ && (text_[p] == ' ' || text_[p] == '\t')) ++p;
      FStringPart self;
      self.literal = std::string(text_.substr(begin, p - begin));
      parts.push_back(std::move(self));
      if (p < end_ && text_[p] != '!' && text_[p] != ':') field.conversion = 'r';
    }
    if (p < end_ && text_[p] == '!') {
      char c = p + 1 < end_ ? text_[p + 1] : '\0';
      if (c != 'r' && c != 's' && c != 'a')
        error_at(loc_of(p, p + 2), Diag::InvalidSyntax, "f-string: invalid conversion character after '!'",
                 "write !r, !s or !a");
      field.conversion = c;
      p += 2;
    }
    if (p < end_ && text_[p] == ':') p = fstring_parts(p + 1, fq, spec_level + 1, field.spec);
    if (p >= end_) unterminated(fq);
    if (text_[p] != '}')
      error_at(loc_of(p, p + 1), Diag::InvalidSyntax, "f-string: expecting '}' after the field's expression",
               "close the replacement field with '}'");
    ++p;
    field.loc = loc_of_at(open, p, open_line, open_line_start);
    parts.push_back(std::move(field));
    return p;
  }

  // A span on a line the lexer has already passed.
  SourceLoc loc_of_at(size_t begin, size_t end, int32_t line, size_t line_start) const {
    end = clip_to_line(begin, end);
    return SourceLoc{file_, line, static_cast<int32_t>(begin - line_start + 1),
                     static_cast<int32_t>(end - line_start + 1)};
  }

  // The offset of what ends the field's expression from `p`: '}', or at bracket depth 0 '!' (not '!='),
  // ':' or the '=' of `{x=}`. Skips brackets and strings inside; counts the lines it passes.
  size_t field_expression_end(size_t p, const FStringQuote& fq) {
    int depth = 0;
    while (true) {
      if (p >= end_ || closes(p, fq)) unterminated(fq);
      char c = text_[p];
      char next = p + 1 < end_ ? text_[p + 1] : '\0';
      if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        if (depth == 0 && c == '}') return p;
        if (depth > 0) --depth;
      } else if (c == '\'' || c == '"') {
        p = skip_quoted(p, fq);
        continue;
      } else if (c == '\n') {
        if (!fq.triple) unterminated(fq);
        line_start_ = p + 1;
        ++line_;
      } else if (c == '#') {
        error_at(loc_of(p, p + 1), Diag::InvalidSyntax, "f-string: a field's expression cannot include '#'",
                 "remove the comment from the f-string");
      } else if (depth == 0 && (c == '!' || c == '<' || c == '>' || c == '=') && next == '=') {
        p += 2;  // != <= >= ==
        continue;
      } else if (depth == 0 && (c == '!' || c == ':' || c == '=')) {
        return p;
      }
      ++p;
    }
  }

  // The offset after the string literal whose quote is at p, inside a field.
  size_t skip_quoted(size_t p, const FStringQuote& fq) {
    char q = text_[p];
    bool triple = p + 2 < end_ && text_[p + 1] == q && text_[p + 2] == q;
    p += triple ? 3 : 1;
    while (true) {
      if (p >= end_) unterminated(fq);
      char c = text_[p];
      if (c == q && (!triple || (p + 2 < end_ && text_[p + 1] == q && text_[p + 2] == q)))
        return p + (triple ? 3 : 1);
      if (c == '\\' && p + 1 < end_) {
        if (text_[p + 1] == '\n') {
          line_start_ = p + 2;
          ++line_;
        }
        p += 2;
        continue;
      }
      if (c == '\n') {
        if (!triple) unterminated(fq);
        line_start_ = p + 1;
        ++line_;
      }
      ++p;
    }
  }

  // Decodes the escape at text_[p] == '\\' into `value`; returns the offset after it.
  size_t lex_escape(size_t p, bool raw, bool bytes, std::string& value) {
    char e = text_[p + 1];
    if (e == '\r' && p + 2 < end_ && text_[p + 2] == '\n') {
      if (raw) value += "\\\n";
      line_start_ = p + 3;
      ++line_;
      return p + 3;
    }
    if (e == '\n') {
      if (raw) value += "\\\n";  // a raw string keeps the backslash-newline
      line_start_ = p + 2;
      ++line_;
      return p + 2;
    }
    if (raw) {
      // The backslash still protects the next character from ending the string.
      value += '\\';
      value += e;
      return p + 2;
    }
    switch (e) {
      case '\\': value += '\\'; return p + 2;
      case '\'': value += '\''; return p + 2;
      case '"': value += '"'; return p + 2;
      case 'a': value += '\a'; return p + 2;
      case 'b': value += '\b'; return p + 2;
      case 'f': value += '\f'; return p + 2;
      case 'n': value += '\n'; return p + 2;
      case 'r': value += '\r'; return p + 2;
      case 't': value += '\t'; return p + 2;
      case 'v': value += '\v'; return p + 2;
      default: break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t code = 0;
      size_t q = p + 1;
      for (int i = 0; i < 3 && q < end_ && text_[q] >= '0' && text_[q] <= '7'; ++i, ++q)
        code = code * 8 + static_cast<uint32_t>(text_[q] - '0');
      if (bytes) value += static_cast<char>(code & 0xFF);
      else append_utf8(value, code);
      return q;
    }
    int hex_digits = e == 'x' ? 2 : (!bytes && e == 'u') ? 4 : (!bytes && e == 'U') ? 8 : 0;
    if (hex_digits > 0) {
      uint32_t code = 0;
      size_t q = p + 2;
      for (int i = 0; i < hex_digits; ++i, ++q) {
        if (q >= end_ || !is_hex_digit(text_[q]))
          error_at(loc_of(p, q + 1), Diag::InvalidEscape, std::string("truncated \\") + e + " escape in string literal",
                   "write exactly " + std::to_string(hex_digits) + " hex digits after \\" + e);
        code = code * 16 + static_cast<uint32_t>(hex_value(text_[q]));
      }
      if (code > 0x10FFFF) error_at(loc_of(p, q), Diag::InvalidEscape,
                                    "invalid unicode escape: code point out of range");
      if (bytes) value += static_cast<char>(code);
      else append_utf8(value, code);
      return q;
    }
    if (!bytes && e == 'N')
      error_at(loc_of(p, p + 2), Diag::InvalidEscape, "named unicode escapes (\\N{...}) are not supported",
               "write the character itself or use \\u");
    value += '\\';  // an unknown escape keeps its backslash, as in Python
    value += e;
    return p + 2;
  }

  void lex_operator() {
    size_t start = pos_;
    std::string_view rest = text_.substr(pos_, end_ - pos_);
    std::string_view found;
    for (std::string_view op : kOperators) {
      if (!op.empty() && rest.substr(0, op.size()) == op) {
        found = op;
        break;
      }
    }
    if (found.empty()) {
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      std::string shown = c >= 0x20 && c < 0x7F ? std::string(1, static_cast<char>(c))
                                                : "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) +
                                                      "0123456789abcdef"[c & 15];
      error_at(loc_of(pos_, pos_ + 1), Diag::InvalidCharacter, "invalid character '" + shown + "' in kernel source");
    }
    SourceLoc loc = loc_of(start, start + found.size());
    char c = found.size() == 1 ? found[0] : '\0';
    if (c == '(' || c == '[' || c == '{') {
      if (brackets_.size() >= kMaxBrackets)
        error_at(loc, Diag::NestedTooDeeply,
                 "too many nested parentheses", "split the expression into several statements");
      brackets_.push_back(OpenBracket{c, loc});
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets_.empty()) error_at(loc, Diag::UnbalancedBracket,
                                      std::string("unmatched '") + c + "'", "remove it or add the opening bracket");
      if (closing_for(brackets_.back().ch) != c)
        error_at(loc, Diag::UnbalancedBracket,
                 std::string("closing bracket '") + c + "' does not match opening bracket '" +
                          brackets_.back().ch + "' on line " + std::to_string(brackets_.back().loc.line));
      brackets_.pop_back();
    }
    pos_ += found.size();
    push(TokenKind::Op, std::string(found), loc);
  }

  // Inside an f-string's field, newlines join lines as inside brackets.
  bool joined() const { return !brackets_.empty() || in_field_; }

  const SourceManager& sources_;
  std::string_view text_;
  int32_t file_;
  bool in_field_ = false;  // lexing the expression of an f-string's field
  int field_depth_ = 0;    // how many f-string fields enclose this text
  size_t pos_ = 0;
  size_t end_ = 0;
  int32_t line_ = 1;
  size_t line_start_ = 0;
  std::vector<Indent> indents_;
  std::vector<OpenBracket> brackets_;
  std::vector<Token> out_;
};

// Advances over a string literal starting at text[p] (a quote) for
// split_top_level; returns the offset after it, or the end of the line for an
// unterminated single-quoted string.
size_t skip_string(std::string_view text, size_t p) {
  char q = text[p];
  bool triple = p + 2 < text.size() && text[p + 1] == q && text[p + 2] == q;
  p += triple ? 3 : 1;
  while (p < text.size()) {
    char c = text[p];
    if (c == '\\') {
      p += 2;
    } else if (c == q) {
      if (!triple) return p + 1;
      if (p + 2 < text.size() && text[p + 1] == q && text[p + 2] == q) return p + 3;
      ++p;
    } else if (c == '\n' && !triple) {
      return p;
    } else {
      ++p;
    }
  }
  return text.size();
}

bool starts_statement(std::string_view text, size_t line_start) {
  if (line_start >= text.size()) return false;
  char c = text[line_start];
  return !(c == ' ' || c == '\t' || c == '\f' || c == '\r' || c == '\n' || c == '#');
}

}  // namespace

bool is_python_keyword(std::string_view word) {
  return std::find(kKeywords.begin(), kKeywords.end(), word) != kKeywords.end();
}

std::vector<Token> tokenize(const SourceManager& sources, int32_t file, TextRange range) {
  return Lexer(sources, file, range).run();
}

std::vector<TextRange> split_top_level(std::string_view text) {
  std::vector<TextRange> statements;
  int depth = 0;
  bool continued = false;  // the previous line ended with a backslash
  size_t p = 0;
  while (p < text.size()) {
    size_t line_start = p;
    if (depth == 0 && !continued && starts_statement(text, line_start)) {
      if (!statements.empty()) statements.back().end = line_start;
      statements.push_back(TextRange{line_start, text.size()});
    }
    continued = false;
    // Scan to the end of the logical piece of this line; a triple-quoted
    // string may carry the scan over several lines.
    while (p < text.size() && text[p] != '\n') {
      char c = text[p];
      if (c == '#') {
        while (p < text.size() && text[p] != '\n') ++p;
      } else if (c == '"' || c == '\'') {
        p = skip_string(text, p);
      } else if (c == '\\') {
        if (p + 1 < text.size() && text[p + 1] == '\n') continued = true;
        if (p + 2 < text.size() && text[p + 1] == '\r' && text[p + 2] == '\n') continued = true;
        p += continued ? (text[p + 1] == '\r' ? 2 : 1) : 1;
      } else {
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        ++p;
      }
    }
    if (p < text.size()) ++p;  // the newline
  }
  // A decorator belongs to the statement it decorates.
  std::vector<TextRange> merged;
  for (size_t i = 0; i < statements.size(); ++i) {
    TextRange r = statements[i];
    while (text[r.begin] == '@' && i + 1 < statements.size()) {
      r.end = statements[++i].end;
      if (text[statements[i].begin] != '@') break;
    }
    merged.push_back(r);
  }
  return merged;
}

}  // namespace tegula::frontend
