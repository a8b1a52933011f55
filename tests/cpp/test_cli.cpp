// `tegula compile`: what it reads from a Python file (the functions a kernel
// reaches, the globals each sees, exact source slices), and the executable
// itself: outputs, exit statuses and error texts.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "frontend/ast.h"
#include "cli/kernel_file.h"
#include "temp_dir.h"

namespace tegula::tools {
namespace {

namespace fs = std::filesystem;
using frontend::GlobalValue;
using testing::TempDir;

const char* kProgram = R"py(import tegula
import tegula.language as tl
from triton.language import arange
import numpy as np
from tegula.language import math as tlmath

BLOCK = 128
NEG = -4
SCALE = tl.constexpr(0.5)
NAME = 'rows'
FLAG = True
DT = tl.float16
OBJ = np.float32(2)
ALIAS = BLOCK

def host(x):
    return x

@tegula.jit
def square(v):
    return v * v * SCALE



@tegula.jit
def unused(v):
    return v

@tegula.jit
def kernel(x_ptr, n, BLOCK_N: tl.constexpr = ALIAS, dt: tl.constexpr = tl.float32, alpha=2.0):
    offs = tl.arange(0, BLOCK) + NEG
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = square(x) + host(x) + np.sum(x) + tlmath.exp(x) + arange(0, 1)
    if FLAG and NAME == 'rows':
        y = y.to(DT) + OBJ
    tl.store(x_ptr + offs, y)

# a trailing comment
)py";

std::string describe(const GlobalValue& g) {
  switch (g.kind) {
    case GlobalValue::Kind::Int: return "Int " + std::to_string(g.int_value);
    case GlobalValue::Kind::Float: return "Float " + std::to_string(g.float_value);
    case GlobalValue::Kind::Bool: return "Bool " + std::to_string(g.int_value);
    case GlobalValue::Kind::None: return "None";
    case GlobalValue::Kind::Str: return "Str " + g.text;
    case GlobalValue::Kind::DType: return "DType " + g.text;
    case GlobalValue::Kind::Language: return "Language " + g.text;
    case GlobalValue::Kind::Tegula: return "Tegula " + g.text;
    case GlobalValue::Kind::JitFunction: return "JitFunction " + std::to_string(g.function);
    case GlobalValue::Kind::Opaque: return "Opaque " + g.text;
    case GlobalValue::Kind::LanguageMember: return "LanguageMember " + g.text;
    case GlobalValue::Kind::Tuple: return "Tuple of " + std::to_string(g.elements.size());
  }
  return "?";
}

TEST(KernelFile, CollectsReachableFunctionsAndTheirGlobals) {
  TempDir dir;
  KernelFile file(dir.write("prog.py", kProgram));
  const ast::FunctionDef* kernel = file.find_function("kernel");
  ASSERT_NE(kernel, nullptr);
  std::vector<frontend::FunctionSource> functions = file.collect_functions(*kernel);
  ASSERT_EQ(functions.size(), 2u);

  EXPECT_EQ(functions[0].name, "kernel");
  EXPECT_EQ(functions[0].filename, dir.path() + "/prog.py");
  EXPECT_EQ(functions[0].first_line, 29);
  EXPECT_EQ(functions[0].source.substr(0, 28), "@tegula.jit\ndef kernel(x_ptr");
  EXPECT_TRUE(functions[0].source.ends_with("\n    tl.store(x_ptr + offs, y)\n")) << functions[0].source;
  std::string globals;
  for (const auto& [name, value] : functions[0].globals) globals += name + ": " + describe(value) + "\n";
  EXPECT_EQ(globals,
            "ALIAS: Int 128\n"
            "BLOCK: Int 128\n"
            "DT: DType float16\n"
            "FLAG: Bool 1\n"
            "NAME: Str rows\n"
            "NEG: Int -4\n"
            "OBJ: Opaque module-level value 'OBJ' (tegula compile evaluates only literal constants)\n"
            "arange: LanguageMember triton.language.arange\n"
            "host: Opaque function 'host' (not a @tegula.jit function)\n"
            "np: Opaque module 'numpy'\n"
            "square: JitFunction 1\n"
            "tl: Language tegula.language\n"
            "tlmath: Language tegula.language.math\n");

  EXPECT_EQ(functions[1].name, "square");
  EXPECT_EQ(functions[1].first_line, 19);
  EXPECT_EQ(functions[1].source, "@tegula.jit\ndef square(v):\n    return v * v * SCALE\n");
  ASSERT_EQ(functions[1].globals.size(), 1u);
  EXPECT_EQ(describe(functions[1].globals.at("SCALE")), "Float 0.500000");

  std::vector<KernelParam> params = file.kernel_params(*kernel, functions[0]);
  ASSERT_EQ(params.size(), 5u);
  EXPECT_FALSE(params[0].is_constexpr);
  EXPECT_TRUE(params[2].is_constexpr);
  EXPECT_EQ(describe(*params[2].default_value), "Int 128");
  EXPECT_EQ(describe(*params[3].default_value), "DType float32");
  EXPECT_FALSE(params[4].is_constexpr);
  EXPECT_EQ(describe(*params[4].default_value), "Float 2.000000");
  EXPECT_EQ(file.jit_functions().size(), 3u);
}

TEST(KernelFile, ErrorsAreRenderedAgainstTheFile) {
  TempDir dir;
  std::string path = dir.write("bad.py", "import tegula\n\n@tegula.jit\ndef k(x):\n    del x\n");
  try {
    KernelFile file(path);
    FAIL() << "expected a FileError";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":5:5: error[E0110]: `del` statements are not supported inside a kernel\n"
                     " 5 |     del x\n"
                     "   |     ^~~\n"
                     "hint: leave the name unused, or rebind it\n");
  }
  EXPECT_THROW(KernelFile(dir.path() + "/missing.py"), FileError);
}

