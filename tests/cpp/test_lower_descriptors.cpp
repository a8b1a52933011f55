// desc_load / desc_store / desc_atomic: the verifier's rule, their lowering
// to pointer tiles, masks and load/store/atomic_rmw (golden IR), the pipeline
// that runs it unless a backend keeps the ops, and their pointer effects.
#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "pass_test_util.h"
#include "passes/lower_descriptors.h"
#include "passes/pipeline.h"
#include "passes/pointer_effects.h"

namespace tegula::passes {
namespace {

using testing::expect_pass;
using testing::PassResult;
using testing::run_pass;

constexpr const char* kLoad = R"(kernel @k(%x: ptr<f32>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = desc_load %x, %n, %0, %o {padding = "zero", cache_modifier = ".cg"} : tile<16xf32>
  %2 = exp %1 : tile<16xf32>
  return
}
)";

// Every dim checked on both sides (offset and shape unknown), the padding as
// `other`, the hints kept, uses moved to the load.
TEST(LowerDescriptors, LoadBecomesMaskedLoad) {
  expect_pass(lower_descriptors, kLoad, R"(kernel @k(%x: ptr<f32>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = cast %o : i64
  %2 = cast %0 : i64
  %3 = mul %1, %2 : i64
  %4 = addptr %x, %3 : ptr<f32>
  %5 = arange {start = 0, end = 16} : tile<16xi32>
  %6 = splat %4 : tile<16xptr<f32>>
  %7 = addptr %6, %5 : tile<16xptr<f32>>
  %8 = splat %o : tile<16xi32>
  %9 = add %8, %5 : tile<16xi32>
  %10 = constant {value = 0} : i32
  %11 = splat %10 : tile<16xi32>
  %12 = cmp %9, %11 {pred = "ge"} : tile<16xi1>
  %13 = splat %n : tile<16xi32>
  %14 = cmp %9, %13 {pred = "lt"} : tile<16xi1>
  %15 = and %12, %14 : tile<16xi1>
  %16 = constant {value = 0.0} : f32
  %17 = splat %16 : tile<16xf32>
  %18 = load %7, %15, %17 {cache_modifier = ".cg"} : tile<16xf32>
  %19 = exp %18 : tile<16xf32>
  return
}
)");
}

// A block known to lie inside the tensor (offsets 0, shapes 64) needs no
// mask (the positions are left for DCE); a runtime row stride takes 64-bit
// products.
TEST(LowerDescriptors, StoreOfABlockInsideTheTensorIsUnmasked) {
  expect_pass(lower_descriptors, R"(kernel @k(%x: ptr<i16>, %s: i64) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 64} : i64
  %2 = constant {value = 1} : i64
  %3 = constant {value = 7} : i16
  %4 = splat %3 : tile<16x8xi16>
  desc_store %x, %1, %1, %s, %2, %0, %0, %4
  return
}
)",
              R"(kernel @k(%x: ptr<i16>, %s: i64) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 64} : i64
  %2 = constant {value = 1} : i64
  %3 = constant {value = 7} : i16
  %4 = splat %3 : tile<16x8xi16>
  %5 = arange {start = 0, end = 16} : tile<16xi32>
  %6 = expand_dims %5 {axis = 1} : tile<16x1xi32>
  %7 = cast %6 : tile<16x1xi64>
  %8 = splat %s : tile<16x1xi64>
  %9 = mul %7, %8 : tile<16x1xi64>
  %10 = arange {start = 0, end = 8} : tile<8xi32>
  %11 = expand_dims %10 {axis = 0} : tile<1x8xi32>
  %12 = cast %11 : tile<1x8xi64>
  %13 = broadcast %9 : tile<16x8xi64>
  %14 = broadcast %12 : tile<16x8xi64>
  %15 = add %13, %14 : tile<16x8xi64>
  %16 = splat %x : tile<16x8xptr<i16>>
  %17 = addptr %16, %15 : tile<16x8xptr<i16>>
  %18 = splat %0 : tile<16x1xi32>
  %19 = add %18, %6 : tile<16x1xi32>
  %20 = splat %0 : tile<1x8xi32>
  %21 = add %20, %11 : tile<1x8xi32>
  store %17, %4
  return
}
)");
}

