// Golden tests of canonicalize: IR text in, canonicalized IR text out.
// Values are kept alive by `print`, so what is folded away is visible.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/canonicalize.h"

namespace tegula::passes {
namespace {

using testing::expect_pass;

void expect_canonical(const std::string& input, const std::string& expected) {
  expect_pass(canonicalize, input, expected);
}

// --- integer folding --------------------------------------------------------------

TEST(CanonicalizeFold, IntegersWrapAtTheirWidthAndRespectSignedness) {
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = constant {value = 127} : i8
  %1 = constant {value = 1} : i8
  %2 = add %0, %1 : i8
  %3 = constant {value = 255} : u8
  %4 = constant {value = 1} : u8
  %5 = add %3, %4 : u8
  %6 = constant {value = -7} : i32
  %7 = constant {value = 2} : i32
  %8 = div %6, %7 : i32
  %9 = rem %6, %7 : i32
  %10 = constant {value = 4294967295} : u32
  %11 = constant {value = 31} : u32
  %12 = div %10, %11 : u32
  %13 = umulhi %10, %10 : u32
  %14 = max %10, %11 : u32
  %15 = constant {value = -1} : i32
  %16 = max %15, %7 : i32
  %17 = constant {value = 1} : i1
  %18 = add %17, %17 : i1
  %19 = constant {value = -2147483648} : i32
  %20 = neg %19 : i32
  %21 = abs %19 : i32
  %22 = not %6 : i32
  print %2, %5, %8, %9, %12, %13, %14, %16, %18, %20, %21, %22 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = constant {value = -128} : i8
  %1 = constant {value = 0} : u8
  %2 = constant {value = -3} : i32
  %3 = constant {value = -1} : i32
  %4 = constant {value = 138547332} : u32
  %5 = constant {value = 4294967294} : u32
  %6 = constant {value = 4294967295} : u32
  %7 = constant {value = 2} : i32
  %8 = constant {value = 0} : i1
  %9 = constant {value = -2147483648} : i32
  %10 = constant {value = -2147483648} : i32
  %11 = constant {value = 6} : i32
  print %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeFold, ShiftsAreArithmeticForSignedAndLogicalForUnsigned) {
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = constant {value = -8} : i32
  %1 = constant {value = 1} : i32
  %2 = shr %0, %1 : i32
  %3 = constant {value = 2147483648} : u32
  %4 = constant {value = 31} : u32
  %5 = shr %3, %4 : u32
  %6 = constant {value = 1073741824} : i32
  %7 = shl %6, %1 : i32
  print %2, %5, %7 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = constant {value = -4} : i32
  %1 = constant {value = 1} : u32
  %2 = constant {value = -2147483648} : i32
  print %0, %1, %2 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeFold, LeavesWhatTheTargetDefinesAlone) {
  // Division and remainder by zero, INT_MIN / -1, shifts by >= the width,
  // float division by zero, float min with NaN, exp in f16, and casts that
  // round other than to nearest even.
  const char* input = R"(kernel @k(%n: i32) {
  %0 = constant {value = 7} : i32
  %1 = constant {value = 0} : i32
  %2 = div %0, %1 : i32
  %3 = rem %0, %1 : i32
  %4 = constant {value = -2147483648} : i32
  %5 = constant {value = -1} : i32
  %6 = div %4, %5 : i32
  %7 = constant {value = 32} : i32
  %8 = shl %0, %7 : i32
  %9 = shr %0, %5 : i32
  %10 = constant {value = 1.0} : f32
  %11 = constant {value = 0.0} : f32
  %12 = div %10, %11 : f32
  %13 = constant {value = nan} : f32
  %14 = min %13, %10 : f32
  %15 = constant {value = 1.0} : f16
  %16 = exp %15 : f16
  %17 = constant {value = 0.1} : f64
  %18 = cast %17 {rounding = "rtz"} : f32
  print %2, %3, %6, %8, %9, %12, %14, %16, %18 {prefix = ""}
  return
}
)";
  expect_canonical(input, input);
}

// --- float folding ------------------------------------------------------------------

