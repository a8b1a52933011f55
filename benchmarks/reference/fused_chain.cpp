// The case-study chain (examples/fused_chain.py) written by hand in C++: the
// yardstick for Tegula's fused kernel on the CPU.
//
// One pass per row, as an expert would write it without a tile compiler:
// the GELU/dropout/residual part in one vectorizable loop into a row buffer
// that stays in L1, the sum of squares over 16 independent lanes (g++ does
// not reorder a float sum by itself), then the scaled output. Rows are split
// evenly over `threads` threads. The benchmark compiles this file with the
// CPU backend's own compiler and flags (tegula._C.cpu_toolchain()), so
// with SLEEF the tanh loop calls the same vector tanh as the kernel, and
// `-ffp-contract=off` keeps each operation rounded as the kernel rounds it.
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(TEGULA_VECTOR_MATH) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
extern "C" float tanhf(float) __attribute__((simd("notinbranch")));
#endif

namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr int kLanes = 16;

void rows(const float* x, const float* res, const uint8_t* keep, const float* bias, const float* w, float* y,
          int64_t first, int64_t last, int64_t n, int64_t stride, float alpha, float eps, float scale) {
  std::vector<float> buffer(static_cast<size_t>(n));
  float* __restrict h = buffer.data();
  for (int64_t r = first; r < last; ++r) {
    const float* __restrict xr = x + r * stride;
    const float* __restrict rr = res + r * stride;
    const uint8_t* __restrict kr = keep + r * stride;
    float* __restrict yr = y + r * stride;
    for (int64_t c = 0; c < n; ++c) {
      float v = xr[c] * alpha + bias[c];
      float inner = (v + v * 0.044715f * v * v) * kGeluScale;
      float gelu = v * 0.5f * (std::tanh(inner) + 1.0f);
      h[c] = (kr[c] != 0 ? gelu * scale : 0.0f) + rr[c];
    }
    float lanes[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= n; c += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] += h[c + l] * h[c + l];
    for (; c < n; ++c) lanes[c % kLanes] += h[c] * h[c];
    float sum = 0.0f;
    for (float lane : lanes) sum += lane;
    float rstd = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (int64_t k = 0; k < n; ++k) yr[k] = h[k] * rstd * w[k];
  }
}

}  // namespace

extern "C" void fused_chain_reference(const float* x, const float* res, const uint8_t* keep, const float* bias,
                                      const float* w, float* y, int64_t m, int64_t n, int64_t stride, float alpha,
                                      float eps, float scale, int threads) {
  if (threads < 1) threads = 1;
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t)
    workers.emplace_back(rows, x, res, keep, bias, w, y, m * t / threads, m * (t + 1) / threads, n, stride, alpha,
                         eps, scale);
  rows(x, res, keep, bias, w, y, 0, m / threads, n, stride, alpha, eps, scale);
  for (std::thread& worker : workers) worker.join();
}
