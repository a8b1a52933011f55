// The CPU backend's fast paths, end to end from kernel source (front end,
// passes, codegen, toolchain, launch), each against an independent
// reference: the register-blocked dot (bit-exact against fused multiply-adds
// in k order, f32 and f16, masked K tails, both pointer styles of a tiled
// matmul), loop-carried tiles computed in place (and the cases that must not
// be), the full-tile check of `offs < n` masks (including a wrapping count),
// and lane reductions along long rows.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "backends/cpu/prelude.h"
#include "backends/cpu/prelude_stream.h"
#include "lower_test_util.h"
#include "runtime/compiler.h"
#include "runtime_test_util.h"

namespace tegula::runtime {
namespace {

using testing::const_int;
using testing::int_arg;
using testing::ptr_arg;

ArgValue pointer(const void* p) { return ArgValue{ArgValue::Kind::Pointer, reinterpret_cast<uintptr_t>(p), 0.0}; }
ArgValue integer(int64_t v) { return ArgValue{ArgValue::Kind::Int, static_cast<uint64_t>(v), 0.0}; }

class FastPaths : public ::testing::Test {
 protected:
  std::shared_ptr<CompiledKernel> build(const std::string& name, const std::string& text,
                                        std::vector<frontend::ArgSpec> args) {
    frontend::KernelRequest request;
    request.functions.push_back(testing::source(name, text));
    request.args = std::move(args);
    CompileOptions options;
    options.cache_dir = tmp_ / "cache";
    options.keep_stages = true;
    return compile(request, options);
  }

