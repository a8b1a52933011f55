#include "backends/tensor_map_param.h"

#include <charconv>
#include <sstream>

namespace tegula::backends {

namespace {

// "p2", "48", or a product "p1*p2*p3*4@32" (factors, the scale, the wrap width).
std::string extent_text(const TensorMapExtent& e) {
  std::string out = e.param >= 0 ? "p" + std::to_string(e.param) : std::to_string(e.value);
  for (int f : e.factors) out += "*p" + std::to_string(f);
  if (e.scale != 1) out += "*" + std::to_string(e.scale);
  if (e.bits != 0) out += "@" + std::to_string(e.bits);
  return out;
}

std::string extents_text(const std::vector<TensorMapExtent>& extents) {
  std::string out;
  for (const TensorMapExtent& e : extents) out += (out.empty() ? "" : ",") + extent_text(e);
  return out;
}

template <class Int>
bool parse_int(std::string_view text, Int* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

// Comma-separated items, each read by `item`.
template <class T, class F>
bool parse_list(std::string_view text, std::vector<T>* out, F item) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    T value{};
    if (!item(text.substr(0, comma), &value)) return false;
    out->push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return !out->empty();
}

bool parse_extent(std::string_view text, TensorMapExtent* out) {
  if (size_t at = text.find('@'); at != std::string_view::npos) {
    if (!parse_int(text.substr(at + 1), &out->bits) || (out->bits != 32 && out->bits != 64)) return false;
    text = text.substr(0, at);
  }
  bool first = true;
  while (true) {
    size_t star = text.find('*');
    std::string_view token = text.substr(0, star);
    if (!token.empty() && token[0] == 'p') {
      int param = -1;
      if (!parse_int(token.substr(1), &param) || param < 0) return false;
      (first ? out->param : out->factors.emplace_back()) = param;
    } else if (first) {
      if (!parse_int(token, &out->value)) return false;
    } else if (!parse_int(token, &out->scale)) {
      return false;
    }
    first = false;
    if (star == std::string_view::npos) break;
    text.remove_prefix(star + 1);
  }
  // A product names at least one parameter after the first token, or scales one.
  return out->bits == 0 || out->param >= 0 || !out->factors.empty();
}

}  // namespace

std::string to_text(const TensorMapParam& map) {
  std::string box;
  for (int64_t b : map.box) box += (box.empty() ? "" : ",") + std::to_string(b);
  return "base=" + std::to_string(map.base) + " shape=" + extents_text(map.shape) +
         " strides=" + extents_text(map.strides) + " box=" + box + " swizzle=" + std::to_string(map.swizzle) +
         " fill=" + (map.nan_fill ? "nan" : "zero");
}

std::optional<TensorMapParam> parse_tensor_map_param(std::string_view text) {
  TensorMapParam map;
  std::istringstream in{std::string(text)};
  std::string word;
  // Each field must come next, in to_text's order.
  auto field = [&](std::string_view key) -> std::optional<std::string_view> {
    if (!(in >> word) || word.rfind(key, 0) != 0) return std::nullopt;
    return std::string_view(word).substr(key.size());
  };
  std::optional<std::string_view> v;
  if (!(v = field("base=")) || !parse_int(*v, &map.base) || map.base < 0) return std::nullopt;
  if (!(v = field("shape=")) || !parse_list(*v, &map.shape, parse_extent)) return std::nullopt;
  if (!(v = field("strides=")) || !parse_list(*v, &map.strides, parse_extent)) return std::nullopt;
  if (!(v = field("box=")) || !parse_list(*v, &map.box, parse_int<int64_t>)) return std::nullopt;
  if (!(v = field("swizzle=")) || !parse_int(*v, &map.swizzle) || map.swizzle < 0 || map.swizzle > 3)
    return std::nullopt;
  if (!(v = field("fill=")) || (*v != "nan" && *v != "zero")) return std::nullopt;
  map.nan_fill = *v == "nan";
  if (in >> word) return std::nullopt;
  if (map.shape.size() != map.box.size() || map.strides.size() != map.box.size()) return std::nullopt;
  return map;
}

}  // namespace tegula::backends
