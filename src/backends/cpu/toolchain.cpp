// Finding and running the system C++ compiler.
//
// The compiler runs through posix_spawn (no shell: paths with spaces or
// quotes cannot change the command), with stdout and stderr captured through
// one pipe. Sources and outputs get unpredictable names from mkstemps in the
// output's folder, and the shared object is renamed into place, so a reader
// of the cache never sees a half-written file.
//
// Compile time. Detection runs the compiler twice (--version, and
// -print-file-name to find SLEEF) rather than building a probe, which a
// process would pay on its first kernel even with a warm cache. Parsing the
// prelude (prelude.h: the standard headers, and immintrin.h at -march=native)
// is most of a small kernel's compile, so with GCC the prelude is compiled
// once into a precompiled header next to the kernels, keyed by a hash of the
// compiler, its flags and the prelude text; units that start with the prelude
// include it instead (see "the precompiled prelude" below).
#include "backends/cpu/toolchain.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "backends/cpu/prelude.h"
#include "support/diagnostic.h"
#include "support/interrupt.h"
#include "support/sha256.h"

extern char** environ;

namespace tegula::backends::cpu {

namespace {

// IEEE semantics: no -ffast-math, and no contraction of separate IR ops into
// fused multiply-adds (g++ contracts across statements by default in GNU
// modes, clang within expressions). `-z defs` turns a missing library into a
// link error instead of a failure at dlopen.
constexpr const char* kFlags =
    "-O3 -march=native -std=c++17 -fPIC -shared -fno-math-errno -ffp-contract=off -Wl,-z,defs";
// Vector math (prelude.h): SLEEF's GNU-ABI library, used when the compiler finds it.
constexpr const char* kVectorMathFlags = "-DTEGULA_VECTOR_MATH -lsleefgnuabi";
constexpr const char* kVectorMathLibrary = "libsleefgnuabi.so";
// GNU gold links a kernel's one object in a third of the time of the default
// BFD linker (about 17 against 50 ms; a small kernel's whole compile is
// 120 ms). Both g++ and clang++ find it as `ld.gold` on PATH, which is all
// -fuse-ld=gold needs; where it is absent (binutils without gold, newer
// distributions) the default linker stays, and a -fuse-ld in $CXX wins.
// A gold on PATH need not suit the compiler (a GCC installed under /opt
// whose libstdc++.so gold cannot open): a compile that fails with it is
// retried without, and no later compile of the process uses it
// (compile_shared_object).
constexpr const char* kFastLinker = "ld.gold";
constexpr const char* kFastLinkerFlag = "-fuse-ld=gold";

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The absolute path of `name` (searched on $PATH unless it has a slash), or "".
// The lines of /proc/cpuinfo that decide what -march=native selects (the
// first CPU's model and its feature flags: "flags" on x86, "Features" on
// Arm), hashed; "unknown" where there is no such file.
std::string host_cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, picked;
  bool model = false, features = false;
  while (std::getline(in, line) && !(model && features)) {
    auto starts = [&](std::string_view prefix) { return line.rfind(prefix, 0) == 0; };
    if (!model && (starts("model name") || starts("CPU part") || starts("vendor_id"))) {
      picked += line + "\n";
      model = starts("model name") || starts("CPU part");
    } else if (!features && (starts("flags") || starts("Features"))) {
      picked += line + "\n";
      features = true;
    }
  }
  if (picked.empty()) return "unknown";
  Sha256 hash;
  hash.update(picked);
  return hash.finish_hex().substr(0, 16);
}

std::string resolve_executable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

// Closes a file descriptor on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Removes a file on scope exit unless released.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {}
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

struct ProcessResult {
  int exit_status = -1;  // exit code, or -1 when killed by a signal / not started
  std::string output;    // stdout and stderr, interleaved
};

// Ends the child's whole process group (the compiler driver and the
// programs it started) and reaps the child.
void stop_process_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// Runs `argv` in its own process group and returns its exit status and
// output. An interrupt (support/interrupt.h) pending while it runs, or one
// that killed it (Ctrl-C in a terminal signals the whole foreground group),
// stops the group and throws Interrupted: the user's, not a compiler failure.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

ProcessResult run_process(const std::vector<std::string>& argv) {
  ProcessResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.output = std::string("pipe failed: ") + std::strerror(errno);
    return result;
  }
  FileDescriptor read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawn_error = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (spawn_error != 0) {
    result.output = "cannot start " + argv[0] + ": " + std::strerror(spawn_error);
    return result;
  }
  constexpr int kPollMilliseconds = 100;
  char buf[4096];
  for (;;) {
    pollfd ready{read_end.get(), POLLIN, 0};
    int polled = ::poll(&ready, 1, kPollMilliseconds);
    if (polled == 0 || (polled < 0 && errno == EINTR)) {
      if (interrupt_pending()) {
        stop_process_group(pid);
        throw Interrupted();
      }
      continue;
    }
    ssize_t got = ::read(read_end.get(), buf, sizeof buf);
    if (got > 0) {
      result.output.append(buf, static_cast<size_t>(got));
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return result;
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) throw Interrupted();
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  return result;
}

std::string make_temporary(const std::string& folder, const char* suffix);
void write_file(const std::string& path, const std::string& text);
std::vector<std::string> compile_command(const Toolchain& tc, const std::string& source, const std::string& output,
                                         bool with_linker);
bool is_library(const std::string& flag);

// Whether `t` finds SLEEF's GNU-ABI shared library: -print-file-name answers
// with the library's path when it is on the compiler's search path, with the
// bare name when not. (A probe that links against it costs a compile and a
// link; this costs one exec.)
bool finds_vector_math(const Toolchain& t) {
  std::vector<std::string> argv = {t.compiler};
  for (const std::string& f : split_words(t.flags))
    if (!is_library(f)) argv.push_back(f);
  argv.push_back(std::string("-print-file-name=") + kVectorMathLibrary);
  ProcessResult found = run_process(argv);
  std::string path = found.output.substr(0, found.output.find('\n'));
  struct stat st {};
  return found.exit_status == 0 && path.find('/') != std::string::npos && ::stat(path.c_str(), &st) == 0;
}

Toolchain detect() {
  std::vector<std::string> candidates;
  std::vector<std::string> extra_flags;
  if (const char* cxx = std::getenv("CXX"); cxx != nullptr && *cxx != '\0') {
    // $CXX may carry arguments ("clang++ -stdlib=libc++"): the first word is
    // the program, the rest go in front of our flags.
    std::vector<std::string> words = split_words(cxx);
    if (!words.empty()) {
      candidates.push_back(words[0]);
      extra_flags.assign(words.begin() + 1, words.end());
    }
  }
  for (const char* name : {"c++", "g++", "clang++"}) candidates.push_back(name);

  bool chosen = candidates.size() > 3;  // $CXX named a compiler
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::string path = resolve_executable(candidates[i]);
    ProcessResult version = path.empty() ? ProcessResult{} : run_process({path, "--version"});
    // A compiler the user named and that does not work is their error to fix, not one to step over.
    if (i == 0 && chosen && (path.empty() || version.exit_status != 0)) {
      std::string why = path.empty() ? "is no executable file (on PATH or at that path)"
                                     : "failed `--version` (exit status " + std::to_string(version.exit_status) +
                                           (version.output.empty() ? ")" : "): " + first_line(version.output));
      error_at(SourceLoc{}, Diag::NoCxxCompiler, "$CXX names `" + candidates[0] + "`, which " + why,
               "set CXX to a working C++ compiler, or unset it to use c++, g++ or clang++");
    }
    if (path.empty() || version.exit_status != 0) continue;
    Toolchain t;
    t.compiler = path;
    t.identity = version.output.substr(0, version.output.find('\n'));
    t.flags = kFlags;
    t.host = host_cpu_identity();
    if (i == 0 && !extra_flags.empty()) {
      std::string prefix;
      for (const std::string& f : extra_flags) prefix += f + " ";
      t.flags = prefix + t.flags;
    }
    if (finds_vector_math(t)) t.flags += std::string(" ") + kVectorMathFlags;
    if (t.flags.find("-fuse-ld=") == std::string::npos && !resolve_executable(kFastLinker).empty())
      t.linker = kFastLinkerFlag;
    t.precompiled_headers = t.identity.find("clang") == std::string::npos;  // GCC's .gch lookup
    return t;
  }
  error_at(SourceLoc{}, Diag::NoCxxCompiler,
           "no C++ compiler found for the CPU backend (tried $CXX, c++, g++, clang++)",
           "install g++ or clang++, or set CXX to the compiler's path");
}

