// The CUDA code generator (src/backends/cuda), without a GPU:
//  * layouts: distributions, default layouts, slices, the assignment of
//    kernels whose best layouts are known;
//  * the exact CUDA source and layouts of the vector-add kernel (golden:
//    tests/golden/vector_add.cu; TEGULA_UPDATE_GOLDEN=1 rewrites it);
//  * a corpus: the golden kernels (tests/golden/*.py), the CUDA benchmark
//    kernels (the examples/ the benchmark times, at its sizes), and IR
//    written by hand for every op of ops.def over its dtypes
//    (cuda_ir_corpus.h). Each must generate, and when `nvcc` is on PATH
//    compile to a cubin for sm_90a and sm_80 without errors, with no local
//    memory ("0 bytes stack frame") and at most 255 registers;
//  * the errors a user can get (located, never a crash).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "backends/cuda/codegen.h"
#include "backends/cuda/layout.h"
#include "frontend/lower.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "support/diagnostic.h"
#include "cli/kernel_file.h"
#include "cli/signature.h"
#include "cuda_ir_corpus.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace tegula;
using backends::cuda::CodegenOptions;
using backends::cuda::CudaKernel;
using backends::cuda::emit_cuda;
using namespace tegula::cuda_test;

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

// Lowers and optimizes the kernel of a `# kernel:` / `# signature:` file.
ir::Function kernel_from_file(const fs::path& py, const std::string& signature_override = {},
                              const std::string& kernel_override = {}) {
  std::string text = read_file(py);
  std::string kernel_name = kernel_override.empty() ? header_value(text, "kernel") : kernel_override;
  std::string signature = signature_override.empty() ? header_value(text, "signature") : signature_override;
  fs::path cwd = fs::current_path();
  fs::current_path(py.parent_path());
  tools::KernelFile file(py.filename().string());
  fs::current_path(cwd);
  const ast::FunctionDef* kernel = file.find_function(kernel_name);
  if (kernel == nullptr) throw std::runtime_error("no kernel " + kernel_name + " in " + py.string());
  frontend::KernelRequest request;
  request.functions = file.collect_functions(*kernel);
  request.args =
      tools::bind_signature(kernel_name, signature, file.kernel_params(*kernel, request.functions.front()), {});
  SourceManager sources;
  ir::Function fn = frontend::lower_kernel(request, sources);
  passes::optimize(fn);
  return fn;
}

fs::path source_dir() { return fs::path(TEGULA_SOURCE_DIR); }

// --- nvcc -----------------------------------------------------------------------------

bool have_nvcc() {
  static const bool found = std::system("command -v nvcc > /dev/null 2>&1") == 0;
  return found;
}

struct PtxasReport {
  bool ok = false;
  std::string log;
  int max_registers = 0;
  int max_stack = 0;  // bytes of stack frame (local memory), the largest of all functions
  int functions = 0;
  std::vector<std::string> with_stack;  // functions using local memory
};

// Compiles `source` with nvcc for `arch` (sm_90a, sm_80) and reads ptxas's -v
// report: "Compiling entry function 'f'", "Function properties for f",
// "N bytes stack frame, ...", "Used N registers, ...".
// One scratch folder per test process, removed when the process exits (ctest runs each test in a
// process of its own, so a folder left behind would be one per test per run).
const fs::path& scratch_dir() {
  struct Scratch {
    fs::path dir = fs::temp_directory_path() / ("tegula_cuda_test_" + std::to_string(::getpid()));
    Scratch() { fs::create_directories(dir); }
    ~Scratch() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

PtxasReport nvcc_compile_once(const std::string& source, const std::string& arch, const std::string& defines) {
  static int counter = 0;
  const fs::path& dir = scratch_dir();
  fs::path cu = dir / ("k" + std::to_string(counter++) + ".cu");
  std::ofstream(cu) << source;
  std::string cmd = "nvcc -arch=" + arch + defines + " --cubin -Xptxas -v -o " + (dir / "out.cubin").string() + " " +
                    cu.string() + " 2>&1";
  PtxasReport r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) r.log += buf.data();
  r.ok = pclose(pipe) == 0;
  static const std::regex function(R"(Function properties for (\w+))"), registers(R"(Used (\d+) registers)"),
      stack(R"((\d+) bytes stack frame)");
  std::istringstream lines(r.log);
  std::string line, current;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, function)) current = m[1];
    if (std::regex_search(line, m, stack)) {
      int bytes = std::stoi(m[1]);
      r.max_stack = std::max(r.max_stack, bytes);
      if (bytes > 0) r.with_stack.push_back(current);
    }
    if (std::regex_search(line, m, registers)) {
      r.max_registers = std::max(r.max_registers, std::stoi(m[1]));
      ++r.functions;
    }
  }
  fs::remove(cu);
  return r;
}

