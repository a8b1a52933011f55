// Which desc ops sm_90 copies with the TMA (backends/cuda/tma_plan.h), the
// tensor map each one needs, and how a launch reads that map's fields from
// its arguments (launch_tensor_maps.h); no GPU needed.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "backends/cuda/launch_tensor_maps.h"
#include "backends/cuda/tma_plan.h"
#include "ir/descriptor.h"
#include "ir/parser.h"

namespace tegula::backends::cuda {
namespace {

// One desc_load of a 16 x 16 block of x (M x N, row stride `stride`), for
// each case below written with different operands.
ir::Function kernel(const std::string& params, const std::string& load) {
  return ir::parse("kernel @k(" + params + R"() {
  %one = constant {value = 1} : i32
  %eight = constant {value = 8} : i32
  %zero = constant {value = 0} : i32
  )" + load + R"(
  return
}
)");
}

const ir::Op& first_desc_op(const ir::Function& fn) {
  const ir::Op* found = nullptr;
  fn.walk([&](ir::OpId id) {
    if (!found && ir::is_descriptor_op(fn.op(id).kind)) found = &fn.op(id);
  });
  EXPECT_NE(found, nullptr);
  return *found;
}

std::string refusal(const std::string& params, const std::string& load) {
  ir::Function fn = kernel(params, load);
  return tma_refusal(fn, first_desc_op(fn));
}

constexpr const char* kParams = "%x: ptr<f32> div(16), %M: i32, %N: i32 div(16), %s: i32 div(16), %t: i32 div(2)";

TEST(TmaPlan, CopiesBlocksWhoseMapIsKnownAtLaunch) {
  EXPECT_EQ(refusal(kParams, "%b = desc_load %x, %M, %N, %s, %one, %zero, %zero {padding = \"zero\"} : tile<16x16xf32>"),
            "");
  ir::Function fn = kernel(kParams, "%b = desc_load %x, %M, %N, %s, %one, %zero, %zero {padding = \"nan\"} : tile<16x8xf32>");
  TensorMapParam map = tma_map_param(fn, first_desc_op(fn));
  EXPECT_EQ(map.base, 0);
  EXPECT_EQ(map.shape, (std::vector<TensorMapExtent>{{1, 0}, {2, 0}}));
  EXPECT_EQ(map.strides, (std::vector<TensorMapExtent>{{3, 0}, {-1, 1}}));
  EXPECT_EQ(map.box, (std::vector<int64_t>{16, 8}));
  EXPECT_TRUE(map.nan_fill);
}

TEST(TmaPlan, RefusesWhatTheSpecializationDoesNotProve) {
  auto load = [](const std::string& operands, const std::string& type = "tile<16x16xf32>") {
    return "%b = desc_load " + operands + " {padding = \"zero\"} : " + type;
  };
  EXPECT_NE(refusal("%x: ptr<f32>, %M: i32, %N: i32", load("%x, %M, %N, %N, %one, %zero, %zero")).find("16-byte aligned"),
            std::string::npos);
  EXPECT_NE(refusal(kParams, load("%x, %M, %N, %t, %one, %zero, %zero")).find("multiple of 16 bytes"),
            std::string::npos);
  EXPECT_NE(refusal(kParams, load("%x, %M, %N, %s, %s, %zero, %zero")).find("innermost stride"), std::string::npos);
  // 8 floats of row stride: 32 bytes, a multiple of 16, known from the constant.
  EXPECT_EQ(refusal(kParams, load("%x, %M, %N, %eight, %one, %zero, %zero")), "");
  EXPECT_NE(refusal(kParams, load("%x, %M, %N, %s, %one, %zero, %zero", "tile<16x2xf32>")).find("8 bytes"),
            std::string::npos);
  EXPECT_NE(refusal(kParams, load("%x, %M, %N, %s, %one, %zero, %zero", "tile<512x16xf32>")).find("at most 256"),
            std::string::npos);
  std::string computed = "%m2 = add %M, %eight : i32\n  " + load("%x, %m2, %N, %s, %one, %zero, %zero");
  EXPECT_NE(refusal(kParams, computed).find("computed in the kernel"), std::string::npos);
}

std::string offset_refusal(const std::string& params, const std::string& body) {
  ir::Function fn = kernel(params, body);
  return tma_offset_refusal(fn, first_desc_op(fn), passes::AxisInfoAnalysis(fn));
}

// The TMA needs the box's first address 16-byte aligned: the innermost
// offset, in elements times their bytes, must be known a multiple of 16.
TEST(TmaPlan, InnermostOffsetsKnownOn16Bytes) {
  auto load = [](const std::string& row, const std::string& col, const std::string& type = "tile<16x16xf32>") {
    return "%b = desc_load %x, %M, %N, %s, %one, " + row + ", " + col + " {padding = \"zero\"} : " + type;
  };
  const std::string p = std::string(kParams) + ", %c: i32, %c16: i32 div(16)";
  EXPECT_EQ(offset_refusal(p, load("%zero", "%zero")), "");
  EXPECT_EQ(offset_refusal(p, load("%c", "%c16")), "");  // the row offset may be anything
  // 8 floats (32 bytes); a program's block of 8 floats; 4 floats less (16 bytes).
  EXPECT_EQ(offset_refusal(p, load("%zero", "%eight")), "");
  std::string block = "%pid = program_id {axis = 0} : i32\n  %o = mul %pid, %eight : i32\n  ";
  EXPECT_EQ(offset_refusal(p, block + load("%zero", "%o")), "");
  EXPECT_EQ(offset_refusal(p, block + "%four = constant {value = 4} : i32\n  %o4 = sub %o, %four : i32\n  " +
                                  load("%zero", "%o4")),
            "");
  // 3 floats, an unspecialized argument, a program id: not known.
  std::string three = "%three = constant {value = 3} : i32\n  ";
  EXPECT_EQ(offset_refusal(p, three + load("%zero", "%three")),
            "the innermost offset is not known to be a multiple of 4 elements (16 bytes; the TMA needs it)");
  EXPECT_NE(offset_refusal(p, load("%zero", "%c")), "");
  EXPECT_NE(offset_refusal(p, "%pid = program_id {axis = 0} : i32\n  " + load("%zero", "%pid")), "");
  // For f16, 8 elements make 16 bytes and 4 do not.
  const std::string h = "%x: ptr<f16> div(16), %M: i32, %N: i32 div(16), %s: i32 div(16)";
  EXPECT_EQ(offset_refusal(h, load("%zero", "%eight", "tile<16x16xf16>")), "");
  EXPECT_EQ(offset_refusal(h, "%four = constant {value = 4} : i32\n  " + load("%zero", "%four", "tile<16x16xf16>")),
            "the innermost offset is not known to be a multiple of 8 elements (16 bytes; the TMA needs it)");
}

std::string sign_doubt(const std::string& params, const std::string& body) {
  ir::Function fn = kernel(params, body);
  return tma_sign_doubt(fn, first_desc_op(fn));
}

// Written boxes must start inside the tensor: a store's (reduction's)
// offsets known >= 0 need no check at run time; a load's need not be.
TEST(TmaPlan, StoresAtOffsetsKnownNonNegative) {
  auto store = [](const std::string& row, const std::string& col) {
    return "%v = constant {value = 1.0} : f32\n  %val = splat %v : tile<16x16xf32>\n  "
           "desc_store %x, %M, %N, %s, %one, " + row + ", " + col + ", %val";
  };
  const std::string p = std::string(kParams) + ", %c: i32 div(16), %d: i32";
  const std::string pid = "%pid = program_id {axis = 0} : i32\n  %o = mul %pid, %eight : i32\n  ";
  EXPECT_EQ(sign_doubt(p, pid + store("%o", "%o")), "");
  // N is the map's extent (the launcher refuses it below 1): cdiv(N, 8) - 1 is >= 0, cdiv(N, 8) - 2 is not known.
  const std::string cdiv = "%seven = constant {value = 7} : i32\n  %n7 = add %N, %seven : i32\n  "
                           "%tiles = div %n7, %eight : i32\n  ";
  EXPECT_EQ(sign_doubt(p, cdiv + "%last = sub %tiles, %one : i32\n  " + store("%last", "%zero")), "");
  EXPECT_EQ(sign_doubt(p, cdiv + "%two = constant {value = 2} : i32\n  %t2 = sub %tiles, %two : i32\n  " +
                              store("%t2", "%zero")),
            "offset 0 is not known to be >= 0");
  // An argument, the difference of two values, a quotient by a value of unknown sign: not known.
  EXPECT_EQ(sign_doubt(p, pid + store("%d", "%zero")), "offset 0 is not known to be >= 0");
  EXPECT_EQ(sign_doubt(p, pid + "%r = sub %M, %o : i32\n  " + store("%zero", "%r")), "offset 1 is not known to be >= 0");
  EXPECT_EQ(sign_doubt(p, pid + "%q = div %o, %d : i32\n  " + store("%q", "%zero")), "offset 0 is not known to be >= 0");
  // tl.assume(d > 0) makes it a divisor of known sign, and a row offset of its own.
  const std::string assumed = pid + "%h = hint %d {at_least = [1]} : i32\n  %q = div %o, %h : i32\n  ";
  EXPECT_EQ(sign_doubt(p, assumed + store("%q", "%h")), "");
  // A load may start before the tensor.
  EXPECT_EQ(sign_doubt(p, "%b = desc_load %x, %M, %N, %s, %one, %d, %zero {padding = \"zero\"} : tile<16x16xf32>"), "");
}

// desc_atomic takes the TMA's bulk reduction where the PTX ISA defines it on
// the map's element type the way the IR's atomic means it (tma_reduces).
TEST(TmaPlan, ReducesWhatCpReduceAsyncBulkTensorDefines) {
  auto atomic = [](const std::string& op, const std::string& type) {
    std::string params = "%x: ptr<" + type + "> div(16), %M: i32, %N: i32 div(16), %s: i32 div(16)";
    std::string body = "%v = constant {value = 1} : " + type + "\n  %t = splat %v : tile<16x16x" + type + ">\n" +
                       "  desc_atomic %x, %M, %N, %s, %one, %zero, %zero, %t {op = \"" + op + "\"}";
    return refusal(params, body);
  };
  for (const char* type : {"f32", "i32", "u32", "u64"}) EXPECT_EQ(atomic("add", type), "") << type;
  for (const char* op : {"min", "max", "and", "or", "xor"})
    for (const char* type : {"i32", "u32", "i64", "u64"}) EXPECT_EQ(atomic(op, type), "") << op << " " << type;
  EXPECT_EQ(atomic("add", "i64"), "the TMA has no add reduction of i64 elements");
  EXPECT_EQ(atomic("add", "f16"), "the TMA has no add reduction of f16 elements");
  EXPECT_EQ(atomic("add", "bf16"), "the TMA has no add reduction of bf16 elements");
  EXPECT_EQ(atomic("max", "f32"), "the TMA has no max reduction of f32 elements");
  EXPECT_EQ(atomic("add", "f64"), "the TMA has no add reduction of f64 elements");
  // The map's own rules still hold.
  EXPECT_NE(refusal("%x: ptr<f32> div(16), %M: i32, %N: i32, %s: i32 div(2)",
                    "%v = constant {value = 1.0} : f32\n  %t = splat %v : tile<16x16xf32>\n"
                    "  desc_atomic %x, %M, %N, %s, %one, %zero, %zero, %t {op = \"add\"}")
                .find("multiple of 16 bytes"),
            std::string::npos);
}

TEST(TmaPlan, ProductsOfParametersAreMultipliedAtLaunch) {
  // rows = M * N * 8 (Triton's `Z * H * N_CTX` form): the launcher multiplies as the kernel does, in 32 bits.
  ir::Function fn = kernel(kParams, R"(%mn = mul %M, %N : i32
  %rows = mul %mn, %eight : i32
  %st = mul %s, %eight : i32
  %b = desc_load %x, %rows, %N, %st, %one, %zero, %zero {padding = "zero"} : tile<16x16xf32>)");
  EXPECT_EQ(tma_refusal(fn, first_desc_op(fn)), "");
  TensorMapParam map = tma_map_param(fn, first_desc_op(fn));
  EXPECT_EQ(map.shape[0], (TensorMapExtent{1, 0, {2}, 8, 32}));
  EXPECT_EQ(map.strides[0], (TensorMapExtent{3, 0, {}, 8, 32}));
  std::optional<TensorMapParam> back = parse_tensor_map_param(to_text(map));
  ASSERT_TRUE(back.has_value()) << to_text(map);
  EXPECT_EQ(*back, map);
  EXPECT_NE(to_text(map).find("shape=p1*p2*8@32,p2"), std::string::npos) << to_text(map);
  for (const char* bad : {"p1*", "p1*p2@16", "3@32", "p1**p2", "p-1*p2"}) {
    std::string text = "base=0 shape=" + std::string(bad) + ",p2 strides=p3,1 box=16,16 swizzle=0 fill=zero";
    EXPECT_FALSE(parse_tensor_map_param(text).has_value()) << bad;
  }
  // A product with an odd factor of unknown divisibility is no stride the TMA takes.
  std::string odd = R"(%st = mul %s, %M : i32
  %b = desc_load %x, %M, %N, %st, %one, %zero, %zero {padding = "zero"} : tile<16x16xf32>)";
  EXPECT_EQ(refusal(kParams, odd), "");  // s (div 16) times anything stays a multiple of 16 floats
  std::string unknown = R"(%st = mul %t, %M : i32
  %b = desc_load %x, %M, %N, %st, %one, %zero, %zero {padding = "zero"} : tile<16x16xf32>)";
  EXPECT_NE(refusal(kParams, unknown).find("multiple of 16 bytes"), std::string::npos);
}

