// The system C++ compiler: found once ($CXX, else c++, g++, clang++), asked
// for its identity (part of the cache key), and used to turn generated source
// into a shared object.
#pragma once

#include <string>

namespace tegula::backends::cpu {

struct Toolchain {
  std::string compiler;  // executable path or name
  std::string identity;  // first line of `compiler --version`
  std::string flags;     // "-O3 -march=native -fPIC -shared ..."
};

// Detects the toolchain (cached after the first call; thread-safe).
// Throws UserError with a hint when no compiler is found.
const Toolchain& toolchain();

// Compiles `source` into the shared object `output_path` (written atomically:
// compiled to a temporary name in the same folder, then renamed). Throws
// UserError carrying the compiler's output on failure (an internal error: the
// generated code should always compile).
void compile_shared_object(const std::string& source, const std::string& output_path);

}  // namespace tegula::backends::cpu
