// Performance checks of the CPU backend: representative kernels compiled
// through the whole pipeline (front end, passes, codegen, toolchain, thread
// pool) and timed against the machine's floor: copy bandwidth for
// memory-bound kernels; matmul prints GFLOP/s to hold against NumPy's BLAS,
// measured outside (docs/backend-cpu.md, "Performance").
//
// Each benchmark also checks its result, so a fast wrong kernel fails. They
// take seconds, so they only run with TEGULA_BENCH=1:
//
//   TEGULA_BENCH=1 build/tests/cpp/test_backend_cpu --gtest_filter='CpuBench*'
//
// TEGULA_BENCH_REPS sets the timed launches per case (default 20; the best
// run is reported, after one warm-up launch).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lower_test_util.h"
#include "runtime/compiler.h"
#include "backends/cpu/thread_pool.h"
#include "runtime_test_util.h"

namespace tegula::runtime {
namespace {

using backends::cpu::ThreadPool;


using testing::const_int;
using testing::float_arg;
using testing::int_arg;
using testing::ptr_arg;

bool bench_enabled() {
  const char* v = std::getenv("TEGULA_BENCH");
  return v != nullptr && std::string(v) == "1";
}

int repetitions() {
  const char* v = std::getenv("TEGULA_BENCH_REPS");
  int n = v != nullptr ? std::atoi(v) : 0;
  return n > 0 ? n : 20;
}

#define SKIP_UNLESS_BENCH() \
  if (!bench_enabled()) GTEST_SKIP() << "set TEGULA_BENCH=1 to run the CPU benchmarks"

ArgValue pointer(const void* p) { return ArgValue{ArgValue::Kind::Pointer, reinterpret_cast<uintptr_t>(p), 0.0}; }
ArgValue integer(int64_t v) { return ArgValue{ArgValue::Kind::Int, static_cast<uint64_t>(v), 0.0}; }
ArgValue real(double v) { return ArgValue{ArgValue::Kind::Float, 0, v}; }

// An i32 argument specialized like a launch would: divisible by 16 or not.
frontend::ArgSpec int_value_arg(int64_t v) { return int_arg(ir::Scalar::I32, v % 16 == 0 ? 16 : 1); }

// A kernel compiled into a private cache (never a stale object from an
// earlier codegen).
class Bench : public ::testing::Test {
 protected:
  std::shared_ptr<CompiledKernel> compile_kernel(const std::string& name, const std::string& text,
                                                 std::vector<frontend::ArgSpec> args,
                                                 std::map<std::string, frontend::GlobalValue> globals = {}) {
    frontend::KernelRequest request;
    request.functions.push_back(testing::source(name, text));
    for (auto& [global, value] : globals) request.functions.back().globals[global] = value;
    request.args = std::move(args);
    CompileOptions options;
    options.cache_dir = tmp_ / "cache";
    return compile(request, options);
  }