TEST(TmaPlan, LaunchMultipliesAndWrapsLikeTheKernel) {
  KernelInfo info;
  info.name = "k";
  info.params = {{"x", ir::Type::ptr(ir::Scalar::F32), 16}, {"M", ir::Type::of(ir::Scalar::I32), 1},
                 {"N", ir::Type::of(ir::Scalar::I32), 16}};
  TensorMapParam map;
  map.base = 0;
  map.shape = {{1, 0, {2}, 2, 32}, {2, 0}};
  map.strides = {{2, 0}, {-1, 1}};
  map.box = {16, 16};
  info.tensor_maps = {map};
  std::vector<ArgValue> args(3);
  args[0] = {ArgValue::Kind::Pointer, 0x7f0000001000};
  args[1] = {ArgValue::Kind::Int, 300};
  args[2] = {ArgValue::Kind::Int, 1024};
  EXPECT_EQ(tensor_map_key(info, map, args).shape, (std::vector<int64_t>{614400, 1024}));
  // 70000 * 1024 * 2 overflows int32 in the kernel: the launcher sees the same wrapped value and refuses it.
  args[1].bits = 70000 * 16;
  TensorMapKey wrapped = tensor_map_key(info, map, args);
  EXPECT_EQ(wrapped.shape[0], static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(70000ull * 16 * 1024 * 2))));
  EXPECT_NE(tma_problem(wrapped), "");
}

