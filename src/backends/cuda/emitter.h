// An indentation-aware text builder for generated CUDA C++.
//
// Emitters write lines and open/close braces; the Emitter owns the
// indentation, so no emitter function needs to know how deeply it is nested.
#pragma once

#include <string>
#include <string_view>

namespace tegula::backends::cuda {

class Emitter {
 public:
  // One line at the current indentation (no trailing newline in `text`).
  void line(std::string_view text);
  void blank();
  // `header {` and one more level of indentation ("{" alone for an empty header).
  void open(std::string_view header);
  // One level less and `}`.
  void close();
  // `} <header> {` at the same level: else branches.
  void close_open(std::string_view header);
  // Already formatted text, verbatim (the prelude, a prologue).
  void raw(std::string_view text);

  int depth() const { return depth_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

}  // namespace tegula::backends::cuda
