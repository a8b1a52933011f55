// An indentation-aware text builder for generated C-family code (the C++ of
// the CPU backend, the CUDA C++ of the CUDA backend).
//
// Printers write lines and open/close braces; the Emitter owns the
// indentation, so no printer function needs to know how deeply it is nested.
#pragma once

#include <string>
#include <string_view>

namespace tegula::backends::c_family {

class Emitter {
 public:
  // One line at the current indentation (no trailing newline in `text`).
  void line(std::string_view text);
  // An empty line (no indentation).
  void blank();
  // `header {` and one more level of indentation ("{" alone for an empty header).
  void open(std::string_view header);
  // One level less and `}`.
  void close();
  // `} <header> {` at the same level: else branches.
  void close_open(std::string_view header);
  // Already formatted text, verbatim (a prelude, a prologue).
  void raw(std::string_view text);

  int depth() const { return depth_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

}  // namespace tegula::backends::c_family