// The masked atomic_rmw with tl.atomic_*'s order (acq_rel, gpu): what the
// front end made of desc.atomic_* before desc_atomic existed.
TEST(LowerDescriptors, AtomicBecomesMaskedAtomicRmw) {
  expect_pass(lower_descriptors, R"(kernel @k(%x: ptr<i32>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = constant {value = 3} : i32
  %2 = splat %1 : tile<8xi32>
  desc_atomic %x, %n, %0, %o, %2 {op = "max"}
  return
}
)",
              R"(kernel @k(%x: ptr<i32>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = constant {value = 3} : i32
  %2 = splat %1 : tile<8xi32>
  %3 = cast %o : i64
  %4 = cast %0 : i64
  %5 = mul %3, %4 : i64
  %6 = addptr %x, %5 : ptr<i32>
  %7 = arange {start = 0, end = 8} : tile<8xi32>
  %8 = splat %6 : tile<8xptr<i32>>
  %9 = addptr %8, %7 : tile<8xptr<i32>>
  %10 = splat %o : tile<8xi32>
  %11 = add %10, %7 : tile<8xi32>
  %12 = constant {value = 0} : i32
  %13 = splat %12 : tile<8xi32>
  %14 = cmp %11, %13 {pred = "ge"} : tile<8xi1>
  %15 = splat %n : tile<8xi32>
  %16 = cmp %11, %15 {pred = "lt"} : tile<8xi1>
  %17 = and %14, %16 : tile<8xi1>
  %18 = atomic_rmw %9, %2, %17 {op = "max", sem = "acq_rel", scope = "gpu"} : tile<8xi32>
  return
}
)");
}

TEST(LowerDescriptors, NanPaddingOfFloats) {
  PassResult r = run_pass(lower_descriptors, R"(kernel @k(%x: ptr<bf16>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = desc_load %x, %n, %0, %o {padding = "nan"} : tile<32xbf16>
  return
}
)");
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.verify, "");
  EXPECT_NE(r.text.find("constant {value = nan} : bf16"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("desc_load"), std::string::npos) << r.text;
}

TEST(LowerDescriptors, NothingToLower) {
  constexpr const char* kPlain = R"(kernel @k(%x: ptr<f32>) {
  %0 = load %x : f32
  return
}
)";
  expect_pass(lower_descriptors, kPlain, kPlain);
}

constexpr const char* kCopy = R"(kernel @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = desc_load %x, %n, %0, %o {padding = "zero"} : tile<16xf32>
  %2 = exp %1 : tile<16xf32>
  desc_store %y, %n, %0, %o, %2
  return
}
)";

TEST(LowerDescriptors, PipelineLowersUnlessTheBackendKeepsTheOps) {
  ir::Function lowered = ir::parse(kCopy);
  std::vector<StageDump> dumps;
  optimize(lowered, &dumps);
  ASSERT_GE(dumps.size(), 3u);
  EXPECT_EQ(dumps[0].stage, "lowered");
  EXPECT_EQ(dumps[1].stage, "lower_descriptors");
  EXPECT_NE(dumps[0].ir.find("desc_load"), std::string::npos);
  EXPECT_EQ(dumps.back().ir.find("desc_load"), std::string::npos);
  EXPECT_NE(dumps.back().ir.find(" = load "), std::string::npos);
  EXPECT_NE(dumps.back().ir.find("  store "), std::string::npos);

  ir::Function kept = ir::parse(kCopy);
  optimize(kept, nullptr, {.keep_descriptor_op = [](const ir::Function&, const ir::Op&) { return ir::DescriptorPath::Keep; }});
  ir::PrintOptions options;
  options.locations = false;
  std::string text = ir::print(kept, options);
  EXPECT_NE(text.find("desc_load"), std::string::npos) << text;
  EXPECT_NE(text.find("desc_store"), std::string::npos) << text;

  // A backend may keep some ops (those its copy engine takes) and get the others lowered.
  ir::Function some = ir::parse(kCopy);
  optimize(some, nullptr,
           {.keep_descriptor_op = [](const ir::Function&, const ir::Op& op) {
             return op.kind == ir::OpKind::DescLoad ? ir::DescriptorPath::Keep : ir::DescriptorPath::Lower;
           }});
  text = ir::print(some, options);
  EXPECT_NE(text.find("desc_load"), std::string::npos) << text;
  EXPECT_EQ(text.find("desc_store"), std::string::npos) << text;
  EXPECT_NE(text.find("  store "), std::string::npos) << text;
}

