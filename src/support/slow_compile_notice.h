// Lines on stderr when a compile takes long, so a user staring at a
// silent prompt learns what Tegula is doing:
//
//   tegula: compiling 'k' (cpu) is taking a while: now in c++, 2.0 s so far
//   tegula: compiling 'k': store at 3.1 s
//   tegula: compiled 'k' (cpu) in 3.2 s
//
// A watcher thread waits for the compile to end; if it has not after
// $TEGULA_COMPILE_NOTICE_SECONDS (default 2; 0 turns the notice off), it
// prints the first line, naming the phase the compile is in (the phases of
// support/compile_profile.h, which PhaseTimer reports here), then a line
// per phase entered after it and one at the end, which says whether the
// compile made a kernel or stopped with an error (or an interrupt).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tegula {

class SlowCompileNotice {
 public:
  SlowCompileNotice(std::string kernel, std::string backend);
  ~SlowCompileNotice();
  SlowCompileNotice(const SlowCompileNotice&) = delete;
  SlowCompileNotice& operator=(const SlowCompileNotice&) = delete;

  // The phase the compile has entered.
  void enter(std::string_view phase);

 private:
  void watch(std::chrono::duration<double> delay);

  std::string kernel_;
  std::string backend_;
  std::chrono::steady_clock::time_point start_;
  int exceptions_at_start_;  // std::uncaught_exceptions() when constructed: more at the end is a failed compile
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  bool failed_ = false;
  std::string phase_;
  std::thread watcher_;  // last: started once the members above exist
};

// $TEGULA_COMPILE_NOTICE_SECONDS, or 2; 0 (or a negative or unreadable
// value) means never.
double slow_compile_notice_seconds();

}  // namespace tegula
