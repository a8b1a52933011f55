// Times a generated row kernel on one thread in thread CPU time, which other
// processes on a shared machine change little (wall time on two busy cores
// does not mean much). Build with the unit and the backend's flags (README):
//   ./thread_time ROWS ROUNDS
// prints the median and the fastest round in ns per element, and a checksum
// of the output. 16 rows stay in L2; 32768 rows (512 MiB each way) stream
// from DRAM, past the 480 MiB L3 (set TEGULA_STREAM_STORES=1 to stream the
// stores as a launch of that size would).
#include <algorithm>
#include <cstdio>
#include <ctime>

#include "arguments.h"

extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last);

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: %s ROWS ROUNDS\n", argv[0]), 2;
  RowArguments a(std::atoll(argv[1]));
  std::vector<double> ns;
  for (int r = 0, rounds = std::atoi(argv[2]); r < rounds; ++r) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    tegula_kernel(a.slots.data(), a.grid, 0, a.programs);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    ns.push_back(((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / a.elements);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("median %.4f ns/element, fastest %.4f, checksum %.9g\n", ns[ns.size() / 2], ns[0], a.checksum());
}
