// Front-end semantics: what kernels lower to, and the located diagnostics for
// each class of user error.
#include <gtest/gtest.h>

#include "lower_test_util.h"

using namespace tegula;
using namespace tegula::testing;
using ir::Scalar;

namespace {

const char* kVectorAdd = R"(@tegula.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
)";

std::vector<frontend::ArgSpec> vector_add_args() {
  return {ptr_arg(Scalar::F32), ptr_arg(Scalar::F32), ptr_arg(Scalar::F32), int_arg(), const_int(1024)};
}

// Expects a diagnostic whose first line is `kernel.py:LINE:COL: error[CODE]: MESSAGE...`.
void expect_error(const LowerResult& r, int line, int col, const std::string& message) {
  ASSERT_FALSE(r.ok()) << "expected an error, got IR:\n" << r.ir;
  // The code itself is asserted per message by tests/python/test_diagnostic_codes.py.
  std::string head = "kernel.py:" + std::to_string(line) + ":" + std::to_string(col) + ": error[E";
  EXPECT_EQ(r.error.rfind(head, 0), 0u) << r.error;
  EXPECT_EQ(r.error.substr(head.size() + 4, 3), "]: ") << r.error;
  EXPECT_NE(r.error.find(message), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("^"), std::string::npos) << "no caret:\n" << r.error;
}

}  // namespace

TEST(Lower, VectorAddHasTheExpectedOps) {
  LowerResult r = lower(kVectorAdd, vector_add_args());
  ASSERT_TRUE(r.ok()) << r.error;
  for (const char* op : {"program_id", "arange", "splat", "addptr", "load", "cmp", "store", "add"})
    EXPECT_NE(r.ir.find(op), std::string::npos) << op << "\n" << r.ir;
  EXPECT_NE(r.ir.find("tile<1024xf32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("%x_ptr: ptr<f32> div(16)"), std::string::npos) << r.ir;
}

TEST(Lower, BroadcastingTwoDimensions) {
  LowerResult r = lower(R"(def k(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offs = rows[:, None] * stride + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2.0 + 1, mask=mask)
)",
                        {ptr_arg(Scalar::F16), ptr_arg(Scalar::F16), int_arg(), int_arg(), int_arg(), const_int(16),
                         const_int(32)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("expand_dims"), std::string::npos);
  EXPECT_NE(r.ir.find("broadcast"), std::string::npos);
  // A float literal combined with an f16 tile stays f16 (Triton's scalar rule).
  EXPECT_NE(r.ir.find("mul"), std::string::npos);
  EXPECT_NE(r.ir.find("tile<16x32xf16>"), std::string::npos) << r.ir;
  EXPECT_EQ(r.ir.find("tile<16x32xf32>"), std::string::npos) << r.ir;
}

TEST(Lower, ConstexprIfTakesOneBranchOnly) {
  LowerResult r = lower(R"(def k(x_ptr, FLAG: tl.constexpr):
    if FLAG:
        tl.store(x_ptr, 1.0)
    else:
        tl.store(x_ptr, tl.exp(2.0))
)",
                        {ptr_arg(Scalar::F32), const_int(1)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.ir.find("exp"), std::string::npos) << r.ir;
  EXPECT_EQ(r.ir.find(" if "), std::string::npos) << r.ir;
}

// A tuple constexpr (a shape) is a tuple in the kernel: indexable, with a
// length, and a shape for tl.reshape; None is a constant that folds `is None`.
TEST(Lower, TupleAndNoneConstexprArguments) {
  frontend::ArgSpec shape;
  shape.kind = frontend::ArgSpec::Kind::Constexpr;
  shape.value.kind = frontend::GlobalValue::Kind::Tuple;
  for (int64_t d : {4, 8}) {
    frontend::GlobalValue element;
    element.kind = frontend::GlobalValue::Kind::Int;
    element.int_value = d;
    shape.value.elements.push_back(element);
  }
  frontend::ArgSpec none;
  none.kind = frontend::ArgSpec::Kind::Constexpr;
  none.value.kind = frontend::GlobalValue::Kind::None;
  LowerResult r = lower(R"(
def k(x_ptr, bias_ptr, SHAPE: tl.constexpr):
    offs = tl.arange(0, SHAPE[0] * SHAPE[1])
    x = tl.reshape(tl.load(x_ptr + offs), SHAPE)
    if bias_ptr is not None:
        x = x + tl.load(bias_ptr)
    tl.store(x_ptr + offs, tl.reshape(x, (SHAPE[0] * SHAPE[1],)) + len(SHAPE))
)",
                        {ptr_arg(Scalar::F32), none, shape});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("tile<4x8xf32>"), std::string::npos) << r.ir;
  EXPECT_EQ(r.ir.find("bias_ptr"), std::string::npos) << r.ir;  // no parameter, no load
}