// Libraries must follow the sources on the command line (--as-needed).
bool is_library(const std::string& flag) { return flag.rfind("-l", 0) == 0; }

std::vector<std::string> compile_command(const Toolchain& tc, const std::string& source, const std::string& output,
                                         bool with_linker) {
  std::vector<std::string> argv = {tc.compiler};
  std::vector<std::string> words = split_words(tc.flags);
  for (const std::string& f : words)
    if (!is_library(f)) argv.push_back(f);
  if (with_linker && !tc.linker.empty()) argv.push_back(tc.linker);
  argv.insert(argv.end(), {"-o", output, source});
  for (const std::string& f : words)
    if (is_library(f)) argv.push_back(f);
  return argv;
}

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Creates an empty file with an unpredictable name in `folder`.
std::string make_temporary(const std::string& folder, const char* suffix) {
  std::string pattern = folder + "/.tegula-XXXXXX" + suffix;
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  int fd = ::mkstemps(buf.data(), static_cast<int>(std::strlen(suffix)));
  if (fd < 0)
    error_at(SourceLoc{}, Diag::CacheWriteFailed,
             "cannot create a temporary file in " + folder + ": " + std::strerror(errno),
             "check that the kernel cache folder is writable");
  ::close(fd);
  return std::string(buf.data());
}