  // Best wall time of `reps` launches (ms), after one warm-up launch.
  static double time_ms(const CompiledKernel& kernel, const int64_t grid[3], const std::vector<ArgValue>& args) {
    kernel.launch(grid, args);
    double best = 1e30;
    for (int r = 0; r < repetitions(); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      kernel.launch(grid, args);
      auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return best;
  }

  template <class F>
  static double time_ms(F&& body) {
    body();
    double best = 1e30;
    for (int r = 0; r < repetitions(); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      body();
      auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return best;
  }

  // The bandwidth of std::memcpy on every pool thread, copying bytes / 2 (so
  // reading and writing `bytes` in all), measured right before a kernel's
  // figure: the machine's caches and neighbours change from minute to minute.
  // GB/s count bytes read plus bytes written, like the kernels' figures.
  static double copy_bandwidth_gbs(double bytes) {
    const size_t n = static_cast<size_t>(bytes / 2);
    std::vector<unsigned char> src(n, 1), dst(n, 0);
    ThreadPool& pool = ThreadPool::global();
    const int64_t chunks = pool.size() * 8;
    const int64_t chunk_bytes = static_cast<int64_t>(n) / chunks;
    double ms = time_ms([&] {
      pool.parallel_for(chunks, 1, [&](int64_t first, int64_t last) {
        for (int64_t c = first; c < last; ++c)
          std::memcpy(dst.data() + c * chunk_bytes, src.data() + c * chunk_bytes, static_cast<size_t>(chunk_bytes));
      });
    });
    return 2.0 * static_cast<double>(n) / (ms * 1e6);
  }

  // Times `run` (ms) and prints it beside the copy bandwidth for `bytes`.
  template <class F>
  static void report_bandwidth(const std::string& what, double bytes, F&& run) {
    double copy = copy_bandwidth_gbs(bytes);
    double ms = run();
    double gbs = bytes / (ms * 1e6);
    std::printf("[bench] %-44s %9.3f ms %8.2f GB/s  (%.0f%% of memcpy %.2f GB/s)\n", what.c_str(), ms, gbs,
                100.0 * gbs / copy, copy);
  }

  static std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  }

  testing::TempDir tmp_;
};

// --- matmul ---------------------------------------------------------------------------------------

// The golden matmul (tests/golden/matmul_dot.py): masked K loop, pointers
// recomputed from k each iteration.
constexpr const char* kMatmulMasked =
    "def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,\n"
    "           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    pid_m = tl.program_id(0)\n"
    "    pid_n = tl.program_id(1)\n"
    "    rm = pid_m * BM + tl.arange(0, BM)\n"
    "    rn = pid_n * BN + tl.arange(0, BN)\n"
    "    rk = tl.arange(0, BK)\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k in range(0, tl.cdiv(K, BK)):\n"
    "        kk = k * BK + rk\n"
    "        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)\n"
    "        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)\n"
    "        acc = tl.dot(a, b, acc)\n"
    "    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))\n";

// The Triton tutorial's shape (examples/matmul.py): pointer
// tiles carried through the K loop and advanced by BK each iteration.
constexpr const char* kMatmulCarriedPointers =
    "def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,\n"
    "           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    pid_m = tl.program_id(0)\n"
    "    pid_n = tl.program_id(1)\n"
    "    rm = pid_m * BM + tl.arange(0, BM)\n"
    "    rn = pid_n * BN + tl.arange(0, BN)\n"
    "    rk = tl.arange(0, BK)\n"
    "    a_tile = a_ptr + (rm % M)[:, None] * stride_am + rk[None, :]\n"
    "    b_tile = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :]\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k0 in range(0, K, BK):\n"
    "        a = tl.load(a_tile, mask=rk[None, :] < K - k0, other=0.0)\n"
    "        b = tl.load(b_tile, mask=rk[:, None] < K - k0, other=0.0)\n"
    "        acc = tl.dot(a, b, acc)\n"
    "        a_tile += BK\n"
    "        b_tile += BK * stride_bk\n"
    "    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))\n";

struct MatmulCase {
  const char* style;
  const char* text;
  ir::Scalar in;
  int64_t size, bm, bn, bk;
};

uint16_t to_f16(float f) {  // round to nearest even; inputs here are small normals
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
  if (a < 0x38800000u) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
}
float from_f16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  uint32_t bits = e == 0 ? sign : sign | ((e + 112u) << 23) | (m << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class MatmulBench : public Bench, public ::testing::WithParamInterface<MatmulCase> {};

TEST_P(MatmulBench, Throughput) {
  SKIP_UNLESS_BENCH();
  const MatmulCase& mc = GetParam();
  const int64_t S = mc.size;
  auto kernel = compile_kernel("matmul", mc.text,
                               {ptr_arg(mc.in), ptr_arg(mc.in), ptr_arg(ir::Scalar::F32), int_value_arg(S),
                                int_value_arg(S), int_value_arg(S), int_value_arg(S), int_value_arg(S),
                                int_value_arg(S), const_int(mc.bm), const_int(mc.bn), const_int(mc.bk)});
  std::vector<float> a = random_floats(static_cast<size_t>(S * S), 1), b = random_floats(static_cast<size_t>(S * S), 2);
  std::vector<uint16_t> a16, b16;
  const void *pa = a.data(), *pb = b.data();
  if (mc.in == ir::Scalar::F16) {
    for (float& x : a) a16.push_back(to_f16(x)), x = from_f16(a16.back());
    for (float& x : b) b16.push_back(to_f16(x)), x = from_f16(b16.back());
    pa = a16.data(), pb = b16.data();
  }
  std::vector<float> c(static_cast<size_t>(S * S), -1.0f);
  const int64_t grid[3] = {(S + mc.bm - 1) / mc.bm, (S + mc.bn - 1) / mc.bn, 1};
  std::vector<ArgValue> args = {pointer(pa), pointer(pb), pointer(c.data()), integer(S), integer(S), integer(S),
                                integer(S), integer(S), integer(S)};
  double ms = time_ms(*kernel, grid, args);

  // The reference, in the order of the kernel's accumulation (k ascending).
  std::vector<float> want(static_cast<size_t>(S * S), 0.0f);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t k = 0; k < S; ++k) {
      float x = a[i * S + k];
      for (int64_t j = 0; j < S; ++j) want[i * S + j] += x * b[k * S + j];
    }
  for (int64_t i = 0; i < S * S; ++i)
    ASSERT_NEAR(c[i], want[i], 1e-3 * (1 + std::fabs(want[i]))) << "element " << i;

  double flops = 2.0 * S * S * S;
  std::printf("[bench] matmul %-8s %s %lldx%lldx%lld BM=%lld BN=%lld BK=%lld: %8.3f ms %7.1f GFLOP/s\n",
              mc.style, ir::to_string(mc.in), (long long)S, (long long)S, (long long)S, (long long)mc.bm,
              (long long)mc.bn, (long long)mc.bk, ms, flops / (ms * 1e6));
}

INSTANTIATE_TEST_SUITE_P(
    CpuBench, MatmulBench,
    ::testing::Values(MatmulCase{"masked", kMatmulMasked, ir::Scalar::F32, 512, 64, 64, 32},
                      MatmulCase{"masked", kMatmulMasked, ir::Scalar::F32, 512, 128, 128, 32},
                      MatmulCase{"masked", kMatmulMasked, ir::Scalar::F16, 512, 128, 128, 32},
                      MatmulCase{"carried", kMatmulCarriedPointers, ir::Scalar::F32, 512, 64, 64, 32},
                      MatmulCase{"carried", kMatmulCarriedPointers, ir::Scalar::F32, 512, 128, 128, 32},
                      MatmulCase{"carried", kMatmulCarriedPointers, ir::Scalar::F16, 512, 64, 64, 32}),
    [](const ::testing::TestParamInfo<MatmulCase>& info) {
      const MatmulCase& m = info.param;
      return std::string(m.style) + "_" + ir::to_string(m.in) + "_" + std::to_string(m.bm) + "x" +
             std::to_string(m.bn) + "x" + std::to_string(m.bk);
    });

// --- memory-bound kernels ----------------------------------------------------------------------------

constexpr const char* kVectorAdd =
    "def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n\n"
    "    x = tl.load(x_ptr + offs, mask=mask)\n"
    "    y = tl.load(y_ptr + offs, mask=mask)\n"
    "    tl.store(out_ptr + offs, x + y, mask=mask)\n";

TEST_F(Bench, CpuBenchVectorAdd) {
  SKIP_UNLESS_BENCH();
  const int64_t n = int64_t{1} << 24, block = 1024;
  auto kernel = compile_kernel("add", kVectorAdd,
                               {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32),
                                int_value_arg(n), const_int(block)});
  std::vector<float> x = random_floats(n, 1), y = random_floats(n, 2), out(n);
  const int64_t grid[3] = {n / block, 1, 1};
  report_bandwidth("vector add f32 n=2^24 BLOCK=1024", 3.0 * 4 * n, [&] {
    return time_ms(*kernel, grid, {pointer(x.data()), pointer(y.data()), pointer(out.data()), integer(n)});
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << i;
}

constexpr const char* kRowSum =
    "def row_sum(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):\n"
    "    row = tl.program_id(0)\n"
    "    acc = tl.zeros((BLOCK,), dtype=tl.float32)\n"
    "    for start in range(0, N, BLOCK):\n"
    "        cols = start + tl.arange(0, BLOCK)\n"
    "        acc += tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)\n"
    "    tl.store(out_ptr + row, tl.sum(acc, axis=0))\n";

TEST_F(Bench, CpuBenchRowSumLoop) {
  SKIP_UNLESS_BENCH();
  const int64_t M = 4096, N = 4096;
  for (int64_t block : {128, 1024}) {
    auto kernel = compile_kernel("row_sum", kRowSum,
                                 {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), int_value_arg(N),
                                  int_value_arg(N), const_int(block)});
    std::vector<float> x = random_floats(M * N, 3), out(M);
    const int64_t grid[3] = {M, 1, 1};
    report_bandwidth("row sum loop f32 4096x4096 BLOCK=" + std::to_string(block), 4.0 * M * N, [&] {
      return time_ms(*kernel, grid, {pointer(x.data()), pointer(out.data()), integer(N), integer(N)});
    });
    for (int64_t r = 0; r < M; ++r) {
      double want = 0;
      for (int64_t c = 0; c < N; ++c) want += x[r * N + c];
      ASSERT_NEAR(out[r], want, 1e-3) << r;
    }
  }
}

constexpr const char* kSoftmax =
    "def softmax(x_ptr, y_ptr, N, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr):\n"
    "    row = tl.program_id(0)\n"
    "    cols = tl.arange(0, BLOCK_N)\n"
    "    in_row = cols < N\n"
    "    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=NEG_INF)\n"
    "    shifted = x - tl.max(x, axis=0)\n"
    "    numerator = tl.exp(shifted)\n"
    "    y = numerator / tl.sum(numerator, axis=0)\n"
    "    tl.store(y_ptr + row * y_row_stride + cols, y, mask=in_row)\n";

TEST_F(Bench, CpuBenchSoftmax) {
  SKIP_UNLESS_BENCH();
  const int64_t M = 4096, N = 4096;
  frontend::GlobalValue neg_inf;
  neg_inf.kind = frontend::GlobalValue::Kind::Float;
  neg_inf.float_value = -INFINITY;
  auto kernel = compile_kernel("softmax", kSoftmax,
                               {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), int_value_arg(N),
                                int_value_arg(N), int_value_arg(N), const_int(N)},
                               {{"NEG_INF", neg_inf}});
  std::vector<float> x = random_floats(M * N, 4, -4.0f, 4.0f), y(M * N);
  const int64_t grid[3] = {M, 1, 1};
  report_bandwidth("softmax f32 4096x4096 (row per program)", 2.0 * 4 * M * N, [&] {
    return time_ms(*kernel, grid, {pointer(x.data()), pointer(y.data()), integer(N), integer(N), integer(N)});
  });
  for (int64_t r = 0; r < M; r += 97) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < N; ++c) mx = std::max(mx, double(x[r * N + c]));
    for (int64_t c = 0; c < N; ++c) sum += std::exp(double(x[r * N + c]) - mx);
    for (int64_t c = 0; c < N; ++c) {
      double want = std::exp(double(x[r * N + c]) - mx) / sum;
      ASSERT_NEAR(y[r * N + c], want, 1e-5 * want + 1e-9) << r << "," << c;
    }
  }
}