// A store kept where its offsets are >= 0: the check, then the op in the
// first branch and its pointer form (a masked store) in the second.
TEST(LowerDescriptors, GuardedStoreBranchesOnItsOffsets) {
  ir::Function fn = ir::parse(kCopy);
  EXPECT_TRUE(lower_descriptors(fn, [](const ir::Function&, const ir::Op& op) {
    return op.kind == ir::OpKind::DescLoad ? ir::DescriptorPath::Keep : ir::DescriptorPath::KeepWhereOffsetsNonNegative;
  }));
  EXPECT_EQ(ir::verify(fn), "");
  ir::PrintOptions options;
  options.locations = false;
  std::string text = ir::print(fn, options);
  size_t check = text.find("cmp %o, %");
  size_t branch = text.find("if %", check);
  size_t whole = text.find("desc_store %y, %n, %0, %o, %2", branch);
  size_t pointers = text.find("  store ", whole);
  EXPECT_NE(check, std::string::npos) << text;
  EXPECT_NE(text.find("{pred = \"ge\"}", check), std::string::npos) << text;
  EXPECT_NE(branch, std::string::npos) << text;
  EXPECT_NE(whole, std::string::npos) << text;
  EXPECT_NE(pointers, std::string::npos) << text;
  EXPECT_NE(text.find("desc_load"), std::string::npos) << text;  // kept whole, unguarded
}

TEST(LowerDescriptors, PointerEffects) {
  ir::Function fn = ir::parse(R"(kernel @k(%x: ptr<f32>, %y: ptr<f32>, %z: ptr<f32>, %n: i32, %o: i32) {
  %0 = constant {value = 1} : i32
  %1 = desc_load %x, %n, %0, %o {padding = "zero"} : tile<16xf32>
  desc_store %y, %n, %0, %o, %1
  desc_atomic %z, %n, %0, %o, %1 {op = "add"}
  return
}
)");
  std::vector<PointerEffects> effects = pointer_effects(fn);
  ASSERT_EQ(effects.size(), 5u);
  EXPECT_TRUE(effects[0].read);
  EXPECT_FALSE(effects[0].written);
  EXPECT_TRUE(effects[1].written);
  EXPECT_FALSE(effects[1].read);
  EXPECT_TRUE(effects[2].read && effects[2].written && effects[2].atomic);
}

std::string verify_text(const std::string& body) {
  return ir::verify(ir::parse("kernel @k(%x: ptr<f32>, %p: ptr<i32>, %n: i32, %w: i64) {\n"
                              "  %0 = constant {value = 1} : i32\n" +
                              body + "  return\n}\n"));
}

TEST(LowerDescriptors, VerifierRule) {
  EXPECT_EQ(verify_text("  %1 = desc_load %x, %n, %0, %n {padding = \"zero\"} : tile<16xf32>\n"), "");
  EXPECT_NE(verify_text("  %1 = desc_load %x, %n, %0, %n, %n {padding = \"zero\"} : tile<16xf32>\n")
                .find("a shape, a stride and an offset per dimension"),
            std::string::npos);
  EXPECT_NE(verify_text("  %1 = desc_load %x, %n, %0, %w {padding = \"zero\"} : tile<16xf32>\n")
                .find("offsets must be i32"),
            std::string::npos);
  EXPECT_NE(verify_text("  %1 = desc_load %x, %n, %0, %n {padding = \"zero\"} : tile<16x2xf32>\n")
                .find("rank-1 tile of f32"),
            std::string::npos);
  EXPECT_NE(verify_text("  %1 = desc_load %p, %n, %0, %n {padding = \"nan\"} : tile<16xi32>\n")
                .find("needs float elements"),
            std::string::npos);
  EXPECT_NE(verify_text("  %1 = desc_load %x, %n, %0, %n : tile<16xf32>\n").find("padding"), std::string::npos);
  EXPECT_NE(verify_text("  %1 = constant {value = 2} : i32\n  desc_store %x, %n, %0, %n, %1\n")
                .find("the stored value must be a rank-1 tile of f32"),
            std::string::npos);
  const std::string values = "  %1 = constant {value = 2.0} : f32\n  %2 = splat %1 : tile<16xf32>\n";
  EXPECT_EQ(verify_text(values + "  desc_atomic %x, %n, %0, %n, %2 {op = \"add\"}\n"), "");
  EXPECT_NE(verify_text(values + "  desc_atomic %x, %n, %0, %n, %2\n").find("needs the attribute op"),
            std::string::npos);
  EXPECT_NE(verify_text(values + "  desc_atomic %x, %n, %0, %n, %2 {op = \"xchg\"}\n").find("needs the attribute op"),
            std::string::npos);
  EXPECT_NE(verify_text(values + "  desc_atomic %x, %n, %0, %n, %2 {op = \"and\"}\n").find("no atomic and of f32"),
            std::string::npos);
  EXPECT_NE(verify_text("  %1 = constant {value = 2} : i32\n  desc_atomic %x, %n, %0, %n, %1 {op = \"add\"}\n")
                .find("the value must be a rank-1 tile of f32"),
            std::string::npos);
}

}  // namespace
}  // namespace tegula::passes
