// The tests' private temporary directory: made 0700 (as the kernel cache
// requires of its folders), removed with everything in it at scope exit.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tegula::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tegula-test-XXXXXX").string();
    const char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = made;
  }
  // A test may leave a folder read-only, and the CLI leaves a background
  // compiler building the precompiled prelude in the cache folder, which may
  // add or rename a file during the removal: permissions are restored first,
  // errors ignored and the removal retried.
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    for (int attempt = 0; attempt < 5 && std::filesystem::exists(path_, ec); ++attempt)
      std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  // Writes `text` to the file `name` in the directory and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string file = *this / name;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    return file;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(*this / name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
};

}  // namespace tegula::testing
