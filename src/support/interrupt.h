// The user's interrupt (Ctrl-C) reaching native work that runs for long:
// a CPU grid, a child C++ compiler, a wait on another process's cache lock.
//
// Such work runs with the GIL released, where Python's own signal handling
// cannot act: it only notes the signal for the interpreter to raise later.
// So the work asks, between steps, whether the embedding program (the Python
// module) has an interrupt pending, and if so cleans up (removes its
// temporary files, lets in-flight programs finish) and throws Interrupted,
// which the Python module raises as KeyboardInterrupt. The CLI installs no
// poll: there SIGINT ends the process as usual.
#pragma once

#include <chrono>
#include <exception>

namespace tegula {

// Thrown when the user interrupted a long operation; nothing half-done is
// left behind (no partial cache entry, no temporary file).
class Interrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "interrupted"; }
};

// Returns true when an interrupt is pending. Called from any thread, without
// any lock held, at most every few tens of milliseconds.
using InterruptPoll = bool (*)();

// Installed once, when the module loads; the only process-wide hook, set
// before any work can ask it (an atomic, so a late reader is still safe).
void set_interrupt_poll(InterruptPoll poll);

// Whether the installed poll reports a pending interrupt (false without one).
bool interrupt_pending();

// Throws Interrupted when an interrupt is pending.
void throw_if_interrupted();

// Asks interrupt_pending() at most once per kInterval, for a loop that may
// come by far more often: often enough for Ctrl-C to feel immediate, rarely
// enough that the poll (which takes the GIL in Python) costs nothing
// measurable. One thread's: not synchronized.
class InterruptWatch {
 public:
  static constexpr std::chrono::milliseconds kInterval{50};

  // Whether an interrupt is pending; false without asking when the last
  // question (or the watch's construction) is less than kInterval ago.
  bool interrupted();

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace tegula
