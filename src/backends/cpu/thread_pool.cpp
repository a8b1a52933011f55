#include "backends/cpu/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "support/interrupt.h"

namespace tegula::backends::cpu {

namespace {

constexpr int64_t kPiecesPerChunk = 8;

}  // namespace

// One parallel_for call. Shared by the caller and every worker that picked it
// up, so a worker that arrives after the last chunk was claimed still finds a
// live object to look at.
struct ThreadPool::Job {
  const ChunkFn* body = nullptr;  // lives on the caller's stack until it returns
  int64_t total = 0;
  int64_t chunk = 1;
  int64_t num_chunks = 0;
  std::atomic<int64_t> next_chunk{0};
  std::atomic<int64_t> finished_chunks{0};
  std::atomic<bool> own_cancelled{false};
  // Interrupted: pieces started from now on are skipped. The caller's flag
  // when it passed one (running programs that poll it stop too).
  std::atomic<bool>* cancelled = &own_cancelled;

  std::mutex done_mutex;
  std::condition_variable done;
  std::exception_ptr first_error;  // guarded by done_mutex

  bool exhausted() const { return next_chunk.load(std::memory_order_relaxed) >= num_chunks; }
};

ThreadPool::ThreadPool(int threads) {
  int workers = std::max(threads, 1) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_chunks(Job& job, InterruptWatch* watch) {
  for (;;) {
    int64_t index = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (index >= job.num_chunks) return;
    int64_t begin = index * job.chunk;
    int64_t end = std::min(job.total, begin + job.chunk);
    try {
      // In pieces, so that an interrupt stops a launch within about an
      // eighth of a chunk.
      int64_t piece = std::max<int64_t>(1, job.chunk / kPiecesPerChunk);
      for (int64_t first = begin; first < end; first += piece) {
        if (watch && watch->interrupted()) job.cancelled->store(true, std::memory_order_relaxed);
        if (job.cancelled->load(std::memory_order_relaxed)) break;
        (*job.body)(first, std::min(end, first + piece));
      }
    } catch (...) {
      // Letting it escape a worker would call std::terminate; hand it to the caller.
      std::lock_guard<std::mutex> lock(job.done_mutex);
      if (!job.first_error) job.first_error = std::current_exception();
    }
    if (job.finished_chunks.fetch_add(1, std::memory_order_acq_rel) + 1 == job.num_chunks) {
      // Taking the mutex orders this notify after the caller's predicate check.
      std::lock_guard<std::mutex> lock(job.done_mutex);
      job.done.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Job> job = jobs_.front();
    lock.unlock();
    run_chunks(*job, nullptr);
    lock.lock();
    // All chunks are claimed: nobody needs to find this job in the queue any more.
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
}

void ThreadPool::parallel_for(int64_t total, int64_t chunk, const ChunkFn& body, std::atomic<bool>* cancelled) {
  if (total <= 0) return;
  chunk = std::max<int64_t>(chunk, 1);
  int64_t num_chunks = total / chunk + (total % chunk != 0);
  InterruptWatch watch;
  if (num_chunks == 1 || workers_.empty()) {
    // No one to share with: run inline, without touching the queue.
    int64_t piece = std::max<int64_t>(1, chunk / kPiecesPerChunk);
    for (int64_t begin = 0; begin < total; begin += piece) {
      if (begin > 0 && watch.interrupted()) throw Interrupted();
      body(begin, std::min(total, begin + piece));
      if (cancelled && cancelled->load(std::memory_order_relaxed)) throw Interrupted();
    }
    return;
  }

  auto job = std::make_shared<Job>();
  job->body = &body;
  job->total = total;
  job->chunk = chunk;
  job->num_chunks = num_chunks;
  if (cancelled) job->cancelled = cancelled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(job);
  }
  if (num_chunks - 1 >= static_cast<int64_t>(workers_.size()))
    wake_.notify_all();
  else
    for (int64_t i = 0; i < num_chunks - 1; ++i) wake_.notify_one();

  run_chunks(*job, &watch);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  // The chunks still running on workers finish (they use the caller's
  // arguments); meanwhile an interrupt keeps further ones from starting.
  std::unique_lock<std::mutex> lock(job->done_mutex);
  auto all_finished = [&] { return job->finished_chunks.load(std::memory_order_acquire) == num_chunks; };
  while (!job->done.wait_for(lock, InterruptWatch::kInterval, all_finished)) {
    if (job->cancelled->load(std::memory_order_relaxed)) continue;
    lock.unlock();
    if (watch.interrupted()) job->cancelled->store(true, std::memory_order_relaxed);
    lock.lock();
  }
  if (job->first_error) std::rethrow_exception(job->first_error);
  if (job->cancelled->load(std::memory_order_relaxed)) throw Interrupted();
}

int default_thread_count() {
  unsigned hardware = std::thread::hardware_concurrency();
  int all = hardware > 0 ? static_cast<int>(hardware) : 1;
  if (const char* text = std::getenv("TEGULA_NUM_THREADS"); text != nullptr && *text != '\0') {
    int value = 0;
    const char* end = text + std::strlen(text);
    auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec == std::errc() && ptr == end && value > 0 && value <= 1024) return value;
    // Read once per process (the pool is made once): one line, then the default.
    std::fprintf(stderr, "tegula: TEGULA_NUM_THREADS=%s is not a thread count from 1 to 1024; using %d\n", text,
                 ec == std::errc() && ptr == end && value > 1024 ? 1024 : all);
    if (ec == std::errc() && ptr == end && value > 1024) return 1024;
  }
  return all;
}

ThreadPool& ThreadPool::global() {
  static std::mutex guard;
  static std::unique_ptr<ThreadPool> pool;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(guard);
  if (pool && owner != getpid()) {
    // We are a fork()ed child: the parent's workers do not exist here, and
    // joining or destroying their std::thread objects would hang or
    // terminate. Abandon that pool on purpose and start a fresh one.
    (void)pool.release();
  }
  if (!pool) {
    pool = std::make_unique<ThreadPool>(default_thread_count());
    owner = getpid();
  }
  return *pool;
}

}  // namespace tegula::backends::cpu
