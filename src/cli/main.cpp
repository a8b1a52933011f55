// The `tegula` command line: compile a kernel from a Python file for a
// signature and print any stage of the pipeline, without Python.
// docs/cli.md is the user's guide; `usage()` below is the reference.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontend/ast.h"
#include "runtime/backend_registry.h"
#include "runtime/compiler.h"
#include "support/diagnostic.h"
#include "cli/aot.h"
#include "cli/explain.h"
#include "cli/kernel_file.h"
#include "cli/signature.h"

#ifndef TEGULA_VERSION
#define TEGULA_VERSION "unknown"
#endif

namespace tegula::tools {
namespace {

constexpr const char* kUsage = R"(usage: tegula compile FILE.py[::KERNEL] --signature SIG [options]
       tegula aot FILE.py[::KERNEL] --signature SIG -o DIR [--name NAME] [options]
       tegula profile FILE.py[::KERNEL] --grid G NAME=VALUE ... [--device cuda] [--plot PNG]
       tegula explain CODE
       tegula version
       tegula --help

Compiles one @jit kernel of a Python file for one specialization and prints
the stages of the pipeline. No Python runs: the file is parsed, its imports are
classified by module name and its literal module-level constants are read.

compile options:
  FILE.py::KERNEL       the kernel; `::KERNEL` may be left out when FILE.py has
                        exactly one @jit function
  -s, --signature SIG   what each kernel parameter is bound to, comma-separated,
                        in parameter order (required unless --emit ast):
                          *fp32, *bf16:16   pointer to elements of a dtype
                                            (:16 = the address is 16-byte aligned)
                          i32, i64, u64     integer (:16 = divisible by 16, :1 = equal to 1)
                          fp32, i1          float, bool
                          nvTmaDesc         a host TMA descriptor (Triton 3.2/3.3), passed by value
                          1024, 0.5, True, None, fp16, 'text'
                                            the value of a tl.constexpr parameter
                        dtypes: fp16 bf16 fp32 fp64 i1 i8 i16 i32 i64 u8 u16 u32 u64
                        (or float16, bfloat16, float32, int32, uint8, bool, ...).
                        Trailing parameters with a literal default, or given by
                        --const, may be left out.
  -e, --emit STAGES     what to print, comma-separated (default: ir-opt):
                          ast      the syntax tree of the kernel (needs no signature)
                          ir       the tile IR as lowered from the source
                          ir-opt   the tile IR after optimization
                          cpp      the generated C++ source (CPU backend)
                          cuda     the generated CUDA source (CUDA backend)
                          layouts  the layout of every tile value (CUDA)
                          ptx      the PTX NVRTC made (CUDA)
                          ptxas    registers, spills and shared memory per block (CUDA)
                          all      every stage of the chosen backend
  -c, --const NAME=VALUE
                        the value of tl.constexpr parameter NAME (repeatable)
  -b, --backend NAME    cpu (default) or cuda
  --arch CC             CUDA: compute capability to build for: 90, sm_90a, 80 or sm_80;
                        default: the GPU of device 0 (needed when there is no GPU)
  --num-warps N         CUDA: warps per program (default 4)
  --num-stages N        CUDA: software-pipeline stages of K loops feeding tensor-core
                        dots (default 3; 1: no pipelining)
  --debug               compile with bounds checks on every load and store
  --cache-dir DIR       the kernel cache (default: $TEGULA_CACHE_DIR, else
                        ~/.cache/tegula)

aot: builds the kernel ahead of time for the CPU backend into DIR/NAME.so and
writes DIR/NAME.h, a C header whose NAME_load, NAME_launch and
NAME_launch_range run it with typed arguments, with no Python and no compiler
at run time (docs/cli.md). It takes the compile options above, and:
  -o, --out DIR         the folder to write NAME.so and NAME.h to (required)
  --name NAME           the prefix of the header's functions (a C identifier;
                        default: the kernel's name)

profile: runs the kernel (so it needs Python: it is `python3 -m tegula.profile`
run by $TEGULA_PYTHON, else the python3 of the environment this executable is
installed in, else the one on PATH) and prints kernel.report: bytes,
operations, time, the share of the copy bandwidth and matrix rate reached
(docs/profiling.md). NAME=VALUE per parameter: DTYPE[SHAPE] (a random array),
a number or True/False; --grid may use the integer arguments and cdiv.

exit status: 0 success, 1 an error in the kernel or while compiling it,
             2 a mistake on the command line

example:
  tegula compile examples/vector_add.py::add_kernel \
      --signature "*fp32:16, *fp32:16, *fp32:16, i32, 1024" --emit ir,cpp
)";

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A mistake on the command line: reported with a pointer to --help.
struct UsageError {
  std::string message;
};

// "tegula: error[E1001]: ", the prefix of the command line's own errors:
// they carry codes like the compiler's (docs/diagnostics.md, E10xx).
std::string cli_error(Diag code) { return "tegula: error[" + std::string(code_of(code)) + "]: "; }

struct CompileCommand {
  std::string file;
  std::string kernel;  // empty: the file's only @jit function
  std::string signature;
  bool has_signature = false;
  std::vector<std::string> emit;
  std::vector<std::pair<std::string, std::string>> consts;
  bool debug = false;
  std::string cache_dir;
  std::string backend = std::string(runtime::host_backend().name());
  int arch = 0;
  int num_warps = 4;
  int num_stages = 3;
  std::string out;   // aot: the output folder
  std::string name;  // aot: the header's prefix
};

int parse_positive(const std::string& option, const std::string& text) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v <= 0) throw UsageError{option + " expects a positive integer, got '" + text + "'"};
  return v;
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string item(text.substr(start, comma - start));
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

