// A CPU kernel that stores or loads far outside its arrays (a missing mask,
// a wrong size) raises SIGSEGV or SIGBUS on the thread running it, which
// would end the whole Python process with everything the user had in it.
// run_catching_faults runs a kernel's programs so that such a signal,
// raised on that thread while they run, ends them instead and comes back
// as a MemoryFault for the launch to report.
//
// Only faults of the guarded code on the guarded thread are taken; any
// other goes to the handler that was installed before (Python's
// faulthandler, a sanitizer's, the default that ends the process). The
// kernel's memory writes before the fault stay done: a caught fault says
// the launch failed, not that nothing changed. Generated kernels hold no
// locks and own no heap memory while they compute, so leaving their frames
// by a jump loses nothing that later launches need.
#pragma once

#include <csetjmp>
#include <cstdint>
#include <optional>

namespace tegula::backends::cpu {

struct MemoryFault {
  int signal = 0;           // SIGSEGV or SIGBUS
  uintptr_t address = 0;    // the address the access faulted on
};

namespace detail {

// The guard of the running thread; the signal handler jumps to `jump`.
struct FaultScope {
  sigjmp_buf jump;
  volatile int signal = 0;
  volatile uintptr_t address = 0;
  FaultScope* outer = nullptr;
};

// Makes `scope` the thread's guard (the handler is installed on first use).
void enter(FaultScope& scope);
// Restores the guard that was current before enter(); after a fault, also
// unblocks the signal the handler was running for.
void leave(FaultScope& scope);

}  // namespace detail

// Runs body(); a SIGSEGV or SIGBUS it raises on this thread ends it and is
// returned. Costs a sigsetjmp without the signal mask and two thread-local
// stores per call.
template <class Body>
std::optional<MemoryFault> run_catching_faults(Body&& body) {
  detail::FaultScope scope;
  detail::enter(scope);
  if (sigsetjmp(scope.jump, 0) != 0) {
    detail::leave(scope);
    return MemoryFault{scope.signal, scope.address};
  }
  try {
    body();
  } catch (...) {
    detail::leave(scope);
    throw;
  }
  detail::leave(scope);
  return std::nullopt;
}

}  // namespace tegula::backends::cpu