void write_file(const std::string& path, const std::string& text) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  bool ok = fd.get() >= 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  if (!ok)
    error_at(SourceLoc{}, Diag::CacheWriteFailed, "cannot write " + path + ": " + std::strerror(errno),
             "check free space and permissions of the kernel cache folder");
}

// --- the precompiled prelude ------------------------------------------------------------
//
// prelude-<hash>.h holds kPrelude; prelude-<hash>.h.gch is it precompiled
// with the kernels' own flags (GCC rejects a .gch built with other options,
// and then reads the .h: slower, never wrong). Both are written to temporary
// names and renamed into place. The .gch is built by a background process
// that outlives this one if need be (a shell runs the compiler, then renames),
// started once the compile that found none is done, so that it pays nothing for it.

struct PreludeHeader {
  std::string header;  // prelude-<hash>.h
  std::string binary;  // prelude-<hash>.h.gch
};

bool precompiled_prelude_enabled(const Toolchain& tc) {
  const char* setting = std::getenv("TEGULA_CPU_PCH");
  return tc.precompiled_headers && !(setting && std::string_view(setting) == "0");
}

std::optional<PreludeHeader> prelude_header(const Toolchain& tc, const std::string& folder) {
  if (!precompiled_prelude_enabled(tc)) return std::nullopt;
  Sha256 hash;
  for (std::string_view part : {std::string_view(tc.compiler), std::string_view(tc.identity),
                                std::string_view(tc.flags), std::string_view(tc.host), kPrelude}) {
    hash.update(part);
    hash.update("\n");
  }
  std::string name = folder + "/prelude-" + hash.finish_hex().substr(0, 24) + ".h";
  // The path goes into an #include "..." line.
  if (name.find_first_of("\"\\\n") != std::string::npos) return std::nullopt;
  return PreludeHeader{name, name + ".gch"};
}

// Whether `path` is a file this user's Tegula could have written: a regular
// file (not a link, FIFO or directory) of this user that group and others
// cannot write, the rule of cache entries (runtime/disk_cache.h). Its bytes
// when it is and `bytes` is given.
bool is_private_file(const std::string& path, std::string* bytes = nullptr) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 022) != 0)
    return false;
  if (!bytes) return true;
  bytes->clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t got = ::read(fd.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return true;
    bytes->append(buf, static_cast<size_t>(got));
  }
}

// The prelude header is code every later kernel of the cache includes, so it
// is held to the rule of cache entries: private, ours, and its bytes exactly
// kPrelude (the name is a hash of them). The precompiled header can only be
// checked for being private and ours; it is trusted because only a verified
// header is ever precompiled (start_building), and it goes with a header
// that fails the check, as it may have been built from it. What fails is
// removed: rebuilt later, never used. True when both are there and verified.
bool verified_header(const PreludeHeader& prelude) {
  std::string text;
  return is_private_file(prelude.header, &text) && text == kPrelude;
}