TEST(CanonicalizeFold, FloatsAreFoldedInTheirOwnPrecision) {
  expect_canonical(R"(kernel @k(%x: f32) {
  %0 = constant {value = 1.0} : f32
  %1 = constant {value = 3.0} : f32
  %2 = div %0, %1 : f32
  %3 = constant {value = 1.0} : f64
  %4 = constant {value = 3.0} : f64
  %5 = div %3, %4 : f64
  %6 = constant {value = 1.0} : f16
  %7 = constant {value = 0.00048828125} : f16
  %8 = add %6, %7 : f16
  %9 = constant {value = 0.0009765625} : f16
  %10 = add %6, %9 : f16
  %11 = constant {value = 60000.0} : f16
  %12 = add %11, %11 : f16
  %13 = constant {value = 1.0} : bf16
  %14 = constant {value = 3.0} : bf16
  %15 = div %13, %14 : bf16
  %16 = constant {value = 0.0} : f32
  %17 = exp %16 : f32
  %18 = sqrt %4 : f64
  %19 = fma %0, %1, %1 : f32
  %20 = neg %16 : f32
  %21 = floor %7 : f16
  print %2, %5, %8, %10, %12, %15, %17, %18, %19, %20, %21 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%x: f32) {
  %0 = constant {value = 0.3333333432674408} : f32
  %1 = constant {value = 0.3333333333333333} : f64
  %2 = constant {value = 1.0} : f16
  %3 = constant {value = 1.0009765625} : f16
  %4 = constant {value = inf} : f16
  %5 = constant {value = 0.333984375} : bf16
  %6 = constant {value = 1.0} : f32
  %7 = constant {value = 1.7320508075688772} : f64
  %8 = constant {value = 6.0} : f32
  %9 = constant {value = -0.0} : f32
  %10 = constant {value = 0.0} : f16
  print %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeFold, ComparisonsAreSignedUnsignedOrUnorderedFloat) {
  expect_canonical(R"(kernel @k(%x: f32) {
  %0 = constant {value = -1} : i32
  %1 = constant {value = 1} : i32
  %2 = cmp %0, %1 {pred = "lt"} : i1
  %3 = constant {value = 4294967295} : u32
  %4 = constant {value = 1} : u32
  %5 = cmp %3, %4 {pred = "lt"} : i1
  %6 = constant {value = nan} : f32
  %7 = cmp %6, %6 {pred = "eq"} : i1
  %8 = cmp %6, %6 {pred = "ne"} : i1
  %9 = constant {value = 1.0} : f32
  %10 = cmp %6, %9 {pred = "ge"} : i1
  %11 = cmp %9, %9 {pred = "le"} : i1
  print %2, %5, %7, %8, %10, %11 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%x: f32) {
  %0 = constant {value = 1} : i1
  %1 = constant {value = 0} : i1
  %2 = constant {value = 0} : i1
  %3 = constant {value = 1} : i1
  %4 = constant {value = 0} : i1
  %5 = constant {value = 1} : i1
  print %0, %1, %2, %3, %4, %5 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeFold, CastsConvertBetweenAllScalarKinds) {
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = constant {value = 2.5} : f32
  %1 = cast %0 : i32
  %2 = constant {value = -2.5} : f32
  %3 = cast %2 : i32
  %4 = constant {value = 3000000000.0} : f32
  %5 = cast %4 : i32
  %6 = cast %4 : u32
  %7 = constant {value = -1} : i32
  %8 = cast %7 : u8
  %9 = cast %7 : i64
  %10 = constant {value = 255} : u8
  %11 = cast %10 : i32
  %12 = cast %10 : i8
  %13 = constant {value = 2049} : i32
  %14 = cast %13 : f16
  %15 = cast %13 : i1
  %16 = constant {value = 0.1} : f64
  %17 = cast %16 : f32
  %18 = cast %16 : bf16
  %19 = constant {value = nan} : f32
  %20 = cast %19 : i32
  %21 = constant {value = 1.0} : f32
  %22 = bitcast %21 : i32
  %23 = constant {value = 15360} : u16
  %24 = bitcast %23 : f16
  print %1, %3, %5, %6, %8, %9, %11, %12, %14, %15, %17, %18, %20, %22, %24 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = constant {value = 2} : i32
  %1 = constant {value = -2} : i32
  %2 = constant {value = 3e+09} : f32
  %3 = cast %2 : i32
  %4 = constant {value = 3000000000} : u32
  %5 = constant {value = 255} : u8
  %6 = constant {value = -1} : i64
  %7 = constant {value = 255} : i32
  %8 = constant {value = -1} : i8
  %9 = constant {value = 2048.0} : f16
  %10 = constant {value = 1} : i1
  %11 = constant {value = 0.10000000149011612} : f32
  %12 = constant {value = 0.10009765625} : bf16
  %13 = constant {value = nan} : f32
  %14 = cast %13 : i32
  %15 = constant {value = 1065353216} : i32
  %16 = constant {value = 1.0} : f16
  print %0, %1, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %14, %15, %16 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeFold, ConstantTilesFoldElementwise) {
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = constant {value = 2} : tile<8x4xi32>
  %1 = constant {value = 3} : tile<8x4xi32>
  %2 = mul %0, %1 : tile<8x4xi32>
  %3 = cmp %2, %1 {pred = "gt"} : tile<8x4xi1>
  print %2, %3 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = constant {value = 6} : tile<8x4xi32>
  %1 = constant {value = 1} : tile<8x4xi1>
  print %0, %1 {prefix = ""}
  return
}
)");
}

