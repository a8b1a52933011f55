// Tegula's C++ API: compile a kernel written in Tegula's Python syntax (a
// `@jit` function of a .py file) for a signature, at run time, and launch it
// on the CPU backend or on a CUDA device, without Python.
//
//     #include <tegula/tegula.hpp>
//
//     tegula::Options options;
//     options.signature = "*fp32, *fp32, *fp32, i32, 1024";   // as `tegula compile --signature`
//     tegula::Kernel add = tegula::Kernel::compile("vector_add.py::add_kernel", options);
//     add.launch({(n + 1023) / 1024, 1, 1},
//                {tegula::Arg::pointer(x), tegula::Arg::pointer(y), tegula::Arg::pointer(out), tegula::Arg::i32(n)});
//
// Link with Tegula::tegula (`find_package(Tegula)`; the Python package
// installs the library and this header: `python -c "import tegula;
// print(tegula.cmake_dir())"` is the folder CMake wants). Errors are
// tegula::KernelError exceptions carrying the code Python's errors carry
// (docs/diagnostics.md: `tegula explain CODE`).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tegula {

// A mistake in a kernel, a signature or a launch, or a failure of the
// toolchain or the driver: `code()` is its stable code ("E0702"), `what()`
// the message Python would print (with the file:line:col of the kernel
// source where there is one).
class KernelError : public std::runtime_error {
 public:
  KernelError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// One launch argument, in the order of the kernel's runtime parameters
// (constexpr parameters are fixed by the signature and take none).
struct Arg {
  enum class Kind { Pointer, Int, UInt, Float, Bool };
  Kind kind = Kind::Int;
  uint64_t bits = 0;  // an address, an integer's bits, 0 or 1
  double real = 0.0;  // floats

  static Arg pointer(const void* address) { return {Kind::Pointer, reinterpret_cast<uintptr_t>(address), 0.0}; }
  static Arg i32(int32_t value) { return {Kind::Int, static_cast<uint64_t>(static_cast<int64_t>(value)), 0.0}; }
  static Arg i64(int64_t value) { return {Kind::Int, static_cast<uint64_t>(value), 0.0}; }
  static Arg u64(uint64_t value) { return {Kind::UInt, value, 0.0}; }
  static Arg f32(float value) { return {Kind::Float, 0, value}; }
  static Arg f64(double value) { return {Kind::Float, 0, value}; }
  static Arg boolean(bool value) { return {Kind::Bool, value ? 1u : 0u, 0.0}; }
};

// What to compile for. `signature` has one entry per kernel parameter, as
// `tegula compile --signature` takes it: "*fp32:16" a pointer (":16": its
// address is 16-byte aligned), "i32" an integer, "fp32" a float, a literal
// for a tl.constexpr parameter; `consts` gives constexprs by name instead.
struct Options {
  std::string signature;
  std::vector<std::pair<std::string, std::string>> consts;
  std::string backend = "cpu";  // "cpu" or "cuda"
  int device = 0;               // CUDA device ordinal
  int cuda_arch = 0;            // 0: the device's own
  int num_warps = 4;
  int num_stages = 3;
  bool debug = false;           // bounds-checked loads and stores (docs/debug-mode.md)
  std::string cache_dir;        // empty: TEGULA_CACHE_DIR, else ~/.cache/tegula
};

// A compiled, loaded kernel. Copies share it; it stays loaded while one lives.
class Kernel {
 public:
  // Compiles `target`, "FILE.py::KERNEL" (or "FILE.py" when the file has
  // one @jit function), or loads it from the kernel cache. Thread-safe.
  static Kernel compile(const std::string& target, const Options& options);

  // Runs the grid with `args`: on the CPU it returns when every program has
  // run; on CUDA it queues the grid on `stream` (a CUstream; null: the
  // default stream) of the device it was compiled for and returns.
  void launch(std::array<int64_t, 3> grid, const std::vector<Arg>& args, void* stream = nullptr) const;

  const std::string& name() const;
  const std::string& backend() const;
  // The runtime parameters' names, in launch order.
  std::vector<std::string> parameters() const;

  struct Impl;

 private:
  explicit Kernel(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The library's version ("0.1.0"), which must match the header's.
const char* version();

}  // namespace tegula