bool verified_prelude(const PreludeHeader& prelude) {
  bool header_ok = verified_header(prelude);
  if (!header_ok || !is_private_file(prelude.binary)) {
    struct stat st {};
    if (!header_ok && ::lstat(prelude.header.c_str(), &st) == 0) ::unlink(prelude.header.c_str());
    if (::lstat(prelude.binary.c_str(), &st) == 0) ::unlink(prelude.binary.c_str());
    return false;
  }
  return true;
}

// `source` with its prelude replaced by an #include of `header`; empty when
// the source does not start like a generated unit (a comment line, then kPrelude).
std::string including_prelude(const std::string& source, const std::string& header) {
  size_t line_end = source.find('\n');
  if (source.rfind("//", 0) != 0 || line_end == std::string::npos ||
      source.compare(line_end + 1, kPrelude.size(), kPrelude) != 0)
    return {};
  return source.substr(0, line_end + 1) + "#include \"" + header + "\"\n" +
         source.substr(line_end + 1 + kPrelude.size());
}

void write_file_atomically(const std::string& path, const std::string& text) {
  std::string folder = path.substr(0, path.rfind('/'));
  TemporaryFile temporary(make_temporary(folder, ".h"));
  write_file(temporary.path(), text);
  if (::rename(temporary.path().c_str(), path.c_str()) == 0) temporary.release();
}

// Each change of the prelude or the flags makes a new header (tens of MB):
// keeps the newest few in `folder`, the ones other toolchains sharing the
// cache may be using. A compile whose header is removed under it is retried
// without (compile_shared_object).
void remove_old_prelude_headers(const std::string& folder) {
  constexpr size_t kKept = 3;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> binaries;
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator(folder, ec)) {
    std::string name = item.path().filename().string();
    if (name.starts_with("prelude-") && name.ends_with(".h.gch"))
      binaries.emplace_back(item.last_write_time(ec), item.path());
  }
  if (binaries.size() < kKept) return;  // room for the one about to be built
  std::sort(binaries.begin(), binaries.end(), std::greater<>());
  for (size_t i = kKept - 1; i < binaries.size(); ++i) {
    std::filesystem::path binary = binaries[i].second;
    std::filesystem::remove(binary, ec);
    std::filesystem::remove(binary.replace_extension(), ec);  // prelude-<hash>.h
  }
}

// Starts building `prelude.binary` unless this process already did. Best
// effort: a failure only means compiles keep parsing the prelude.
void start_building(const Toolchain& tc, const PreludeHeader& prelude, bool again) {
  // The headers this process started building (a cache guarded by its mutex); `again`: one found
  // unreadable and removed, to be built once more.
  static std::mutex mutex;
  static std::set<std::string> started;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!started.insert(prelude.binary).second && !again) return;
  }
  try {
    std::string folder = prelude.header.substr(0, prelude.header.rfind('/'));
    remove_old_prelude_headers(folder);
    // The header is precompiled only as this process wrote or verified it.
    if (!verified_header(prelude)) write_file_atomically(prelude.header, std::string(kPrelude));
    std::string temporary = make_temporary(folder, ".gch");
    // sh gets the paths as arguments, never inside its script. It runs the
    // build in a background subshell and returns at once, so nothing of this
    // process (no thread, no child to reap) outlives the call: a short-lived
    // process such as the CLI may exit while the header is still building.
    std::vector<std::string> argv = {"/bin/sh", "-c",
                                     "out=$1; tmp=$2; shift 2; (\"$@\" && chmod 600 -- \"$tmp\" && "
                                     "mv -f -- \"$tmp\" \"$out\" || rm -f -- \"$tmp\") </dev/null >/dev/null 2>&1 &",
                                     "sh", prelude.binary, temporary, tc.compiler};
    for (const std::string& f : split_words(tc.flags))
      if (!is_library(f) && f != "-shared" && f.rfind("-Wl,", 0) != 0) argv.push_back(f);
    argv.insert(argv.end(), {"-x", "c++-header", prelude.header, "-o", temporary});
    run_process(argv);
  } catch (const UserError&) {
    // No temporary file: go on without.
  }
}

}  // namespace

const Toolchain& toolchain() {
  static const Toolchain detected = detect();  // thread-safe, retried if detection threw
  return detected;
}

