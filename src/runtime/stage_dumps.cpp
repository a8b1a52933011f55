#include "runtime/stage_dumps.h"

#include <atomic>
#include <cctype>
#include <cstdio>
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
  std::string failed;  // the first file that could not be written
  auto write = [&](const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    if (!out && failed.empty()) failed = path;
  };
  for (size_t i = 0; i < stages.ir.size(); ++i) {
    std::string number = (i < 9 ? "0" : "") + std::to_string(i + 1);
    write(prefix + number + "-" + file_safe(stages.ir[i].stage) + ".txt", stages.ir[i].ir);
  }
  if (!stages.source.empty()) write(prefix + "source." + std::string(backend.source_extension()), stages.source);
  if (!stages.layouts.empty()) write(prefix + "layouts.txt", stages.layouts);
  if (!stages.ptx.empty()) write(prefix + "ptx", stages.ptx);
  if (!stages.compile_log.empty()) write(prefix + "log.txt", stages.compile_log);
  // Asked for dumps and got none: say so, once per process (the compile itself goes on).
  static std::atomic<bool> told{false};
  if (!failed.empty() && !told.exchange(true))
    std::fprintf(stderr, "tegula: TEGULA_DUMP_DIR=%s: cannot write %s (%s); stage dumps are not written\n",
                 dir.c_str(), failed.c_str(), ec ? ec.message().c_str() : "not a writable directory");
}

}  // namespace tegula::runtime