  testing::TempDir tmp_;
  testing::ScopedEnv no_dumps_{"TEGULA_DUMP_DIR", nullptr};
};

// The generated code of the loop body that starts at `loop_marker`.
std::string after(const std::string& source, const std::string& loop_marker) {
  size_t at = source.find(loop_marker);
  return at == std::string::npos ? std::string() : source.substr(at);
}

// The shell command that builds `dir`/check.cpp with the system compiler ($CXX, else c++) and
// `flags`, then runs it: the prelude's pieces checked outside the backend.
std::string check_command(const testing::TempDir& dir, const std::string& flags, const std::string& libraries = "") {
  const char* cxx = std::getenv("CXX");
  return std::string(cxx && *cxx ? cxx : "c++") + " -std=c++17 -O2 " + flags + " -o '" + dir / "check" + "' '" +
         dir / "check.cpp" + "'" + (libraries.empty() ? "" : " " + libraries) + " 2>&1 && '" + dir / "check" + "'";
}

// --- matmul ------------------------------------------------------------------------------------------

constexpr const char* kMatmulMasked =
    "def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,\n"
    "           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    rm = tl.program_id(0) * BM + tl.arange(0, BM)\n"
    "    rn = tl.program_id(1) * BN + tl.arange(0, BN)\n"
    "    rk = tl.arange(0, BK)\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k in range(0, tl.cdiv(K, BK)):\n"
    "        kk = k * BK + rk\n"
    "        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)\n"
    "        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)\n"
    "        acc = tl.dot(a, b, acc)\n"
    "    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))\n";

constexpr const char* kMatmulCarried =
    "def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,\n"
    "           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    rm = tl.program_id(0) * BM + tl.arange(0, BM)\n"
    "    rn = tl.program_id(1) * BN + tl.arange(0, BN)\n"
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

// f32 -> f16 -> f32, round to nearest even, for normal f16 values.
float round_to_f16(float f, uint16_t* bits) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
  uint16_t h = static_cast<uint16_t>(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
  *bits = h;
  uint32_t back = (static_cast<uint32_t>(h & 0x8000u) << 16) | ((static_cast<uint32_t>(h & 0x7fffu) + 0x1c000u) << 13);
  float r;
  std::memcpy(&r, &back, 4);
  return r;
}

struct MatmulCase {
  const char* style;
  const char* text;
  ir::Scalar in;
  int64_t m, n, k, bm, bn, bk;
};

class MatmulTest : public FastPaths, public ::testing::WithParamInterface<MatmulCase> {};

// C equals the fused multiply-adds of each row and column in k order, bit for
// bit: the blocking of the dot and of the K loop must not change any rounding.
TEST_P(MatmulTest, BitExactAgainstFmaInKOrder) {
  const MatmulCase& mc = GetParam();
  auto kernel = build("matmul", mc.text,
                      {ptr_arg(mc.in), ptr_arg(mc.in), ptr_arg(ir::Scalar::F32), int_arg(), int_arg(), int_arg(),
                       int_arg(), int_arg(), int_arg(), const_int(mc.bm), const_int(mc.bn), const_int(mc.bk)});
  // Random magnitudes in [1/4, 2): the f16 cases use values exactly
  // representable in f16; the sums round, so the order of the products shows.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> magnitude(0.25f, 2.0f);
  std::vector<float> a(mc.m * mc.k), b(mc.k * mc.n);
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = round_to_f16(rng() % 2 ? magnitude(rng) : -magnitude(rng), &a16[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = round_to_f16(rng() % 2 ? magnitude(rng) : -magnitude(rng), &b16[i]);
  if (mc.in == ir::Scalar::F32) {
    std::uniform_real_distribution<float> any(-1.0f, 1.0f);
    for (float& x : a) x = any(rng);
    for (float& x : b) x = any(rng);
  }
  bool half = mc.in == ir::Scalar::F16;
  std::vector<float> c(mc.m * mc.n + 8, -7.0f);
  const int64_t grid[3] = {(mc.m + mc.bm - 1) / mc.bm, (mc.n + mc.bn - 1) / mc.bn, 1};
  kernel->launch(grid, {pointer(half ? (void*)a16.data() : (void*)a.data()),
                        pointer(half ? (void*)b16.data() : (void*)b.data()), pointer(c.data()), integer(mc.m),
                        integer(mc.n), integer(mc.k), integer(mc.k), integer(mc.n), integer(mc.n)});
  for (int64_t i = 0; i < mc.m; ++i)
    for (int64_t j = 0; j < mc.n; ++j) {
      float want = 0.0f;
      for (int64_t k = 0; k < mc.k; ++k) want = std::fma(a[i * mc.k + k], b[k * mc.n + j], want);
      ASSERT_EQ(c[i * mc.n + j], want) << "C[" << i << "][" << j << "]";
    }
  for (int64_t i = mc.m * mc.n; i < mc.m * mc.n + 8; ++i) ASSERT_EQ(c[i], -7.0f) << "written past C at " << i;

  // acc = tl.dot(a, b, acc) updates the carried accumulator in place.
  std::string loop = after(kernel->stages.source, "= tg_trip_count<");
  ASSERT_FALSE(loop.empty());
  EXPECT_EQ(loop.find("std::memcpy"), std::string::npos) << loop;
  EXPECT_NE(loop.find("tg_dot_f32<" + std::to_string(mc.bm) + ", " + std::to_string(mc.bn) + ", " +
                      std::to_string(mc.bk) + ">"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(MatmulCase{"masked", kMatmulMasked, ir::Scalar::F32, 100, 70, 90, 32, 32, 16},
                      MatmulCase{"masked", kMatmulMasked, ir::Scalar::F16, 100, 70, 90, 64, 64, 32},
                      MatmulCase{"masked", kMatmulMasked, ir::Scalar::F32, 128, 128, 64, 128, 128, 32},
                      MatmulCase{"masked", kMatmulMasked, ir::Scalar::F32, 7, 9, 5, 16, 16, 16},
                      MatmulCase{"masked", kMatmulMasked, ir::Scalar::F32, 33, 40, 20, 32, 8, 8},
                      MatmulCase{"carried", kMatmulCarried, ir::Scalar::F32, 100, 70, 90, 32, 32, 16},
                      MatmulCase{"carried", kMatmulCarried, ir::Scalar::F16, 65, 129, 48, 64, 64, 32}),
    [](const ::testing::TestParamInfo<MatmulCase>& info) {
      const MatmulCase& m = info.param;
      return std::string(m.style) + "_" + ir::to_string(m.in) + "_" + std::to_string(m.m) + "x" + std::to_string(m.n) +
             "x" + std::to_string(m.k) + "_blocks" + std::to_string(m.bm) + "x" + std::to_string(m.bn) + "x" +
             std::to_string(m.bk);
    });

// The prelude's tg_dot_f32 on each of its code paths (AVX-512, AVX2 + FMA,
// scalar), compiled outside the backend: every element must equal the
// fused multiply-adds in k order, for shapes with partial row blocks, partial
// vector panels and scalar column tails.
TEST(DotMicroKernel, BitExactOnEveryVectorPath) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the vector paths are x86-64";
#endif
  const std::string check = R"CPP(
#include <random>
#include <vector>
template <int M, int N, int K> int mismatches() {
  std::mt19937 rng(M * 10007 + N * 101 + K);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(M * K), b(K * N), c(M * N), want(M * N);
  for (float& x : a) x = d(rng);
  for (float& x : b) x = d(rng);
  for (int i = 0; i < M * N; ++i) c[i] = want[i] = d(rng);
  tg_dot_f32<M, N, K>(a.data(), b.data(), c.data());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) want[i * N + j] = std::fma(a[i * K + k], b[k * N + j], want[i * N + j]);
  int bad = 0;
  for (int i = 0; i < M * N; ++i) bad += c[i] != want[i];
  return bad;
}
int main() {
  return mismatches<128, 128, 32>() + mismatches<7, 9, 5>() + mismatches<33, 40, 20>() + mismatches<16, 8, 8>() +
         mismatches<64, 72, 16>() + mismatches<1, 1, 1>() + mismatches<3, 100, 7>() + mismatches<29, 48, 3>();
}
)CPP";
  testing::TempDir dir;
  testing::write_text(dir / "check.cpp", std::string(backends::cpu::kPrelude) + check);
  for (const char* isa : {"-march=native", "-march=native -mno-avx512f", "-march=x86-64"}) {
    std::string command = check_command(dir, std::string(isa) + " -fno-math-errno -ffp-contract=off");
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
}

// The stream prelude's copies, compiled outside the backend on each vector
// path: tg_stream_store_part called block by block (as a loop streaming its
// stores does) writes exactly what memcpy would, for every misalignment of
// the destination, tiles shorter than a line and block sizes that split
// lines, and nothing outside the tile, also when consecutive tiles hand
// their partial lines on through a tg_line_carry (in order, with gaps, out
// of order); tg_next_tile predicts one stride on.
TEST(StreamPrelude, PartialStreamsCopyExactly) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the streamed paths are x86-64";
#endif
  const std::string check = R"CPP(
#include <vector>
int main() {
  int bad = 0;
  std::vector<unsigned char> src(4096 + 64), dst(4096 + 256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (unsigned char)(i * 7 + 3);
  for (int64_t bytes : {1, 17, 63, 64, 65, 100, 256, 1000, 4096})
    for (int64_t block : {4, 64, 256, 100})
      for (int shift = 0; shift < 64; ++shift) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        unsigned char* d = dst.data() + (64 - (reinterpret_cast<uintptr_t>(dst.data()) & 63)) + shift;
        for (int64_t from = 0; from < bytes; from += block)
          tg_stream_store_part(d, src.data(), bytes, from, from + block < bytes ? from + block : bytes, nullptr);
        _mm_sfence();
        for (unsigned char* p = dst.data(); p < dst.data() + dst.size(); ++p) {
          int64_t at = p - d;
          bad += *p != (at >= 0 && at < bytes ? src[(size_t)at] : 0xEE);
        }
      }
  // Consecutive tiles as a thread's programs write them, the partial line
  // at each boundary held by a carry: in order, with a gap, out of order.
  for (int64_t tile : {20, 64, 100, 256, 1000})
    for (int order = 0; order < 3; ++order)
      for (int shift = 0; shift < 64; shift += 4) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        unsigned char* d = dst.data() + (64 - (reinterpret_cast<uintptr_t>(dst.data()) & 63)) + shift;
        const int tiles = (int)(4096 / tile);
        std::vector<int> ids;
        for (int t = 0; t < tiles; ++t)
          if (order != 1 || t % 3 != 1) ids.push_back(order == 2 ? (t * 7) % tiles : t);
        {
          tg_line_carry carry;
          for (int t : ids)
            for (int64_t from = 0; from < tile; from += 64)
              tg_stream_store_part(d + t * tile, src.data() + t * tile, tile, from, from + 64 < tile ? from + 64 : tile,
                                   &carry);
        }
        _mm_sfence();
        std::vector<bool> written(dst.size(), false);
        for (int t : ids)
          for (int64_t k = 0; k < tile; ++k) written[(size_t)(d - dst.data() + t * tile + k)] = true;
        for (size_t i = 0; i < dst.size(); ++i) {
          int64_t at = (int64_t)i - (d - dst.data());
          bad += dst[i] != (written[i] ? src[(size_t)at] : 0xEE);
        }
      }
  const char* last = nullptr;
  const char rows[3 * 64] = {};
  bad += tg_next_tile(last, rows, true) != nullptr;                  // nothing to go by yet
  bad += tg_next_tile(last, rows + 64, true) != rows + 128;          // one row on
  bad += tg_next_tile(last, rows, false) != nullptr || last != rows;  // not streaming: no guess
  return bad;
}
)CPP";
  testing::TempDir dir;
  testing::write_text(dir / "check.cpp",
                      std::string(backends::cpu::kPrelude) + std::string(backends::cpu::kStreamPrelude) + check);
  for (const char* isa : {"-march=native", "-march=native -mno-avx512f", "-march=x86-64"}) {
    std::string command = check_command(dir, isa);
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
}

// The prelude's 16-lane expf, which units on AVX-512 with SLEEF call in
// place of the library's (prelude.h): its bits equal SLEEF's on all 2^32
// inputs (NaNs: both NaN), so no result changes with it.
TEST(VectorMath, ExpMatchesSleefOnEveryInput) {
#if !defined(__x86_64__) || !defined(__GNUC__) || defined(__clang__)
  GTEST_SKIP() << "the vector math path is g++ on x86-64";
#endif
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this host";
  const std::string check = R"CPP(
#include <dlfcn.h>
#include <cstdio>
int main() {
  void* sleef = dlopen("libsleefgnuabi.so", RTLD_NOW | RTLD_LOCAL);
  if (sleef == nullptr) return std::puts("no SLEEF"), 77;
  auto library = reinterpret_cast<__m512 (*)(__m512)>(dlsym(sleef, "_ZGVeN16v_expf"));
  if (library == nullptr) return 77;
  long long differ = 0;
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (uint64_t b = 0; b < (1ull << 32); b += 16) {
    const __m512 x = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)b), lanes));
    const __m512 ours = tg_expf_16(x), theirs = library(x);
    __mmask16 both_nan = _mm512_cmp_ps_mask(ours, ours, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(theirs, theirs, _CMP_UNORD_Q);
    differ += __builtin_popcount(
        _mm512_cmp_epi32_mask(_mm512_castps_si512(ours), _mm512_castps_si512(theirs), _MM_CMPINT_NE) & ~both_nan);
  }
  std::printf("%lld inputs differ\n", differ);
  return differ == 0 ? 0 : 1;
}
)CPP";
  testing::TempDir dir;
  testing::write_text(dir / "check.cpp", std::string(backends::cpu::kPrelude) + check);
  std::string command =
      check_command(dir, "-march=native -DTEGULA_VECTOR_MATH -fno-math-errno -ffp-contract=off", "-ldl");
  int status = std::system(command.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << "SLEEF's library is not installed";
  EXPECT_EQ(status, 0) << command;
}

