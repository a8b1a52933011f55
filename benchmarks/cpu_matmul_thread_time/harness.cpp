// Times the generated C++ of examples/matmul.py's kernel on one thread, in
// thread CPU time, so that other processes on a shared machine change the
// result little (wall time on two busy cores does not mean much).
//
// Build against a unit dumped by `kernel.inspect(...).source` (see
// README.md here), with the flags of src/backends/cpu/toolchain.cpp:
//   g++ -O3 -march=native -std=c++17 -ffp-contract=off -fno-math-errno \
//       [-DF16 | -DBF16] unit.cpp harness.cpp -o time_unit
//   ./time_unit N BLOCK_M BLOCK_N [ROUNDS]
// prints the median of ROUNDS runs of the whole N^3 grid.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last);

namespace {

struct StopPoll {
  int32_t (*poll)(StopPoll*);
};
int32_t never_stop(StopPoll*) { return 0; }

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

#if defined(F16) || defined(BF16)
using Element = uint16_t;
#else
using Element = float;
#endif

Element element_of(float x) {
#if defined(F16)
  return _cvtss_sh(x, 0);
#elif defined(BF16)
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<uint16_t>(bits >> 16);
#else
  return x;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int block_m = argc > 2 ? std::atoi(argv[2]) : 256, block_n = argc > 3 ? std::atoi(argv[3]) : 256;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 3;
  std::vector<Element> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) {  // values in [-0.5, 0.5): no subnormals
    float x = static_cast<float>((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    a[i] = b[i] = element_of(x);
  }
  Element *pa = a.data(), *pb = b.data(), *pc = c.data();
  int32_t M = n, N = n, K = n, sam = n, sak = 1, sbk = n, sbn = 1, scm = n, scn = 1;
  StopPoll poll{never_stop};
  StopPoll* stop = &poll;
  void* args[] = {&pa, &pb, &pc, &M, &N, &K, &sam, &sak, &sbk, &sbn, &scm, &scn, &stop};
  const int32_t grid[3] = {((n + block_m - 1) / block_m) * ((n + block_n - 1) / block_n), 1, 1};
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    double start = thread_seconds();
    tegula_kernel(args, grid, 0, grid[0]);
    times.push_back(thread_seconds() - start);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  std::printf("n=%d median %.2f ms  %.1f GFLOP/s (1 thread cpu time)\n", n, median * 1e3,
              2.0 * n * n * n / median / 1e9);
}
