// Block pointers and tensor descriptors in the front end: what crosses loops
// and branches (only the leaves that change), how a host TensorDescriptor
// argument becomes kernel parameters, and malformed descriptor specs.
#include <gtest/gtest.h>

#include <algorithm>

#include "lower_test_util.h"

using namespace tegula;
using namespace tegula::testing;
using ir::Scalar;

namespace {

// The line of the printed IR that contains `needle`.
std::string line_with(const std::string& ir, const std::string& needle) {
  size_t at = ir.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = ir.rfind('\n', at) + 1, end = ir.find('\n', at);
  return ir.substr(begin, end - begin);
}

frontend::ArgSpec descriptor_arg(Scalar element, size_t rank, bool nan = false) {
  frontend::ArgSpec a;
  a.kind = frontend::ArgSpec::Kind::TensorDescriptor;
  a.dtype = element;
  a.divisibility = 16;
  for (size_t i = 0; i < 2 * rank; ++i) {
    frontend::ArgSpec part = int_arg();
    part.is_one = i == 2 * rank - 1;  // the innermost stride
    a.parts.push_back(part);
  }
  a.block_shape.assign(rank, 16);
  a.value.kind = frontend::GlobalValue::Kind::Str;
  a.value.text = nan ? "nan" : "zero";
  return a;
}

}  // namespace

TEST(LowerBlockPtr, LoopCarriesOnlyTheAdvancedOffset) {
  LowerResult r = lower(R"(def k(x_ptr, out_ptr, M, N):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
    acc = tl.zeros((16, 16), dtype=tl.float32)
    for i in range(0, N, 16):
        acc += tl.load(p, boundary_check=(0, 1), padding_option="zero")
        p = tl.advance(p, (0, 16))
    tl.store(out_ptr + tl.arange(0, 16), tl.sum(acc, axis=1))
)",
                        {ptr_arg(Scalar::F32), ptr_arg(Scalar::F32), int_arg(), int_arg()});
  ASSERT_TRUE(r.ok()) << r.error;
  // Base, shape, strides and the row offset are loop-invariant: the loop
  // carries the accumulator and the column offset only.
  std::string loop = line_with(r.ir, "= for ");
  EXPECT_NE(loop.find(": tile<16x16xf32>, i32 {"), std::string::npos) << r.ir;
  EXPECT_EQ(std::count(loop.begin(), loop.begin() + static_cast<long>(loop.find(" = for")), ','), 1) << loop;
}

TEST(LowerBlockPtr, RuntimeIfYieldsOnlyTheChangedOffset) {
  LowerResult r = lower(R"(def k(x_ptr, n):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (16,), (0,))
    if n > 5:
        p = tl.advance(p, (16,))
    tl.store(p, 1.0, boundary_check=(0,))
)",
                        {ptr_arg(Scalar::F32), int_arg()});
  ASSERT_TRUE(r.ok()) << r.error;
  std::string branch = line_with(r.ir, "= if ");
  EXPECT_NE(branch.find(": i32 {"), std::string::npos) << r.ir;
  EXPECT_EQ(branch.find(","), std::string::npos) << branch;
}

TEST(LowerBlockPtr, HostDescriptorBecomesParameters) {
  LowerResult r = lower(R"(def k(desc, out_ptr):
    tile = desc.load([0, 16])
    desc.store([16, 0], tile * 2)
)",
                        {descriptor_arg(Scalar::F16, 2), ptr_arg(Scalar::F16)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("kernel @k(%desc__base: ptr<f16> div(16), %desc__shape0: i32, %desc__shape1: i32, "
                      "%desc__stride0: i32, %desc__stride1: i32, %out_ptr: ptr<f16> div(16))"),
            std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("load "), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("store "), std::string::npos) << r.ir;
}

TEST(LowerBlockPtr, MalformedDescriptorSpecIsAnError) {
  frontend::ArgSpec bad = descriptor_arg(Scalar::F32, 2);
  bad.parts.pop_back();
  LowerResult r = lower("def k(desc):\n    pass\n", {bad});
  ASSERT_FALSE(r.ok()) << r.ir;
  EXPECT_NE(r.error.find("the TensorDescriptor passed as `desc` has rank 2 and 3 shape and stride entries"),
            std::string::npos)
      << r.error;
  LowerResult nan_ints = lower("def k(desc):\n    pass\n", {descriptor_arg(Scalar::I32, 1, true)});
  EXPECT_NE(nan_ints.error.find("pads with NaN but its elements are int32"), std::string::npos) << nan_ints.error;
}

TEST(LowerBlockPtr, DescriptorNeedsAUnitInnerStride) {
  LowerResult r = lower(R"(def k(x_ptr, n, s):
    d = tl.make_tensor_descriptor(x_ptr, shape=[n, n], strides=[n, s], block_shape=[16, 16])
)",
                        {ptr_arg(Scalar::F32), int_arg(), int_arg()});
  ASSERT_FALSE(r.ok()) << r.ir;
  EXPECT_NE(r.error.find("kernel.py:2:56: error[E0406]: the last stride of a tensor descriptor must be the constant 1"),
            std::string::npos)
      << r.error;
}
