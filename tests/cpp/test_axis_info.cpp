// Axis-info facts of the index computations real kernels make, asserted
// exactly for each value.
#include <gtest/gtest.h>

#include <map>

#include "ir/parser.h"
#include "pass_test_util.h"
#include "passes/axis_info.h"

namespace tegula::passes {
namespace {

// Parses `text` and answers describe() for values by their printed name.
class Facts {
 public:
  explicit Facts(const std::string& text) : fn_(ir::parse(text)), analysis_(fn_) {
    names_ = testing::printed_names(fn_);
  }

  std::string operator()(const std::string& name) const { return analysis_.describe(names_.at(name)); }

 private:
  ir::Function fn_;
  AxisInfoAnalysis analysis_;
  std::map<std::string, ir::ValueId> names_;
};

constexpr const char* kBig = "4611686018427387904";  // divisibility of 0: 2^62

TEST(AxisInfo, VectorAddOffsetsMasksAndPointers) {
  Facts facts(R"(kernel @add(%x: ptr<f32> div(16), %n: i32 div(16), %m: i32) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 1024} : i32
  %2 = mul %0, %1 : i32
  %3 = arange {start = 0, end = 1024} : tile<1024xi32>
  %4 = splat %2 : tile<1024xi32>
  %5 = add %4, %3 : tile<1024xi32>
  %6 = splat %n : tile<1024xi32>
  %7 = cmp %5, %6 {pred = "lt"} : tile<1024xi1>
  %8 = splat %m : tile<1024xi32>
  %9 = cmp %5, %8 {pred = "lt"} : tile<1024xi1>
  %10 = cmp %6, %5 {pred = "gt"} : tile<1024xi1>
  %11 = cmp %5, %6 {pred = "le"} : tile<1024xi1>
  %12 = splat %x : tile<1024xptr<f32>>
  %13 = addptr %12, %5 : tile<1024xptr<f32>>
  %14 = load %13, %7 : tile<1024xf32>
  %15 = arange {start = 4, end = 12} : tile<8xi32>
  return
}
)");
  EXPECT_EQ(facts("%x"), "contig=[1] div=[16] const=[1]");
  EXPECT_EQ(facts("%n"), "contig=[1] div=[16] const=[1]");
  EXPECT_EQ(facts("%m"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%0"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%1"), "contig=[1] div=[1024] const=[1]");
  EXPECT_EQ(facts("%2"), "contig=[1] div=[1024] const=[1]");
  EXPECT_EQ(facts("%3"), std::string("contig=[1024] div=[") + kBig + "] const=[1]");
  EXPECT_EQ(facts("%4"), "contig=[1] div=[1024] const=[1024]");
  EXPECT_EQ(facts("%5"), "contig=[1024] div=[1024] const=[1]");
  // offs < n with n divisible by 16: uniform over aligned blocks of 16.
  EXPECT_EQ(facts("%7"), "contig=[1] div=[1] const=[16]");
  EXPECT_EQ(facts("%9"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%10"), "contig=[1] div=[1] const=[16]");
  // offs <= n flips inside a block (at offs == n): no uniformity.
  EXPECT_EQ(facts("%11"), "contig=[1] div=[1] const=[1]");
  // 1024 consecutive f32 from a 16-byte aligned address.
  EXPECT_EQ(facts("%13"), "contig=[1024] div=[16] const=[1]");
  EXPECT_EQ(facts("%14"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%15"), "contig=[8] div=[4] const=[1]");
}

TEST(AxisInfo, TwoDimensionalOffsetsWithAStride) {
  // offs = rows[:, None] * stride + cols[None, :], stride divisible by 16.
  Facts facts(R"(kernel @mm(%a: ptr<f16> div(16), %stride: i32 div(16)) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 64} : i32
  %2 = mul %0, %1 : i32
  %3 = splat %2 : tile<64xi32>
  %4 = arange {start = 0, end = 64} : tile<64xi32>
  %5 = add %3, %4 : tile<64xi32>
  %6 = expand_dims %5 {axis = 1} : tile<64x1xi32>
  %7 = splat %stride : tile<64x1xi32>
  %8 = mul %6, %7 : tile<64x1xi32>
  %9 = broadcast %8 : tile<64x32xi32>
  %10 = arange {start = 0, end = 32} : tile<32xi32>
  %11 = expand_dims %10 {axis = 0} : tile<1x32xi32>
  %12 = broadcast %11 : tile<64x32xi32>
  %13 = add %9, %12 : tile<64x32xi32>
  %14 = splat %a : tile<64x32xptr<f16>>
  %15 = addptr %14, %13 : tile<64x32xptr<f16>>
  %16 = trans %15 {perm = [1, 0]} : tile<32x64xptr<f16>>
  return
}
)");
  EXPECT_EQ(facts("%5"), "contig=[64] div=[64] const=[1]");
  EXPECT_EQ(facts("%6"), "contig=[64, 1] div=[64, 1] const=[1, 1]");
  EXPECT_EQ(facts("%8"), "contig=[1, 1] div=[16, 16] const=[1, 1]");
  EXPECT_EQ(facts("%9"), "contig=[1, 1] div=[16, 16] const=[1, 32]");
  EXPECT_EQ(facts("%11"), std::string("contig=[1, 32] div=[1, ") + kBig + "] const=[1, 1]");
  EXPECT_EQ(facts("%12"), std::string("contig=[1, 32] div=[1, ") + kBig + "] const=[64, 1]");
  EXPECT_EQ(facts("%13"), "contig=[1, 32] div=[1, 16] const=[1, 1]");
  // Rows of 32 consecutive f16 (64 bytes) starting 16-byte aligned.
  EXPECT_EQ(facts("%15"), "contig=[1, 32] div=[2, 16] const=[1, 1]");
  EXPECT_EQ(facts("%16"), "contig=[32, 1] div=[16, 2] const=[1, 1]");
}

TEST(AxisInfo, DivisionRemainderAndShiftsByPowersOfTwo) {
  Facts facts(R"(kernel @k(%n: i32 div(16)) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 256} : i32
  %2 = mul %0, %1 : i32
  %3 = splat %2 : tile<256xi32>
  %4 = arange {start = 0, end = 256} : tile<256xi32>
  %5 = add %3, %4 : tile<256xi32>
  %6 = constant {value = 16} : tile<256xi32>
  %7 = rem %5, %6 : tile<256xi32>
  %8 = div %5, %6 : tile<256xi32>
  %9 = constant {value = 2} : tile<256xi32>
  %10 = shl %5, %9 : tile<256xi32>
  %11 = shr %5, %9 : tile<256xi32>
  %12 = constant {value = 7} : tile<256xi32>
  %13 = and %5, %12 : tile<256xi32>
  %14 = mul %5, %9 : tile<256xi32>
  %15 = constant {value = 1} : tile<256xi32>
  %16 = mul %5, %15 : tile<256xi32>
  %17 = constant {value = 3} : tile<256xi32>
  %18 = div %5, %17 : tile<256xi32>
  %19 = splat %n : tile<256xi32>
  %20 = div %19, %6 : tile<256xi32>
  return
}
)");
  EXPECT_EQ(facts("%7"), "contig=[16] div=[16] const=[1]");
  EXPECT_EQ(facts("%8"), "contig=[1] div=[1] const=[16]");
  EXPECT_EQ(facts("%10"), "contig=[1] div=[4] const=[1]");
  EXPECT_EQ(facts("%11"), "contig=[1] div=[1] const=[4]");
  EXPECT_EQ(facts("%13"), "contig=[8] div=[8] const=[1]");
  EXPECT_EQ(facts("%14"), "contig=[1] div=[2] const=[1]");
  EXPECT_EQ(facts("%16"), "contig=[256] div=[256] const=[1]");
  EXPECT_EQ(facts("%18"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%20"), "contig=[1] div=[1] const=[256]");
}

TEST(AxisInfo, LoopInductionVariablesAndLoopCarriedValues) {
  Facts facts(R"(kernel @k(%n: i32, %x: f32) {
  %0 = constant {value = 16} : i32
  %1 = constant {value = 8} : i32
  %2 = constant {value = 0} : i32
  %3 = for %0, %n, %1, %2 : i32 {
  ^bb(%4: i32, %5: i32):
    %6 = add %5, %1 : i32
    yield %6
  }
  %7 = for %2, %n, %0, %2 : i32 {
  ^bb(%8: i32, %9: i32):
    %10 = splat %8 : tile<32xi32>
    %11 = arange {start = 0, end = 32} : tile<32xi32>
    %12 = add %10, %11 : tile<32xi32>
    yield %9
  }
  %13 = splat %x : tile<32xf32>
  return
}
)");
  EXPECT_EQ(facts("%4"), "contig=[1] div=[8] const=[1]");
  // 0, then +8 each iteration: the meet of the init (0) and the yield.
  EXPECT_EQ(facts("%5"), "contig=[1] div=[8] const=[1]");
  EXPECT_EQ(facts("%3"), "contig=[1] div=[8] const=[1]");
  EXPECT_EQ(facts("%8"), "contig=[1] div=[16] const=[1]");
  EXPECT_EQ(facts("%12"), "contig=[32] div=[16] const=[1]");
  EXPECT_EQ(facts("%13"), "contig=[1] div=[1] const=[1]");
}

// x % n for a uniform n divisible by 16: runs of 16 never wrap
// (`rows % M` in Triton-style matmuls keeps 16-element vector loads).
TEST(AxisInfo, RemainderByAUniformMultipleOf16) {
  Facts facts(R"(kernel @k(%n: i32 div(16), %m: i32) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 64} : i32
  %2 = mul %0, %1 : i32
  %3 = arange {start = 0, end = 64} : tile<64xi32>
  %4 = splat %2 : tile<64xi32>
  %5 = add %4, %3 : tile<64xi32>
  %6 = splat %n : tile<64xi32>
  %7 = rem %5, %6 : tile<64xi32>
  %8 = splat %m : tile<64xi32>
  %9 = rem %5, %8 : tile<64xi32>
  return
}
)");
  EXPECT_EQ(facts("%7"), "contig=[16] div=[16] const=[1]");
  EXPECT_EQ(facts("%9"), "contig=[1] div=[1] const=[1]");
}

// A pointer tile advanced by a uniform stride keeps its runs; its
// divisibility is what the start and the stride share. A value the body
// replaces by something unknown loses everything.
TEST(AxisInfo, LoopCarriedPointerTilesKeepTheirContiguity) {
  Facts facts(R"(kernel @k(%p: ptr<f16> div(16), %n: i32, %s: i32 div(4)) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = arange {start = 0, end = 64} : tile<64xi32>
  %3 = splat %p : tile<64xptr<f16>>
  %4 = addptr %3, %2 : tile<64xptr<f16>>
  %5 = splat %s : tile<64xi32>
  %6, %7 = for %0, %n, %1, %4, %2 : tile<64xptr<f16>>, tile<64xi32> {
  ^bb(%8: i32, %9: tile<64xptr<f16>>, %10: tile<64xi32>):
    %11 = addptr %9, %5 : tile<64xptr<f16>>
    %12 = load %9 : tile<64xf16>
    %13 = cast %12 : tile<64xi32>
    yield %11, %13
  }
  return
}
)");
  EXPECT_EQ(facts("%9"), "contig=[64] div=[8] const=[1]");
  EXPECT_EQ(facts("%6"), "contig=[64] div=[8] const=[1]");
  EXPECT_EQ(facts("%10"), "contig=[1] div=[1] const=[1]");
}

TEST(AxisInfo, SelectAndConversionsOfMaskedIndices) {
  Facts facts(R"(kernel @k(%n: i32 div(16), %p: ptr<i8> div(16)) {
  %0 = arange {start = 0, end = 128} : tile<128xi32>
  %1 = splat %n : tile<128xi32>
  %2 = cmp %0, %1 {pred = "lt"} : tile<128xi1>
  %3 = constant {value = 0} : tile<128xi32>
  %4 = select %2, %0, %3 : tile<128xi32>
  %5 = cast %0 : tile<128xi64>
  %6 = cast %0 : tile<128xf32>
  %7 = splat %p : tile<128xptr<i8>>
  %8 = addptr %7, %5 : tile<128xptr<i8>>
  return
}
)");
  EXPECT_EQ(facts("%2"), "contig=[1] div=[1] const=[16]");
  // Zeros where the mask is off break the runs of the arange.
  EXPECT_EQ(facts("%4"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%5"), std::string("contig=[128] div=[") + kBig + "] const=[1]");
  EXPECT_EQ(facts("%6"), "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts("%8"), "contig=[128] div=[16] const=[1]");
}

}  // namespace
}  // namespace tegula::passes
