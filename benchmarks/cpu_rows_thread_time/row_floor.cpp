// What a row kernel's memory traffic alone can reach on this machine, with
// no compute: rows of 4096 floats read and written once, on THREADS threads
// taking sixteenths of the rows from a counter (as compare.cpp does), the
// stores streamed and the next row prefetched into L2 as the generated
// code does (docs/backend-cpu.md, "Memory-bound rows"). Two shapes:
//
//  * one pass: each line is loaded and streamed out at once (a copy);
//  * two passes: the row is reduced first and written after, the shape of
//    softmax and layer norm, whose first output element needs the whole
//    row (its max, its mean). Half the next row is prefetched in each pass;
//  * pipelined: the same two passes, but the loop that writes row r also
//    reduces row r + 1, so that every loop reads and writes (what a
//    program loop would do if the first loop of the next program were
//    fused into the last loop of this one).
//
// Prints GB/s (read + write) of each, the median of ROUNDS rounds, to set
// against the benchmark's copy floor (`np.copyto`, tegula._floors):
//   g++ -O2 -march=native -pthread row_floor.cpp -o row_floor   (AVX-512)
//   ./row_floor THREADS ROUNDS
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr long kColumns = 4096;
constexpr long kRows = 23552;  // the benchmark's softmax and layer norm

void prefetch_l2(const char* p) { _mm_prefetch(p, _MM_HINT_T1); }

void one_pass(const float* x, float* y, long first, long last) {
  for (long r = first; r < last; ++r) {
    const float* row = x + r * kColumns;
    const char* next = reinterpret_cast<const char*>(row + kColumns);
    float* out = y + r * kColumns;
    for (long c = 0; c < kColumns; c += 16) {
      prefetch_l2(next + c * 4);
      _mm512_stream_ps(out + c, _mm512_load_ps(row + c));
    }
  }
}

void two_passes(const float* x, float* y, long first, long last) {
  for (long r = first; r < last; ++r) {
    const float* row = x + r * kColumns;
    const char* next = reinterpret_cast<const char*>(row + kColumns);
    float* out = y + r * kColumns;
    __m512 a = _mm512_setzero_ps(), b = a;
    for (long c = 0; c < kColumns; c += 32) {
      prefetch_l2(next + c * 2);
      a = _mm512_add_ps(a, _mm512_load_ps(row + c));
      b = _mm512_add_ps(b, _mm512_load_ps(row + c + 16));
    }
    // Zero (the rows are finite) but not known to the compiler: the output
    // depends on the whole row, as softmax's and layer norm's do.
    const __m512 zero = _mm512_mul_ps(_mm512_add_ps(a, b), _mm512_setzero_ps());
    for (long c = 0; c < kColumns; c += 32) {
      prefetch_l2(next + kColumns * 2 + c * 2);
      _mm512_stream_ps(out + c, _mm512_add_ps(zero, _mm512_load_ps(row + c)));
      _mm512_stream_ps(out + c + 16, _mm512_add_ps(zero, _mm512_load_ps(row + c + 16)));
    }
  }
}

void pipelined(const float* x, float* y, long first, long last) {
  __m512 a = _mm512_setzero_ps(), b = a;
  for (long c = 0; c < kColumns; c += 32) {  // the first row's reduction
    a = _mm512_add_ps(a, _mm512_load_ps(x + first * kColumns + c));
    b = _mm512_add_ps(b, _mm512_load_ps(x + first * kColumns + c + 16));
  }
  for (long r = first; r < last; ++r) {
    const float* row = x + r * kColumns;
    const float* next = row + kColumns;  // reduced here, written by the next iteration
    const char* after = reinterpret_cast<const char*>(next + kColumns);
    float* out = y + r * kColumns;
    const __m512 zero = _mm512_mul_ps(_mm512_add_ps(a, b), _mm512_setzero_ps());
    a = _mm512_setzero_ps(), b = a;
    for (long c = 0; c < kColumns; c += 32) {
      prefetch_l2(after + c * 4);
      prefetch_l2(after + c * 4 + 64);
      a = _mm512_add_ps(a, _mm512_load_ps(next + c));
      b = _mm512_add_ps(b, _mm512_load_ps(next + c + 16));
      _mm512_stream_ps(out + c, _mm512_add_ps(zero, _mm512_load_ps(row + c)));
      _mm512_stream_ps(out + c + 16, _mm512_add_ps(zero, _mm512_load_ps(row + c + 16)));
    }
  }
}

using Rows = void (*)(const float*, float*, long, long);

double run_ms(Rows rows, const float* x, float* y, int threads) {
  constexpr int kChunks = 16;
  std::atomic<int> next{0};
  auto work = [&] {
    for (int k; (k = next++) < kChunks;) rows(x, y, kRows * k / kChunks, kRows * (k + 1) / kChunks);
    _mm_sfence();
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(work);
  work();
  for (std::thread& t : others) t.join();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: %s THREADS ROUNDS\n", argv[0]), 2;
  const int threads = std::atoi(argv[1]), rounds = std::atoi(argv[2]);
  const long elements = kRows * kColumns;
  // Two rows more than written: the pipelined loop reduces one row past a
  // chunk and prefetches the row after it.
  auto* x = static_cast<float*>(std::aligned_alloc(64, (elements + 3 * kColumns) * sizeof(float)));
  auto* y = static_cast<float*>(std::aligned_alloc(64, elements * sizeof(float)));
  for (long i = 0; i < elements + 3 * kColumns; ++i) x[i] = static_cast<float>(i % 13);
  std::memset(y, 0, elements * sizeof(float));
  std::vector<double> one, two, piped;
  for (int r = 0; r < rounds; ++r) {  // interleaved, so that a busy moment hits all three
    one.push_back(run_ms(one_pass, x, y, threads));
    two.push_back(run_ms(two_passes, x, y, threads));
    piped.push_back(run_ms(pipelined, x, y, threads));
  }
  auto gbs = [&](std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return 2.0 * elements * sizeof(float) / (ms[ms.size() / 2] * 1e6);
  };
  std::printf("%d thread(s): one pass %.1f GB/s, two passes %.1f GB/s, pipelined %.1f GB/s\n", threads, gbs(one), gbs(two),
              gbs(piped));
  std::free(x), std::free(y);
}