// The stages every compile can print; the backends add their outputs.
constexpr const char* kCommonStages[] = {"ast", "ir", "ir-opt"};

// The backend that prints `stage`, or null.
const backends::Backend* owner_of(std::string_view stage) {
  for (const backends::Backend* backend : runtime::all_backends())
    for (const backends::Output& output : backend->outputs())
      if (output.name == stage) return backend;
  return nullptr;
}

bool is_stage(std::string_view stage) {
  for (const char* common : kCommonStages)
    if (stage == common) return true;
  return stage == "all" || owner_of(stage);
}

std::string stage_names() {
  std::string out;
  for (const char* common : kCommonStages) out += std::string(common) + ", ";
  for (const backends::Backend* backend : runtime::all_backends())
    for (const backends::Output& output : backend->outputs()) out += std::string(output.name) + ", ";
  return out.substr(0, out.size() - 2) + " or all";
}

// A stage of another backend than the chosen one is a usage error that
// says which to use instead.
void check_stage_of(const backends::Backend& backend, std::string_view stage) {
  const backends::Backend* owner = owner_of(stage);
  if (!owner || owner == &backend) return;
  for (const backends::Output& own : owner->outputs()) {
    if (own.name != stage) continue;
    for (const backends::Output& ours : backend.outputs())
      if (ours.kind == own.kind)
        throw UsageError{"--emit " + std::string(stage) + " is the " + std::string(owner->name()) +
                         " backend's; use --emit " + std::string(ours.name)};
  }
  throw UsageError{"--emit " + std::string(stage) + " needs --backend " + std::string(owner->name())};
}

const std::string& output_text(const runtime::Stages& stages, backends::OutputKind kind) {
  switch (kind) {
    case backends::OutputKind::Source: return stages.source;
    case backends::OutputKind::Layouts: return stages.layouts;
    case backends::OutputKind::Assembly: return stages.ptx;
    case backends::OutputKind::BuildLog: return stages.compile_log;
  }
  return stages.source;
}

