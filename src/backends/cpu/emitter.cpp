#include "backends/cpu/emitter.h"

#include "support/diagnostic.h"

namespace tegula::backends::cpu {

void Emitter::line(std::string_view text) {
  text_.append(static_cast<size_t>(depth_) * 2, ' ');
  text_.append(text);
  text_.push_back('\n');
}

void Emitter::blank() { text_.push_back('\n'); }

void Emitter::open(std::string_view header) {
  std::string l(header);
  l += l.empty() ? "{" : " {";
  line(l);
  ++depth_;
}

void Emitter::close(std::string_view trailer) {
  TEGULA_ASSERT(depth_ > 0, "unbalanced close in generated code");
  --depth_;
  line(std::string("}") + std::string(trailer));
}

void Emitter::close_open(std::string_view header) {
  TEGULA_ASSERT(depth_ > 0, "unbalanced close in generated code");
  --depth_;
  line("} " + std::string(header) + " {");
  ++depth_;
}

void Emitter::raw(std::string_view text) { text_.append(text); }

}  // namespace tegula::backends::cpu