// As the runtime builds (nvrtc.h, compile_to_image): a build that spills is
// built again with a minimum of one resident block, and kept if it spills less.
PtxasReport nvcc_compile(const std::string& source, const std::string& arch) {
  PtxasReport r = nvcc_compile_once(source, arch, "");
  if (!r.ok || r.max_stack == 0 || r.functions != 1) return r;
  PtxasReport freer = nvcc_compile_once(source, arch, " -DTG_MIN_BLOCKS=1");
  if (!freer.ok || freer.max_stack >= r.max_stack) return r;
  freer.log = r.log + "\n-- again with -DTG_MIN_BLOCKS=1:\n" + freer.log;
  return freer;
}

// The architectures the corpus compiles for: compute capability, nvcc name.
// Code generation depends on it (tensor cores: wgmma on sm_90, mma.sync on
// sm_80), so each is generated for its own.
const std::vector<std::pair<int, std::string>> kArchs = {{90, "sm_90a"}, {80, "sm_80"}};

void expect_compiles(const std::function<std::string(int)>& generate, const std::string& what) {
  if (!have_nvcc()) return;
  for (const auto& [cc, arch] : kArchs) {
    PtxasReport r = nvcc_compile(generate(cc), arch);
    EXPECT_TRUE(r.ok) << what << " (" << arch << "):\n" << r.log;
    EXPECT_GT(r.functions, 0) << what << ": no ptxas report\n" << r.log;
    EXPECT_EQ(r.max_stack, 0) << what << " (" << arch << ") uses local memory:\n" << r.log;
    EXPECT_LE(r.max_registers, 255) << what << " (" << arch << ")";
  }
}

}  // namespace

// --- the golden and benchmark kernels ------------------------------------------------------

struct FileCase {
  std::string file;       // relative to the source dir
  std::string signature;  // empty: the file's own (# signature:)
  int num_warps = 4;
  std::string label;
  std::string kernel;     // empty: the file's own (# kernel:)
};

void PrintTo(const FileCase& c, std::ostream* os) { *os << c.label; }

class CudaFileKernels : public ::testing::TestWithParam<FileCase> {};

TEST_P(CudaFileKernels, GenerateAndCompile) {
  const FileCase& c = GetParam();
  ir::Function fn = kernel_from_file(source_dir() / c.file, c.signature, c.kernel);
  CodegenOptions options;
  options.num_warps = c.num_warps;
  CudaKernel k = emit_cuda(fn, options);
  EXPECT_EQ(k.num_threads, 32 * c.num_warps);
  EXPECT_NE(k.source.find("tegula_kernel("), std::string::npos);
  if (const char* dump = std::getenv("TEGULA_CUDA_TEST_DUMP")) {
    std::ofstream(fs::path(dump) / (c.label + ".cu")) << k.source;
    std::ofstream(fs::path(dump) / (c.label + ".layouts")) << k.layouts;
  }
  expect_compiles(
      [&](int arch) {
        options.arch = arch;
        return emit_cuda(fn, options).source;
      },
      c.label);
}

