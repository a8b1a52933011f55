// Golden tests of loop-invariant code motion.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/licm.h"

namespace tegula::passes {
namespace {

using testing::expect_pass;

TEST(Licm, HoistsInvariantPureOpsOutOfNestedLoopsButNotLoads) {
  // From the inner loop, `add %s, %n` leaves both loops; `mul %4, %s` uses the
  // outer induction variable, so it stops in the outer body. The load of an
  // invariant address stays: the loop might store to it.
  expect_pass(licm, R"(kernel @k(%p: ptr<f32>, %n: i32, %s: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  %3 = for %0, %n, %1, %2 : f32 {
  ^bb(%4: i32, %5: f32):
    %6 = mul %s, %n : i32
    %7 = constant {value = 64} : i32
    %8 = add %6, %7 : i32
    %9 = addptr %p, %8 : ptr<f32>
    %10 = load %9 : f32
    %11 = addptr %p, %4 : ptr<f32>
    %12 = load %11 : f32
    %13 = add %5, %12 : f32
    %14 = add %13, %10 : f32
    %15 = for %0, %n, %1, %14 : f32 {
    ^bb(%16: i32, %17: f32):
      %18 = mul %4, %s : i32
      %19 = add %s, %n : i32
      %20 = add %18, %19 : i32
      %21 = cast %20 : f32
      %22 = add %17, %21 : f32
      yield %22
    }
    yield %15
  }
  store %p, %3
  return
}
)",
              R"(kernel @k(%p: ptr<f32>, %n: i32, %s: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  %3 = mul %s, %n : i32
  %4 = constant {value = 64} : i32
  %5 = add %3, %4 : i32
  %6 = addptr %p, %5 : ptr<f32>
  %7 = add %s, %n : i32
  %8 = for %0, %n, %1, %2 : f32 {
  ^bb(%9: i32, %10: f32):
    %11 = load %6 : f32
    %12 = addptr %p, %9 : ptr<f32>
    %13 = load %12 : f32
    %14 = add %10, %13 : f32
    %15 = add %14, %11 : f32
    %16 = mul %9, %s : i32
    %17 = add %16, %7 : i32
    %18 = cast %17 : f32
    %19 = for %0, %n, %1, %15 : f32 {
    ^bb(%20: i32, %21: f32):
      %22 = add %21, %18 : f32
      yield %22
    }
    yield %19
  }
  store %p, %8
  return
}
)");
}

TEST(Licm, HoistsFromBothRegionsOfWhile) {
  expect_pass(licm, R"(kernel @k(%n: i32, %s: i32) {
  %0 = constant {value = 0} : i32
  %1 = while %0 : i32 {
  ^bb(%2: i32):
    %3 = mul %n, %s : i32
    %4 = cmp %2, %3 {pred = "lt"} : i1
    condition %4, %2
  } do {
  ^bb(%5: i32):
    %6 = add %s, %s : i32
    %7 = add %5, %6 : i32
    yield %7
  }
  print %1 {prefix = ""}
  return
}
)",
              R"(kernel @k(%n: i32, %s: i32) {
  %0 = constant {value = 0} : i32
  %1 = mul %n, %s : i32
  %2 = add %s, %s : i32
  %3 = while %0 : i32 {
  ^bb(%4: i32):
    %5 = cmp %4, %1 {pred = "lt"} : i1
    condition %5, %4
  } do {
  ^bb(%6: i32):
    %7 = add %6, %2 : i32
    yield %7
  }
  print %3 {prefix = ""}
  return
}
)");
}

TEST(Licm, LeavesLoopsWithoutInvariantsAlone) {
  // Region ops stay, even with invariant operands, and so do the ops nested in
  // them (only the loop body itself is searched).
  const char* input = R"(kernel @k(%p: ptr<f32>, %n: i32, %c: i1) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  %3 = for %0, %n, %1, %2 : f32 {
  ^bb(%4: i32, %5: f32):
    %6 = addptr %p, %4 : ptr<f32>
    %7 = load %6 : f32
    %8 = add %5, %7 : f32
    %9 = if %c : f32 {
      %10 = exp %2 : f32
      yield %10
    } else {
      yield %8
    }
    yield %9
  }
  store %p, %3
  return
}
)";
  expect_pass(licm, input, input);
}

}  // namespace
}  // namespace tegula::passes
