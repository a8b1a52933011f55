// Replays, through the fuzz targets' own code (tests/fuzz/fuzz_inputs.cpp),
// the committed seed corpora and every input that ever made a fuzzer fail
// (tests/fuzz/regressions/<target>/, one file per finding): none may crash,
// trip a sanitizer or let anything but a UserError escape. Runs in every
// build, `make sanitize` included; the fuzzers themselves need clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_inputs.h"

namespace tegula::fuzz {
namespace {

const std::filesystem::path kFuzzDir = std::filesystem::path(TEGULA_SOURCE_DIR) / "tests" / "fuzz";

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& item : std::filesystem::directory_iterator(dir))
      if (item.is_regular_file() && item.path().filename() != "README.md") files.push_back(item.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Runs every file of `dir`; returns the names of those `run` rejected (false).
std::vector<std::string> replay(const std::filesystem::path& dir, const std::function<bool(std::string_view)>& run) {
  std::vector<std::string> rejected;
  for (const std::filesystem::path& path : files_in(dir)) {
    SCOPED_TRACE(path.string());
    std::string input = read_bytes(path);
    try {
      if (!run(input)) rejected.push_back(path.filename().string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped: " << e.what();
    }
  }
  return rejected;
}

// Seeds are real kernels and IR: each must go all the way through, or the
// fuzzer starts from inputs that stop at the first error.
TEST(FuzzSeeds, EveryFrontendSeedCompiles) {
  ASSERT_GE(files_in(kFuzzDir / "corpus_frontend").size(), 10u);
  EXPECT_EQ(replay(kFuzzDir / "corpus_frontend", compile_kernel_source), std::vector<std::string>{});
}

TEST(FuzzSeeds, EveryIrSeedVerifies) {
  ASSERT_GE(files_in(kFuzzDir / "corpus_ir").size(), 10u);
  EXPECT_EQ(replay(kFuzzDir / "corpus_ir", check_ir_text), std::vector<std::string>{});
}

// Findings are mostly invalid input: only that they no longer crash matters.
TEST(FuzzRegressions, FrontendFindings) { replay(kFuzzDir / "regressions" / "frontend", compile_kernel_source); }

TEST(FuzzRegressions, IrFindings) { replay(kFuzzDir / "regressions" / "ir", check_ir_text); }

}  // namespace
}  // namespace tegula::fuzz
