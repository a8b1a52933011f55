// The math library ops (tan, atan2, log1p, ...) and the front end around
// them: their rows of the op table, verifier rules of them and `hint`,
// constant folding of math functions, what the math, classification
// and random-number functions lower to, and their located errors.
#include <gtest/gtest.h>

#include <cmath>

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

TEST(MathOps, EachFunctionIsAnOpRow) {
  ir::OpKind kind;
  ASSERT_TRUE(ir::parse_op_kind("atan2", &kind));
  EXPECT_EQ(kind, ir::OpKind::Atan2);
  EXPECT_EQ(ir::info(kind).min_operands, 2);
  EXPECT_EQ(ir::info(kind).max_operands, 2);
  ASSERT_TRUE(ir::parse_op_kind("log1p", &kind));
  EXPECT_EQ(ir::info(kind).max_operands, 1);
  EXPECT_TRUE(ir::is_pure(kind) && ir::is_elementwise(kind));
  EXPECT_EQ(ir::info(kind).rule, ir::TypeRule::Floats);
  EXPECT_EQ(std::string(ir::name(ir::OpKind::Rint)), "rint");
  EXPECT_FALSE(ir::parse_op_kind("math", &kind));  // no op with a function attribute
}

TEST(MathOps, VerifierRules) {
  EXPECT_EQ(verify_text(one_op("%0 = tan %a : f32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = hypot %a, %b : f32")), "");
  EXPECT_THROW(verify_text(one_op("%0 = sinus %a : f32")), UserError);  // unknown op
  EXPECT_EQ(verify_text(one_op("%0 = atan2 %a : f32")), "`atan2`: expects 2 operands, got 1");
  EXPECT_EQ(verify_text(one_op("%0 = tan %a, %b : f32")), "`tan`: expects 1 operands, got 2");
  EXPECT_EQ(verify_text(one_op("%0 = tan %a : i32", "%a: i32")), "`tan`: needs float operands, got i32");
  EXPECT_EQ(verify_text(one_op("%0 = atan2 %a, %b : f32", "%a: f32, %b: f64")),
            "`atan2`: operand 1 (f64) must have the result type (f32)");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {divisibility = [16]} : i32", "%a: i32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {divisibility = [12]} : i32", "%a: i32")),
            "`hint`: attribute `divisibility` holds 12, not a power of two");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {contiguity = [16, 1]} : i32", "%a: i32")),
            "`hint`: attribute `contiguity` needs 1 entries (one per dimension), got 2");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {constancy = 4} : i32", "%a: i32")),
            "`hint`: attribute `constancy` must be a list of integers");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a : i64", "%a: i32")), "`hint`: the result (i64) must have the operand type (i32)");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {at_least = [1]} : i32", "%a: i32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {at_least = [-2]} : i32", "%a: i32")),
            "`hint`: attribute `at_least` must be one integer >= 0");
  EXPECT_EQ(verify_text(one_op("%0 = hint %a {at_least = [0]} : f32")),
            "`hint`: attribute `at_least` describes integer scalars");
}

TEST(MathOps, ConstantsFoldInF32AndF64) {
  std::string text = optimized(R"(kernel @k(%o: ptr<f32> div(16), %p: ptr<f64> div(16)) {
  %0 = constant {value = 1.0} : f32
  %1 = constant {value = -1.0} : f32
  %2 = atan2 %0, %1 : f32
  store %o, %2
  %3 = constant {value = -2.5} : f64
  %4 = round %3 : f64
  store %p, %4
  %5 = constant {value = 2.0} : f32
  %6 = exp10 %5 : f32
  store %o, %6
  return
}
)");
  // atan2f(1, -1) = 3*pi/4 rounded to f32, printed as the double it is.
  EXPECT_NE(text.find("constant {value = 2.356194496154785} : f32"), std::string::npos) << text;
  EXPECT_NE(text.find("constant {value = -3.0} : f64"), std::string::npos) << text;
  EXPECT_NE(text.find("exp10 %"), std::string::npos) << "exp10 has no host function and stays:\n" << text;
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
  EXPECT_NE(r.ir.find(" = tan %3 : tile<16xf32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find(" = atan2 %3, %"), std::string::npos) << r.ir;
  // f16 computes in f32 and rounds back.
  EXPECT_NE(r.ir.find("%16 = cast %6 : tile<16xf32>\n  %17 = log1p %16 : tile<16xf32>\n"
                      "  %18 = cast %17 : tile<16xf16>"),
            std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("cmp %3, %3 {pred = \"ne\"} : tile<16xi1>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("bitcast %3 : tile<16xi32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("rem %3, "), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find(" = rint %"), std::string::npos) << r.ir;
}

TEST(LowerMath, ErrorsAreLocated) {
  LowerResult r = lower(R"(@tegula.jit
def k(x_ptr, n):
    tl.store(x_ptr, tl.math.tan(n))
)",
                        {ptr_arg(Scalar::F32), int_arg()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.rfind("kernel.py:3:21: error[E0311]: tl.tan needs a floating-point operand, but it is a scalar of type i32",
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

// libdevice's directed roundings carry their mode; a float-and-int op takes
// an i32 of the float's shape; the tl.extra.cuda queries have fixed types.
TEST(MathOps, LibdeviceVerifierRules) {
  EXPECT_EQ(verify_text(one_op("%0 = add_round %a, %b {rounding = \"rd\"} : f32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = fma_round %a, %b, %b {rounding = \"rz\"} : f32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = add_round %a, %b : f32")),
            "`add_round`: needs a string attribute `rounding`: one of rn rz rd ru");
  EXPECT_EQ(verify_text(one_op("%0 = sqrt_round %a {rounding = \"up\"} : f32")),
            "`sqrt_round`: needs a string attribute `rounding`: one of rn rz rd ru");
  EXPECT_EQ(verify_text(one_op("%0 = mul_round %a, %b {rounding = \"rn\"} : f16", "%a: f16, %b: f16")),
            "`mul_round`: needs f32 or f64 operands, got f16");
  EXPECT_EQ(verify_text(one_op("%0 = ldexp %a, %n : f64", "%a: f64, %n: i32")), "");
  EXPECT_EQ(verify_text(one_op("%0 = jn %a, %n : f32", "%a: f32, %n: i64")),
            "`jn`: operand 1 must be i32, got i64");
  EXPECT_EQ(verify_text(one_op("%0 = popc %a : i64", "%a: i64")), "");
  EXPECT_EQ(verify_text(one_op("%0 = globaltimer : i64", "")), "");
  EXPECT_EQ(verify_text(one_op("%0 = smid : i64", "")), "`smid`: result 0 must be i32, got i64");
}

// None of them folds: the host's rounding mode and libm are not the targets'.
TEST(MathOps, LibdeviceOpsDoNotFold) {
  std::string text = optimized(R"(kernel @k(%o: ptr<f32> div(16)) {
  %0 = constant {value = 1.0} : f32
  %1 = constant {value = 3.0} : f32
  %2 = div_round %0, %1 {rounding = "ru"} : f32
  store %o, %2
  %3 = erfinv %0 : f32
  store %o, %3
  return
}
)");
  EXPECT_NE(text.find("div_round"), std::string::npos) << text;
  EXPECT_NE(text.find("erfinv"), std::string::npos) << text;
}