// ---- the executable ----------------------------------------------------------

struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
};

CliResult run_cli(const TempDir& dir, const std::string& args) {
  std::string command = std::string("'") + TEGULA_CLI + "' " + args + " >'" + dir.path() + "/out' 2>'" + dir.path() +
                        "/err'";
  int raw = std::system(command.c_str());
  return CliResult{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, dir.read("out"), dir.read("err")};
}

const char* kAdd = R"py(import tegula
import tegula.language as tl


@tegula.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)
)py";

TEST(Cli, VersionAndHelp) {
  TempDir dir;
  CliResult version = run_cli(dir, "version");
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out, std::string("tegula ") + TEGULA_VERSION + "\n");
  CliResult help = run_cli(dir, "--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_EQ(help.out.substr(0, 61), "usage: tegula compile FILE.py[::KERNEL] --signature SIG [opti");
  EXPECT_NE(help.out.find("--const NAME=VALUE"), std::string::npos);
  CliResult none = run_cli(dir, "");
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.err, help.out);
}

TEST(Cli, EmitAstNeedsNoSignature) {
  TempDir dir;
  std::string file = dir.write("add.py", kAdd);
  CliResult r = run_cli(dir, "compile " + file + " --emit ast");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with(
            "FunctionDef add @6:5\n"
            "  decorator: Attribute .jit @5:2\n"
            "    Name tegula @5:2\n"
            "  Param x_ptr @6:9\n"
            "  Param y_ptr @6:16\n"
            "  Param out_ptr @6:23\n"))
      << r.out;
}

TEST(Cli, CommandLineMistakesExitWithStatus2) {
  TempDir dir;
  std::string file = dir.write("add.py", kAdd);
  CliResult no_sig = run_cli(dir, "compile " + file + "::add");
  EXPECT_EQ(no_sig.status, 2);
  EXPECT_EQ(no_sig.err,
            "tegula: error[E1001]: --signature is required to compile (only --emit ast works without one)\n"
            "(run `tegula --help` for usage)\n");
  CliResult bad_sig = run_cli(dir, "compile " + file + "::add -s '*fp32, *fp32, *fp32, i32, *fp32'");
  EXPECT_EQ(bad_sig.status, 2);
  EXPECT_EQ(bad_sig.err,
            "tegula: error[E1002]: signature entry 5 ('*fp32') for parameter 'BLOCK': '*fp32' is not a value; parameter "
            "'BLOCK' is a tl.constexpr, so its entry must be a value such as 1024, -1, 0.5, True, None, fp16 or "
            "'text'\n(run `tegula --help` for the signature syntax)\n");
  CliResult no_kernel = run_cli(dir, "compile " + file + "::mul --emit ast");
  EXPECT_EQ(no_kernel.status, 2);
  EXPECT_EQ(no_kernel.err, "tegula: error[E1001]: no function 'mul' in " + file +
                               "; its @jit functions: add\n(run `tegula --help` for usage)\n");
  EXPECT_EQ(run_cli(dir, "compile " + file + " --emit bytecode").status, 2);
  CliResult unknown_option = run_cli(dir, "compile " + file + " --frobnicate");
  EXPECT_EQ(unknown_option.status, 2);
  EXPECT_EQ(unknown_option.err, "tegula: error[E1001]: unknown option '--frobnicate'\n(run `tegula --help` for usage)\n");
  CliResult unknown_command = run_cli(dir, "transpile " + file);
  EXPECT_EQ(unknown_command.status, 2);
  EXPECT_TRUE(unknown_command.err.starts_with("tegula: error[E1001]: unknown command 'transpile'\n")) << unknown_command.err;
}