// The f16 conversions that scalar loops make by the host's instructions
// (prelude.h, tg_scalar_f16_to_f32) give the bits of the prelude's bit-exact
// ones: f16 -> f32 on all 2^16 inputs (a signalling NaN comes out quiet),
// f32 -> f16 on every 61st input and on every exponent and mantissa with
// the low 13 bits that decide rounding (ties, one off, none, all).
TEST(HalfConversions, HostInstructionsGiveTheSameBits) {
  const std::string check = R"CPP(
#include <cstdio>
int main() {
  long long differ = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t want = tg_f32_to_bits(tg_f16_to_f32((uint16_t)h));
    bool signalling = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0 && (h & 0x200u) == 0;
    if (signalling) want |= 0x00400000u;
    differ += tg_f32_to_bits(tg_scalar_f16_to_f32{}((uint16_t)h)) != want;
  }
  auto one = [&](uint32_t b) {
    const float f = tg_bits_to_f32(b);
    differ += tg_scalar_f32_to_f16{}(f) != tg_f32_to_f16(f);
  };
  for (uint64_t b = 0; b < (1ull << 32); b += 61) one((uint32_t)b);
  const uint32_t low[] = {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu};
  for (uint32_t high = 0; high < (1u << 19); ++high)
    for (uint32_t l : low) one(high << 13 | l);
  std::printf("%lld inputs differ\n", differ);
  return differ == 0 ? 0 : 1;
}
)CPP";
  testing::TempDir dir;
  testing::write_text(dir / "check.cpp", std::string(backends::cpu::kPrelude) + check);
  std::string command = check_command(dir, "-march=native -fno-math-errno -ffp-contract=off");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

