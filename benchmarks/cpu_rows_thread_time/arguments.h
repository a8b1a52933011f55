// The arguments of the three row kernels (examples/softmax.py,
// layer_norm.py, vector_add.py) over ROWS rows of 4096 floats, in the
// kernel ABI's slots (docs/backend-cpu.md, "The ABI"). KERNEL picks one:
// 0 softmax, 1 layer norm, 2 vector add (BLOCK 1024). OUT_SHIFT floats
// moves the output past the start of a cache line (4: where NumPy's large
// arrays start, 16 bytes past one).
#pragma once

#ifndef OUT_SHIFT
#define OUT_SHIFT 0
#endif

#include <cstdint>
#include <cstdlib>
#include <vector>

struct StopPoll {
  int32_t (*poll)(StopPoll*);
};
inline int32_t never_stop(StopPoll*) { return 0; }

struct RowArguments {
  static constexpr int32_t kColumns = 4096;
  explicit RowArguments(int64_t rows)
      : elements(rows * kColumns), x(alloc()), y(alloc()), out(alloc() + OUT_SHIFT), w(kColumns), b(kColumns), mean(rows),
        rstd(rows) {
    uint32_t state = 12345;
    auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>((state >> 8) * (1.0 / 16777216.0)) * 8 - 4;
    };
    for (int64_t i = 0; i < elements; ++i) x[i] = next(), y[i] = next(), out[i] = 0;
    for (int i = 0; i < kColumns; ++i) w[i] = next(), b[i] = next();
    wp = w.data(), bp = b.data(), mp = mean.data(), rp = rstd.data();
    n = static_cast<int32_t>(elements);
#if KERNEL == 0
    slots = {&x, &out, &columns, &columns, &columns, &stop_slot};
    grid[0] = static_cast<int32_t>(rows), programs = rows;
#elif KERNEL == 1
    slots = {&x, &out, &wp, &bp, &mp, &rp, &columns, &columns, &columns, &eps, &stop_slot};
    grid[0] = static_cast<int32_t>(rows), programs = rows;
#else
    slots = {&x, &y, &out, &n, &stop_slot};
    grid[0] = static_cast<int32_t>(elements / 1024), programs = elements / 1024;
#endif
  }
  ~RowArguments() { std::free(x), std::free(y), std::free(out - OUT_SHIFT); }
  RowArguments(const RowArguments&) = delete;
  RowArguments& operator=(const RowArguments&) = delete;

  // What the output holds, weighted by position: equal sums, equal results.
  double checksum() const {
    double sum = 0;
    for (int64_t i = 0; i < elements; ++i) sum += out[i] * static_cast<double>(i % 7 + 1);
    return sum;
  }

  int64_t elements;
  float *x, *y, *out;
  std::vector<float> w, b, mean, rstd;
  float *wp, *bp, *mp, *rp;
  int32_t columns = kColumns, n = 0;
  float eps = 1e-5f;
  StopPoll stop{never_stop};
  StopPoll* stop_slot = &stop;
  std::vector<void*> slots;
  int32_t grid[3] = {1, 1, 1};
  int64_t programs = 0;

 private:
  float* alloc() const { return static_cast<float*>(std::aligned_alloc(64, (elements + 64) * sizeof(float))); }
};
