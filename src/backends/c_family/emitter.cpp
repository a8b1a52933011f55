#include "backends/c_family/emitter.h"

#include "support/diagnostic.h"

namespace tegula::backends::c_family {

void Emitter::line(std::string_view text) {
  text_.append(static_cast<size_t>(depth_) * 2, ' ');
  text_.append(text);
  text_.push_back('\n');
}

void Emitter::blank() { text_.push_back('\n'); }

void Emitter::open(std::string_view header) {
  line(header.empty() ? std::string("{") : std::string(header) + " {");
  ++depth_;
}

void Emitter::close() {
  TEGULA_ASSERT(depth_ > 0, "unbalanced close in generated code");
  --depth_;
  line("}");
}

void Emitter::close_open(std::string_view header) {
  TEGULA_ASSERT(depth_ > 0, "unbalanced close in generated code");
  --depth_;
  line("} " + std::string(header) + " {");
  ++depth_;
}

void Emitter::raw(std::string_view text) { text_.append(text); }

}  // namespace tegula::backends::c_family