// --- shape ops -----------------------------------------------------------------------

TEST(CanonicalizeShapes, ConstantsAndSplatsTakeTheNewShape) {
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = constant {value = 2} : i32
  %1 = splat %0 : tile<16xi32>
  %2 = expand_dims %1 {axis = 1} : tile<16x1xi32>
  %3 = broadcast %2 : tile<16x8xi32>
  %4 = splat %n : tile<16x1xi32>
  %5 = broadcast %4 : tile<16x8xi32>
  %6 = trans %5 {perm = [1, 0]} : tile<8x16xi32>
  %7 = reshape %5 : tile<128xi32>
  print %3, %6, %7 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = constant {value = 2} : tile<16x8xi32>
  %1 = splat %n : tile<8x16xi32>
  %2 = splat %n : tile<128xi32>
  print %0, %1, %2 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeShapes, NoOpShapeOpsDisappear) {
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = arange {start = 0, end = 16} : tile<16xi32>
  %1 = expand_dims %0 {axis = 0} : tile<1x16xi32>
  %2 = broadcast %1 : tile<1x16xi32>
  %3 = reshape %2 : tile<1x16xi32>
  %4 = trans %3 {perm = [0, 1]} : tile<1x16xi32>
  %5 = broadcast %4 : tile<4x16xi32>
  %6 = broadcast %5 : tile<4x16xi32>
  %7 = trans %4 {perm = [1, 0]} : tile<16x1xi32>
  print %6, %7 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = arange {start = 0, end = 16} : tile<16xi32>
  %1 = expand_dims %0 {axis = 0} : tile<1x16xi32>
  %2 = broadcast %1 : tile<4x16xi32>
  %3 = trans %1 {perm = [1, 0]} : tile<16x1xi32>
  print %2, %3 {prefix = ""}
  return
}
)");
}

// --- algebra ----------------------------------------------------------------------------

