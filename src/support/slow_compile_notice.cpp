#include "support/slow_compile_notice.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace tegula {

double slow_compile_notice_seconds() {
  const char* text = std::getenv("TEGULA_COMPILE_NOTICE_SECONDS");
  if (text == nullptr || *text == '\0') return 2.0;
  char* end = nullptr;
  double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds > 0)) return 0.0;
  // Beyond a day no compile is still running: a huge value or inf means
  // "never", which is off (a duration that large would overflow the clock).
  return seconds <= 86400.0 ? seconds : 0.0;
}

SlowCompileNotice::SlowCompileNotice(std::string kernel, std::string backend)
    : kernel_(std::move(kernel)),
      backend_(std::move(backend)),
      start_(std::chrono::steady_clock::now()),
      exceptions_at_start_(std::uncaught_exceptions()) {
  double delay = slow_compile_notice_seconds();
  if (delay > 0) watcher_ = std::thread([this, delay] { watch(std::chrono::duration<double>(delay)); });
}

SlowCompileNotice::~SlowCompileNotice() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    // Destroyed while an error unwinds the compile: its last line must not say "compiled".
    failed_ = std::uncaught_exceptions() > exceptions_at_start_;
  }
  finished_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void SlowCompileNotice::enter(std::string_view phase) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = phase;
  }
  finished_.notify_all();
}

// Once the compile has run past the delay, every phase it enters gets a
// line, and its end one more: a long compile shows its stages as they pass.
void SlowCompileNotice::watch(std::chrono::duration<double> delay) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_.wait_for(lock, delay, [this] { return done_; })) return;
  auto elapsed = [this] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); };
  std::string where = phase_.empty() ? std::string() : "now in " + phase_ + ", ";
  std::fprintf(stderr, "tegula: compiling '%s' (%s) is taking a while: %s%.1f s so far\n", kernel_.c_str(),
               backend_.c_str(), where.c_str(), elapsed());
  std::fflush(stderr);
  std::string shown = phase_;
  while (true) {
    finished_.wait(lock, [&] { return done_ || phase_ != shown; });
    if (done_) break;
    shown = phase_;
    std::fprintf(stderr, "tegula: compiling '%s': %s at %.1f s\n", kernel_.c_str(), shown.c_str(), elapsed());
    std::fflush(stderr);
  }
  if (failed_)
    std::fprintf(stderr, "tegula: compiling '%s' (%s) stopped without a kernel after %.1f s\n", kernel_.c_str(),
                 backend_.c_str(), elapsed());
  else
    std::fprintf(stderr, "tegula: compiled '%s' (%s) in %.1f s\n", kernel_.c_str(), backend_.c_str(), elapsed());
  std::fflush(stderr);
}

}  // namespace tegula
