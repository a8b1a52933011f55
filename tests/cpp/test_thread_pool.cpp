#include "backends/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "runtime_test_util.h"
#include "support/interrupt.h"

namespace tegula::backends::cpu {
namespace {


// Every id of [0, total) is visited exactly once, whatever the chunking.
void expect_each_id_once(ThreadPool& pool, int64_t total, int64_t chunk) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(total));
  std::atomic<int64_t> sum{0};
  pool.parallel_for(total, chunk, [&](int64_t begin, int64_t end) {
    ASSERT_LT(begin, end);
    ASSERT_LE(end - begin, std::max<int64_t>(chunk, 1));
    for (int64_t i = begin; i < end; ++i) {
      visits[static_cast<size_t>(i)]++;
      sum += i;
    }
  });
  for (int64_t i = 0; i < total; ++i) ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << "id " << i;
  EXPECT_EQ(sum.load(), total * (total - 1) / 2);
}

TEST(ThreadPool, SumsOverManyChunkings) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  for (int64_t total : {1, 2, 3, 7, 64, 1000, 100003})
    for (int64_t chunk : {0, 1, 3, 64, 1000000}) expect_each_id_once(pool, total, chunk);
}

TEST(ThreadPool, EmptyRangeDoesNothing) {
  ThreadPool pool(3);
  bool called = false;
  pool.parallel_for(0, 1, [&](int64_t, int64_t) { called = true; });
  pool.parallel_for(-5, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ThreadPool, OneThreadRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> off_thread{0};
  pool.parallel_for(100, 7, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) ++off_thread;
  });
  EXPECT_EQ(off_thread.load(), 0);
  expect_each_id_once(pool, 1000, 9);
}

TEST(ThreadPool, SingleChunkRunsInlineOnTheCaller) {
  ThreadPool pool(8);
  std::thread::id ran_on;
  pool.parallel_for(5, 10, [&](int64_t, int64_t) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(ThreadPool, WorkersShareTheLoad) {
  ThreadPool pool(4);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  pool.parallel_for(64, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GT(seen.size(), 1u);
}

TEST(ThreadPool, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(16, 1, [&](int64_t outer, int64_t) {
    pool.parallel_for(100, 3, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += outer * 100 + i;
    });
  });
  // sum over outer < 16, i < 100 of (outer*100 + i)
  EXPECT_EQ(sum.load(), 100 * 100 * (16 * 15 / 2) + 16 * (100 * 99 / 2));
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirWholeJob) {
  ThreadPool pool(4);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 8; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        int64_t total = 1000 + c * 37 + round;
        std::atomic<int64_t> sum{0};
        pool.parallel_for(total, 13, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) sum += i;
        });
        if (sum.load() != total * (total - 1) / 2) ++wrong;
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ThreadPool, ExceptionInAChunkReachesTheCallerAndThePoolSurvives) {
  ThreadPool pool(4);
  std::atomic<int> chunks_run{0};
  try {
    pool.parallel_for(100, 1, [&](int64_t begin, int64_t) {
      ++chunks_run;
      if (begin == 42) throw std::runtime_error("chunk 42 failed");
    });
    FAIL() << "the exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 42 failed");
  }
  EXPECT_EQ(chunks_run.load(), 100);  // the other chunks still ran
  expect_each_id_once(pool, 5000, 17);
}

// The poll says "interrupted" from its third call on (support/interrupt.h).
std::atomic<int> polls{0};
bool interrupted_after_two_polls() { return ++polls > 2; }

TEST(ThreadPool, AnInterruptStopsTheLaunchAndThePoolSurvives) {
  for (int threads : {4, 1}) {  // through the workers, and inline on the caller
    ThreadPool pool(threads);
    polls = 0;
    set_interrupt_poll(interrupted_after_two_polls);
    std::atomic<int64_t> ran{0};
    EXPECT_THROW(pool.parallel_for(400, 10,
                                   [&](int64_t begin, int64_t end) {
                                     std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                     ran += end - begin;
                                   }),
                 Interrupted);
    set_interrupt_poll(nullptr);
    // Polled about every 50 ms: the launch stopped well before its ~2 s of work.
    EXPECT_LT(ran.load(), 400) << threads << " threads";
    expect_each_id_once(pool, 1000, 7);
  }
}

TEST(ThreadPool, ThreadCountFromTheEnvironment) {
  {
    testing::ScopedEnv env("TEGULA_NUM_THREADS", "3");
    EXPECT_EQ(default_thread_count(), 3);
  }
  int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (const char* bad : {"0", "-2", "many", "4x", ""}) {
    testing::ScopedEnv env("TEGULA_NUM_THREADS", bad);
    EXPECT_EQ(default_thread_count(), hardware) << "TEGULA_NUM_THREADS=" << bad;
  }
}

TEST(ThreadPool, GlobalPoolIsOneObject) {
  EXPECT_EQ(&ThreadPool::global(), &ThreadPool::global());
  EXPECT_GE(ThreadPool::global().size(), 1);
  expect_each_id_once(ThreadPool::global(), 10000, 33);
}

}  // namespace
}  // namespace tegula::backends::cpu
