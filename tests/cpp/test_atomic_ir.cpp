// The atomic ops in the IR: text round trip, one test per verifier rule of
// ir/atomic.h (exact messages), and the spelling tables.
#include <gtest/gtest.h>

#include "ir/atomic.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace tegula::ir {
namespace {

std::string without_locations(const Function& fn) {
  PrintOptions options;
  options.locations = false;
  return print(fn, options);
}

constexpr const char* kAtomics = R"(kernel @k(%p: ptr<f32>, %q: ptr<i64>, %n: i32) {
  %0 = arange {start = 0, end = 16} : tile<16xi32>
  %1 = splat %p : tile<16xptr<f32>>
  %2 = addptr %1, %0 : tile<16xptr<f32>>
  %3 = constant {value = 1.5} : tile<16xf32>
  %4 = splat %n : tile<16xi32>
  %5 = cmp %0, %4 {pred = "lt"} : tile<16xi1>
  %6 = atomic_rmw %2, %3, %5 {op = "max", sem = "relaxed", scope = "cta"} : tile<16xf32>
  %7 = constant {value = 0} : i64
  %8 = constant {value = 1} : i64
  %9 = atomic_cas %q, %7, %8 {sem = "acq_rel", scope = "gpu"} : i64
  %10 = atomic_rmw %q, %9 {op = "xor", sem = "release", scope = "sys"} : i64
  print %6, %10 {prefix = ""}
  return
}
)";

TEST(AtomicIr, TextRoundTripsAndVerifies) {
  Function fn = parse(kAtomics);
  EXPECT_EQ(verify(fn), "");
  EXPECT_EQ(without_locations(fn), kAtomics);
  EXPECT_EQ(without_locations(parse(without_locations(fn))), kAtomics);
}

// The message the verifier gives for `op_line` in a kernel over
// %p: ptr<f32>, %i: ptr<i32>, %t: tile<4xptr<i32>> (made from %i), %m: tile<4xi1>, %v: tile<4xi32>.
std::string problem(const std::string& op_line) {
  std::string text = R"(kernel @k(%p: ptr<f32>, %i: ptr<i32>, %x: f32, %y: i32) {
  %t = splat %i : tile<4xptr<i32>>
  %m = constant {value = 1} : tile<4xi1>
  %v = splat %y : tile<4xi32>
  )" + op_line + R"(
  return
}
)";
  return verify(parse(text));
}

TEST(AtomicIr, VerifierRules) {
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v, %m {op = "add", sem = "acq_rel", scope = "gpu"} : tile<4xi32>)"), "");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v {op = "nand", sem = "acq_rel", scope = "gpu"} : tile<4xi32>)"),
            "`atomic_rmw`: needs a string attribute `op`: one of add max min and or xor xchg");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v {op = "cas", sem = "acq_rel", scope = "gpu"} : tile<4xi32>)"),
            "`atomic_rmw`: needs a string attribute `op`: one of add max min and or xor xchg");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v {op = "add", scope = "gpu"} : tile<4xi32>)"),
            "`atomic_rmw`: needs a string attribute `sem`: one of relaxed acquire release acq_rel");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v {op = "add", sem = "seq_cst", scope = "gpu"} : tile<4xi32>)"),
            "`atomic_rmw`: needs a string attribute `sem`: one of relaxed acquire release acq_rel");
  EXPECT_EQ(problem(R"(%r = atomic_cas %i, %y, %y {sem = "acq_rel", scope = "device"} : i32)"),
            "`atomic_cas`: needs a string attribute `scope`: one of cta gpu sys");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %p, %x {op = "or", sem = "acq_rel", scope = "gpu"} : f32)"),
            "`atomic_rmw`: `or` is not defined on f32");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %y, %y {op = "add", sem = "acq_rel", scope = "gpu"} : i32)"),
            "`atomic_rmw`: operand 0 must be a pointer or a tile of pointers, got i32");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v {op = "add", sem = "acq_rel", scope = "gpu"} : i32)"),
            "`atomic_rmw`: result must be tile<4xi32>, got i32");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %y {op = "add", sem = "acq_rel", scope = "gpu"} : tile<4xi32>)"),
            "`atomic_rmw`: operand 1 must be tile<4xi32>, got i32");
  EXPECT_EQ(problem(R"(%r = atomic_rmw %t, %v, %v {op = "add", sem = "acq_rel", scope = "gpu"} : tile<4xi32>)"),
            "`atomic_rmw`: mask must be tile<4xi1>, got tile<4xi32>");
  EXPECT_EQ(problem(R"(%r = atomic_cas %i, %y, %x {sem = "acq_rel", scope = "gpu"} : i32)"),
            "`atomic_cas`: operand 2 must be i32, got f32");
  EXPECT_EQ(problem(R"(%r = atomic_cas %i, %y {sem = "acq_rel", scope = "gpu"} : i32)"),
            "`atomic_cas`: expects 3 operands, got 2");
  EXPECT_EQ(problem(R"(atomic_rmw %i, %y {op = "add", sem = "acq_rel", scope = "gpu"})"),
            "`atomic_rmw`: expects 1 results, got 0");
}

TEST(AtomicIr, SpellingsAndElementKinds) {
  EXPECT_EQ(parse_atomic_op("xchg"), AtomicOp::Xchg);
  EXPECT_EQ(parse_atomic_op("cas"), std::nullopt);  // its own op kind
  EXPECT_EQ(parse_memory_sem("acq_rel"), MemorySem::AcqRel);
  EXPECT_EQ(parse_memory_scope("sys"), MemoryScope::Sys);
  EXPECT_EQ(memory_sem_choices(), "\"relaxed\", \"acquire\", \"release\", \"acq_rel\"");
  EXPECT_EQ(memory_scope_choices(), "\"cta\", \"gpu\", \"sys\"");
  EXPECT_TRUE(atomic_supports(AtomicOp::Add, Scalar::BF16));
  EXPECT_TRUE(atomic_supports(AtomicOp::Cas, Scalar::F16));
  EXPECT_FALSE(atomic_supports(AtomicOp::Xor, Scalar::F32));
  EXPECT_FALSE(atomic_supports(AtomicOp::Add, Scalar::I8));
  EXPECT_FALSE(atomic_supports(AtomicOp::Max, Scalar::I1));
  EXPECT_FALSE(is_pure(OpKind::AtomicRmw));
  EXPECT_FALSE(is_pure(OpKind::AtomicCas));
}

}  // namespace
}  // namespace tegula::ir
