// Occupancy tuning arithmetic (runtime/cuda_occupancy.h): reading ptxas's
// report and the register cap that buys one more resident block; and the
// rebuild it asks NVRTC for (runtime/cuda_compile.h), which only happens, and
// is profiled, when the first build shows a block to gain.
#include <gtest/gtest.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "support/compile_profile.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/occupancy.h"

namespace tegula::backends::cuda {
namespace {

TEST(CudaOccupancy, ParsesPtxasReport) {
  std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'tegula_kernel' for 'sm_90a'\n"
      "ptxas info    : Function properties for tegula_kernel\n"
      "ptxas         .     0 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 85 registers, used 1 barriers\n";
  std::optional<RegisterReport> r = parse_ptxas_report(log);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->registers, 85);
  EXPECT_EQ(r->spill_stores, 24);
  EXPECT_EQ(r->spill_loads, 16);
  EXPECT_EQ(r->stack_bytes, 0);
  std::optional<RegisterReport> stack =
      parse_ptxas_report("ptxas info    : Used 48 registers, used 1 barriers, 8 bytes cumulative stack size\n");
  ASSERT_TRUE(stack.has_value());
  EXPECT_EQ(stack->registers, 48);
  EXPECT_EQ(stack->stack_bytes, 8);
  EXPECT_FALSE(parse_ptxas_report("no report here").has_value());
}

TEST(CudaOccupancy, ResidentBlocks) {
  // 85 registers round up to 88 per thread (256 per warp): 4-warp blocks, 5 fit.
  EXPECT_EQ(resident_blocks(90, 128, 85), 5);
  EXPECT_EQ(resident_blocks(90, 128, 80), 6);
  EXPECT_EQ(resident_blocks(90, 256, 70), 3);
  // Thread-limited: 32 registers, 16 blocks of 128 threads = 2048 threads.
  EXPECT_EQ(resident_blocks(90, 128, 32), 16);
  EXPECT_EQ(resident_blocks(89, 128, 32), 12);  // 1536 threads per multiprocessor
}

TEST(CudaOccupancy, CapForNextBlock) {
  // The fused chain on the H200: 90 -> 80 registers, 5 -> 6 blocks.
  EXPECT_EQ(register_cap_for_next_block(90, 128, 90), std::optional<int>(80));
  EXPECT_EQ(register_cap_for_next_block(90, 256, 70), std::optional<int>(64));
  // A cap taking away more than an eighth of the registers is not tried.
  EXPECT_EQ(register_cap_for_next_block(90, 128, 100), std::optional<int>(96));  // 4 -> 5 blocks
  EXPECT_EQ(register_cap_for_next_block(90, 128, 112), std::nullopt);           // 5 blocks would need 96
  // Already limited by threads, not registers.
  EXPECT_EQ(register_cap_for_next_block(90, 128, 32), std::nullopt);
  for (int regs = 24; regs <= 255; ++regs)
    for (int threads : {32, 64, 128, 256, 512, 1024}) {
      std::optional<int> cap = register_cap_for_next_block(90, threads, regs);
      if (!cap) continue;
      EXPECT_LT(*cap, regs);
      EXPECT_GE(*cap * 8, regs * 7);
      EXPECT_GT(resident_blocks(90, threads, *cap), resident_blocks(90, threads, regs)) << regs << " " << threads;
    }
}

// LIVE values stay live through a loop: 42 of them take about 91 registers
// on sm_90 (5 blocks of 128 threads per multiprocessor), and asking for 6
// blocks fits them in 80 or fewer without spills on CUDA 13.0.
constexpr const char* kRegisterHungry = R"(
#ifdef TG_MIN_BLOCKS
#define TG_LAUNCH_BOUNDS(threads) __launch_bounds__(threads, TG_MIN_BLOCKS)
#else
#define TG_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#endif
extern "C" __global__ void TG_LAUNCH_BOUNDS(128) tegula_kernel(const float* x, float* y, int n) {
  float acc[LIVE];
#pragma unroll
  for (int i = 0; i < LIVE; ++i) acc[i] = x[threadIdx.x + i * 128];
  for (int k = 0; k < n; ++k) {
#pragma unroll
    for (int i = 0; i < LIVE; ++i) acc[i] = acc[i] * x[k + i] + acc[(i + 7) % LIVE];
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < LIVE; ++i) s += acc[i] * (i + 1);
  y[blockIdx.x * 128 + threadIdx.x] = s;
}
)";

std::string with_live(int live) { return "#define LIVE " + std::to_string(live) + "\n" + kRegisterHungry; }

std::vector<std::string> phase_names(const CompileProfile& profile) {
  std::vector<std::string> names;
  for (const CompileProfile::Phase& phase : profile.phases) names.push_back(phase.name);
  return names;
}

bool nvrtc_loads(std::string* why) {
  try {
    nvrtc();
    return true;
  } catch (const std::exception& e) {  // a DriverError: no libnvrtc here
    *why = e.what();
    return false;
  }
}

TEST(CudaOccupancy, RebuildsOnlyWhenABlockCanBeGainedAndProfilesTheRebuild) {
  std::string why;
  if (!nvrtc_loads(&why)) GTEST_SKIP() << "NVRTC is not available: " << why;
  NvrtcTarget target = resolve_target(0, 90);

  CompileProfile tuned;
  Image image = compile_to_image(with_live(42), "hungry", target, false, false, true, 128, &tuned);
  std::optional<RegisterReport> report = parse_ptxas_report(image.log);
  ASSERT_TRUE(report.has_value()) << image.log;
  EXPECT_NE(image.log.find("tegula: occupancy: "), std::string::npos) << image.log;
  EXPECT_EQ(phase_names(tuned), (std::vector<std::string>{"nvrtc", "nvrtc occupancy"}));
  if (image.log.find(": kept\n") != std::string::npos) {  // the rebuild was kept: one block more
    EXPECT_EQ(resident_blocks(90, 128, report->registers), 6) << image.log;
    EXPECT_EQ(report->spill_stores, 0);
  }

  // Few registers: thread-limited already, so one NVRTC run and no note.
  CompileProfile small;
  Image light = compile_to_image(with_live(2), "light", target, false, false, true, 128, &small);
  EXPECT_EQ(light.log.find("tegula: occupancy"), std::string::npos) << light.log;
  EXPECT_EQ(phase_names(small), std::vector<std::string>{"nvrtc"});

  // Not asked for (a kernel with dots): one run whatever its registers.
  CompileProfile untuned;
  Image plain = compile_to_image(with_live(42), "hungry", target, false, false, true, 0, &untuned);
  EXPECT_EQ(plain.log.find("tegula: occupancy"), std::string::npos) << plain.log;
  EXPECT_EQ(phase_names(untuned), std::vector<std::string>{"nvrtc"});
}

}  // namespace
}  // namespace tegula::backends::cuda