TEST(CanonicalizeAlgebra, IntegerIdentities) {
  expect_canonical(R"(kernel @k(%p: ptr<f32>, %n: i32, %c: i1, %m: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = add %n, %0 : i32
  %3 = add %0, %n : i32
  %4 = sub %n, %0 : i32
  %5 = mul %n, %1 : i32
  %6 = mul %1, %n : i32
  %7 = mul %n, %0 : i32
  %8 = sub %n, %n : i32
  %9 = and %n, %0 : i32
  %10 = or %n, %0 : i32
  %11 = xor %n, %0 : i32
  %12 = and %n, %n : i32
  %13 = or %n, %n : i32
  %14 = div %n, %1 : i32
  %15 = shl %n, %0 : i32
  %16 = shr %n, %0 : i32
  %17 = select %c, %n, %m : i32
  %18 = select %c, %n, %n : i32
  %19 = not %n : i32
  %20 = not %19 : i32
  %21 = neg %n : i32
  %22 = neg %21 : i32
  %23 = cast %n : i32
  %24 = addptr %p, %0 : ptr<f32>
  %25 = cmp %n, %n {pred = "le"} : i1
  %26 = cmp %n, %n {pred = "gt"} : i1
  %27 = constant {value = 1} : i1
  %28 = select %27, %n, %m : i32
  %29 = constant {value = 0} : i1
  %30 = select %29, %n, %m : i32
  print %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %20, %22, %23, %24, %25, %26, %28, %30 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%p: ptr<f32>, %n: i32, %c: i1, %m: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 0} : i32
  %2 = select %c, %n, %m : i32
  %3 = constant {value = 1} : i1
  %4 = constant {value = 0} : i1
  print %n, %n, %n, %n, %n, %0, %1, %0, %n, %n, %n, %n, %n, %n, %n, %2, %n, %n, %n, %n, %p, %3, %4, %n, %m {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeAlgebra, FloatIdentitiesKeepSignedZerosAndNaN) {
  // x + 0.0, x - -0.0, x * 0.0 and x - x are not identities for floats.
  expect_canonical(R"(kernel @k(%x: f32) {
  %0 = constant {value = 0.0} : f32
  %1 = constant {value = -0.0} : f32
  %2 = constant {value = 1.0} : f32
  %3 = add %x, %0 : f32
  %4 = add %x, %1 : f32
  %5 = add %1, %x : f32
  %6 = sub %x, %0 : f32
  %7 = sub %x, %1 : f32
  %8 = mul %x, %0 : f32
  %9 = mul %x, %2 : f32
  %10 = sub %x, %x : f32
  %11 = div %x, %2 : f32
  %12 = neg %x : f32
  %13 = neg %12 : f32
  %14 = cmp %x, %x {pred = "eq"} : i1
  print %3, %4, %5, %6, %7, %8, %9, %10, %11, %13, %14 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%x: f32) {
  %0 = constant {value = 0.0} : f32
  %1 = constant {value = -0.0} : f32
  %2 = add %x, %0 : f32
  %3 = sub %x, %1 : f32
  %4 = mul %x, %0 : f32
  %5 = sub %x, %x : f32
  %6 = cmp %x, %x {pred = "eq"} : i1
  print %2, %x, %x, %x, %3, %4, %x, %5, %x, %x, %6 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeAlgebra, CommutativeOpsTakeTheConstantOnTheRight) {
  expect_canonical(R"(kernel @k(%n: i32, %x: f32) {
  %0 = constant {value = 3} : i32
  %1 = add %0, %n : i32
  %2 = constant {value = 2.0} : f32
  %3 = mul %2, %x : f32
  %4 = sub %0, %n : i32
  print %1, %3, %4 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32, %x: f32) {
  %0 = constant {value = 3} : i32
  %1 = add %n, %0 : i32
  %2 = constant {value = 2.0} : f32
  %3 = mul %x, %2 : f32
  %4 = sub %0, %n : i32
  print %1, %3, %4 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeAlgebra, ConstantOffsetsCombineWithWrapAround) {
  // (n + 32) - 1 is cdiv's numerator; the shared `add %n, %0` stays.
  expect_canonical(R"(kernel @k(%n: i32, %u: u8) {
  %0 = constant {value = 32} : i32
  %1 = add %n, %0 : i32
  %2 = constant {value = 1} : i32
  %3 = sub %1, %2 : i32
  %4 = div %3, %0 : i32
  %5 = constant {value = 5} : i32
  %6 = sub %n, %5 : i32
  %7 = sub %6, %5 : i32
  %8 = add %n, %0 : i32
  %9 = add %8, %2 : i32
  %10 = constant {value = 200} : u8
  %11 = add %u, %10 : u8
  %12 = add %11, %10 : u8
  %13 = sub %n, %2 : i32
  %14 = add %13, %2 : i32
  print %4, %7, %8, %9, %12, %14 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32, %u: u8) {
  %0 = constant {value = 32} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 31} : i32
  %3 = add %n, %2 : i32
  %4 = div %3, %0 : i32
  %5 = constant {value = -10} : i32
  %6 = add %n, %5 : i32
  %7 = add %n, %0 : i32
  %8 = add %7, %1 : i32
  %9 = constant {value = 144} : u8
  %10 = add %u, %9 : u8
  print %4, %6, %7, %8, %10, %n {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeAlgebra, ElementwiseOfSplatsBecomesScalarMath) {
  expect_canonical(R"(kernel @k(%n: i32, %m: i32, %x: f32) {
  %0 = splat %n : tile<64xi32>
  %1 = splat %m : tile<64xi32>
  %2 = mul %0, %1 : tile<64xi32>
  %3 = cast %2 : tile<64xf32>
  %4 = splat %x : tile<64xf32>
  %5 = cmp %3, %4 {pred = "lt"} : tile<64xi1>
  %6 = select %5, %3, %4 : tile<64xf32>
  %7 = exp %6 : tile<64xf32>
  %8 = constant {value = 2} : tile<64xi32>
  %9 = add %0, %8 : tile<64xi32>
  print %7, %9 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32, %m: i32, %x: f32) {
  %0 = mul %n, %m : i32
  %1 = cast %0 : f32
  %2 = cmp %1, %x {pred = "lt"} : i1
  %3 = select %2, %1, %x : f32
  %4 = exp %3 : f32
  %5 = splat %4 : tile<64xf32>
  %6 = constant {value = 2} : i32
  %7 = add %n, %6 : i32
  %8 = splat %7 : tile<64xi32>
  print %5, %8 {prefix = ""}
  return
}
)");
}

TEST(CanonicalizeAlgebra, AddptrChainsMergeTheirOffsets) {
  expect_canonical(R"(kernel @k(%p: ptr<f32>) {
  %0 = arange {start = 0, end = 64} : tile<64xi32>
  %1 = splat %p : tile<64xptr<f32>>
  %2 = addptr %1, %0 : tile<64xptr<f32>>
  %3 = constant {value = 4} : tile<64xi32>
  %4 = addptr %2, %3 : tile<64xptr<f32>>
  %5 = load %4 : tile<64xf32>
  store %4, %5
  return
}
)",
                   R"(kernel @k(%p: ptr<f32>) {
  %0 = arange {start = 0, end = 64} : tile<64xi32>
  %1 = splat %p : tile<64xptr<f32>>
  %2 = constant {value = 4} : tile<64xi32>
  %3 = add %0, %2 : tile<64xi32>
  %4 = addptr %1, %3 : tile<64xptr<f32>>
  %5 = load %4 : tile<64xf32>
  store %4, %5
  return
}
)");
}