std::string compiled_text(std::string_view source) {
  // A raw string literal may hold lines that look like comments: then the text is taken whole.
  if (source.find("R\"") != std::string_view::npos) return std::string(source);
  std::string text;
  text.reserve(source.size());
  bool spliced = false;  // the line before ended in a line splice: this one continues it
  for (size_t start = 0; start <= source.size();) {
    size_t end = std::min(source.find('\n', start), source.size());
    std::string_view line = source.substr(start, end - start);
    size_t first = line.find_first_not_of(" \t");
    // Blank only lines that cannot end a block comment (*/) nor continue
    // onto the next line (a backslash, or the trigraph ??/ of one).
    bool comment = !spliced && first != std::string_view::npos && line.substr(first).starts_with("//") &&
                   line.find_first_of("\\?\r") == std::string_view::npos &&
                   line.find("*/") == std::string_view::npos;
    if (!comment) text += line;
    // GCC splices a backslash followed by blanks too.
    std::string_view trimmed = line.substr(0, line.find_last_not_of(" \t\f\v\r") + 1);
    spliced = trimmed.ends_with('\\') || trimmed.ends_with("??/");
    if (end == source.size()) break;
    text += '\n';
    start = end + 1;
  }
  return text;
}

void compile_shared_object(const std::string& source, const std::string& output_path) {
  const Toolchain& tc = toolchain();
  std::string folder = folder_of(output_path);
  TemporaryFile source_file(make_temporary(folder, ".cpp"));
  TemporaryFile object_file(make_temporary(folder, ".so"));

  std::string unit;
  bool build_prelude = false;  // after this compile: both would share the CPU
  bool rebuild_prelude = false;  // the precompiled header was unreadable: removed
  std::optional<PreludeHeader> prelude = prelude_header(tc, folder);
  if (prelude) {
    if (verified_prelude(*prelude))
      unit = including_prelude(source, prelude->header);
    else
      build_prelude = !including_prelude(source, prelude->header).empty();
  }
  write_file(source_file.path(), unit.empty() ? source : unit);
  // Whether the fast linker still serves this process (a cache of what a
  // failed link taught, shared by every thread).
  static std::atomic<bool> linker_failed{false};
  bool with_linker = !tc.linker.empty() && !linker_failed.load(std::memory_order_relaxed);
  ProcessResult run = run_process(compile_command(tc, source_file.path(), object_file.path(), with_linker));
  if (run.exit_status != 0 && with_linker) {
    run = run_process(compile_command(tc, source_file.path(), object_file.path(), false));
    if (run.exit_status == 0) linker_failed.store(true, std::memory_order_relaxed);
  }
  if (run.exit_status != 0 && !unit.empty()) {
    // A damaged or foreign header must not fail the kernel: compile it whole. A precompiled header
    // GCC cannot read (truncated) would fail every compile so: it goes, to be built again.
    if (run.output.find("precompiled header") != std::string::npos) {
      ::unlink(prelude->binary.c_str());
      build_prelude = rebuild_prelude = true;
    }
    write_file(source_file.path(), source);
    run = run_process(compile_command(tc, source_file.path(), object_file.path(), false));
  }
  // A compiler that names the source (or the prelude beside it) in its complaint rejected Tegula's
  // code; one that fails without naming them, or succeeds without writing the library, is broken
  // where it runs.
  if (run.exit_status != 0 && run.output.find(folder) != std::string::npos) {
    throw InternalError("the C++ compiler rejected the generated kernel source (a Tegula bug; please report it)\n" +
                        tc.compiler + " exited with status " + std::to_string(run.exit_status) + ":\n" +
                        run.output);
  }
  struct stat built{};
  if (run.exit_status != 0 || ::stat(object_file.path().c_str(), &built) != 0 || built.st_size == 0)
    error_at(SourceLoc{}, Diag::NoCxxCompiler,
             "the C++ compiler " + tc.compiler +
                 (run.exit_status != 0 ? " failed (exit status " + std::to_string(run.exit_status) +
                                             ") without a complaint about the kernel's source"
                                       : " exited without writing the kernel's library") +
                 (run.output.empty() ? "" : ":\n" + run.output.substr(0, 2000)),
             "check that it compiles a small program, or set CXX to another C++ compiler");
  if (::rename(object_file.path().c_str(), output_path.c_str()) != 0)
    error_at(SourceLoc{}, Diag::CacheWriteFailed,
             "cannot move the compiled kernel to " + output_path + ": " + std::strerror(errno),
             "check permissions of the kernel cache folder");
  object_file.release();
  if (build_prelude) start_building(tc, *prelude, rebuild_prelude);
}

}  // namespace tegula::backends::cpu