CompileCommand parse_compile_args(const std::vector<std::string>& args) {
  CompileCommand cmd;
  std::string target;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string inline_value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_inline = true;
    }
    auto value = [&]() -> std::string {
      if (has_inline) return inline_value;
      if (i + 1 >= args.size()) throw UsageError{"option " + arg + " needs a value"};
      return args[++i];
    };
    if (arg == "-s" || arg == "--signature") {
      cmd.signature = value();
      cmd.has_signature = true;
    } else if (arg == "-e" || arg == "--emit") {
      for (const std::string& stage : split_commas(value())) {
        if (!is_stage(stage))
          throw UsageError{"--emit: unknown stage '" + stage + "'; expected " + stage_names()};
        cmd.emit.push_back(stage);
      }
    } else if (arg == "-c" || arg == "--const") {
      std::string pair = value();
      size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError{"--const expects NAME=VALUE, got '" + pair + "'"};
      cmd.consts.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    } else if (arg == "--debug" && !has_inline) {
      cmd.debug = true;
    } else if (arg == "--cache-dir") {
      cmd.cache_dir = value();
    } else if (arg == "-b" || arg == "--backend") {
      cmd.backend = value();
      if (!runtime::find_backend(cmd.backend))
        throw UsageError{"--backend: expected " + runtime::backend_names("") + ", got '" + cmd.backend + "'"};
    } else if (arg == "--arch") {
      // 90, sm_90, sm_90a and compute_90 all name compute capability 9.0.
      std::string text = value();
      std::string digits = text;
      for (const char* prefix : {"sm_", "compute_"})
        if (digits.rfind(prefix, 0) == 0) digits = digits.substr(std::string(prefix).size());
      if (!digits.empty() && digits.back() == 'a' && digits != text) digits.pop_back();
      try {
        cmd.arch = parse_positive("--arch", digits);
      } catch (const UsageError&) {
        throw UsageError{"--arch expects a compute capability such as 90, sm_90a or 80, got '" + text + "'"};
      }
      // The generated code's atomics take a scope (PTX sm_70+): older GPUs are not targets.
      if (cmd.arch < 70)
        throw UsageError{"--arch " + text + " is compute capability " + std::to_string(cmd.arch / 10) + "." +
                         std::to_string(cmd.arch % 10) + "; the CUDA backend builds for 7.0 (70) and newer"};
    } else if (arg == "--num-warps") {
      cmd.num_warps = parse_positive("--num-warps", value());
    } else if (arg == "-o" || arg == "--out") {
      cmd.out = value();
    } else if (arg == "--name") {
      cmd.name = value();
    } else if (arg == "--num-stages") {
      cmd.num_stages = parse_positive("--num-stages", value());
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      throw UsageError{"unknown option '" + args[i] + "'"};
    } else if (target.empty()) {
      target = arg;
    } else {
      throw UsageError{"unexpected argument '" + arg + "' (the kernel file is already '" + target + "')"};
    }
  }
  if (target.empty()) throw UsageError{"compile needs a kernel file: tegula compile FILE.py::KERNEL ..."};
  size_t sep = target.rfind("::");
  cmd.file = target.substr(0, sep);
  if (sep != std::string::npos) {
    cmd.kernel = target.substr(sep + 2);
    if (cmd.kernel.empty()) throw UsageError{"no kernel name after '::' in '" + target + "'"};
  }
  if (cmd.emit.empty()) cmd.emit.push_back("ir-opt");
  const backends::Backend& backend = *runtime::find_backend(cmd.backend);
  for (const std::string& stage : cmd.emit) check_stage_of(backend, stage);
  return cmd;
}

bool wants(const CompileCommand& cmd, std::string_view stage) {
  for (const std::string& s : cmd.emit)
    if (s == stage || s == "all") return true;
  return false;
}

