#include "support/slow_compile_notice.h"

#include <cstdio>
#include <cstdlib>

namespace tegula {

double slow_compile_notice_seconds() {
  const char* text = std::getenv("TEGULA_COMPILE_NOTICE_SECONDS");
  if (text == nullptr || *text == '\0') return 2.0;
  char* end = nullptr;
  double seconds = std::strtod(text, &end);
  return end != text && *end == '\0' && seconds > 0 ? seconds : 0.0;
}

SlowCompileNotice::SlowCompileNotice(std::string kernel, std::string backend)
    : kernel_(std::move(kernel)), backend_(std::move(backend)), start_(std::chrono::steady_clock::now()) {
  double delay = slow_compile_notice_seconds();
  if (delay > 0) watcher_ = std::thread([this, delay] { watch(std::chrono::duration<double>(delay)); });
}

SlowCompileNotice::~SlowCompileNotice() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  finished_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void SlowCompileNotice::enter(std::string_view phase) {
  std::lock_guard<std::mutex> lock(mutex_);
  phase_ = phase;
}

void SlowCompileNotice::watch(std::chrono::duration<double> delay) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_.wait_for(lock, delay, [this] { return done_; })) return;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string where = phase_.empty() ? std::string() : "now in " + phase_ + ", ";
  std::fprintf(stderr, "tegula: compiling '%s' (%s) is taking a while: %s%.1f s so far\n", kernel_.c_str(),
               backend_.c_str(), where.c_str(), seconds);
  std::fflush(stderr);
}

}  // namespace tegula
