// Golden tests: the tile IR (lowered and optimized) and the generated C++ of
// representative kernels, pinned as text. Each tests/golden/NAME.py starts with
//   # kernel: NAME
//   # signature: *fp32:16, ...
// and has NAME.lowered.ir, NAME.optimized.ir and NAME.cpp beside it.
// Set TEGULA_UPDATE_GOLDEN=1 to rewrite the expected files after an
// intended change (then review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/cpu/codegen.h"
#include "frontend/lower.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "cli/kernel_file.h"
#include "cli/signature.h"

namespace fs = std::filesystem;
using namespace tegula;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string header_value(const std::string& text, const std::string& key) {
  std::string tag = "# " + key + ":";
  size_t pos = text.find(tag);
  if (pos == std::string::npos) return {};
  size_t end = text.find('\n', pos);
  std::string v = text.substr(pos + tag.size(), end - pos - tag.size());
  size_t a = v.find_first_not_of(' ');
  return a == std::string::npos ? std::string() : v.substr(a);
}

void check_or_update(const fs::path& expected_path, const std::string& actual) {
  if (const char* u = std::getenv("TEGULA_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing; run with TEGULA_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_file(expected_path), actual) << "golden mismatch: " << expected_path
                                              << " (TEGULA_UPDATE_GOLDEN=1 rewrites it)";
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, IrAndSourceMatch) {
  fs::path dir = fs::path(TEGULA_SOURCE_DIR) / "tests" / "golden";
  fs::path py = dir / (GetParam() + ".py");
  std::string text = read_file(py);
  std::string kernel_name = header_value(text, "kernel");
  std::string signature = header_value(text, "signature");
  ASSERT_FALSE(kernel_name.empty()) << py;

  // Relative path so the location comments don't depend on the checkout.
  fs::path cwd = fs::current_path();
  fs::current_path(dir);
  tools::KernelFile file(py.filename().string());
  fs::current_path(cwd);
  const ast::FunctionDef* kernel = file.find_function(kernel_name);
  ASSERT_NE(kernel, nullptr);
  frontend::KernelRequest request;
  request.functions = file.collect_functions(*kernel);
  request.args = tools::bind_signature(kernel_name, signature, file.kernel_params(*kernel, request.functions.front()), {});

  SourceManager sources;
  ir::Function fn = frontend::lower_kernel(request, sources);
  check_or_update(dir / (GetParam() + ".lowered.ir"), ir::print(fn));
  passes::optimize(fn);
  check_or_update(dir / (GetParam() + ".optimized.ir"), ir::print(fn));
  // Only the kernel part: the prelude of helpers is tested on its own and
  // would make every golden file change with it.
  std::string cpp = backends::cpu::emit_cpp(fn);
  size_t kernel_start = cpp.find("// ---- kernel ----");
  check_or_update(dir / (GetParam() + ".cpp"), kernel_start == std::string::npos ? cpp : cpp.substr(kernel_start));
}

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(TEGULA_SOURCE_DIR) / "tests" / "golden"))
    if (e.path().extension() == ".py") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Kernels, Golden, ::testing::ValuesIn(golden_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
