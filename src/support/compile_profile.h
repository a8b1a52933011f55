// Where one compile spends its time, phase by phase, so that compile speed
// can be measured where it is lost rather than guessed:
//
//   setup      finding the C++ compiler (first CPU compile of a process) or
//              loading NVRTC and the driver and resolving the target (CUDA)
//   key        hashing the request into the cache key
//   disk cache looking the key up in the on-disk cache (a hit includes loading),
//              and on a miss the build record of the generated source (a
//              reused build includes copying its artifact: no c++ phase)
//   frontend   parsing, specializing and lowering to tile IR
//   passes     the optimization pipeline
//   codegen    emitting C++ or CUDA source
//   c++ / nvrtc  the system C++ compiler, or NVRTC and ptxas
//   nvrtc occupancy  NVRTC again, for occupancy tuning (cuda_compile.h), only
//              when the first build showed a block to gain
//   store      writing the cache entry
//   load       dlopen of the built shared object
//
// The compile driver (runtime/compiler.cpp) fills one per compile, the
// backends add their toolchain's phases, and the Python side prints it when
// TEGULA_PROFILE_COMPILE=1.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace tegula {

class SlowCompileNotice;

struct CompileProfile {
  struct Phase {
    std::string name;
    double seconds = 0;
  };
  std::vector<Phase> phases;  // in the order they first ran; repeated phases add up
  SlowCompileNotice* notice = nullptr;  // not owned: told each phase as it starts

  void add(std::string_view name, double seconds);
  double total() const;
};

// Tells profile.notice, if any, that `phase` started (compile_profile.cpp).
void entered(CompileProfile& profile, std::string_view phase);

// Adds the time from its construction to its destruction to `profile`.
class PhaseTimer {
 public:
  PhaseTimer(CompileProfile& profile, std::string_view name)
      : profile_(profile), name_(name), start_(std::chrono::steady_clock::now()) {
    entered(profile, name);
  }
  ~PhaseTimer() {
    profile_.add(name_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  CompileProfile& profile_;
  std::string_view name_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tegula
