// Golden tests of CSE and DCE.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/cse.h"
#include "passes/dce.h"

namespace tegula::passes {
namespace {

using testing::expect_pass;

// --- cse --------------------------------------------------------------------------------

TEST(Cse, MergesPureOpsWithEqualKindOperandsAttributesAndTypes) {
  expect_pass(cse, R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 4} : i32
  %1 = constant {value = 4} : i32
  %2 = constant {value = 4} : i64
  %3 = mul %n, %0 : i32
  %4 = mul %n, %1 : i32
  %5 = cmp %n, %0 {pred = "lt"} : i1
  %6 = cmp %n, %0 {pred = "le"} : i1
  %7 = program_id {axis = 0} : i32
  %8 = program_id {axis = 0} : i32
  %9 = program_id {axis = 1} : i32
  %10 = load %p : f32
  %11 = load %p : f32
  print %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 {prefix = ""}
  return
}
)",
              R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 4} : i32
  %1 = constant {value = 4} : i64
  %2 = mul %n, %0 : i32
  %3 = cmp %n, %0 {pred = "lt"} : i1
  %4 = cmp %n, %0 {pred = "le"} : i1
  %5 = program_id {axis = 0} : i32
  %6 = program_id {axis = 1} : i32
  %7 = load %p : f32
  %8 = load %p : f32
  print %1, %2, %2, %3, %4, %5, %5, %6, %7, %8 {prefix = ""}
  return
}
)");
}

TEST(Cse, FloatConstantsCompareByBitPattern) {
  expect_pass(cse, R"(kernel @k(%x: f32) {
  %0 = constant {value = 0.0} : f32
  %1 = constant {value = -0.0} : f32
  %2 = constant {value = 0.0} : f32
  %3 = constant {value = nan} : f32
  %4 = constant {value = nan} : f32
  print %0, %1, %2, %3, %4 {prefix = ""}
  return
}
)",
              R"(kernel @k(%x: f32) {
  %0 = constant {value = 0.0} : f32
  %1 = constant {value = -0.0} : f32
  %2 = constant {value = nan} : f32
  print %0, %1, %0, %2, %2 {prefix = ""}
  return
}
)");
}

TEST(Cse, ValuesFlowIntoNestedRegionsButNotOutOfThem) {
  expect_pass(cse, R"(kernel @k(%n: i32, %c: i1) {
  %0 = constant {value = 4} : i32
  %1 = mul %n, %0 : i32
  %2 = if %c : i32 {
    %3 = mul %n, %0 : i32
    %4 = add %3, %n : i32
    yield %4
  } else {
    %5 = add %1, %n : i32
    yield %5
  }
  %6 = add %1, %n : i32
  %7 = if %c : i32 {
    %8 = sub %n, %0 : i32
    yield %8
  } else {
    %9 = sub %n, %0 : i32
    yield %9
  }
  %10 = sub %n, %0 : i32
  print %2, %6, %7, %10 {prefix = ""}
  return
}
)",
              R"(kernel @k(%n: i32, %c: i1) {
  %0 = constant {value = 4} : i32
  %1 = mul %n, %0 : i32
  %2 = if %c : i32 {
    %3 = add %1, %n : i32
    yield %3
  } else {
    %4 = add %1, %n : i32
    yield %4
  }
  %5 = add %1, %n : i32
  %6 = if %c : i32 {
    %7 = sub %n, %0 : i32
    yield %7
  } else {
    %8 = sub %n, %0 : i32
    yield %8
  }
  %9 = sub %n, %0 : i32
  print %2, %5, %6, %9 {prefix = ""}
  return
}
)");
}

TEST(Cse, RegionOpsAreNeverMerged) {
  const char* input = R"(kernel @k(%n: i32, %c: i1) {
  %0 = if %c : i32 {
    yield %n
  } else {
    yield %n
  }
  %1 = if %c : i32 {
    yield %n
  } else {
    yield %n
  }
  print %0, %1 {prefix = ""}
  return
}
)";
  expect_pass(cse, input, input);
}

// --- dce ----------------------------------------------------------------------------------

TEST(Dce, RemovesUnusedPureOpsLoadsAndEffectFreeRegions) {
  expect_pass(dce, R"(kernel @k(%p: ptr<f32>, %n: i32, %c: i1) {
  %0 = constant {value = 4} : i32
  %1 = mul %n, %0 : i32
  %2 = add %1, %n : i32
  %3 = load %p : f32
  %4 = if %c : i32 {
    %5 = add %n, %0 : i32
    yield %5
  } else {
    yield %n
  }
  %6 = if %c : i32 {
    print %n {prefix = "kept: it prints"}
    yield %n
  } else {
    yield %n
  }
  %7 = while %0 : i32 {
  ^bb(%8: i32):
    %9 = cmp %8, %n {pred = "lt"} : i1
    condition %9, %8
  } do {
  ^bb(%10: i32):
    %11 = add %10, %0 : i32
    yield %11
  }
  assert %c {message = "kept"}
  return
}
)",
              R"(kernel @k(%p: ptr<f32>, %n: i32, %c: i1) {
  %0 = if %c : i32 {
    print %n {prefix = "kept: it prints"}
    yield %n
  } else {
    yield %n
  }
  assert %c {message = "kept"}
  return
}
)");
}

TEST(Dce, KeepsStoresAndWhatTheyUse) {
  const char* input = R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = addptr %p, %n : ptr<f32>
  %1 = load %0 : f32
  %2 = exp %1 : f32
  store %p, %2
  return
}
)";
  expect_pass(dce, input, input);
}

TEST(Dce, DropsUnusedLoopCarriedValuesAndTheOpsFeedingThem) {
  // %14 only accumulates the induction variable and %16 only yields itself:
  // both go with the ops computing them; %15 feeds the store and stays.
  expect_pass(dce, R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  %3, %4, %5 = for %0, %n, %1, %0, %2, %0 : i32, f32, i32 {
  ^bb(%6: i32, %7: i32, %8: f32, %9: i32):
    %10 = add %7, %6 : i32
    %11 = addptr %p, %6 : ptr<f32>
    %12 = load %11 : f32
    %13 = add %8, %12 : f32
    %14 = mul %9, %9 : i32
    yield %10, %13, %9
  }
  store %p, %4
  return
}
)",
              R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  %3 = for %0, %n, %1, %2 : f32 {
  ^bb(%4: i32, %5: f32):
    %6 = addptr %p, %4 : ptr<f32>
    %7 = load %6 : f32
    %8 = add %5, %7 : f32
    yield %8
  }
  store %p, %3
  return
}
)");
}

TEST(Dce, KeepsLoopCarriedValuesThatFeedOtherSlotsOrEffects) {
  // The results %3 and %4 are unused, but %7 feeds slot 0 (whose result is
  // printed) and %8 feeds a print inside the loop.
  const char* input = R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2, %3, %4 = for %0, %n, %1, %0, %0, %0 : i32, i32, i32 {
  ^bb(%5: i32, %6: i32, %7: i32, %8: i32):
    %9 = add %6, %7 : i32
    print %8 {prefix = ""}
    yield %9, %7, %8
  }
  print %2 {prefix = ""}
  return
}
)";
  expect_pass(dce, input, input);
}

}  // namespace
}  // namespace tegula::passes