TEST(CanonicalizeAlgebra, AddptrChainsStayWhenTheInnerPointerIsShared) {
  const char* input = R"(kernel @k(%p: ptr<f32>, %a: i32, %b: i32, %c: i64) {
  %0 = addptr %p, %a : ptr<f32>
  %1 = addptr %0, %b : ptr<f32>
  %2 = load %0 : f32
  store %1, %2
  %3 = addptr %p, %a : ptr<f32>
  %4 = addptr %3, %c : ptr<f32>
  store %4, %2
  return
}
)";
  expect_canonical(input, input);
}

// --- control flow -------------------------------------------------------------------------

TEST(CanonicalizeControlFlow, ConstantConditionsAndEmptyLoops) {
  // Loops that run zero times: 10..0 step 1, 0..10 step -1, and step 0.
  expect_canonical(R"(kernel @k(%n: i32) {
  %0 = constant {value = 1} : i1
  %1 = constant {value = 5} : i32
  %2 = if %0 : i32 {
    %3 = add %n, %1 : i32
    print %3 {prefix = "then"}
    yield %3
  } else {
    yield %n
  }
  %4 = constant {value = 0} : i1
  %5 = if %4 : i32 {
    yield %n
  } else {
    %6 = mul %n, %1 : i32
    yield %6
  }
  %7 = constant {value = 10} : i32
  %8 = constant {value = 0} : i32
  %9 = constant {value = 1} : i32
  %10 = for %7, %8, %9, %n : i32 {
  ^bb(%11: i32, %12: i32):
    %13 = add %12, %11 : i32
    yield %13
  }
  %14 = for %8, %7, %9, %n : i32 {
  ^bb(%15: i32, %16: i32):
    %17 = add %16, %15 : i32
    yield %17
  }
  %18 = constant {value = -1} : i32
  %19 = for %8, %7, %18, %n : i32 {
  ^bb(%20: i32, %21: i32):
    yield %20
  }
  %22 = for %7, %8, %18, %n : i32 {
  ^bb(%23: i32, %24: i32):
    yield %23
  }
  %25 = for %8, %7, %8, %n : i32 {
  ^bb(%26: i32, %27: i32):
    yield %26
  }
  print %2, %5, %10, %14, %19, %22, %25 {prefix = ""}
  return
}
)",
                   R"(kernel @k(%n: i32) {
  %0 = constant {value = 5} : i32
  %1 = add %n, %0 : i32
  print %1 {prefix = "then"}
  %2 = mul %n, %0 : i32
  %3 = constant {value = 10} : i32
  %4 = constant {value = 0} : i32
  %5 = constant {value = 1} : i32
  %6 = for %4, %3, %5, %n : i32 {
  ^bb(%7: i32, %8: i32):
    %9 = add %8, %7 : i32
    yield %9
  }
  %10 = constant {value = -1} : i32
  %11 = for %3, %4, %10, %n : i32 {
  ^bb(%12: i32, %13: i32):
    yield %12
  }
  print %1, %2, %n, %6, %n, %11, %n {prefix = ""}
  return
}
)");
}