// tg_fmin / tg_fmax (IEEE minNum / maxNum: a NaN operand loses) and their
// NaN-propagating forms, written so that g++ emits minps / maxps, against
// the rules spelled out with isnan and the sign of zero: every pair of
// special values, in a loop that vectorizes and in one kept scalar. Which
// zero comes out of min(-0, +0) is unspecified, but it must not depend on
// the vector width: both loops must give the same bits.
TEST(MinMax, MinNumMaxNumAndNanPropagationOnSpecialValues) {
  const std::string check = R"CPP(
#include <cmath>
#include <cstdio>
static float pick(bool nan_wins, float a, float b, bool want_max) {
  if (std::isnan(a) && std::isnan(b)) return a;  // both NaN: the first, payload and all
  if (std::isnan(a)) return nan_wins ? a : b;
  if (std::isnan(b)) return nan_wins ? b : a;
  if (a == b) return b;  // equal values, zeros of either sign included: the second operand
  return (want_max ? a > b : a < b) ? a : b;
}
__attribute__((noinline)) static void vectorized(const float* a, const float* b, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    out[4 * i + 0] = tg_fmin(a[i], b[i]);
    out[4 * i + 1] = tg_fmax(a[i], b[i]);
    out[4 * i + 2] = tg_fmin_nan(a[i], b[i]);
    out[4 * i + 3] = tg_fmax_nan(a[i], b[i]);
  }
}
int main() {
  const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u,
                           0x7fc00000u, 0xffc00000u, 0x7fc00123u, 0x00000001u, 0xc0600000u, 0x40000000u,
                           0x7f7fffffu, 0x80800000u};
  const int k = sizeof bits / sizeof bits[0], n = k * k;
  static float a[256], b[256], out[1024];
  for (int i = 0; i < n; ++i) { a[i] = tg_bits_to_f32(bits[i % k]); b[i] = tg_bits_to_f32(bits[i / k]); }
  vectorized(a, b, out, n);
  long long differ = 0;
  for (volatile int i = 0; i < n; ++i) {
    const float want[4] = {pick(false, a[i], b[i], false), pick(false, a[i], b[i], true),
                           pick(true, a[i], b[i], false), pick(true, a[i], b[i], true)};
    const float scalar[4] = {tg_fmin(a[i], b[i]), tg_fmax(a[i], b[i]), tg_fmin_nan(a[i], b[i]),
                             tg_fmax_nan(a[i], b[i])};
    for (int j = 0; j < 4; ++j) {
      differ += tg_f32_to_bits(out[4 * i + j]) != tg_f32_to_bits(scalar[j]);
      differ += std::isnan(want[j]) ? tg_f32_to_bits(out[4 * i + j]) != tg_f32_to_bits(want[j])
                                    : out[4 * i + j] != want[j];
    }
  }
  std::printf("%lld results differ\n", differ);
  return differ == 0 ? 0 : 1;
}
)CPP";
  testing::TempDir dir;
  testing::write_text(dir / "check.cpp", std::string(backends::cpu::kPrelude) + check);
  std::string command = check_command(dir, "-O3 -march=native -fno-math-errno -ffp-contract=off");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

