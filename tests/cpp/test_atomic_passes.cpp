// Atomics are side effects to every pass: DCE keeps one whose old value is
// unused (and the loop around it), CSE never merges two identical ones, LICM
// never hoists one out of a loop, and the whole pipeline leaves them alone.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/licm.h"
#include "passes/pipeline.h"

namespace tegula::passes {
namespace {

using testing::expect_pass;

// A loop adding 1 to the same counter twice per iteration, results unused:
// nothing here may change.
constexpr const char* kCounterLoop = R"(kernel @k(%p: ptr<i32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  for %0, %n, %1 {
  ^bb(%2: i32):
    %3 = atomic_rmw %p, %1 {op = "add", sem = "acq_rel", scope = "gpu"} : i32
    %4 = atomic_rmw %p, %1 {op = "add", sem = "acq_rel", scope = "gpu"} : i32
    %5 = atomic_cas %p, %0, %1 {sem = "relaxed", scope = "cta"} : i32
    yield
  }
  return
}
)";

TEST(AtomicPasses, DceKeepsUnusedAtomicsAndTheirLoop) { expect_pass(dce, kCounterLoop, kCounterLoop); }

TEST(AtomicPasses, CseNeverMergesAtomics) { expect_pass(cse, kCounterLoop, kCounterLoop); }

TEST(AtomicPasses, LicmNeverHoistsAtomics) { expect_pass(licm, kCounterLoop, kCounterLoop); }

TEST(AtomicPasses, PipelineKeepsEveryAtomic) {
  ir::Function fn = ir::parse(kCounterLoop);
  optimize(fn);
  ir::PrintOptions options;
  options.locations = false;
  EXPECT_EQ(ir::print(fn, options), kCounterLoop);
}

}  // namespace
}  // namespace tegula::passes
