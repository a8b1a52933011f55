// Work count (passes/work_count.h): bytes and operations of kernels written
// by hand, at given grids and scalar arguments, against counts worked out on
// paper. tests/python/test_report.py checks compiled kernels against the
// benchmark's formulas.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir_samples.h"
#include "passes/work_count.h"

namespace tegula::passes {
namespace {

LaunchValues launch(int64_t programs, std::vector<std::optional<int64_t>> scalars) {
  LaunchValues v;
  v.grid = {programs, 1, 1};
  v.scalars = std::move(scalars);
  return v;
}

TEST(WorkCount, MaskedTailCountsOnlyTheTrueLanes) {
  const int64_t n = 3000;  // three programs of 1024 lanes, the last one 952 in bounds
  WorkCount c = count_work(ir::samples::vector_add(), launch(3, {std::nullopt, std::nullopt, std::nullopt, n}));
  EXPECT_EQ(c.loaded_bytes, 2 * n * 4);
  EXPECT_EQ(c.stored_bytes, n * 4);
  EXPECT_EQ(c.params[0].loaded_bytes, n * 4);
  EXPECT_EQ(c.params[1].loaded_bytes, n * 4);
  EXPECT_EQ(c.params[2].stored_bytes, n * 4);
  EXPECT_EQ(c.params[2].loaded_bytes, 0);
  EXPECT_EQ(c.arithmetic_ops, 3 * 1024);  // the add runs on every lane, masked or not
  EXPECT_EQ(c.transcendental_ops, 0);
  EXPECT_TRUE(c.known);
  EXPECT_TRUE(c.notes.empty());
}

TEST(WorkCount, UnknownScalarMasksCountWholeTilesAndSaySo) {
  WorkCount c =
      count_work(ir::samples::vector_add(), launch(3, {std::nullopt, std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(c.loaded_bytes, 2 * 3 * 1024 * 4);
  ASSERT_EQ(c.notes.size(), 3u);  // one note per place: the two loads and the store
  EXPECT_EQ(c.notes[0],
            "add.py:5:9: load: the mask depends on loaded data or on an argument the launch does not give: whole "
            "tiles counted (an upper bound)");
}

TEST(WorkCount, OverBudgetFallsBackToWholeTiles) {
  WorkCount c =
      count_work(ir::samples::vector_add(), launch(3, {std::nullopt, std::nullopt, std::nullopt, 3000}), 2000);
  EXPECT_EQ(c.stored_bytes, 3 * 1024 * 4);
  ASSERT_FALSE(c.notes.empty());
  EXPECT_NE(c.notes[0].find("too large"), std::string::npos) << c.notes[0];
}

// A K loop of dots with a masked tail, the bound an argument; exp and a
// reduction after it.
const char* kLoop = R"(kernel @k(%a: ptr<f16>, %out: ptr<f32>, %K: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 32} : i32
  %2 = constant {value = 0.0} : tile<16x16xf32>
  %3 = for %0, %K, %1, %2 : tile<16x16xf32> {
  ^bb(%4: i32, %5: tile<16x16xf32>):
    %6 = arange {start = 0, end = 32} : tile<32xi32>
    %7 = splat %4 : tile<32xi32>
    %8 = add %7, %6 : tile<32xi32>
    %9 = splat %K : tile<32xi32>
    %10 = cmp %8, %9 {pred = "lt"} : tile<32xi1>
    %11 = splat %a : tile<32xptr<f16>>
    %12 = addptr %11, %8 : tile<32xptr<f16>>
    %13 = load %12, %10 : tile<32xf16>
    %14 = constant {value = 0.0} : tile<16x32xf16>
    %15 = constant {value = 0.0} : tile<32x16xf16>
    %16 = dot %14, %15, %5 : tile<16x16xf32>
    yield %16
  }
  %17 = exp %3 : tile<16x16xf32>
  %18 = reduce %17 {axis = 1} : tile<16xf32> {
  ^bb(%19: f32, %20: f32):
    %21 = add %19, %20 : f32
    yield %21
  }
  %22 = arange {start = 0, end = 16} : tile<16xi32>
  %23 = splat %out : tile<16xptr<f32>>
  %24 = addptr %23, %22 : tile<16xptr<f32>>
  store %24, %18
  return
}
)";

TEST(WorkCount, LoopTripsComeFromTheArgumentsAndMasksFromTheInductionVariable) {
  const int64_t K = 100;  // trips at 0, 32, 64, 96: the last has 4 lanes
  WorkCount c = count_work(ir::parse(kLoop), launch(2, {std::nullopt, std::nullopt, K}));
  EXPECT_EQ(c.params[0].loaded_bytes, 2 * K * 2);
  EXPECT_EQ(c.dot_ops, 2 * 4 * (2 * 16 * 16 * 32));
  EXPECT_EQ(c.transcendental_ops, 2 * 256);
  EXPECT_EQ(c.arithmetic_ops, 2 * 256);  // the combiner's add once per reduced element
  EXPECT_EQ(c.params[1].stored_bytes, 2 * 16 * 4);
  EXPECT_TRUE(c.known);
}

TEST(WorkCount, AnUnknownTripCountIsSaidNotGuessed) {
  WorkCount c = count_work(ir::parse(kLoop), launch(1, {std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_FALSE(c.known);
  EXPECT_EQ(c.dot_ops, 0);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("trip count"), std::string::npos) << c.notes[0];
  ir::Function fn = ir::parse(kLoop);
  std::string text = to_string(c, fn);
  EXPECT_NE(text.find("known no\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  out loaded 0 stored 64\n"), std::string::npos) << text;
}

TEST(WorkCount, ABranchOnLoadedDataCountsBoth) {
  ir::Function fn = ir::parse(R"(kernel @k(%x: ptr<f32>) {
  %0 = load %x : f32
  %1 = constant {value = 0.0} : f32
  %2 = cmp %0, %1 {pred = "gt"} : i1
  if %2 {
    store %x, %1
    yield
  } else {
    %3 = sqrt %0 : f32
    yield
  }
  return
}
)");
  WorkCount c = count_work(fn, launch(4, {std::nullopt}));
  EXPECT_EQ(c.loaded_bytes, 16);
  EXPECT_EQ(c.stored_bytes, 16);
  EXPECT_EQ(c.arithmetic_ops, 4);  // the float compare
  EXPECT_EQ(c.transcendental_ops, 4);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("both branches"), std::string::npos);
}

TEST(WorkCount, NegativeStepsAndWhileLoopsOnIntegerReductionsRun) {
  // for j in range(9, 0, -3): 9, 6, 3 -> three loads; then halve a tile of
  // 40s until its sum is at most 4: 40 -> 20 -> 10 -> 5 -> 2 (sum 8) -> 1
  // (sum 4): five stores.
  ir::Function fn = ir::parse(R"(kernel @k(%x: ptr<f32>, %start: i32) {
  %0 = constant {value = 9} : i32
  %1 = constant {value = 0} : i32
  %2 = constant {value = -3} : i32
  for %0, %1, %2 {
  ^bb(%3: i32):
    %4 = load %x : f32
    yield
  }
  %5 = splat %start : tile<4xi32>
  %6 = constant {value = 4} : i32
  %7 = constant {value = 2} : tile<4xi32>
  %17 = constant {value = 0.0} : f32
  %8 = while %5 : tile<4xi32> {
  ^bb(%9: tile<4xi32>):
    %10 = reduce %9 {axis = 0} : i32 {
    ^bb(%11: i32, %12: i32):
      %13 = add %11, %12 : i32
      yield %13
    }
    %14 = cmp %10, %6 {pred = "gt"} : i1
    condition %14, %9
  } do {
  ^bb(%15: tile<4xi32>):
    store %x, %17
    %16 = div %15, %7 : tile<4xi32>
    yield %16
  }
  return
}
)");
  WorkCount c = count_work(fn, launch(1, {std::nullopt, 40}));
  EXPECT_TRUE(c.known) << to_string(c, fn);
  EXPECT_EQ(c.loaded_bytes, 3 * 4);
  EXPECT_EQ(c.stored_bytes, 5 * 4);
}

}  // namespace
}  // namespace tegula::passes
