#include "support/interrupt.h"

#include <atomic>

namespace tegula {

namespace {

std::atomic<InterruptPoll>& installed_poll() {
  static std::atomic<InterruptPoll> poll{nullptr};
  return poll;
}

}  // namespace

void set_interrupt_poll(InterruptPoll poll) { installed_poll().store(poll, std::memory_order_release); }

bool interrupt_pending() {
  InterruptPoll poll = installed_poll().load(std::memory_order_acquire);
  return poll != nullptr && poll();
}

void throw_if_interrupted() {
  if (interrupt_pending()) throw Interrupted();
}

bool InterruptWatch::interrupted() {
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < kInterval) return false;
  last_ = now;
  return interrupt_pending();
}

}  // namespace tegula
