#include "backends/cpu/fault_guard.h"

#include <signal.h>

#include <mutex>

namespace tegula::backends::cpu::detail {

namespace {

thread_local FaultScope* current = nullptr;

// The handlers installed before ours, for the faults that are not ours.
struct sigaction previous_segv {};
struct sigaction previous_bus {};

void hand_on(int signal, siginfo_t* info, void* context) {
  const struct sigaction& before = signal == SIGBUS ? previous_bus : previous_segv;
  if ((before.sa_flags & SA_SIGINFO) != 0 && before.sa_sigaction != nullptr) {
    before.sa_sigaction(signal, info, context);
    return;
  }
  if ((before.sa_flags & SA_SIGINFO) == 0 && before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(signal);
    return;
  }
  // The default action: restored, it ends the process as it would have
  // without us (a hardware fault recurs when the instruction runs again; a
  // signal sent by kill() is raised once more).
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(signal);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  FaultScope* scope = current;
  // Only a fault of the kernel's code itself: not one sent by another process.
  if (scope != nullptr && info != nullptr && info->si_code > 0) {
    scope->signal = signal;
    scope->address = reinterpret_cast<uintptr_t>(info->si_addr);
    current = scope->outer;
    siglongjmp(scope->jump, 1);
  }
  hand_on(signal, info, context);
}

void install() {
  struct sigaction action {};
  action.sa_sigaction = &on_fault;
  // SA_NODEFER: the signal stays unblocked while the handler runs, so the
  // jump out of it leaves the thread able to take the next fault.
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_segv);
  sigaction(SIGBUS, &action, &previous_bus);
}

}  // namespace

void enter(FaultScope& scope) {
  static std::once_flag installed;
  std::call_once(installed, install);
  scope.outer = current;
  current = &scope;
}

void leave(FaultScope& scope) {
  current = scope.outer;
  if (scope.signal != 0) {
    sigset_t faults;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &faults, nullptr);
  }
}

}  // namespace tegula::backends::cpu::detail
