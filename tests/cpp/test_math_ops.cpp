// The `math` op and the front end around it: verifier rules of `math` and
// `hint`, constant folding of math functions, what the math, classification
// and random-number functions lower to, and their located errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/math_ops.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "lower_test_util.h"
#include "passes/pipeline.h"

using namespace tegula;
using namespace tegula::testing;
using ir::Scalar;

namespace {

std::string verify_text(const std::string& text) { return ir::verify(ir::parse(text)); }

std::string one_op(const std::string& op_line, const std::string& params = "%a: f32, %b: f32") {
  return "kernel @k(" + params + ") {\n  " + op_line + "\n  return\n}\n";
}

std::string optimized(const std::string& text) {
  ir::Function fn = ir::parse(text);
  passes::optimize(fn);
  return ir::print(fn, ir::PrintOptions{false});
}

}  // namespace

TEST(MathOps, TableNamesAndArity) {
  ASSERT_NE(ir::find_math_function("atan2"), nullptr);
  EXPECT_EQ(ir::find_math_function("atan2")->arity, 2);
  EXPECT_EQ(ir::find_math_function("log1p")->arity, 1);
  EXPECT_EQ(ir::find_math_function("exp"), nullptr);  // has its own op kind
  EXPECT_EQ(std::string(ir::math_function(ir::MathFn::Rint).name), "rint");
}

TEST(MathOps, VerifierRules) {
  EXPECT_EQ(verify_text(one_op("%0 = math %a {fn = \"tan\"} : f32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = math %a, %b {fn = \"hypot\"} : f32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = math %a {fn = \"sinus\"} : f32")), "`math`: unknown function \"sinus\"");
  EXPECT_EQ(verify_text(one_op("%0 = math %a {fn = \"atan2\"} : f32")), "`math`: \"atan2\" takes 2 operands, got 1");
  EXPECT_EQ(verify_text(one_op("%0 = math %a : f32")), "`math`: needs a string attribute `fn`");
  EXPECT_EQ(verify_text(one_op("%0 = math %a {fn = \"tan\"} : i32", "%a: i32")), "`math`: needs a float result, got i32");
  EXPECT_EQ(verify_text(one_op("%0 = math %a, %b {fn = \"atan2\"} : f32", "%a: f32, %b: f64")),
            "`math`: operand 1 (f64) must have the result type (f32)");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {divisibility = [16]} : i32", "%a: i32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {divisibility = [12]} : i32", "%a: i32")),
            "`hint`: attribute `divisibility` holds 12, not a power of two");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {contiguity = [16, 1]} : i32", "%a: i32")),
            "`hint`: attribute `contiguity` needs 1 entries (one per dimension), got 2");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {constancy = 4} : i32", "%a: i32")),
            "`hint`: attribute `constancy` must be a list of integers");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a : i64", "%a: i32")), "`hint`: the result (i64) must have the operand type (i32)");
}

TEST(MathOps, ConstantsFoldInF32AndF64) {
  std::string text = optimized(R"(kernel @k(%o: ptr<f32> div(16), %p: ptr<f64> div(16)) {
  %0 = constant {value = 1.0} : f32
  %1 = constant {value = -1.0} : f32
  %2 = math %0, %1 {fn = "atan2"} : f32
  store %o, %2
  %3 = constant {value = -2.5} : f64
  %4 = math %3 {fn = "round"} : f64
  store %p, %4
  %5 = constant {value = 2.0} : f32
  %6 = math %5 {fn = "exp10"} : f32
  store %o, %6
  return
}
)");
  // atan2f(1, -1) = 3*pi/4 rounded to f32, printed as the double it is.
  EXPECT_NE(text.find("constant {value = 2.356194496154785} : f32"), std::string::npos) << text;
  EXPECT_NE(text.find("constant {value = -3.0} : f64"), std::string::npos) << text;
  EXPECT_NE(text.find("math %"), std::string::npos) << "exp10 has no host function and stays:\n" << text;
}

TEST(LowerMath, FunctionsClassificationAndHalves) {
  LowerResult r = lower(R"(@tegula.jit
def k(x_ptr, h_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    h = tl.load(h_ptr + i)
    tl.store(x_ptr + i, tl.math.tan(x) + tl.extra.libdevice.atan2(x, 2.0))
    tl.store(h_ptr + i, tl.log1p(h))
    tl.store(x_ptr + i, tl.where(tl.isnan(x) | tl.isinf(x), 0.0, x))
    tl.store(x_ptr + i, tl.signbit(x).to(tl.float32) + tl.fmod(x, 3.0) + tl.math.nearbyint(x))
)",
                        {ptr_arg(Scalar::F32), ptr_arg(Scalar::F16), const_int(16)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("math %3 {fn = \"tan\"} : tile<16xf32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("{fn = \"atan2\"} : tile<16xf32>"), std::string::npos) << r.ir;
  // f16 computes in f32 and rounds back.
  EXPECT_NE(r.ir.find("%16 = cast %6 : tile<16xf32>\n  %17 = math %16 {fn = \"log1p\"} : tile<16xf32>\n"
                      "  %18 = cast %17 : tile<16xf16>"),
            std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("cmp %3, %3 {pred = \"ne\"} : tile<16xi1>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("bitcast %3 : tile<16xi32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("rem %3, "), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("{fn = \"rint\"}"), std::string::npos) << r.ir;
}

TEST(LowerMath, ErrorsAreLocated) {
  LowerResult r = lower(R"(@tegula.jit
def k(x_ptr, n):
    tl.store(x_ptr, tl.math.tan(n))
)",
                        {ptr_arg(Scalar::F32), int_arg()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.rfind("kernel.py:3:21: error[E0311]: tl.tan needs floating-point operands, but one is a scalar of type i32",
                          0),
            0u)
      << r.error;
  EXPECT_NE(r.error.find("hint: convert it first, e.g. x.to(tl.float32)"), std::string::npos) << r.error;
}

// Philox is integer IR only: umulhi, mul, xor, add on u32 words; 10 rounds.
TEST(LowerRandom, RandintIsIntegerOpsOnly) {
  LowerResult r = lower(R"(@tegula.jit
def k(o_ptr, seed, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(o_ptr + i, tl.randint(seed, i))
)",
                        {ptr_arg(Scalar::U32), int_arg(Scalar::I64), const_int(16)});
  ASSERT_TRUE(r.ok()) << r.error;
  size_t umulhi = 0;
  for (size_t at = r.ir.find("umulhi"); at != std::string::npos; at = r.ir.find("umulhi", at + 1)) ++umulhi;
  EXPECT_EQ(umulhi, 20u) << r.ir;  // two per round
  EXPECT_NE(r.ir.find("constant {value = 3528531795} : u32"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("shr "), std::string::npos) << "the seed's high half is a key word:\n" << r.ir;
  EXPECT_EQ(r.ir.find("f32"), std::string::npos) << r.ir;
}
