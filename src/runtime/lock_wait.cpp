#include "runtime/lock_wait.h"

#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/errors.h"
#include "support/interrupt.h"

namespace tegula::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// How long a waiter stays quiet (most builds end within it), and how often
// it looks again.
constexpr std::chrono::milliseconds kEntryLockNotice{2000};
constexpr std::chrono::milliseconds kEntryLockSlice{50};
constexpr double kDefaultTimeoutSeconds = 600;

double timeout_seconds() {
  const char* text = std::getenv("TEGULA_CACHE_LOCK_TIMEOUT");
  if (!text || !*text) return kDefaultTimeoutSeconds;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  // Never without a limit: what is no positive number is the default.
  return end && *end == '\0' && value > 0 ? value : kDefaultTimeoutSeconds;
}

// The holder's pid as the lock file records it; 0 when none is recorded.
long recorded_holder(int fd) {
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  long pid = 0;
  if (n <= 0) return 0;
  auto [ptr, ec] = std::from_chars(text, text + n, pid);
  return ec == std::errc() && pid > 0 ? pid : 0;
}

enum class Holder { Unknown, Working, Stopped, Gone };

// From /proc/<pid>/stat: the state letter follows the command's closing ')'.
Holder state_of(long pid) {
  if (pid <= 0) return Holder::Unknown;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH ? Holder::Gone : Holder::Unknown;
  std::stringstream text;
  text << stat.rdbuf();
  std::string line = text.str();
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return Holder::Unknown;
  switch (line[close + 2]) {
    case 'T':
    case 't':
      return Holder::Stopped;
    case 'Z':
    case 'X':
      return Holder::Gone;
    default:
      return Holder::Working;
  }
}

std::string describe(long pid, Holder state) {
  if (pid <= 0) return "another process (none recorded in the lock file)";
  // flock serializes open files, not processes: two threads of one process
  // that build the same kernel wait on each other too.
  if (pid == static_cast<long>(::getpid())) return "another thread of this process";
  std::string who = "process " + std::to_string(pid);
  switch (state) {
    case Holder::Stopped: return who + ", which is stopped (SIGSTOP or Ctrl-Z)";
    case Holder::Gone: return who + ", which has exited (a process it started still holds the lock)";
    default: return who;
  }
}

void record_self(int fd) {
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
}

}  // namespace

bool acquire_entry_lock(int fd, const std::string& path, const std::string& key) {
  const Clock::time_point start = Clock::now();
  const auto limit = std::chrono::duration<double>(timeout_seconds());
  bool told = false;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      record_self(fd);
      if (told) std::fprintf(stderr, "tegula: the lock is free, going on\n");
      return true;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return false;  // a file system without locks: go on unserialized

    auto waited = Clock::now() - start;
    if (waited >= kEntryLockNotice) {
      // Judged only now: a new holder writes its pid right after it locks.
      long pid = recorded_holder(fd);
      Holder state = state_of(pid);
      std::string holder = describe(pid, state);
      if (state == Holder::Stopped || state == Holder::Gone) {
        std::fprintf(stderr,
                     "tegula: kernel cache entry %.16s... is being built by %s; building it here instead "
                     "(lock file %s)\n",
                     key.c_str(), holder.c_str(), path.c_str());
        return false;
      }
      if (!told) {
        std::fprintf(stderr,
                     "tegula: waiting for %s to finish building kernel cache entry %.16s... "
                     "(lock file %s; giving up after %g s, TEGULA_CACHE_LOCK_TIMEOUT)\n",
                     holder.c_str(), key.c_str(), path.c_str(), limit.count());
        told = true;
      }
      if (waited >= limit)
        fail(ErrorKind::Value, Diag::CacheLockTimeout,
             "waited " + std::to_string(static_cast<long>(limit.count())) + " s for " + holder +
                 " to finish building a kernel (cache lock " + path + ")",
             "if that process is stuck, end it; or set TEGULA_CACHE_LOCK_TIMEOUT to wait longer, or "
             "TEGULA_CACHE_DIR to another cache");
    }
    throw_if_interrupted();
    std::this_thread::sleep_for(kEntryLockSlice);
  }
}

}  // namespace tegula::runtime
