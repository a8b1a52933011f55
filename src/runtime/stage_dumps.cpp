#include "runtime/stage_dumps.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tegula::runtime {

namespace {

std::string file_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  return out;
}

}  // namespace

std::string dump_directory() {
  const char* dir = std::getenv("TEGULA_DUMP_DIR");
  return dir ? std::string(dir) : std::string();
}

void write_dumps(const backends::Backend& backend, const std::string& kernel, const std::string& key,
                 const Stages& stages) {
  std::string dir = dump_directory();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string prefix = dir + "/" + file_safe(kernel) + "-" + key.substr(0, 8) + ".";
  for (size_t i = 0; i < stages.ir.size(); ++i) {
    std::string number = (i < 9 ? "0" : "") + std::to_string(i + 1);
    std::ofstream(prefix + number + "-" + file_safe(stages.ir[i].stage) + ".txt") << stages.ir[i].ir;
  }
  if (!stages.source.empty())
    std::ofstream(prefix + "source." + std::string(backend.source_extension())) << stages.source;
  if (!stages.layouts.empty()) std::ofstream(prefix + "layouts.txt") << stages.layouts;
  if (!stages.ptx.empty()) std::ofstream(prefix + "ptx") << stages.ptx;
  if (!stages.compile_log.empty()) std::ofstream(prefix + "log.txt") << stages.compile_log;
}

}  // namespace tegula::runtime