constexpr const char* kLayerNorm =
    "def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, N, stride, eps, BLOCK_N: tl.constexpr):\n"
    "    row = tl.program_id(0)\n"
    "    cols = tl.arange(0, BLOCK_N)\n"
    "    in_row = cols < N\n"
    "    x = tl.load(x_ptr + row * stride + cols, mask=in_row, other=0.0)\n"
    "    mean = tl.sum(x, axis=0) / N\n"
    "    centred = tl.where(in_row, x - mean, 0.0)\n"
    "    var = tl.sum(centred * centred, axis=0) / N\n"
    "    rstd = 1.0 / tl.sqrt(var + eps)\n"
    "    w = tl.load(w_ptr + cols, mask=in_row, other=0.0)\n"
    "    b = tl.load(b_ptr + cols, mask=in_row, other=0.0)\n"
    "    tl.store(y_ptr + row * stride + cols, centred * rstd * w + b, mask=in_row)\n";

TEST_F(Bench, CpuBenchLayerNorm) {
  SKIP_UNLESS_BENCH();
  const int64_t M = 4096, N = 4096;
  auto kernel = compile_kernel("layer_norm", kLayerNorm,
                               {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32),
                                ptr_arg(ir::Scalar::F32), int_value_arg(N), int_value_arg(N), float_arg(),
                                const_int(N)});
  std::vector<float> x = random_floats(M * N, 5, -1.0f, 3.0f), y(M * N), w = random_floats(N, 6), b = random_floats(N, 7);
  const int64_t grid[3] = {M, 1, 1};
  report_bandwidth("layer norm f32 4096x4096 (row per program)", 2.0 * 4 * M * N, [&] {
    return time_ms(*kernel, grid,
                   {pointer(x.data()), pointer(y.data()), pointer(w.data()), pointer(b.data()), integer(N), integer(N),
                    real(1e-5)});
  });
  for (int64_t r = 0; r < M; r += 97) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < N; ++c) mean += x[r * N + c];
    mean /= N;
    for (int64_t c = 0; c < N; ++c) var += (x[r * N + c] - mean) * (x[r * N + c] - mean);
    double rstd = 1.0 / std::sqrt(var / N + 1e-5);
    for (int64_t c = 0; c < N; ++c)
      ASSERT_NEAR(y[r * N + c], (x[r * N + c] - mean) * rstd * w[c] + b[c], 1e-4) << r << "," << c;
  }
}

}  // namespace
}  // namespace tegula::runtime