std::vector<FileCase> file_cases() {
  std::vector<FileCase> cases;
  for (const auto& e : fs::directory_iterator(source_dir() / "tests" / "golden"))
    if (e.path().extension() == ".py")
      for (int w : {4, 8})
        cases.push_back({"tests/golden/" + e.path().filename().string(), "", w,
                         e.path().stem().string() + "_w" + std::to_string(w), ""});
  // The GPU benchmark workloads (examples/), at their benchmark
  // sizes and dtypes.
  const std::string kernels = "examples/";
  for (int w : {4, 8, 16}) {
    std::string suffix = "_w" + std::to_string(w);
    cases.push_back({kernels + "vector_add.py", "*fp32:16, *fp32:16, *fp32:16, i32:16, 4096", w,
                     "bench_vector_add" + suffix, "add_kernel"});
    cases.push_back({kernels + "fused_chain.py",
                     "*bf16:16, *bf16:16, *i1:16, *fp32:16, *fp32:16, *bf16:16, i32:16, i32:16, fp32, fp32, fp32, 4096",
                     w, "bench_fused_chain_bf16" + suffix, "fused_chain_kernel"});
    cases.push_back({kernels + "softmax.py", "*fp32:16, *fp32:16, i32:16, i32:16, i32:16, 8192", w,
                     "bench_softmax" + suffix, "softmax_kernel"});
    if (w != 16)  // tensor cores, pipelined: the benchmark's block sizes
      cases.push_back({kernels + "matmul.py",
                       "*bf16:16, *bf16:16, *bf16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, "
                       "i32:1, " + std::string(w == 4 ? "128, 128, 64" : "128, 256, 64") + ", 8",
                       w, "bench_matmul_bf16" + suffix, "matmul_kernel"});
    cases.push_back({kernels + "layer_norm.py",
                     "*bf16:16, *bf16:16, *bf16:16, *bf16:16, *fp32:16, *fp32:16, i32:16, i32:16, i32:16, fp32, 8192",
                     w, "bench_layer_norm_bf16" + suffix, "layer_norm_kernel"});
  }
  std::sort(cases.begin(), cases.end(), [](const FileCase& a, const FileCase& b) { return a.label < b.label; });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CudaFileKernels, ::testing::ValuesIn(file_cases()),
                         [](const auto& info) { return info.param.label; });

// --- IR written by hand: every op over its dtypes (cuda_ir_corpus.h) -----------------------

namespace {

std::string kernel_part(const std::string& source) {
  size_t at = source.find("// ---- kernel ----");
  return at == std::string::npos ? source : source.substr(at);
}

}  // namespace

// Every op of ops.def appears in the hand-written corpus.
TEST(CudaCorpus, CoversEveryOp) {
  std::set<ir::OpKind> seen;
  for (const IrCase& c : ir_cases()) {
    ir::Function fn = ir::parse(c.ir);
    fn.walk([&](ir::OpId id) { seen.insert(fn.op(id).kind); });
  }
  // desc_load / desc_store / desc_atomic reach this code generator only on
  // sm_90, and only as the TMA copies them (backends/cuda/tma_plan.h),
  // while this corpus is built for sm_80 too: test_cuda_tma_plan.cpp,
  // tests/python/test_tma_codegen.py and test_tma_reduce.py cover them.
  for (ir::OpKind kind : {ir::OpKind::DescLoad, ir::OpKind::DescStore, ir::OpKind::DescAtomic}) seen.insert(kind);
#define OP(name, text, ...) EXPECT_TRUE(seen.count(ir::OpKind::name)) << "no corpus kernel uses `" << text << "`";
#include "ir/ops.def"
#undef OP
}

// Every hand-written kernel verifies, generates, and (with nvcc) compiles for
// sm_90a and sm_80 without local memory. The kernels are compiled together,
// one nvcc run per architecture: the prelude once, then every kernel renamed.
// One test per architecture, so that ctest runs the two nvcc runs (a minute
// or more each) side by side.
class CudaCorpusArch : public ::testing::TestWithParam<std::pair<int, std::string>> {};

