// Two builds of one row kernel (units compiled with -Dtegula_kernel=kernel_a
// and -Dtegula_kernel=kernel_b) run alternately on two threads, each taking
// sixteenths of the grid from a counter as the thread pool does; prints the
// median wall time of each and the median of B/A over the rounds, which
// survives a shared machine better than times taken in separate runs.
//   ./compare ROWS ROUNDS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "arguments.h"

extern "C" void kernel_a(void* const* args, const int32_t* grid, int64_t first, int64_t last);
extern "C" void kernel_b(void* const* args, const int32_t* grid, int64_t first, int64_t last);

namespace {

using Entry = void (*)(void* const*, const int32_t*, int64_t, int64_t);

double run_on_two_threads(Entry entry, RowArguments& a) {
  constexpr int kChunks = 16;
  std::atomic<int> next{0};
  auto work = [&] {
    for (int k; (k = next++) < kChunks;)
      entry(a.slots.data(), a.grid, a.programs * k / kChunks, a.programs * (k + 1) / kChunks);
  };
  auto start = std::chrono::steady_clock::now();
  std::thread other(work);
  work();
  other.join();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: %s ROWS ROUNDS\n", argv[0]), 2;
  RowArguments a(std::atoll(argv[1]));
  std::vector<double> ta, tb, ratio;
  for (int r = 0, rounds = std::atoi(argv[2]); r < rounds; ++r) {
    ta.push_back(run_on_two_threads(kernel_a, a));
    tb.push_back(run_on_two_threads(kernel_b, a));
    ratio.push_back(tb.back() / ta.back());
  }
  std::printf("A %.1f ms, B %.1f ms, B/A median %.3f (range %.3f-%.3f)\n", median(ta), median(tb), median(ratio),
              *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()));
}