const ast::FunctionDef& select_kernel(const KernelFile& file, const std::string& name) {
  if (!name.empty()) {
    if (const ast::FunctionDef* fn = file.find_function(name)) return *fn;
    std::string known;
    for (const ast::FunctionDef* fn : file.jit_functions()) known += (known.empty() ? "" : ", ") + fn->name;
    throw UsageError{"no function '" + name + "' in " + file.path() +
                     (known.empty() ? " (it has no @jit functions)" : "; its @jit functions: " + known)};
  }
  std::vector<const ast::FunctionDef*> jit = file.jit_functions();
  if (jit.size() == 1) return *jit.front();
  std::string known;
  for (const ast::FunctionDef* fn : jit) known += (known.empty() ? "" : ", ") + fn->name;
  throw UsageError{jit.empty() ? file.path() + " has no @jit function"
                               : file.path() + " has several @jit functions (" + known +
                                     "); name one: " + file.path() + "::NAME"};
}

// Prints one stage; with several stages each gets a header line.
void print_stage(const CompileCommand& cmd, const std::string& name, const std::string& text) {
  bool several = cmd.emit.size() > 1 || cmd.emit.front() == "all";
  if (several) std::cout << "// ===== " << name << " =====\n";
  std::cout << text;
  if (!text.empty() && text.back() != '\n') std::cout << '\n';
}

// The request and options of a command's kernel and signature.
std::pair<frontend::KernelRequest, runtime::CompileOptions> request_of(const CompileCommand& cmd,
                                                                       const KernelFile& file,
                                                                       const ast::FunctionDef& kernel) {
  frontend::KernelRequest request;
  request.functions = file.collect_functions(kernel);
  std::vector<KernelParam> params = file.kernel_params(kernel, request.functions.front());
  request.args = bind_signature(kernel.name, cmd.signature, params, cmd.consts);
  request.debug = cmd.debug;
  request.num_warps = cmd.num_warps;
  runtime::CompileOptions options;
  options.debug = cmd.debug;
  options.cache_dir = cmd.cache_dir;
  options.backend = cmd.backend;
  options.cuda_arch = cmd.arch;
  options.num_warps = cmd.num_warps;
  options.num_stages = cmd.num_stages;
  return {std::move(request), std::move(options)};
}

int aot_command(const std::vector<std::string>& args) {
  CompileCommand cmd = parse_compile_args(args);
  if (cmd.out.empty()) throw UsageError{"aot needs the output folder: -o DIR"};
  if (!cmd.has_signature) throw UsageError{"aot needs --signature"};
  KernelFile file(cmd.file);
  const ast::FunctionDef& kernel = select_kernel(file, cmd.kernel);
  std::string name = cmd.name.empty() ? kernel.name : cmd.name;
  if (!is_c_identifier(name))
    throw UsageError{"--name must be a C identifier (letters, digits, _), got '" + name + "'" +
                     (cmd.name.empty() ? " (the kernel's name): give one with --name" : "")};
  auto [request, options] = request_of(cmd, file, kernel);
  // The precompiled prelude (backends/cpu/toolchain.cpp) is built next to the
  // artifact: a kernel cache's business, not files to leave in DIR.
  setenv("TEGULA_CPU_PCH", "0", 1);
  AotFiles files;
  try {
    files = write_aot(request, options, cmd.out, name, cmd.file + "::" + kernel.name + " --signature \"" +
                                                           cmd.signature + "\"");
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  }
  std::cout << files.artifact << "\n" << files.header << "\n";
  return 0;
}

int compile_command(const std::vector<std::string>& args) {
  CompileCommand cmd = parse_compile_args(args);
  if (!cmd.out.empty() || !cmd.name.empty()) throw UsageError{"-o/--out and --name are options of `tegula aot`"};
  KernelFile file(cmd.file);
  const ast::FunctionDef& kernel = select_kernel(file, cmd.kernel);
  if (wants(cmd, "ast")) print_stage(cmd, "ast", ast::dump(kernel));
  bool only_ast = cmd.emit.size() == 1 && cmd.emit.front() == "ast";
  if (only_ast) return 0;
  if (!cmd.has_signature)
    throw UsageError{"--signature is required to compile (only --emit ast works without one)"};

  auto [request, options] = request_of(cmd, file, kernel);
  options.keep_stages = true;
  std::shared_ptr<runtime::CompiledKernel> compiled = runtime::compile(request, options);
  const runtime::Stages& stages = compiled->stages;
  bool all = wants(cmd, "all");
  for (size_t i = 0; i < stages.ir.size(); ++i) {
    bool first = i == 0, last = i + 1 == stages.ir.size();
    bool repeat = i > 0 && stages.ir[i].stage == stages.ir[i - 1].stage && stages.ir[i].ir == stages.ir[i - 1].ir;
    if ((all && !repeat) || (first && wants(cmd, "ir")) || (last && wants(cmd, "ir-opt")))
      print_stage(cmd, "ir: " + stages.ir[i].stage, stages.ir[i].ir);
  }
  for (const backends::Output& output : compiled->backend->outputs())
    if (wants(cmd, output.name)) print_stage(cmd, std::string(output.name), output_text(stages, output.kind));
  return 0;
}

