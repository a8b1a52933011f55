// The worker threads that run a kernel's grid on the CPU.
//
// One process-wide pool, created on first use, with persistent workers. A
// launch splits its program ids into chunks that workers (and the launching
// thread itself) claim from an atomic counter, so programs of uneven cost
// balance out. Several threads may launch at once, and a chunk may itself
// call parallel_for: every caller works on its own job until all of its
// chunks are claimed, so nobody waits on work that no thread is doing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/interrupt.h"

namespace tegula::backends::cpu {

class ThreadPool {
 public:
  // A chunk of the range: [begin, end).
  using ChunkFn = std::function<void(int64_t begin, int64_t end)>;

  // `threads` counts the calling thread too: threads - 1 workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body over [0, total) in chunks of at most `chunk` ids (each run in
  // up to eight calls of consecutive pieces) and returns
  // once every chunk has finished. An exception thrown by a chunk is caught on
  // the thread that ran it and rethrown here (the first one; the remaining
  // chunks still run). total <= 0 does nothing. The calling thread asks
  // for a pending interrupt (support/interrupt.h) between pieces and while it
  // waits: then no further piece starts, the running ones finish, and it
  // throws Interrupted. With `cancelled`, that is the flag it sets then
  // (a body that polls it can stop early: a CPU kernel's programs do), and
  // a body that sets it itself stops the job the same way.
  void parallel_for(int64_t total, int64_t chunk, const ChunkFn& body, std::atomic<bool>* cancelled = nullptr);

  // The process-wide pool: $TEGULA_NUM_THREADS threads if set to a positive
  // integer, else one per hardware thread.
  static ThreadPool& global();

 private:
  struct Job;

  void worker_loop();
  // Claims and runs chunks until none is left; with `watch` (the calling
  // thread's), asks it between chunks.
  static void run_chunks(Job& job, InterruptWatch* watch);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;  // jobs that may still have unclaimed chunks
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// The thread count global() uses (reads $TEGULA_NUM_THREADS).
int default_thread_count();

}  // namespace tegula::backends::cpu
