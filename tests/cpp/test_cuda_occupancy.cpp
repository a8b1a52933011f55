// Occupancy tuning arithmetic (runtime/cuda_occupancy.h): reading ptxas's
// report and the register cap that buys one more resident block.
#include <gtest/gtest.h>

#include "runtime/cuda_occupancy.h"

namespace tegula::runtime::cuda {
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

}  // namespace
}  // namespace tegula::runtime::cuda
