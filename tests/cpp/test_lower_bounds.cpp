// Lower bounds of the offsets real kernels compute (passes/lower_bounds.h),
// asserted for each value by its printed name.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "ir/parser.h"
#include "pass_test_util.h"
#include "passes/lower_bounds.h"

namespace tegula::passes {
namespace {

class Bounds {
 public:
  Bounds(const std::string& text, std::vector<int> at_least_one) : fn_(ir::parse(text)), bounds_(fn_, at_least_one) {
    names_ = testing::printed_names(fn_);
  }

  std::optional<int64_t> operator()(const std::string& name) { return bounds_.of(names_.at(name)); }

 private:
  ir::Function fn_;
  LowerBounds bounds_;
  std::map<std::string, ir::ValueId> names_;
};

// A persistent matmul's tile offsets: cdiv of an extent, a loop over tiles
// from the program id by the program count, groups of rows.
TEST(LowerBounds, PersistentMatmulOffsets) {
  Bounds b(R"(kernel @k(%M: i32, %N: i32, %d: i32, %u: u32) {
  %0 = constant {value = 127} : i32
  %1 = add %N, %0 : i32
  %2 = constant {value = 128} : i32
  %3 = div %1, %2 : i32
  %4 = program_id {axis = 0} : i32
  %5 = num_programs {axis = 0} : i32
  %6 = mul %3, %M : i32
  for %4, %6, %5 {
  ^bb(%7: i32):
    %8 = div %7, %3 : i32
    %9 = rem %7, %3 : i32
    %10 = sub %M, %8 : i32
    %11 = rem %9, %10 : i32
    %12 = div %9, %10 : i32
    %13 = hint %10 {at_least = [1]} : i32
    %14 = div %9, %13 : i32
    %15 = constant {value = 3} : i32
    %16 = sub %4, %15 : i32
    %17 = max %16, %4 : i32
    yield
  }
  return
}
)",
           {0, 1});
  EXPECT_EQ(b("%M"), 1);             // an extent
  EXPECT_EQ(b("%d"), std::nullopt);  // an argument of unknown sign
  EXPECT_EQ(b("%u"), 0);             // unsigned
  EXPECT_EQ(b("%3"), 1);             // cdiv(N, 128) with N >= 1
  EXPECT_EQ(b("%7"), 0);             // the tile index, from the program id up
  EXPECT_EQ(b("%8"), 0);
  EXPECT_EQ(b("%9"), 0);
  EXPECT_EQ(b("%10"), std::nullopt);  // a difference of two values
  EXPECT_EQ(b("%11"), 0);             // a remainder takes its dividend's sign
  EXPECT_EQ(b("%12"), std::nullopt);  // a quotient by a value of unknown sign
  EXPECT_EQ(b("%13"), 1);             // tl.assume(group_rows > 0)
  EXPECT_EQ(b("%14"), 0);
  EXPECT_EQ(b("%16"), -3);
  EXPECT_EQ(b("%17"), 0);
}

}  // namespace
}  // namespace tegula::passes