TEST(Lower, RuntimeIfYieldsChangedVariables) {
  LowerResult r = lower(R"(def k(x_ptr, n):
    v = 1.0
    if n > 4:
        v = 2.0
    elif n > 2:
        v = v + 3.0
    tl.store(x_ptr, v)
)",
                        {ptr_arg(Scalar::F32), int_arg()});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("= if "), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("yield"), std::string::npos) << r.ir;
}

TEST(Lower, ForLoopCarriesAccumulator) {
  LowerResult r = lower(R"(def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))
)",
                        {ptr_arg(Scalar::F32), ptr_arg(Scalar::F32), int_arg(), const_int(128)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("= for "), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("reduce"), std::string::npos) << r.ir;
}

TEST(Lower, WhileLoopAndStaticRange) {
  LowerResult r = lower(R"(def k(x_ptr, n):
    i = 0
    total = 0
    while i < n:
        total += i
        i += 1
    for j in tl.static_range(3):
        total += j
    tl.store(x_ptr, total)
)",
                        {ptr_arg(Scalar::I32), int_arg()});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("while"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("condition"), std::string::npos) << r.ir;
}

TEST(Lower, InlinesJitFunctionsWithTupleReturns) {
  frontend::KernelRequest request;
  request.functions.push_back(source("k", R"(def k(x_ptr, BLOCK: tl.constexpr):
    a, b = helper(tl.arange(0, BLOCK), 2)
    tl.store(x_ptr + a, b)
)"));
  request.functions.push_back(source("helper", R"(@tegula.jit
def helper(x, scale: tl.constexpr = 1):
    """Doubles."""
    return x, (x * scale).to(tl.float32)
)", 20));
  frontend::GlobalValue g;
  g.kind = frontend::GlobalValue::Kind::JitFunction;
  g.function = 1;
  request.functions[0].globals["helper"] = g;
  request.args = {ptr_arg(Scalar::F32), const_int(64)};
  LowerResult r = lower(request);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("cast"), std::string::npos) << r.ir;
}

TEST(Lower, IntegerOneIsSpecializedAsConstant) {
  frontend::ArgSpec one = int_arg();
  one.is_one = true;
  LowerResult r = lower(R"(def k(x_ptr, stride):
    tl.store(x_ptr + stride * 4, 1.0)
)",
                        {ptr_arg(Scalar::F32), one});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("constant {value = 4}"), std::string::npos) << r.ir;
}

// A parameter of declared type (u: tl.uint8) specialized on the value 1 holds
// a u8 1: `u + 255` wraps to 0 as it would for a u8 argument, where Python's
// untyped 1 would make 256.
TEST(Lower, TypedOneKeepsItsDeclaredType) {
  frontend::ArgSpec one = int_arg(Scalar::U8);
  one.is_one = true;
  one.typed_one = true;
  LowerResult r = lower(R"(def k(x_ptr, u):
    tl.store(x_ptr, u + 255)
)",
                        {ptr_arg(Scalar::I64), one});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("constant {value = 1} : u8"), std::string::npos) << r.ir;
  EXPECT_EQ(r.ir.find("value = 256"), std::string::npos) << r.ir;
}

// --- diagnostics -------------------------------------------------------------------

TEST(LowerDiagnostics, UnknownName) {
  expect_error(lower("def k(x_ptr):\n    y = foo + 1\n", {ptr_arg(Scalar::F32)}, 10), 11, 9,
               "name `foo` is not defined");
}

TEST(LowerDiagnostics, UnknownNameSuggestsTl) {
  LowerResult r = lower("def k(x_ptr):\n    pid = program_id(0)\n", {ptr_arg(Scalar::F32)});
  expect_error(r, 2, 11, "name `program_id` is not defined");
  EXPECT_NE(r.error.find("tl.program_id"), std::string::npos) << r.error;
}

TEST(LowerDiagnostics, NonConstexprTileSize) {
  LowerResult r = lower("def k(x_ptr, n):\n    offs = tl.arange(0, n)\n", {ptr_arg(Scalar::F32), int_arg()});
  expect_error(r, 2, 25, "the end of tl.arange must be a compile-time constant");
  EXPECT_NE(r.error.find("hint:"), std::string::npos) << r.error;
}

