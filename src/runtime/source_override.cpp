#include "runtime/source_override.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/error.h"

namespace tegula::runtime {

std::optional<SourceOverride> find_source_override(const backends::Backend& backend, const std::string& kernel,
                                                   const std::string& key) {
  const char* dir = std::getenv("TEGULA_OVERRIDE_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  std::string extension = ".source." + std::string(backend.source_extension());
  for (const std::string& name : {kernel + "-" + key.substr(0, 8) + extension, kernel + extension}) {
    std::filesystem::path path = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    std::ifstream file(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (!file.good() && !file.eof())
      fail(ErrorKind::Value, Diag::InvalidCompileOption, "cannot read the source override " + path.string(),
           "make the file readable, or unset TEGULA_OVERRIDE_DIR");
    return SourceOverride{path.string(), std::move(text)};
  }
  return std::nullopt;
}

}  // namespace tegula::runtime