// --- driver ---------------------------------------------------------------------------------

TEST(Canonicalize, RewrittenOpsKeepTheLocationOfTheOpTheyReplace) {
  ir::Function fn = ir::parse(R"(kernel @k(%n: i32) {
  %0 = constant {value = 2} : i32                         // k.py:3:5
  %1 = constant {value = 3} : i32                         // k.py:3:9
  %2 = add %0, %1 : i32                                   // k.py:3:7
  %3 = splat %n : tile<4xi32>                             // k.py:4:5
  %4 = splat %2 : tile<4xi32>                             // k.py:4:9
  %5 = mul %3, %4 : tile<4xi32>                           // k.py:4:7
  print %5 {prefix = ""}                                  // k.py:5:1
  %6 = add %0, %1 : i32                                   // k.py:6:3
  print %6 {prefix = ""}                                  // k.py:6:1
  return
}
)");
  EXPECT_TRUE(canonicalize(fn));
  EXPECT_EQ(ir::print(fn), R"(kernel @k(%n: i32) {
  %0 = constant {value = 5} : i32                           // k.py:4:7
  %1 = mul %n, %0 : i32                                     // k.py:4:7
  %2 = splat %1 : tile<4xi32>                               // k.py:4:7
  print %2 {prefix = ""}                                    // k.py:5:1
  %3 = constant {value = 5} : i32                           // k.py:6:3
  print %3 {prefix = ""}                                    // k.py:6:1
  return
}
)");
}

TEST(Canonicalize, ReachesAFixedPointAndThenChangesNothing) {
  ir::Function fn = ir::parse(R"(kernel @k(%n: i32) {
  %0 = constant {value = 1} : i32
  %1 = add %0, %0 : i32
  %2 = mul %1, %1 : i32
  %3 = splat %2 : tile<8xi32>
  %4 = splat %n : tile<8xi32>
  %5 = mul %4, %3 : tile<8xi32>
  %6 = constant {value = 0} : tile<8xi32>
  %7 = sub %5, %5 : tile<8xi32>
  %8 = add %7, %6 : tile<8xi32>
  %9 = cmp %8, %6 {pred = "eq"} : tile<8xi1>
  %10 = constant {value = 7} : tile<8xi32>
  %11 = select %9, %10, %5 : tile<8xi32>
  print %11 {prefix = ""}
  return
}
)");
  EXPECT_TRUE(canonicalize(fn));
  ir::PrintOptions options;
  options.locations = false;
  EXPECT_EQ(ir::print(fn, options), R"(kernel @k(%n: i32) {
  %0 = constant {value = 7} : tile<8xi32>
  print %0 {prefix = ""}
  return
}
)");
  EXPECT_FALSE(canonicalize(fn));
}

TEST(Canonicalize, AlreadyCanonicalIrIsUnchanged) {
  const char* input = R"(kernel @add(%x: ptr<f32> div(16), %n: i32) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 1024} : i32
  %2 = mul %0, %1 : i32
  %3 = arange {start = 0, end = 1024} : tile<1024xi32>
  %4 = splat %2 : tile<1024xi32>
  %5 = add %4, %3 : tile<1024xi32>
  %6 = splat %n : tile<1024xi32>
  %7 = cmp %5, %6 {pred = "lt"} : tile<1024xi1>
  %8 = splat %x : tile<1024xptr<f32>>
  %9 = addptr %8, %5 : tile<1024xptr<f32>>
  %10 = load %9, %7 : tile<1024xf32>
  store %9, %10, %7
  return
}
)";
  expect_canonical(input, input);
}

}  // namespace
}  // namespace tegula::passes