// --- loop-carried tiles ----------------------------------------------------------------------------

// acc += x[row, start:start+BLOCK] over a masked K loop: the sum is computed
// straight into the carried tile.
TEST_F(FastPaths, RowSumLoopAccumulatesInPlace) {
  auto kernel = build("row_sum",
                      "def row_sum(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):\n"
                      "    row = tl.program_id(0)\n"
                      "    acc = tl.zeros((BLOCK,), dtype=tl.float32)\n"
                      "    for start in range(0, N, BLOCK):\n"
                      "        cols = start + tl.arange(0, BLOCK)\n"
                      "        acc += tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)\n"
                      "    tl.store(out_ptr + row, tl.sum(acc, axis=0))\n",
                      {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), int_arg(), int_arg(), const_int(64)});
  const int64_t M = 5, N = 300;  // 4 full blocks and a masked tail per row
  std::vector<float> x(M * N), out(M);
  for (int64_t i = 0; i < M * N; ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
  const int64_t grid[3] = {M, 1, 1};
  kernel->launch(grid, {pointer(x.data()), pointer(out.data()), integer(N), integer(N)});
  for (int64_t r = 0; r < M; ++r) {
    float want = 0;
    for (int64_t c = 0; c < N; ++c) want += x[r * N + c];  // small integers: exact in any order
    EXPECT_EQ(out[r], want) << "row " << r;
  }
  std::string loop = after(kernel->stages.source, "= tg_trip_count<");
  EXPECT_EQ(loop.find("std::memcpy"), std::string::npos) << loop;
  EXPECT_NE(loop.find("is computed in place of"), std::string::npos) << loop;
}