TEST(Cli, KernelErrorsExitWithStatus1) {
  TempDir dir;
  std::string file = dir.write("bad.py", "import tegula\n@tegula.jit\ndef k(x):\n    with x:\n        pass\n");
  CliResult r = run_cli(dir, "compile " + file + " --emit ast");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, file + ":4:5: error[E0110]: `with` statements are not supported inside a kernel\n"
                          " 4 |     with x:\n"
                          "   |     ^~~~\n"
                          "hint: a kernel has no context managers; write the body directly\n");
  CliResult missing = run_cli(dir, "compile " + dir.path() + "/nope.py --emit ast");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "tegula: error[E1003]: cannot read '" + dir.path() + "/nope.py': No such file or directory\n");
  // Only a regular file is read: a directory would read as empty, a device (/dev/zero) never end.
  std::filesystem::create_directory(dir.path() + "/folder.py");
  CliResult folder = run_cli(dir, "compile " + dir.path() + "/folder.py --emit ast");
  EXPECT_EQ(folder.status, 1);
  EXPECT_EQ(folder.err, "tegula: error[E1003]: cannot read '" + dir.path() +
                            "/folder.py': it is a directory; give the Python file that defines the kernel\n");
  CliResult device = run_cli(dir, "compile /dev/zero --emit ast");
  EXPECT_EQ(device.status, 1);
  EXPECT_EQ(device.err, "tegula: error[E1003]: cannot read '/dev/zero': it is not a regular file; give the Python "
                        "file that defines the kernel\n");
}

TEST(Cli, AnUnclosedStringInTheSignatureIsSaid) {
  TempDir dir;
  std::string file = dir.write("add.py", kAdd);
  CliResult r = run_cli(dir, "compile " + file + "::add -s \"*fp32, *fp32, *fp32, i32, 'x\" --emit ir");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.err.starts_with("tegula: error[E1002]: the string 'x in the signature has no closing '\n")) << r.err;
}

TEST(Cli, CompilesToIrAndCpp) {
  TempDir dir;
  std::string file = dir.write("add.py", kAdd);
  std::string cache = "--cache-dir '" + dir.path() + "/cache'";
  CliResult ir = run_cli(dir, "compile " + file + "::add -s '*fp32:16, *fp32:16, *fp32:16, i32, 1024' --emit ir " + cache);
  EXPECT_EQ(ir.status, 0) << ir.err;
  EXPECT_TRUE(ir.out.starts_with(
      "kernel @add(%x_ptr: ptr<f32> div(16), %y_ptr: ptr<f32> div(16), %out_ptr: ptr<f32> div(16), %n: i32)"))
      << ir.out;
  // Locations in the IR are the real ones in the file.
  EXPECT_NE(ir.out.find(file + ":7:11"), std::string::npos) << ir.out;
  CliResult both = run_cli(dir, "compile " + file + " -s '*fp32, *fp32, *fp32, i32' -c BLOCK=256 --emit ir-opt,cpp " + cache);
  EXPECT_EQ(both.status, 0) << both.err;
  EXPECT_TRUE(both.out.starts_with("// ===== ir: ")) << both.out;
  EXPECT_NE(both.out.find("// ===== cpp =====\n"), std::string::npos);
  EXPECT_NE(both.out.find("256"), std::string::npos);  // --const reached the kernel
}

