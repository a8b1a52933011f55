// Hints: the `hint` op's facts in the axis analysis, what tl.multiple_of,
// tl.max_contiguous, tl.max_constancy and tl.assume lower to (and their
// located errors), and that hints survive the optimization pipeline.
#include <gtest/gtest.h>

#include <map>

#include "ir/parser.h"
#include "ir/printer.h"
#include "lower_test_util.h"
#include "passes/axis_info.h"
#include "passes/pipeline.h"

using namespace tegula;
using namespace tegula::testing;
using ir::Scalar;

namespace {

// The facts of every value of `text` by printed name ("%3", "%x").
std::map<std::string, std::string> facts_of(const std::string& text) {
  ir::Function fn = ir::parse(text);
  passes::AxisInfoAnalysis analysis(fn);
  std::map<std::string, std::string> out;
  const ir::Block& body = fn.block(fn.body());
  for (size_t i = 0; i < body.args.size(); ++i) out["%" + fn.params[i].name] = analysis.describe(body.args[i]);
  int next = 0;
  for (ir::OpId id : body.ops)
    for (ir::ValueId r : fn.op(id).results) out["%" + std::to_string(next++)] = analysis.describe(r);
  return out;
}

void expect_error(const LowerResult& r, int line, int col, const std::string& message) {
  ASSERT_FALSE(r.ok()) << "expected an error, got IR:\n" << r.ir;
  // The code itself is asserted per message by tests/python/test_diagnostic_codes.py.
  std::string head = "kernel.py:" + std::to_string(line) + ":" + std::to_string(col) + ": error[E";
  EXPECT_EQ(r.error.rfind(head, 0), 0u) << r.error;
  EXPECT_EQ(r.error.substr(head.size() + 4, 3), "]: ") << r.error;
  EXPECT_NE(r.error.find(message), std::string::npos) << r.error;
}

}  // namespace

// Offsets from a runtime stride know nothing until the hints say so; each
// hint raises its fact to the promise, never lowers what is known.
TEST(AxisHints, HintsRaiseFactsOfRuntimeOffsets) {
  auto facts = facts_of(R"(kernel @k(%x: ptr<f32> div(16), %stride: i32) {
  %0 = program_id {axis = 0} : i32
  %1 = mul %0, %stride : i32
  %2 = arange {start = 0, end = 64} : tile<64xi32>
  %3 = splat %1 : tile<64xi32>
  %4 = add %3, %2 : tile<64xi32>
  %5 = hint %4 {divisibility = [16]} : tile<64xi32>
  %6 = hint %5 {contiguity = [16]} : tile<64xi32>
  %7 = splat %x : tile<64xptr<f32>>
  %8 = addptr %7, %5 : tile<64xptr<f32>>
  %9 = hint %2 {divisibility = [4], contiguity = [8], constancy = [2]} : tile<64xi32>
  %10 = hint %1 {divisibility = [32]} : i32
  %11 = hint %3 {constancy = [1024]} : tile<64xi32>
  return
}
)");
  EXPECT_EQ(facts["%4"], "contig=[64] div=[1] const=[1]");
  EXPECT_EQ(facts["%5"], "contig=[64] div=[16] const=[1]");
  EXPECT_EQ(facts["%6"], "contig=[64] div=[16] const=[1]");  // 64 known, 16 promised: 64
  EXPECT_EQ(facts["%8"], "contig=[64] div=[16] const=[1]");  // bytes: min(16, 16 * 4)
  // arange(0, 64) already has contiguity 64 and divisibility 2^62.
  EXPECT_EQ(facts["%9"], "contig=[64] div=[4611686018427387904] const=[2]");
  EXPECT_EQ(facts["%10"], "contig=[1] div=[32] const=[1]");
  EXPECT_EQ(facts["%11"], "contig=[1] div=[1] const=[64]");  // runs never exceed the dimension
}

TEST(AxisHints, TwoDimensionalAndLoadedIndices) {
  auto facts = facts_of(R"(kernel @k(%idx: ptr<i32> div(16)) {
  %0 = arange {start = 0, end = 128} : tile<128xi32>
  %1 = splat %idx : tile<128xptr<i32>>
  %2 = addptr %1, %0 : tile<128xptr<i32>>
  %3 = load %2 : tile<128xi32>
  %4 = hint %3 {divisibility = [16], contiguity = [16]} : tile<128xi32>
  %5 = reshape %4 : tile<8x16xi32>
  %6 = hint %5 {contiguity = [1, 16], divisibility = [16, 16]} : tile<8x16xi32>
  return
}
)");
  EXPECT_EQ(facts["%3"], "contig=[1] div=[1] const=[1]");
  EXPECT_EQ(facts["%4"], "contig=[16] div=[16] const=[1]");
  EXPECT_EQ(facts["%6"], "contig=[1, 16] div=[16, 16] const=[1, 1]");
}