TEST(LowerDiagnostics, NonPowerOfTwoArange) {
  expect_error(lower("def k(x_ptr):\n    offs = tl.arange(0, 100)\n", {ptr_arg(Scalar::F32)}), 2, 12,
               "tl.arange range length must be a power of two, but it is 100");
}

TEST(LowerDiagnostics, ShapeMismatch) {
  expect_error(lower("def k(x_ptr):\n    z = tl.arange(0, 64) + tl.arange(0, 128)\n", {ptr_arg(Scalar::F32)}), 2, 9,
               "shapes tile<64xi32> and tile<128xi32> cannot be broadcast together");
}

TEST(LowerDiagnostics, FloatPointerOffset) {
  expect_error(lower("def k(x_ptr):\n    p = x_ptr + 1.5\n", {ptr_arg(Scalar::F32)}), 2, 9,
               "pointer offsets must be integers");
}

TEST(LowerDiagnostics, DtypeMismatchInLoop) {
  LowerResult r = lower(R"(def k(x_ptr, n):
    acc = 0
    for i in range(n):
        acc = acc + tl.load(x_ptr + i)
    tl.store(x_ptr, acc)
)",
                        {ptr_arg(Scalar::F32), int_arg()});
  expect_error(r, 3, 5, "`acc` changes type from i32 to f32");
}

TEST(LowerDiagnostics, TileConditionInIf) {
  expect_error(lower(R"(def k(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    if x > 0:
        tl.store(x_ptr, 1.0)
)",
                     {ptr_arg(Scalar::F32), const_int(32)}),
               3, 8, "the `if` condition must be a scalar");
}

TEST(LowerDiagnostics, BreakIsUnsupported) {
  expect_error(lower("def k(x_ptr, n):\n    for i in range(n):\n        break\n", {ptr_arg(Scalar::F32), int_arg()}), 3,
               9, "`break` is not supported inside kernels");
}

TEST(LowerDiagnostics, WrongArgumentCount) {
  LowerResult r = lower("def k(x_ptr, n):\n    pass\n", {ptr_arg(Scalar::F32)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("kernel `k` takes 2 arguments but 1 were given"), std::string::npos) << r.error;
}

TEST(LowerDiagnostics, ConstexprParameterGivenRuntimeValue) {
  expect_error(lower("def k(x_ptr, BLOCK: tl.constexpr):\n    pass\n", {ptr_arg(Scalar::F32), int_arg()}), 1, 14,
               "parameter `BLOCK` is a constexpr but received a runtime value");
}

TEST(LowerDiagnostics, UnsupportedTlFunction) {
  expect_error(lower("def k(x_ptr):\n    tl.atomic_poll(x_ptr, 1)\n", {ptr_arg(Scalar::F32)}), 2, 5,
               "`tl.atomic_poll` is not supported by Tegula yet");
}

TEST(LowerDiagnostics, StoreThroughNonPointer) {
  expect_error(lower("def k(x_ptr, n):\n    tl.store(n, 1)\n", {ptr_arg(Scalar::F32), int_arg()}), 2, 14,
               "the pointer of tl.store must be a pointer");
}

TEST(LowerDiagnostics, IndexingTileWithInteger) {
  expect_error(lower("def k(x_ptr):\n    x = tl.arange(0, 16)\n    y = x[3]\n", {ptr_arg(Scalar::F32)}), 3, 11,
               "unsupported tensor index: tiles take only `None` (a new dimension) and `:` (a kept one)");
}

TEST(LowerDiagnostics, ReturnValueFromKernel) {
  expect_error(lower("def k(x_ptr):\n    return 1\n", {ptr_arg(Scalar::F32)}), 2, 5, "a kernel cannot return a value");
}

TEST(LowerDiagnostics, StaticAssert) {
  expect_error(lower("def k(x_ptr, B: tl.constexpr):\n    tl.static_assert(B % 16 == 0, \"B must be a multiple of 16\")\n",
                     {ptr_arg(Scalar::F32), const_int(24)}),
               2, 5, "static assertion failed: B must be a multiple of 16");
}


TEST(Lower, PythonMinMaxOnTensorsAreElementwise) {
  LowerResult r = lower(R"(def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = min(n - 1, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, max(x, 0.0, x * 2.0), mask=offs < m)
)",
                        {ptr_arg(Scalar::F32), int_arg(), const_int(64)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.ir.find("= min "), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("= max "), std::string::npos) << r.ir;
}