// The carried tile is still read after the new value is computed, or yielded
// twice, or swapped: these must keep copying.
TEST_F(FastPaths, CarriedTileStillReadIsNotOverwritten) {
  auto kernel = build("carried",
                      "def carried(out_ptr, STEPS: tl.constexpr):\n"
                      "    offs = tl.arange(0, 64)\n"
                      "    a = offs.to(tl.float32)\n"
                      "    b = tl.zeros((64,), dtype=tl.float32)\n"
                      "    c = tl.zeros((64,), dtype=tl.float32)\n"
                      "    for i in range(STEPS):\n"
                      "        nxt = a + 1.0\n"
                      "        c = c + a * 2.0\n"
                      "        a, b = nxt, a\n"
                      "    tl.store(out_ptr + offs, a)\n"
                      "    tl.store(out_ptr + 64 + offs, b)\n"
                      "    tl.store(out_ptr + 128 + offs, c)\n",
                      {ptr_arg(ir::Scalar::F32), const_int(3)});
  std::vector<float> out(192, -1.0f);
  const int64_t grid[3] = {1, 1, 1};
  kernel->launch(grid, {pointer(out.data())});
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(out[i], i + 3.0f) << i;
    EXPECT_EQ(out[64 + i], i + 2.0f) << i;
    EXPECT_EQ(out[128 + i], 2.0f * (3 * i + 3)) << i;  // 2 * (i + (i + 1) + (i + 2))
  }
}

// --- full tiles ----------------------------------------------------------------------------------------

constexpr const char* kShiftedLoad =
    "def shifted(x_ptr, out_ptr, start, n, BLOCK: tl.constexpr):\n"
    "    idx = tl.arange(0, BLOCK)\n"
    "    offs = start + idx\n"
    "    v = tl.load(x_ptr + idx, mask=offs < n, other=-1.0)\n"
    "    tl.store(out_ptr + idx, v)\n";

// The unmasked copy of the loop runs only when the first and last offsets are
// in bounds and the count does not wrap: an i32 count passing INT32_MAX wraps
// to negative offsets, which pass `< n` again while one in the middle fails.
// The same with i64 offsets (the check's constants take the offsets' type).
TEST_F(FastPaths, FullTileCheckOnI64Offsets) {
  auto kernel = build("shifted", kShiftedLoad,
                      {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), int_arg(ir::Scalar::I64),
                       int_arg(ir::Scalar::I64), const_int(32)});
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i) + 0.5f;
  struct Case {
    int64_t start, n;
  } cases[] = {{0, 32}, {int64_t{1} << 40, (int64_t{1} << 40) + 20}, {INT64_MAX - 10, INT64_MAX}};
  for (const Case& cs : cases) {
    std::vector<float> out(32, -9.0f);
    const int64_t grid[3] = {1, 1, 1};
    kernel->launch(grid, {pointer(x.data()), pointer(out.data()), integer(cs.start), integer(cs.n)});
    for (int i = 0; i < 32; ++i) {
      int64_t offs = static_cast<int64_t>(static_cast<uint64_t>(cs.start) + static_cast<uint64_t>(i));
      ASSERT_EQ(out[i], offs < cs.n ? x[i] : -1.0f) << "start " << cs.start << " element " << i;
    }
  }
}