TEST_P(CudaCorpusArch, EveryOpGeneratesAndCompiles) {
  std::vector<IrCase> cases = ir_cases();
  const auto& [cc, arch] = GetParam();
  {
  SCOPED_TRACE(arch);
  std::string unit, common_helpers;
  std::vector<std::pair<size_t, std::string>> line_starts;  // first line of each kernel in `unit`
  auto lines_in = [](const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); };
  for (size_t i = 0; i < cases.size(); ++i) {
    const IrCase& c = cases[i];
    SCOPED_TRACE(c.label);
    ir::Function fn = ir::parse(c.ir);
    ASSERT_EQ(ir::verify(fn), "") << c.label;
    CodegenOptions options;
    options.num_warps = c.num_warps;
    options.debug = c.debug;
    options.arch = cc;
    CudaKernel k;
    ASSERT_NO_THROW(k = emit_cuda(fn, options)) << c.label;
    // The prelude of the first kernel, plus once each the helpers only some
    // kernels get after it (atomics, debug checks), before their first user.
    std::string prelude = k.source.substr(0, k.source.find("// ---- kernel ----"));
    std::string helpers = prelude.substr(prelude.find('\n') + 1);  // without the kernel's name line
    if (unit.empty()) {
      unit = prelude;
      common_helpers = helpers;
    } else if (helpers.rfind(common_helpers, 0) == 0) {
      // Helper sections, each once: atomics, tensor cores, debug checks
      // ("// ---- atomics ----", ...) and each wgmma shape ("// d[0..").
      std::string extra = helpers.substr(common_helpers.size());
      std::vector<std::string> pieces(1);
      std::istringstream lines(extra);
      for (std::string line; std::getline(lines, line);) {
        if ((line.rfind("// --", 0) == 0 || line.rfind("// d[0..", 0) == 0) && !pieces.back().empty())
          pieces.emplace_back();
        pieces.back() += line + "\n";
      }
      for (const std::string& piece : pieces)
        if (unit.find(piece) == std::string::npos) unit += piece;
    }
    std::string part = kernel_part(k.source);
    size_t at = part.find("tegula_kernel(");
    ASSERT_NE(at, std::string::npos);
    part.replace(at, 14, "tegula_kernel_" + std::to_string(i) + "(");
    line_starts.push_back({lines_in(unit) + 1, c.label});
    unit += part;
    if (const char* dump = std::getenv("TEGULA_CUDA_TEST_DUMP")) std::ofstream(fs::path(dump) / (c.label + ".cu")) << k.source;
  }
  if (!have_nvcc()) GTEST_SKIP() << "nvcc not on PATH: generated, not compiled";
  {
    PtxasReport r = nvcc_compile(unit, arch);
    if (!r.ok) {
      // Name the kernels the errors are in.
      static const std::regex error_line(R"(\((\d+)\): error)");
      std::set<std::string> bad;
      for (auto it = std::sregex_iterator(r.log.begin(), r.log.end(), error_line); it != std::sregex_iterator(); ++it) {
        size_t line = std::stoul((*it)[1]);
        std::string label = "?";
        for (const auto& [start, name] : line_starts)
          if (start <= line) label = name;
        bad.insert(label);
      }
      std::string names;
      for (const std::string& b : bad) names += " " + b;
      ADD_FAILURE() << arch << ": kernels failing:" << names << "\n" << r.log.substr(0, 20000);
      return;
    }
    EXPECT_EQ(r.functions, static_cast<int>(cases.size())) << arch;
    // sin/cos/tan keep a small stack array for their slow argument reduction
    // (CUDA's math library), and so do the Bessel functions j0...yn, which
    // call them; printf a buffer for its arguments: not ours.
    std::string names;
    for (const std::string& f : r.with_stack) {
      size_t index = std::stoul(f.substr(f.rfind('_') + 1));
      std::string label = index < cases.size() ? cases[index].label : f;
      if (label.rfind("sin_", 0) == 0 || label.rfind("cos_", 0) == 0 || label.rfind("math_tan_", 0) == 0 ||
          label.rfind("print", 0) == 0 || label.rfind("libdevice_j", 0) == 0 || label.rfind("libdevice_y", 0) == 0)
        continue;
      names += " " + label;
    }
    EXPECT_EQ(names, "") << arch << ": kernels using local memory";
    EXPECT_LE(r.max_registers, 255) << arch;
  }
  }
}

INSTANTIATE_TEST_SUITE_P(CudaCorpus, CudaCorpusArch, ::testing::ValuesIn(kArchs),
                         [](const auto& info) { return info.param.second; });

// --- the vector-add kernel, pinned -------------------------------------------------------------

