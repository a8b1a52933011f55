// The scan, sort, gather and histogram ops in the IR: text round trip, the
// attribute defaults, and the verifier rules of ir/scan_ops.h (exact
// messages). Their execution is tested from Python (test_ops_scan.py).
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/scan_ops.h"
#include "ir/verifier.h"

namespace tegula::ir {
namespace {

std::string without_locations(const Function& fn) {
  PrintOptions options;
  options.locations = false;
  return print(fn, options);
}

constexpr const char* kScans = R"(kernel @k(%p: ptr<f32>, %q: ptr<i32>) {
  %0 = arange {start = 0, end = 16} : tile<16xi32>
  %1 = splat %p : tile<16xptr<f32>>
  %2 = addptr %1, %0 : tile<16xptr<f32>>
  %3 = load %2 : tile<16xf32>
  %4, %5 = scan %3, %0 {axis = 0, reverse = 1} : tile<16xf32>, tile<16xi32> {
  ^bb(%6: f32, %7: i32, %8: f32, %9: i32):
    %10 = add %6, %8 : f32
    %11 = max %7, %9 : i32
    yield %10, %11
  }
  %12 = sort %4 {axis = 0, descending = 1} : tile<16xf32>
  %13 = gather %12, %5 {axis = 0} : tile<16xf32>
  %14 = constant {value = 1} : tile<16xi1>
  %15 = histogram %0, %14 : tile<8xi32>
  %16 = histogram %5 : tile<32xi32>
  store %2, %13
  print %15, %16 {prefix = ""}
  return
}
)";

TEST(ScanIr, TextRoundTripsAndVerifies) {
  Function fn = parse(kScans);
  EXPECT_EQ(verify(fn), "");
  EXPECT_EQ(without_locations(fn), kScans);
  EXPECT_EQ(without_locations(parse(without_locations(fn))), kScans);
}

TEST(ScanIr, FlagsDefaultToZero) {
  Function fn = parse(R"(kernel @k(%x: i32) {
  %0 = arange {start = 0, end = 4} : tile<4xi32>
  %1 = sort %0 {axis = 0} : tile<4xi32>
  %2 = sort %0 {axis = 0, descending = 1} : tile<4xi32>
  return
}
)");
  EXPECT_EQ(verify(fn), "");
  const Block& body = fn.block(fn.body());
  EXPECT_FALSE(sort_descending(fn.op(body.ops[1])));
  EXPECT_TRUE(sort_descending(fn.op(body.ops[2])));
}

// The message the verifier gives for `op_lines` in a kernel over
// %a: tile<4x8xf32>, %i: tile<4x8xi32>, %m: tile<4x8xi1>, %f: f32.
std::string problem(const std::string& op_lines) {
  std::string text = R"(kernel @k(%f: f32, %y: i32) {
  %a = splat %f : tile<4x8xf32>
  %i = splat %y : tile<4x8xi32>
  %m = constant {value = 1} : tile<4x8xi1>
  )" + op_lines + R"(
  return
}
)";
  return verify(parse(text));
}

std::string sum_scan(const std::string& head, const std::string& arg_type = "f32", const std::string& yield = "%c") {
  return head + " {\n  ^bb(%x: " + arg_type + ", %z: " + arg_type + "):\n    %c = add %x, %z : " + arg_type +
         "\n    yield " + yield + "\n  }";
}

TEST(ScanIr, ScanRules) {
  EXPECT_EQ(problem(sum_scan("%r = scan %a {axis = 1, reverse = 0} : tile<4x8xf32>")), "");
  EXPECT_EQ(problem(sum_scan("%r = scan %a {axis = 2} : tile<4x8xf32>")), "`scan`: axis 2 is out of range for rank 2");
  EXPECT_EQ(problem(sum_scan("%r = scan %a : tile<4x8xf32>")), "`scan`: needs an integer attribute `axis`");
  EXPECT_EQ(problem(sum_scan("%r = scan %a {axis = 0, reverse = 2} : tile<4x8xf32>")),
            "`scan`: attribute `reverse` must be 0 or 1, got 2");
  EXPECT_EQ(problem(sum_scan("%r = scan %a {axis = 0} : tile<4x8xi32>")),
            "`scan`: result 0 must be tile<4x8xf32>, got tile<4x8xi32>");
  EXPECT_EQ(problem(sum_scan("%r = scan %a {axis = 0} : tile<4x8xf32>", "i32")),
            "`scan`: region argument 0 has type i32, expected f32 (accumulated values, then new values)");
  EXPECT_EQ(problem("%r = scan %a {axis = 0} : tile<4x8xf32> {\n  ^bb(%x: f32, %z: f32):\n"
                    "    %c = cmp %x, %z {pred = \"lt\"} : i1\n    yield %c\n  }"),
            "`scan`: the combiner yields i1 as value 0, expected f32");
  EXPECT_EQ(problem("%s = scan %f {axis = 0} : f32 {\n  ^bb(%x: f32, %z: f32):\n    yield %x\n  }"),
            "`scan`: operands must be tiles, got f32");
}

TEST(ScanIr, SortGatherHistogramRules) {
  EXPECT_EQ(problem("%r = sort %a {axis = 0, descending = 1} : tile<4x8xf32>"), "");
  EXPECT_EQ(problem("%r = sort %a {axis = -1} : tile<4x8xf32>"), "`sort`: axis -1 is out of range for rank 2");
  EXPECT_EQ(problem("%r = sort %a {axis = 1} : tile<4x8xi32>"),
            "`sort`: result 0 must be tile<4x8xf32>, got tile<4x8xi32>");
  EXPECT_EQ(problem("%r = gather %a, %i {axis = 1} : tile<4x8xf32>"), "");
  EXPECT_EQ(problem("%j = reshape %i : tile<8x4xi32>\n  %r = gather %a, %j {axis = 0} : tile<8x4xf32>"),
            "`gather`: index (tile<8x4xi32>) must match src (tile<4x8xf32>) in every dimension but axis 0");
  EXPECT_EQ(problem("%j = reshape %i : tile<32xi32>\n  %r = gather %a, %j {axis = 0} : tile<32xf32>"),
            "`gather`: index (tile<32xi32>) must have the rank of src (tile<4x8xf32>)");
  EXPECT_EQ(problem("%r = gather %a, %a {axis = 0} : tile<4x8xf32>"),
            "`gather`: index must be a tile of integers, got tile<4x8xf32>");
  EXPECT_EQ(problem("%r = gather %a, %i {axis = 0} : tile<4x8xi32>"),
            "`gather`: result 0 must be tile<4x8xf32>, got tile<4x8xi32>");
  EXPECT_EQ(problem("%r = histogram %i, %m : tile<16xi32>"), "");
  EXPECT_EQ(problem("%r = histogram %a : tile<16xi32>"), "`histogram`: input must be a tile of integers, got tile<4x8xf32>");
  EXPECT_EQ(problem("%r = histogram %i, %i : tile<16xi32>"),
            "`histogram`: mask must be tile<4x8xi1>, got tile<4x8xi32>");
  EXPECT_EQ(problem("%r = histogram %i : tile<16xi64>"),
            "`histogram`: result must be a 1-d tile of i32 (one count per bin), got tile<16xi64>");
}

}  // namespace
}  // namespace tegula::ir