TEST_F(FastPaths, FullTileCheckSeesWrappingCounts) {
  auto kernel = build("shifted", kShiftedLoad,
                      {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), int_arg(), int_arg(), const_int(64)});
  EXPECT_NE(kernel->stages.source.find("const bool full"), std::string::npos) << kernel->stages.source;
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i);
  struct Case {
    int64_t start, n;
  } cases[] = {{0, 64}, {0, 1000}, {0, 50}, {-5, 0}, {INT32_MAX - 10, INT32_MAX}, {INT32_MAX - 63, INT32_MAX}};
  for (const Case& cs : cases) {
    std::vector<float> out(64, -9.0f);
    const int64_t grid[3] = {1, 1, 1};
    kernel->launch(grid, {pointer(x.data()), pointer(out.data()), integer(cs.start), integer(cs.n)});
    for (int i = 0; i < 64; ++i) {
      int32_t offs = static_cast<int32_t>(static_cast<uint32_t>(cs.start) + static_cast<uint32_t>(i));
      float want = offs < cs.n ? x[i] : -1.0f;
      ASSERT_EQ(out[i], want) << "start " << cs.start << " n " << cs.n << " element " << i;
    }
  }
}

// 2-D tiles with row and column bounds, loaded and stored with masks; rows
// past M and columns past N stay untouched.
TEST_F(FastPaths, TwoDimensionalMasksFullAndPartialTiles) {
  auto kernel = build("scale",
                      "def scale(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):\n"
                      "    rows = tl.program_id(0) * BM + tl.arange(0, BM)\n"
                      "    cols = tl.program_id(1) * BN + tl.arange(0, BN)\n"
                      "    offs = rows[:, None] * stride + cols[None, :]\n"
                      "    mask = (rows[:, None] < M) & (cols[None, :] < N)\n"
                      "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
                      "    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)\n",
                      {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), int_arg(), int_arg(), int_arg(),
                       const_int(16), const_int(32)});
  const int64_t M = 40, N = 70, stride = 80;
  std::vector<float> x(M * stride), out(M * stride, -3.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 101);
  const int64_t grid[3] = {(M + 15) / 16, (N + 31) / 32, 1};
  kernel->launch(grid, {pointer(x.data()), pointer(out.data()), integer(M), integer(N), integer(stride)});
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < stride; ++c) {
      float want = c < N ? x[r * stride + c] * 2.0f + 1.0f : -3.0f;
      ASSERT_EQ(out[r * stride + c], want) << r << "," << c;
    }
}

// --- reductions ------------------------------------------------------------------------------------------

// Sums, maxima and argmaxes along 1024-wide rows (16 lane steps of 64) and
// down columns; values are small integers, so every order sums exactly.
TEST_F(FastPaths, LongRowReductions) {
  auto kernel = build("reduce_rows",
                      "def reduce_rows(x_ptr, out_ptr, idx_ptr, R: tl.constexpr, C: tl.constexpr):\n"
                      "    rows = tl.arange(0, R)\n"
                      "    cols = tl.arange(0, C)\n"
                      "    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :])\n"
                      "    tl.store(out_ptr + rows, tl.sum(x, axis=1))\n"
                      "    tl.store(out_ptr + R + rows, tl.max(x, axis=1))\n"
                      "    tl.store(out_ptr + 2 * R + cols, tl.sum(x, axis=0))\n"
                      "    tl.store(idx_ptr + rows, tl.argmax(x, axis=1))\n",
                      {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::I32), const_int(4),
                       const_int(1024)});
  const int R = 4, C = 1024;
  std::vector<float> x(R * C), out(2 * R + C);
  std::vector<int32_t> idx(R);
  for (int i = 0; i < R * C; ++i) x[i] = static_cast<float>((i * 37) % 23) - 11.0f;
  x[1 * C + 900] = 50.0f, x[1 * C + 77] = 50.0f;  // a tie: the lower index wins
  x[3 * C + 1023] = 60.0f;
  const int64_t grid[3] = {1, 1, 1};
  kernel->launch(grid, {pointer(x.data()), pointer(out.data()), pointer(idx.data())});
  for (int r = 0; r < R; ++r) {
    float sum = 0, mx = -INFINITY;
    int arg = 0;
    for (int c = 0; c < C; ++c) {
      sum += x[r * C + c];
      if (x[r * C + c] > mx) mx = x[r * C + c], arg = c;
    }
    EXPECT_EQ(out[r], sum) << r;
    EXPECT_EQ(out[R + r], mx) << r;
    EXPECT_EQ(idx[r], arg) << r;
  }
  for (int c = 0; c < C; ++c) {
    float sum = 0;
    for (int r = 0; r < R; ++r) sum += x[r * C + c];
    ASSERT_EQ(out[2 * R + c], sum) << c;
  }
}

}  // namespace
}  // namespace tegula::runtime
