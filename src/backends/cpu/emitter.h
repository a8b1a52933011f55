// A small indentation-aware text builder for generated C++.
//
// Code generators write lines and open/close braces; the emitter owns the
// indentation so that every emitter function can be written without knowing
// how deeply it is nested.
#pragma once

#include <string>
#include <string_view>

namespace tegula::backends::cpu {

class Emitter {
 public:
  // One line at the current indentation (no trailing newline in `text`).
  void line(std::string_view text);
  // An empty line (no indentation).
  void blank();
  // `header {` and one more level of indentation.
  void open(std::string_view header);
  // One level less and `}` followed by `trailer` (e.g. "} else {" via close_open).
  void close(std::string_view trailer = {});
  // `} <header> {` at the same level: for else branches.
  void close_open(std::string_view header);
  // Appends already-formatted text verbatim (the prelude).
  void raw(std::string_view text);

  int depth() const { return depth_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

}  // namespace tegula::backends::cpu