// What the language functions lower to.
TEST(LowerHints, MultipleOfMaxContiguousMaxConstancy) {
  LowerResult r = lower(R"(@tegula.jit
def k(x_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * stride + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, 24), BLOCK)
    s = tl.multiple_of(stride, 8)
    two = tl.max_constancy(offs[:, None] + tl.zeros((BLOCK, 4), tl.int32), (4, 1))
    tl.store(x_ptr + offs + s, 1.0)
    tl.store(x_ptr + two, 2.0)
    tl.store(x_ptr + tl.multiple_of(7, 16), 3.0)
)",
                        {ptr_arg(Scalar::F32), int_arg(), const_int(64)});
  ASSERT_TRUE(r.ok()) << r.error;
  // 24 promises divisibility by 8 (the largest power of two dividing it).
  EXPECT_NE(r.ir.find("hint %4 {divisibility = [8]} : tile<64xi32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("{contiguity = [64]} : tile<64xi32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("hint %stride {divisibility = [8]} : i32"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("{constancy = [4, 1]} : tile<64x4xi32>"), std::string::npos) << r.ir;
}

TEST(LowerHints, ErrorsAreLocated) {
  std::vector<frontend::ArgSpec> args = {ptr_arg(Scalar::F32), int_arg(), const_int(64)};
  expect_error(lower(R"(@tegula.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] + tl.zeros((BLOCK, 2), tl.int32)
    offs = tl.multiple_of(offs, 16)
)",
                     args),
               4, 33, "tl.multiple_of needs one value per dimension of its input (2), got 1");
  expect_error(lower(R"(@tegula.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    m = tl.max_contiguous(n, 0)
)",
                     args),
               3, 30, "the values of tl.max_contiguous must be positive, got 0");
  expect_error(lower(R"(@tegula.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    m = tl.multiple_of(n, n)
)",
                     args),
               3, 27, "each value of tl.multiple_of must be a compile-time constant");
  expect_error(lower(R"(@tegula.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    tl.assume(BLOCK % 48 == 0)
)",
                     args),
               3, 15, "tl.assume's condition is false at compile time");
}

// tl.assume(x % 16 == 0) (and `&` masks, joined by `and`) rebinds x to a
// hinted copy: the uses after it see the divisibility.
TEST(LowerHints, AssumeFeedsDivisibility) {
  LowerResult r = lower(R"(@tegula.jit
def k(x_ptr, n, stride, BLOCK: tl.constexpr):
    tl.assume(stride % 16 == 0 and (n & 7) == 0)
    tl.assume(n > 0)
    tl.store(x_ptr + stride + n, 1.0)
)",
                        {ptr_arg(Scalar::F32), int_arg(), int_arg(), const_int(64)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("= hint %stride {divisibility = [16]} : i32"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("= hint %n {divisibility = [8]} : i32"), std::string::npos) << r.ir;
  EXPECT_EQ(r.ir.find("add %stride"), std::string::npos) << "the store must use the hinted copies:\n" << r.ir;
}

TEST(LowerHints, AssumeInsideARuntimeLoopHasNoEffect) {
  LowerResult r = lower(R"(@tegula.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    for i in range(n):
        tl.assume(n % 16 == 0)
        tl.store(x_ptr + i, 1.0)
    tl.store(x_ptr + n, 1.0)
)",
                        {ptr_arg(Scalar::F32), int_arg(), const_int(64)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.ir.find("hint"), std::string::npos) << r.ir;
}

// Hints are pure but not removed while used, not folded, and splat sinking
// leaves them alone (their attributes describe the tile's dimensions).
TEST(LowerHints, HintsSurviveTheOptimizer) {
  ir::Function fn = ir::parse(R"(kernel @k(%x: ptr<i32> div(16), %s: i32) {
  %0 = splat %s : tile<64xi32>
  %1 = hint %0 {divisibility = [16], contiguity = [1]} : tile<64xi32>
  %2 = constant {value = 3} : tile<64xi32>
  %3 = hint %2 {divisibility = [1]} : tile<64xi32>
  %4 = add %1, %3 : tile<64xi32>
  %5 = splat %x : tile<64xptr<i32>>
  %6 = addptr %5, %4 : tile<64xptr<i32>>
  store %6, %4
  return
}
)");
  passes::optimize(fn);
  std::string text = ir::print(fn, ir::PrintOptions{false});
  EXPECT_NE(text.find("hint %0 {divisibility = [16], contiguity = [1]} : tile<64xi32>"), std::string::npos) << text;
  EXPECT_NE(text.find("{divisibility = [1]} : tile<64xi32>"), std::string::npos) << text;
}