namespace {

void check_or_update(const fs::path& expected_path, const std::string& actual) {
  if (const char* u = std::getenv("TEGULA_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing; run with TEGULA_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_file(expected_path), actual) << "golden mismatch: " << expected_path
                                              << " (TEGULA_UPDATE_GOLDEN=1 rewrites it)";
}

}  // namespace

// The exact CUDA source of the vector-add kernel (update only for intended
// codegen changes, then review the diff): 4 f32 per thread and 2 repetitions
// with 128 threads, 16-byte loads and stores, and a per-group mask test
// because `n` has no known divisibility. The golden file holds the kernel,
// after the prelude (which every compiled corpus kernel exercises).
TEST(CudaGolden, VectorAddSource) {
  ir::Function fn = kernel_from_file(source_dir() / "tests/golden/vector_add.py");
  CudaKernel k = emit_cuda(fn, CodegenOptions{});
  ASSERT_EQ(k.source.rfind("// Generated by Tegula: CUDA code for kernel @add.\n", 0), 0u);
  check_or_update(source_dir() / "tests/golden/vector_add.cu", kernel_part(k.source));
  EXPECT_EQ(k.num_threads, 128);
  EXPECT_EQ(k.shared_bytes, 0);
}

TEST(CudaGolden, VectorAddLayouts) {
  ir::Function fn = kernel_from_file(source_dir() / "tests/golden/vector_add.py");
  CudaKernel k = emit_cuda(fn, CodegenOptions{});
  std::string l = "blocked{spt=[4], tpw=[32], wpc=[4], order=[0]}\n";
  EXPECT_EQ(k.layouts, "%3 tile<1024xi32>: " + l + "%4 tile<1024xi32>: " + l + "%5 tile<1024xi32>: " + l +
                           "%6 tile<1024xi32>: " + l + "%7 tile<1024xi1>: " + l + "%8 tile<1024xptr<f32>>: " + l +
                           "%9 tile<1024xptr<f32>>: " + l + "%10 tile<1024xf32>: " + l +
                           "%11 tile<1024xptr<f32>>: " + l + "%12 tile<1024xptr<f32>>: " + l +
                           "%13 tile<1024xf32>: " + l + "%14 tile<1024xptr<f32>>: " + l +
                           "%15 tile<1024xptr<f32>>: " + l + "%16 tile<1024xf32>: " + l);
  // With `n` divisible by 16 the mask is constant over each group of 4: one test per group.
  fn = kernel_from_file(source_dir() / "tests/golden/vector_add.py", "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024");
  k = emit_cuda(fn, CodegenOptions{});
  EXPECT_NE(k.source.find("if (v7[j7]) w8 = *reinterpret_cast<const tg_vec<float, 4>*>(v9[j7]);"),
            std::string::npos)
      << kernel_part(k.source);
  EXPECT_EQ(k.source.find("v7[j7 + 1]"), std::string::npos);
}

// Triton's maxnreg: a register cap on the entry instead of the launch bounds
// (NVRTC takes __maxnreg__ only without them), and no occupancy tuning,
// whose minimum of blocks would fight the cap. Without it, nothing changes.
TEST(CudaCodegen, MaxnregCapsTheEntryInsteadOfTheLaunchBounds) {
  ir::Function fn = kernel_from_file(source_dir() / "tests/golden/vector_add.py");
  CodegenOptions capped;
  capped.maxnreg = 40;
  CudaKernel k = emit_cuda(fn, capped);
  EXPECT_NE(k.source.find("__global__ void __maxnreg__(40) tegula_kernel("), std::string::npos) << kernel_part(k.source);
  EXPECT_EQ(k.source.find("TG_LAUNCH_BOUNDS(128) tegula_kernel"), std::string::npos);
  EXPECT_FALSE(k.tune_occupancy);
  CudaKernel plain = emit_cuda(fn, CodegenOptions{});
  EXPECT_NE(plain.source.find("TG_LAUNCH_BOUNDS(128) tegula_kernel("), std::string::npos);
  EXPECT_EQ(plain.source.find("__maxnreg__"), std::string::npos);
}

// A host TMA descriptor (Triton's nvTmaDesc) arrives as a __grid_constant__ block of its 128 bytes that
// the kernel points at; in debug mode its extent is that block, not the host address launched with.
TEST(CudaCodegen, HostDescriptorsArePassedByValue) {
  tegula::testing::TempDir dir;
  std::string py = dir.write("copy.py",
                             "import tegula\n"
                             "import tegula.language as tl\n"
                             "# kernel: copy\n"
                             "# signature: nvTmaDesc, *fp32:16, 16\n"
                             "@tegula.jit\n"
                             "def copy(src, out, B: tl.constexpr):\n"
                             "    x = tl._experimental_descriptor_load(src, [tl.program_id(0) * B], [B], tl.float32)\n"
                             "    tl.store(out + tl.program_id(0) * B + tl.arange(0, B), x)\n");
  ir::Function fn = kernel_from_file(py);
  ASSERT_EQ(fn.params[0].by_value_bytes, 128);
  for (bool debug : {false, true}) {
    CodegenOptions options;
    options.debug = debug;
    std::string part = kernel_part(emit_cuda(fn, options).source);
    EXPECT_NE(part.find("tegula_kernel(const __grid_constant__ TgValueBytes<128> tg_value0, float* arg_out"),
              std::string::npos) << part;
    EXPECT_NE(part.find("unsigned char* const arg_src = (unsigned char*)tg_value0.b;"), std::string::npos) << part;
    EXPECT_EQ(part.find("{(unsigned long long)tg_value0.b, 128ull}, {tg_base_1, tg_bytes_1}") != std::string::npos,
              debug) << part;
  }
}

// --- layouts ----------------------------------------------------------------------------------

namespace {

using backends::cuda::BlockedLayout;
using backends::cuda::Distribution;
using backends::cuda::Layout;
using backends::cuda::distribute;

Layout blocked(std::vector<int> spt, std::vector<int> tpw, std::vector<int> wpc, std::vector<int> order) {
  return Layout{BlockedLayout{std::move(spt), std::move(tpw), std::move(wpc), std::move(order)}, {}};
}

}  // namespace

TEST(CudaLayout, DistributionOfA1dBlockedLayout) {
  // 1024 elements, 4 per thread, 128 threads: registers 0-3 consecutive, then
  // the next CTA tile 512 elements on.
  Distribution d = distribute(blocked({4}, {32}, {4}, {0}), {1024});
  EXPECT_EQ(d.register_bits, (std::vector<int>{0, 1, 9}));
  EXPECT_EQ(d.lane_bits, (std::vector<int>{2, 3, 4, 5, 6}));
  EXPECT_EQ(d.warp_bits, (std::vector<int>{7, 8}));
  EXPECT_FALSE(d.replicated());
  EXPECT_EQ(d.registers(), 8);
  EXPECT_EQ(d.register_offset(5), 513);
}

TEST(CudaLayout, SmallTilesReplicate) {
  // 16 elements over 128 threads: lanes 4.. and every warp hold copies.
  Distribution d = distribute(blocked({4}, {32}, {4}, {0}), {16});
  EXPECT_EQ(d.register_bits, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.lane_bits, (std::vector<int>{2, 3, -1, -1, -1}));
  EXPECT_EQ(d.warp_bits, (std::vector<int>{-1, -1}));
  EXPECT_TRUE(d.replicated());
  // Fewer elements than one thread's share: every thread holds all of them.
  d = distribute(blocked({8}, {32}, {4}, {0}), {2});
  EXPECT_EQ(d.register_bits, (std::vector<int>{0}));
}

TEST(CudaLayout, SlicesAndExpandDimsAgree) {
  Layout l = blocked({1, 4}, {4, 8}, {4, 1}, {1, 0});
  Layout rows = backends::cuda::slice(l, 1);
  EXPECT_EQ(backends::cuda::to_string(rows),
            "slice{dim=1, parent=blocked{spt=[1, 4], tpw=[4, 8], wpc=[4, 1], order=[1, 0]}}");
  // The slice on [32] holds what the parent holds on [32, 1].
  Distribution sliced = distribute(rows, {32});
  Distribution column = distribute(l, {32, 1});
  EXPECT_EQ(sliced, column);
  // Lanes along dim 1 replicate the row values.
  EXPECT_EQ(sliced.lane_bits, (std::vector<int>{-1, -1, -1, 0, 1}));
  ASSERT_TRUE(backends::cuda::unslice(rows, 1).has_value());
  EXPECT_EQ(*backends::cuda::unslice(rows, 1), l);
  EXPECT_FALSE(backends::cuda::unslice(rows, 0).has_value());
}

TEST(CudaLayout, DefaultLayoutsFollowMemoryOps) {
  // masked_2d: a 16x64 f16 tile, 16-byte aligned rows: 8 halves per thread
  // along the rows, a warp spans 4 rows of 64, 4 warps the 16 rows.
  ir::Function fn = kernel_from_file(source_dir() / "tests/golden/masked_2d.py");
  passes::AxisInfoAnalysis info(fn);
  backends::cuda::LayoutPlan plan(fn, info, 4);
  EXPECT_EQ(backends::cuda::to_string(plan.default_layout({16, 64})),
            "blocked{spt=[1, 8], tpw=[4, 8], wpc=[4, 1], order=[1, 0]}");
  // The row index tile takes the slice layout its expand_dims wants: no conversion anywhere.
  EXPECT_EQ(plan.describe().find("also"), std::string::npos) << plan.describe();
  // A shape no memory op touches: one element per thread.
  EXPECT_EQ(backends::cuda::to_string(plan.default_layout({8, 8})),
            "blocked{spt=[1, 1], tpw=[4, 8], wpc=[4, 1], order=[1, 0]}");
}

TEST(CudaLayout, ReductionResultsKeepTheirSliceLayout) {
  // softmax-like rows: reduce along dim 1, expand back, broadcast: no
  // shared-memory conversion, only the reduction's own exchange.
  ir::Function fn = ir::parse(tile2d_kernel("  %s = reduce %x {axis = 1} : tile<32xf32> {\n"
                                            "  ^bb(%a0: f32, %b0: f32):\n    %c0 = max %a0, %b0 : f32\n"
                                            "    yield %c0\n  }\n"
                                            "  %s2 = expand_dims %s {axis = 1} : tile<32x1xf32>\n"
                                            "  %sb = broadcast %s2 : tile<32x64xf32>\n"
                                            "  %out = sub %x, %sb : tile<32x64xf32>\n"));
  CudaKernel k = emit_cuda(fn, CodegenOptions{});
  EXPECT_EQ(k.layouts.find("also"), std::string::npos) << k.layouts;
  // Rows of 64 f32 held by 16 lanes x 4: the reduction shuffles over 4 lane
  // bits, needs no shared memory.
  EXPECT_EQ(k.shared_bytes, 0);
  size_t shuffles = 0;
  for (size_t at = k.source.find("= tg_shfl_xor("); at != std::string::npos; at = k.source.find("= tg_shfl_xor(", at + 1))
    ++shuffles;
  EXPECT_EQ(shuffles, 4u);
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// Layer norm's two reductions in a row: the second one's partial sums go
// beside the first one's, so only the barriers between writing and reading
// each remain (no barrier for the first one's readers).
TEST(CudaSharedMemory, BackToBackReductionsAlternateAreas) {
  ir::Function fn = kernel_from_file(source_dir() / "examples/layer_norm.py",
                                     "*bf16:16,*bf16:16,*bf16:16,*bf16:16,*fp32:16,*fp32:16,i32:16,i32:16,i32:16,"
                                     "fp32,8192",
                                     "layer_norm_kernel");
  CodegenOptions options;
  options.num_warps = 8;
  CudaKernel k = emit_cuda(fn, options);
  size_t barriers = occurrences(k.source, "__syncthreads();");
  EXPECT_EQ(barriers, 2u) << k.source;
  EXPECT_NE(k.source.find("(tg_smem + 32)"), std::string::npos) << k.source;
  EXPECT_EQ(k.shared_bytes, 64);
}

// In a loop the previous iteration's readers may be in either area: the
// body's first scratch area still waits for them (3 barriers, not 2); its
// second goes beside the first (3, not 4).
TEST(CudaSharedMemory, LoopBodiesWaitForTheLastIterationsReaders) {
  fs::path py = fs::temp_directory_path() / ("tegula_loop_reductions_" + std::to_string(::getpid()) + ".py");
  std::ofstream(py) << "# kernel: k\n# signature: *fp32:16, *fp32:16, i32\nimport tegula\nimport tegula.language as tl\n\n\n"
                       "@tegula.jit\ndef k(x_ptr, out_ptr, n):\n    total = 0.0\n    for i in range(0, n):\n"
                       "        x = tl.load(x_ptr + i * 1024 + tl.arange(0, 1024))\n"
                       "        total += tl.sum(x, axis=0)\n        total += tl.max(x, axis=0)\n"
                       "    tl.store(out_ptr, total)\n";
  CodegenOptions options;
  options.num_warps = 4;
  CudaKernel k = emit_cuda(kernel_from_file(py), options);
  fs::remove(py);
  size_t barriers = occurrences(k.source, "__syncthreads();");
  EXPECT_EQ(barriers, 3u) << k.source;
  EXPECT_NE(k.source.find("(tg_smem + 16)"), std::string::npos) << k.source;
}

// --- FMA contraction (enable_fp_fusion) ------------------------------------------------------

namespace {

std::string generated_with_fusion(const std::string& ir_text, bool fp_fusion) {
  CodegenOptions options;
  options.fp_fusion = fp_fusion;
  return emit_cuda(ir::parse(ir_text), options).source;
}

}  // namespace

// With fusion an f32/f64 product is a plain `*` NVRTC may fuse with the add it
// feeds; without it the _rn intrinsic keeps it rounded on its own.
TEST(CudaFpFusion, FloatProductsArePlainOnlyWithFusion) {
  for (auto [type, intrinsic] : {std::pair{"f32", "__fmul_rn("}, std::pair{"f64", "__dmul_rn("}}) {
    SCOPED_TRACE(type);
    std::string ir_text = ew_kernel("mul", {type, type}, type);
    std::string fused = kernel_part(generated_with_fusion(ir_text, true));
    std::string separate = kernel_part(generated_with_fusion(ir_text, false));
    EXPECT_EQ(fused.find(intrinsic), std::string::npos) << fused;
    EXPECT_NE(fused.find(" * "), std::string::npos) << fused;
    EXPECT_NE(separate.find(intrinsic), std::string::npos) << separate;
    EXPECT_EQ(separate.find(" * "), std::string::npos) << separate;
    // Only the product changes: add and subtract read the same in both modes.
    for (const char* op : {"add", "sub", "div"}) {
      std::string other = ew_kernel(op, {type, type}, type);
      EXPECT_EQ(generated_with_fusion(other, true), generated_with_fusion(other, false)) << op;
    }
  }
  // Division stays IEEE with fusion on.
  EXPECT_NE(generated_with_fusion(ew_kernel("div", {"f32", "f32"}, "f32"), true).find("__fdiv_rn("),
            std::string::npos);
}

// f16/bf16 round after every op: contracting across that rounding would
// change results, so their code is the same in both modes.
TEST(CudaFpFusion, HalfPrecisionIsUnchanged) {
  for (const char* type : {"f16", "bf16"}) {
    for (const char* op : {"mul", "add", "sub", "fma"}) {
      std::string ir_text = ew_kernel(op, std::vector<std::string>(std::string(op) == "fma" ? 3 : 2, type), type);
      std::string fused = generated_with_fusion(ir_text, true);
      EXPECT_EQ(fused, generated_with_fusion(ir_text, false)) << type << " " << op;
      if (std::string(op) == "mul") {
        EXPECT_NE(fused.find("__fmul_rn("), std::string::npos) << fused;
      }
    }
  }
}

// --- errors ---------------------------------------------------------------------------------------

TEST(CudaErrors, BadNumWarps) {
  ir::Function fn = ir::parse(ew_kernel("add", {"f32", "f32"}, "f32"));
  CodegenOptions options;
  options.num_warps = 3;
  try {
    emit_cuda(fn, options);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "num_warps must be a power of two from 1 to 32, not 3");
  }
}

TEST(CudaErrors, TooManyRegistersIsLocated) {
  // 2^20 f32 over 32 threads: 32768 registers per thread.
  ir::Function fn = ir::parse(R"(kernel @big(%x: ptr<f32> div(16)) {
  %r = arange {start = 0, end = 1048576} : tile<1048576xi32>                 // big.py:3:9
  %s = splat %x : tile<1048576xptr<f32>>
  %p = addptr %s, %r : tile<1048576xptr<f32>>
  %v = load %p : tile<1048576xf32>
  store %p, %v
  return
}
)");
  CodegenOptions options;
  options.num_warps = 1;
  try {
    emit_cuda(fn, options);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "tile<1048576xi32> would take 32768 registers per thread in the CUDA backend (at most 8192)");
    EXPECT_EQ(e.diagnostic().loc.line, 3);
    EXPECT_EQ(e.diagnostic().loc.col, 9);
    EXPECT_EQ(e.diagnostic().hint, "use more warps (num_warps) or smaller blocks");
  }
}

TEST(CudaErrors, SharedMemoryBeyondTheDevice) {
  // A 256x256x128 f32 dot stages 256 KiB of operands.
  ir::Function fn = ir::parse(dot_kernel("f32", "f32", "256x128", "128x256", "256x256", 32768, 32768, 65536));
  CodegenOptions options;
  options.num_warps = 32;
  try {
    emit_cuda(fn, options);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "kernel @dot needs 262144 bytes of shared memory, more than sm_90 has (232448)");
  }
}