TEST(Cli, SemanticErrorsPointIntoTheFile) {
  TempDir dir;
  std::string file = dir.write("bad.py",
                               "import tegula\nimport tegula.language as tl\n\n@tegula.jit\ndef k(x, BLOCK: tl.constexpr):\n"
                               "    r = tl.arange(0, BLOCK)\n");
  CliResult r = run_cli(dir, "compile " + file + " -s '*fp32, 100' --cache-dir '" + dir.path() + "/cache'");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.err.starts_with(file + ":6:9: error[E0502]: ")) << r.err;
}

TEST(Cli, ExplainPrintsTheEntryOfACode) {
  TempDir dir;
  CliResult r = run_cli(dir, "explain e0201");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("## E0201: a name is not defined\n")) << r.out;
  EXPECT_NE(r.out.find("**Fix:**"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("## E0202"), std::string::npos) << r.out;
  CliResult unknown = run_cli(dir, "explain E1234");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("'E1234' is not a Tegula error code"), std::string::npos) << unknown.err;
  EXPECT_EQ(run_cli(dir, "explain").status, 2);
}

// Backend limits are found by the CUDA code generator, before NVRTC runs.
TEST(Cli, BackendErrorsCarryTheirCodes) {
  TempDir dir;
  std::string file = dir.write("big.py",
                               "import tegula\nimport tegula.language as tl\n\n@tegula.jit\ndef k(x_ptr):\n"
                               "    a = tl.zeros((1024, 1024), dtype=tl.float32) + tl.load(x_ptr)\n"
                               "    tl.store(x_ptr, tl.sum(tl.sum(a, 1), 0))\n");
  CliResult r = run_cli(dir, "compile " + file + " -s '*fp32' --backend cuda --arch 90 --num-warps 1 --emit cuda "
                             "--cache-dir '" + dir.path() + "/cache'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[E0802]: "), std::string::npos) << r.err;
}

TEST(Cli, EmitsCudaStagesWithoutAGpu) {
  TempDir dir;
  std::string file = dir.write("add.py", kAdd);
  std::string cache = "--cache-dir '" + dir.path() + "/cache'";
  CliResult r = run_cli(dir, "compile " + file + "::add -s '*fp32:16, *fp32:16, *fp32:16, i32, 1024' --backend cuda "
                             "--arch 90 --num-warps 8 --emit layouts,cuda,ptx " + cache);
  if (r.status != 0 && r.err.find("nvrtc") != std::string::npos) GTEST_SKIP() << "NVRTC is not available: " << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("// ===== layouts =====\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blocked{"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tegula_kernel"), std::string::npos);
  EXPECT_NE(r.out.find("// ===== ptx =====\n"), std::string::npos);
  EXPECT_NE(r.out.find(".target sm_90"), std::string::npos) << r.out.substr(0, 2000);

  CliResult mismatch = run_cli(dir, "compile " + file + " -s '*fp32, *fp32, *fp32, i32, 1024' --emit ptx");
  EXPECT_EQ(mismatch.status, 2);
  EXPECT_NE(mismatch.err.find("--emit ptx needs --backend cuda"), std::string::npos) << mismatch.err;
  CliResult bad = run_cli(dir, "compile " + file + " -s '*fp32, *fp32, *fp32, i32, 1024' --backend tpu");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--backend: expected cpu or cuda"), std::string::npos) << bad.err;
  // --arch takes the spellings of nvcc and NVRTC too.
  CliResult sm = run_cli(dir, "compile " + file + "::add -s '*fp32:16, *fp32:16, *fp32:16, i32, 1024' --backend cuda "
                              "--arch sm_90a --emit ptx " + cache);
  ASSERT_EQ(sm.status, 0) << sm.err;
  EXPECT_NE(sm.out.find(".target sm_90"), std::string::npos);
  CliResult wrong = run_cli(dir, "compile " + file + " -s '*fp32, *fp32, *fp32, i32, 1024' --backend cuda --arch hopper");
  EXPECT_EQ(wrong.status, 2);
  EXPECT_NE(wrong.err.find("--arch expects a compute capability such as 90, sm_90a or 80, got 'hopper'"),
            std::string::npos) << wrong.err;
  CliResult old = run_cli(dir, "compile " + file + " -s '*fp32, *fp32, *fp32, i32, 1024' --backend cuda --arch 12");
  EXPECT_EQ(old.status, 2);
  EXPECT_NE(old.err.find("--arch 12 is compute capability 1.2; the CUDA backend builds for 7.0 (70) and newer"),
            std::string::npos) << old.err;
}

}  // namespace
}  // namespace tegula::tools

