// The system C++ compiler: found once ($CXX, else c++, g++, clang++), asked
// for its identity (part of the cache key), and used to turn generated source
// into a shared object.
#pragma once

#include <string>
#include <string_view>

namespace tegula::backends::cpu {

struct Toolchain {
  std::string compiler;  // executable path or name
  std::string identity;  // first line of `compiler --version`
  std::string flags;     // "-O3 -march=native -fPIC -shared ..."
  // What -march=native means on this machine: a hash of the CPU's model and
  // feature flags (/proc/cpuinfo), so that a kernel cache shared between
  // machines never hands one CPU code built for another's instructions.
  std::string host;
  bool precompiled_headers = false;  // GCC: the prelude is precompiled (not part of any key: same code)
  // "-fuse-ld=gold" when ld.gold is on PATH and $CXX names no linker: not part
  // of any key (the same code, linked faster); dropped for the rest of the
  // process after a compile fails with it and succeeds without.
  std::string linker;
};

// Detects the toolchain (cached after the first call; thread-safe).
// Throws UserError with a hint when no compiler is found.
const Toolchain& toolchain();

// The text of `source` that decides the shared object compile_shared_object
// makes of it: `source` with every line that holds only a `//` comment
// blanked (its newline kept, so that line numbers and __LINE__ stay): the
// unit's header naming the kernel, the IR ops and source locations the code
// generator writes above their code. A line is kept when a line splice
// before it may make it part of a string or of the line before, when it
// could end a block comment (`*/`), or when it holds a backslash, a '?'
// (the trigraph ??/ is one) or a carriage return; a source with a raw string
// literal is kept whole. Two sources with the same compiled_text differ
// only in comments.
std::string compiled_text(std::string_view source);

// Compiles `source` into the shared object `output_path` (written atomically:
// compiled to a temporary name in the same folder, then renamed). Throws
// UserError carrying the compiler's output on failure (an internal error: the
// generated code should always compile).
//
// A source that starts like every generated unit (a comment line, then
// prelude.h's kPrelude) includes the prelude precompiled, from
// prelude-<hash>.h.gch in the output's folder, once that exists; the first
// compile without it starts building it in the background when it is done.
// TEGULA_CPU_PCH=0 turns this off.
void compile_shared_object(const std::string& source, const std::string& output_path);

}  // namespace tegula::backends::cpu