// The Python that installed this executable: $TEGULA_PYTHON, else the
// python3 of the environment it sits in (beside it, or in the bin/ of a
// folder above it: <env>/lib/python3.X/site-packages/tegula/bin/tegula),
// else python3 on PATH.
std::string python_interpreter() {
  if (const char* chosen = std::getenv("TEGULA_PYTHON"); chosen && *chosen) return chosen;
  std::string dir(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", dir.data(), dir.size() - 1);
  if (n <= 0) return "python3";
  dir.resize(static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  for (int up = 0; up < 6 && !dir.empty(); ++up) {
    for (const std::string& candidate : {dir + "/python3", dir + "/bin/python3"})
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    dir.resize(dir.rfind('/'));
  }
  return "python3";
}

// `tegula profile` runs the kernel, so it needs Python: it becomes
// `python3 -m tegula.profile ...` (python_interpreter() says which python3),
// which imports the file, makes the arguments and prints kernel.report
// (docs/profiling.md).
int profile_command(const std::vector<std::string>& args) {
  std::string interpreter = python_interpreter();
  const char* python = interpreter.c_str();
  std::vector<std::string> words = {python, "-m", "tegula.profile"};
  words.insert(words.end(), args.begin() + 1, args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(python, argv.data());
  std::cerr << cli_error(Diag::CliUsage) << "tegula profile runs Python (" << python << " -m tegula.profile), which "
            << "could not start: " << std::strerror(errno) << "; set TEGULA_PYTHON to the interpreter that has "
            << "tegula installed\n";
  return kExitUsage;
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string& command = args.front();
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::cout << "tegula " << TEGULA_VERSION << "\n";
    return 0;
  }
  if (command == "explain") {
    if (args.size() != 2) {
      std::cerr << cli_error(Diag::CliUsage) << "explain takes one error code, e.g. `tegula explain E0401`\n";
      return kExitUsage;
    }
    return explain_command(args[1]);
  }
  if (command == "profile") return profile_command(args);
  if (command != "compile" && command != "aot") {
    std::cerr << cli_error(Diag::CliUsage) << "unknown command '" << command << "'\n\n" << kUsage;
    return kExitUsage;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const std::string& a : rest)
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
  try {
    return command == "aot" ? aot_command(rest) : compile_command(rest);
  } catch (const UsageError& e) {
    std::cerr << cli_error(Diag::CliUsage) << e.message << "\n(run `tegula --help` for usage)\n";
    return kExitUsage;
  } catch (const SignatureError& e) {
    std::cerr << cli_error(Diag::CliSignature) << e.what() << "\n(run `tegula --help` for the signature syntax)\n";
    return kExitUsage;
  }
}

}  // namespace
}  // namespace tegula::tools

int main(int argc, char** argv) {
  using namespace tegula;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return tools::run(args);
  } catch (const tools::FileError& e) {
    std::cerr << e.what();
  } catch (const tegula::Error& e) {
    std::cerr << e.what();
  } catch (const UserError& e) {
    std::cerr << render(e.diagnostic(), nullptr);
  } catch (const std::exception& e) {
    std::cerr << "tegula: internal error: " << e.what() << "\n";
  }
  return tools::kExitError;
}