TEST(TmaPlan, LaunchReadsTheMapFromTheArguments) {
  KernelInfo info;
  info.name = "k";
  info.params = {{"x", ir::Type::ptr(ir::Scalar::BF16), 16}, {"M", ir::Type::of(ir::Scalar::I32), 1},
                 {"N", ir::Type::of(ir::Scalar::I64), 16}};
  TensorMapParam map;
  map.base = 0;
  map.shape = {{1, 0}, {2, 0}};
  map.strides = {{2, 0}, {-1, 1}};
  map.box = {64, 64};
  info.tensor_maps = {map};
  std::vector<ArgValue> args(3);
  args[0] = {ArgValue::Kind::Pointer, 0x7f0000001000};
  args[1] = {ArgValue::Kind::Int, 300};
  args[2] = {ArgValue::Kind::Int, 1024};
  TensorMapKey key = tensor_map_key(info, map, args);
  EXPECT_EQ(key.base, 0x7f0000001000u);
  EXPECT_EQ(key.dtype, ir::Scalar::BF16);
  EXPECT_EQ(key.shape, (std::vector<int64_t>{300, 1024}));
  EXPECT_EQ(key.strides, (std::vector<int64_t>{1024, 1}));
  EXPECT_EQ(key.box, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(tma_problem(key), "");
  // A size of 0 passes every specialization (0 is divisible by 16) and is refused at launch, naming the kernel.
  args[1].bits = 0;
  EXPECT_NE(tma_problem(tensor_map_key(info, map, args)).find("has 0 elements"), std::string::npos);
  try {
    LaunchTensorMaps maps(info, args);
    FAIL() << "a tensor with an empty dimension was encoded";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("kernel 'k' copies blocks of 'x' with the TMA"), std::string::npos) << what;
    EXPECT_EQ(e.code(), Diag::InvalidTensorDescriptor);
  }
}

}  // namespace
}  // namespace tegula::backends::cuda
