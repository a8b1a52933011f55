// Reads the text ir/printer.cpp writes back into a Function.
//
// A hand-written recursive-descent parser over characters (no token stream):
// IR types such as `tile<64x32xf32>` do not split into tokens the way source
// code does, and newlines matter (one op per line, the location comment ends
// the line), so scanning on demand is simpler than a lexer. Each grammar rule
// is one member function, named after the rule.
//
// Errors are UserErrors whose location is in the IR text itself: file 0
// (render with a SourceManager whose first file is the text, named `<ir>`).
#include "ir/parser.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

#include "ir/printer.h"
#include "support/diagnostic.h"

namespace tegula::ir {

namespace {

// Deep enough for any real kernel; stops a hostile input from exhausting the stack.
constexpr int kMaxRegionDepth = 256;

bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) { return is_word_start(c) || is_digit(c) || c == '.'; }

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }

  Function function() {
    skip_blank_lines();
    expect_word("kernel");
    expect('@');
    fn_.name = peek() == '"' ? quoted_string() : word("kernel name");
    expect('(');
    scopes_.emplace_back();
    BlockId body = fn_.body();
    if (!consume(')')) {
      do {
        skip_spaces();
        size_t at = pos_;
        ValueName name = value_name();
        expect(':');
        Type type = type_();
        int64_t divisibility = positive_param_attr("div", 1, "divisibility must be at least 1");
        int64_t by_value_bytes =
            positive_param_attr("by_value", 0, "a parameter passed by value holds at least 1 byte");
        define(name, fn_.add_block_arg(body, type), at);
        fn_.params.push_back(Param{name.text, type, divisibility, false, by_value_bytes});
      } while (consume(','));
      expect(')');
    }
    expect('{');
    line_end();
    ops(body, 0);
    expect('}');
    line_end();
    skip_blank_lines();
    if (pos_ < text_.size()) fail(pos_, "unexpected text after the kernel");
    return std::move(fn_);
  }

 private:
  struct ValueName {
    std::string text;    // the name itself
    bool quoted = false;  // written as %"..."; never equal to a plain name
    std::string key() const { return quoted ? "\"" + text : text; }
    std::string shown() const { return "%" + (quoted ? "\"" + text + "\"" : text); }
  };

  // --- scanning -----------------------------------------------------------------

  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
  }

  // Blank lines and lines holding only a comment separate ops freely.
  void skip_blank_lines() {
    for (;;) {
      skip_spaces();
      if (peek() == '\n') {
        ++pos_;
      } else if (peek() == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  bool consume(char c) {
    skip_spaces();
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }

  void expect(char c) {
    if (!consume(c)) fail(pos_, std::string("expected `") + c + "`, found " + found());
  }

  bool at_word(const char* w) {
    skip_spaces();
    size_t n = std::char_traits<char>::length(w);
    return text_.compare(pos_, n, w) == 0 && !is_word_char(peek(n));
  }

  std::string word(const char* what) {
    skip_spaces();
    if (!is_word_start(peek())) fail(pos_, std::string("expected ") + what + ", found " + found());
    size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void expect_word(const char* w) {
    if (!at_word(w)) fail(pos_, std::string("expected `") + w + "`, found " + found());
    pos_ += std::char_traits<char>::length(w);
  }

  // What sits at the cursor, for "expected X, found Y" messages.
  std::string found() const {
    if (pos_ >= text_.size()) return "end of input";
    if (text_[pos_] == '\n') return "end of line";
    size_t end = pos_;
    if (text_[end] == '%' || text_[end] == '@') ++end;
    while (end < text_.size() && is_word_char(text_[end])) ++end;
    if (end == pos_) end = pos_ + 1;
    return "`" + text_.substr(pos_, end - pos_) + "`";
  }

  // An optional trailing comment, then the newline (or the end of the text).
  // A comment of the form `file:line:col` is the op's location.
  SourceLoc line_end() {
    skip_spaces();
    SourceLoc loc;
    if (peek() == '/' && peek(1) == '/') {
      size_t start = pos_ + 2;
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      loc = location(text_.substr(start, pos_ - start));
    }
    if (pos_ >= text_.size()) return loc;
    if (peek() != '\n') fail(pos_, "expected end of line, found " + found());
    ++pos_;
    return loc;
  }

  // `file:line:col`, split at the last two colons (file names may hold colons).
  // Any other comment is not a location and is ignored.
  SourceLoc location(std::string comment) {
    while (!comment.empty() && (comment.front() == ' ' || comment.front() == '\t')) comment.erase(0, 1);
    while (!comment.empty() && (comment.back() == ' ' || comment.back() == '\t' || comment.back() == '\r'))
      comment.pop_back();
    size_t col_colon = comment.rfind(':');
    if (col_colon == std::string::npos || col_colon == 0) return {};
    size_t line_colon = comment.rfind(':', col_colon - 1);
    if (line_colon == std::string::npos || line_colon == 0) return {};
    int32_t line = 0, col = 0;
    if (!small_number(comment.substr(line_colon + 1, col_colon - line_colon - 1), &line) ||
        !small_number(comment.substr(col_colon + 1), &col))
      return {};
    return SourceLoc{file_index(comment.substr(0, line_colon)), line, col, col + 1};
  }

  static bool small_number(const std::string& s, int32_t* out) {
    if (s.empty()) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
  }

  int32_t file_index(const std::string& name) {
    auto it = file_indices_.find(name);
    if (it != file_indices_.end()) return it->second;
    fn_.files.push_back(name);
    int32_t index = static_cast<int32_t>(fn_.files.size() - 1);
    file_indices_.emplace(name, index);
    return index;
  }

  [[noreturn]] void fail(size_t at, std::string message) const {
    size_t line = static_cast<size_t>(std::upper_bound(line_starts_.begin(), line_starts_.end(), at) -
                                      line_starts_.begin());  // 1-based
    int32_t col = static_cast<int32_t>(at - line_starts_[line - 1]) + 1;
    size_t end = at;
    if (end < text_.size() && (text_[end] == '%' || text_[end] == '@')) ++end;  // underline whole names
    while (end < text_.size() && is_word_char(text_[end])) ++end;
    int32_t width = std::max<int32_t>(1, static_cast<int32_t>(end - at));
    error_at(SourceLoc{0, static_cast<int32_t>(line), col, col + width}, Diag::InvalidIrText, std::move(message));
  }

  // --- literals -----------------------------------------------------------------

  std::string quoted_string() {
    size_t start = pos_;
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') fail(start, "unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          unsigned value = 0;
          auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + std::min(pos_ + 2, text_.size()),
                                           value, 16);
          if (ec != std::errc() || end != text_.data() + pos_ + 2) fail(pos_ - 2, "bad `\\x` escape");
          out += static_cast<char>(value);
          pos_ += 2;
          break;
        }
        default: fail(pos_ - 2, "unknown escape in string");
      }
    }
  }

  // A parameter's `WORD(N)` after its type, N at least 1; `absent` when the word is not there.
  int64_t positive_param_attr(const char* keyword, int64_t absent, const char* too_small) {
    if (!at_word(keyword)) return absent;
    word(keyword);
    expect('(');
    size_t number_at = pos_;
    int64_t value = integer();
    if (value < 1) fail(number_at, too_small);
    expect(')');
    return value;
  }

  int64_t integer() {
    skip_spaces();
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (is_digit(peek())) ++pos_;
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec == std::errc::result_out_of_range) fail(start, "integer out of range");
    if (ec != std::errc() || end != text_.data() + pos_) fail(start, "expected integer, found " + found_at(start));
    return value;
  }

  std::string found_at(size_t at) {
    size_t saved = pos_;
    pos_ = at;
    std::string s = found();
    pos_ = saved;
    return s;
  }

  // --- types ----------------------------------------------------------------------

  // i32 | ptr<f32> | tile<64x32xf32> | tile<128xptr<f16>>
  Type type_() {
    skip_spaces();
    if (!is_word_start(peek())) fail(pos_, "expected type, found " + found());
    if (at_type_word("tile")) {
      pos_ += 4;
      expect_adjacent('<');
      std::vector<int64_t> shape;
      do {
        if (!is_digit(peek())) fail(pos_, "expected tile dimension, found " + found());
        shape.push_back(integer());
        expect_adjacent('x');
      } while (is_digit(peek()));
      Type t = element_type();
      expect_adjacent('>');
      return t.with_shape(std::move(shape));
    }
    return element_type();
  }

  Type element_type() {
    size_t start = pos_;
    if (at_type_word("ptr")) {
      pos_ += 3;
      expect_adjacent('<');
      Scalar s = scalar();
      expect_adjacent('>');
      return Type::ptr(s);
    }
    pos_ = start;
    return Type::of(scalar());
  }

  Scalar scalar() {
    size_t start = pos_;
    while ((peek() >= 'a' && peek() <= 'z') || is_digit(peek())) ++pos_;
    std::string w = text_.substr(start, pos_ - start);
    Scalar s;
    if (w.empty()) fail(start, "expected element type, found " + found_at(start));
    if (!parse_scalar(w, &s)) fail(start, "unknown type `" + w + "`");
    return s;
  }

  // Type words run into their `<` or digits, so they are matched by prefix.
  bool at_type_word(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    return text_.compare(pos_, n, w) == 0 && peek(n) == '<';
  }

  void expect_adjacent(char c) {
    if (peek() != c) fail(pos_, std::string("expected `") + c + "` in type, found " + found());
    ++pos_;
  }

  // --- values ---------------------------------------------------------------------

  ValueName value_name() {
    skip_spaces();
    if (peek() != '%') fail(pos_, "expected value name, found " + found());
    ++pos_;
    if (peek() == '"') return ValueName{quoted_string(), true};
    size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    if (start == pos_) fail(start - 1, "expected value name after `%`");
    return ValueName{text_.substr(start, pos_ - start), false};
  }

  ValueId use() {
    skip_spaces();
    size_t at = pos_;
    ValueName name = value_name();
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(name.key());
      if (it != scope->end()) return it->second;
    }
    fail(at, "use of undefined value " + name.shown());
  }

  void define(const ValueName& name, ValueId value, size_t at) {
    for (const auto& scope : scopes_)
      if (scope.count(name.key())) fail(at, "redefinition of value " + name.shown());
    scopes_.back().emplace(name.key(), value);
  }

  // --- attributes -----------------------------------------------------------------

  // {name = value, ...}
  std::vector<NamedAttr> attributes() {
    expect('{');
    std::vector<NamedAttr> attrs;
    do {
      skip_spaces();
      size_t at = pos_;
      std::string name = word("attribute name");
      for (const NamedAttr& a : attrs)
        if (a.name == name) fail(at, "duplicate attribute `" + name + "`");
      expect('=');
      attrs.push_back(NamedAttr{std::move(name), attribute_value()});
    } while (consume(','));
    expect('}');
    return attrs;
  }

  // 42 | -1.5 | 1e+20 | inf | nan | "text" | [1, 0]
  Attr attribute_value() {
    skip_spaces();
    if (peek() == '"') return quoted_string();
    if (peek() == '[') {
      ++pos_;
      std::vector<int64_t> list;
      if (consume(']')) return list;
      do list.push_back(integer());
      while (consume(','));
      expect(']');
      return list;
    }
    size_t start = pos_;
    while (is_word_char(peek()) || peek() == '-' || peek() == '+') ++pos_;
    std::string token = text_.substr(start, pos_ - start);
    if (token.empty()) fail(start, "expected attribute value, found " + found());
    if (token == "inf") return std::numeric_limits<double>::infinity();
    if (token == "-inf") return -std::numeric_limits<double>::infinity();
    if (token == "nan") return std::numeric_limits<double>::quiet_NaN();
    const char* first = token.data();
    const char* last = token.data() + token.size();
    if (token.find_first_of(".eE") != std::string::npos) {
      double d = 0;
      auto [end, ec] = std::from_chars(first, last, d);
      if (ec != std::errc() || end != last) fail(start, "bad float `" + token + "`");
      return d;
    }
    int64_t i = 0;
    auto [end, ec] = std::from_chars(first, last, i);
    if (ec == std::errc::result_out_of_range) fail(start, "integer out of range");
    if (ec != std::errc() || end != last) fail(start, "expected attribute value, found `" + token + "`");
    return i;
  }

  // --- ops and regions ------------------------------------------------------------

  // A `{` with nothing after it on the line opens a region; otherwise it opens
  // an attribute dictionary.
  bool at_region_start() {
    skip_spaces();
    if (peek() != '{') return false;
    size_t p = pos_ + 1;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\r')) ++p;
    return p >= text_.size() || text_[p] == '\n' || text_.compare(p, 2, "//") == 0;
  }

  // Ops until the `}` closing the block (not consumed).
  void ops(BlockId block, int depth) {
    for (;;) {
      skip_blank_lines();
      if (pos_ >= text_.size()) fail(pos_, "expected `}`, found end of input");
      if (peek() == '}') return;
      op(block, depth);
    }
  }

  // [%r, ... =] name [%a, ...] [{attrs}] [: types] [regions] [// loc]
  void op(BlockId block, int depth) {
    size_t start = pos_;
    std::vector<std::pair<ValueName, size_t>> results;
    if (peek() == '%') {
      do {
        skip_spaces();
        size_t at = pos_;
        results.emplace_back(value_name(), at);
      } while (consume(','));
      expect('=');
    }
    skip_spaces();
    size_t name_at = pos_;
    std::string op_name = word("op name");
    OpKind kind;
    if (!parse_op_kind(op_name, &kind)) fail(name_at, "unknown op `" + op_name + "`");

    std::vector<ValueId> operands;
    skip_spaces();
    if (peek() == '%') {
      do operands.push_back(use());
      while (consume(','));
    }
    std::vector<NamedAttr> attrs;
    if (peek() == '{' && !at_region_start()) attrs = attributes();
    std::vector<Type> types;
    if (consume(':')) {
      do types.push_back(type_());
      while (consume(','));
    }
    bool has_regions = at_region_start();
    SourceLoc loc;
    if (!has_regions) loc = line_end();
    if (types.size() != results.size())
      fail(start, "`" + op_name + "` has " + std::to_string(results.size()) + " result name(s) but " +
                      std::to_string(types.size()) + " result type(s)");

    OpId id = fn_.create_op(kind, std::move(operands), types);
    fn_.op(id).attrs = std::move(attrs);
    if (has_regions) {
      if (depth >= kMaxRegionDepth) fail(pos_, "regions nested too deeply");
      expect('{');
      loc = line_end();
      for (size_t index = 0;; ++index) {
        region(id, depth + 1);
        skip_spaces();
        if (peek() != '{' && !is_word_start(peek())) break;
        std::string label = region_label(kind, index + 1);
        if (!label.empty()) expect_word(label.c_str());
        if (!at_region_start()) fail(pos_, "expected `{` opening a region, found " + found());
        expect('{');
        line_end();
      }
      line_end();
    }
    fn_.op(id).loc = loc;
    for (size_t i = 0; i < results.size(); ++i) define(results[i].first, fn_.op(id).results[i], results[i].second);
    fn_.insert_op(block, fn_.block(block).ops.size(), id);
  }

  // [^bb(%a: type, ...):] ops }
  void region(OpId parent, int depth) {
    BlockId block = fn_.add_block(parent);
    fn_.op(parent).regions.push_back(block);
    scopes_.emplace_back();
    skip_blank_lines();
    if (peek() == '^') {
      ++pos_;
      word("block label");
      expect('(');
      if (!consume(')')) {
        do {
          skip_spaces();
          size_t at = pos_;
          ValueName name = value_name();
          expect(':');
          Type type = type_();
          define(name, fn_.add_block_arg(block, type), at);
        } while (consume(','));
        expect(')');
      }
      expect(':');
      line_end();
    }
    ops(block, depth);
    expect('}');
    scopes_.pop_back();
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;  // offset of the first character of each line
  Function fn_;
  std::vector<std::map<std::string, ValueId>> scopes_;  // innermost last
  std::map<std::string, int32_t> file_indices_;
};

}  // namespace

Function parse(const std::string& text) { return Parser(text).function(); }

}  // namespace tegula::ir
