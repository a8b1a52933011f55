#include "support/source.h"

namespace tegula {

int32_t SourceManager::add(std::string name, std::string text, int32_t first_line) {
  files_.push_back(SourceFile{std::move(name), std::move(text), first_line});
  return static_cast<int32_t>(files_.size() - 1);
}

std::string_view SourceManager::line_text(int32_t id, int32_t line) const {
  if (id < 0 || static_cast<size_t>(id) >= files_.size()) return {};
  const SourceFile& f = files_[static_cast<size_t>(id)];
  int32_t want = line - f.first_line;  // 0-based line inside `text`
  if (want < 0) return {};
  std::string_view text = f.text;
  size_t pos = 0;
  for (int32_t i = 0; i < want; ++i) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return {};
    pos = nl + 1;
  }
  size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) end = text.size();
  std::string_view out = text.substr(pos, end - pos);
  if (!out.empty() && out.back() == '\r') out.remove_suffix(1);
  return out;
}

std::string SourceManager::describe(const SourceLoc& loc) const {
  if (!loc.valid() || static_cast<size_t>(loc.file) >= files_.size()) return "<unknown>";
  return files_[static_cast<size_t>(loc.file)].name + ":" + std::to_string(loc.line) + ":" +
         std::to_string(loc.col);
}

}  // namespace tegula
