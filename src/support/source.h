// Source files and locations shared by every layer of the compiler.
//
// A SourceLoc is four small integers so that every AST node and every IR op
// can carry one for free; the SourceManager that owns the text turns it back
// into `file:line:col` and the quoted source line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tegula {

// A span inside one source file. Lines and columns are 1-based and refer to the
// user's real file (the Python side hands over the line where the function
// starts). `file < 0` means "no location" (compiler-made values).
struct SourceLoc {
  int32_t file = -1;
  int32_t line = 0;
  int32_t col = 0;
  int32_t end_col = 0;  // one past the last column of the span on `line`

  bool valid() const { return file >= 0 && line > 0; }
};

// The text of one kernel source (usually one Python function, as
// `inspect.getsource` returns it) and where it sits in its file.
struct SourceFile {
  std::string name;    // path shown in diagnostics
  std::string text;    // the source text handed to the lexer
  int32_t first_line;  // real line number of the first line of `text`
};

// Owns every source text of one compilation. Indices are stable.
class SourceManager {
 public:
  int32_t add(std::string name, std::string text, int32_t first_line = 1);
  const SourceFile& file(int32_t id) const { return files_.at(static_cast<size_t>(id)); }
  size_t size() const { return files_.size(); }

  // The text of real line `line` of file `id` (no newline); empty if absent.
  std::string_view line_text(int32_t id, int32_t line) const;
  // "file:line:col" or "<unknown>".
  std::string describe(const SourceLoc& loc) const;

 private:
  std::vector<SourceFile> files_;
};

}  // namespace tegula
