// CompiledKernel::launch against a hand-written kernel that follows the CPU
// ABI (backends/cpu/codegen.h) and reports what it received.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "runtime/compiler.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/thread_pool.h"
#include "backends/launch_arguments.h"
#include "runtime_test_util.h"

namespace tegula::runtime {
namespace {

using backends::cpu::SharedLibrary;
using backends::cpu::ThreadPool;

using testing::build_shared_object;
using testing::TempDir;

// Parameters: out: ptr<i64>, a: i32, b: i64, c: u64, d: f32, e: i1, f: f64, g: i8, h: u16.
// Program 0 writes every argument (as bits) and the grid into out[0..11];
// every program counts its visit in out[16 + linear id].
constexpr const char* kRecorderSource = R"(
#include <cstdint>
#include <cstring>
template <class T> int64_t bits_of(const void* slot) {
  T value;
  std::memcpy(&value, slot, sizeof(T));
  int64_t out = 0;
  std::memcpy(&out, &value, sizeof(T));
  return out;
}
extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last) {
  int64_t* out = *static_cast<int64_t* const*>(args[0]);
  for (int64_t id = first; id < last; ++id) {
    __atomic_fetch_add(&out[16 + id], 1, __ATOMIC_RELAXED);
    if (id != 0) continue;
    out[0] = *static_cast<const int32_t*>(args[1]);
    out[1] = *static_cast<const int64_t*>(args[2]);
    out[2] = static_cast<int64_t>(*static_cast<const uint64_t*>(args[3]));
    out[3] = bits_of<float>(args[4]);
    out[4] = *static_cast<const uint8_t*>(args[5]);
    out[5] = bits_of<double>(args[6]);
    out[6] = *static_cast<const int8_t*>(args[7]);
    out[7] = *static_cast<const uint16_t*>(args[8]);
    out[8] = grid[0];
    out[9] = grid[1];
    out[10] = grid[2];
    int64_t aligned = 1;
    for (int i = 0; i < 9; ++i) aligned &= reinterpret_cast<uintptr_t>(args[i]) % 8 == 0;
    out[11] = aligned;
  }
}
)";

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    build_shared_object(kRecorderSource, tmp_ / "recorder.so");
    kernel_.name = "recorder";
    kernel_.params = {{"out", ir::Type::ptr(ir::Scalar::I64), 16}, {"a", ir::Type::of(ir::Scalar::I32), 1},
                      {"b", ir::Type::of(ir::Scalar::I64), 1},     {"c", ir::Type::of(ir::Scalar::U64), 1},
                      {"d", ir::Type::of(ir::Scalar::F32), 1},     {"e", ir::Type::of(ir::Scalar::I1), 1},
                      {"f", ir::Type::of(ir::Scalar::F64), 1},     {"g", ir::Type::of(ir::Scalar::I8), 1},
                      {"h", ir::Type::of(ir::Scalar::U16), 1}};
    kernel_.loaded = backends::cpu::CpuKernel::open(tmp_ / "recorder.so");
  }

  static ArgValue pointer(const void* p) {
    return ArgValue{ArgValue::Kind::Pointer, reinterpret_cast<uintptr_t>(p), 0.0};
  }
  static ArgValue integer(int64_t v) { return ArgValue{ArgValue::Kind::Int, static_cast<uint64_t>(v), 0.0}; }
  static ArgValue unsigned_integer(uint64_t v) { return ArgValue{ArgValue::Kind::UInt, v, 0.0}; }
  static ArgValue real(double v) { return ArgValue{ArgValue::Kind::Float, 0, v}; }
  static ArgValue boolean(bool v) { return ArgValue{ArgValue::Kind::Bool, v ? 1u : 0u, 0.0}; }

  std::vector<ArgValue> good_args() {
    return {pointer(out_.data()), integer(-123456), integer(int64_t{1} << 40), unsigned_integer(~uint64_t{0} - 5),
            real(1.5), boolean(true), real(-2.25), integer(-7), integer(65535)};
  }

  void launch(int64_t x, int64_t y, int64_t z, const std::vector<ArgValue>& args) {
    const int64_t grid[3] = {x, y, z};
    kernel_.launch(grid, args);
  }

  std::string error_of(int64_t x, int64_t y, int64_t z, const std::vector<ArgValue>& args, ErrorKind kind) {
    try {
      launch(x, y, z, args);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "launch did not fail";
    return {};
  }

  TempDir tmp_;
  CompiledKernel kernel_;
  std::vector<int64_t> out_ = std::vector<int64_t>(16 + 4096, 0);
};

TEST_F(LaunchTest, PacksEachArgumentAsItsCType) {
  launch(1, 1, 1, good_args());
  EXPECT_EQ(out_[0], -123456);
  EXPECT_EQ(out_[1], int64_t{1} << 40);
  EXPECT_EQ(static_cast<uint64_t>(out_[2]), ~uint64_t{0} - 5);
  float d = 1.5f;
  int64_t d_bits = 0;
  std::memcpy(&d_bits, &d, sizeof d);
  EXPECT_EQ(out_[3], d_bits);
  EXPECT_EQ(out_[4], 1);
  double f = -2.25;
  int64_t f_bits = 0;
  std::memcpy(&f_bits, &f, sizeof f);
  EXPECT_EQ(out_[5], f_bits);
  EXPECT_EQ(out_[6], -7);
  EXPECT_EQ(out_[7], 65535);
  EXPECT_EQ(out_[11], 1) << "an argument slot is not 8-byte aligned";
  EXPECT_EQ(out_[16], 1);
}

TEST_F(LaunchTest, AcceptedConversions) {
  std::vector<ArgValue> args = good_args();
  args[1] = unsigned_integer(5);  // UInt into i32
  args[2] = boolean(true);        // Bool into i64
  args[3] = integer(9);           // non-negative Int into u64
  args[4] = integer(-3);          // Int into f32
  args[5] = integer(0);           // Int 0/1 into i1
  args[6] = unsigned_integer(8);  // UInt into f64
  launch(1, 1, 1, args);
  EXPECT_EQ(out_[0], 5);
  EXPECT_EQ(out_[1], 1);
  EXPECT_EQ(out_[2], 9);
  float d = -3.0f;
  int64_t d_bits = 0;
  std::memcpy(&d_bits, &d, sizeof d);
  EXPECT_EQ(out_[3], d_bits);
  EXPECT_EQ(out_[4], 0);
}

TEST_F(LaunchTest, EveryProgramOfA3DGridRunsOnce) {
  launch(7, 5, 3, good_args());
  EXPECT_EQ(out_[8], 7);
  EXPECT_EQ(out_[9], 5);
  EXPECT_EQ(out_[10], 3);
  for (int64_t id = 0; id < 7 * 5 * 3; ++id) EXPECT_EQ(out_[16 + id], 1) << "program " << id;
  EXPECT_EQ(out_[16 + 7 * 5 * 3], 0);
}

TEST_F(LaunchTest, LargeGridsSplitAcrossThePool) {
  launch(4096, 1, 1, good_args());
  for (int64_t id = 0; id < 4096; ++id) ASSERT_EQ(out_[16 + id], 1) << "program " << id;
}

TEST_F(LaunchTest, ConcurrentLaunchesFromSeveralThreads) {
  std::vector<std::vector<int64_t>> outs(6, std::vector<int64_t>(16 + 1000, 0));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < outs.size(); ++t)
    threads.emplace_back([&, t] {
      std::vector<ArgValue> args = good_args();
      args[0] = pointer(outs[t].data());
      const int64_t grid[3] = {10, 10, 10};
      for (int round = 0; round < 5; ++round) kernel_.launch(grid, args);
    });
  for (std::thread& t : threads) t.join();
  for (const auto& out : outs)
    for (int64_t id = 0; id < 1000; ++id) ASSERT_EQ(out[16 + id], 5);
}

TEST_F(LaunchTest, ZeroDimensionLaunchesNothing) {
  launch(0, 4, 4, good_args());
  launch(4, 0, 4, good_args());
  launch(4, 4, 0, good_args());
  for (int64_t v : out_) EXPECT_EQ(v, 0);
}

TEST_F(LaunchTest, WrongArgumentCount) {
  std::vector<ArgValue> args = good_args();
  args.pop_back();
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0701]: kernel 'recorder' takes 9 runtime arguments (out: ptr<i64>, a: i32, b: i64, c: u64, d: f32, "
            "e: i1, f: f64, g: i8, h: u16), got 8\n");
}

TEST_F(LaunchTest, WrongKinds) {
  std::vector<ArgValue> args = good_args();
  args[0] = integer(0);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Type),
            "error[E0702]: argument 'out' of kernel 'recorder' expects a pointer (a tensor or array) (ptr<i64>), got an "
            "int\n");
  args = good_args();
  args[1] = real(1.0);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Type),
            "error[E0702]: argument 'a' of kernel 'recorder' expects an integer (i32), got a float\n");
  args = good_args();
  args[4] = boolean(true);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Type),
            "error[E0702]: argument 'd' of kernel 'recorder' expects a float (f32), got a bool\n");
  args = good_args();
  args[5] = real(1.0);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Type),
            "error[E0702]: argument 'e' of kernel 'recorder' expects a bool (i1), got a float\n");
  args = good_args();
  args[2] = pointer(nullptr);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Type),
            "error[E0702]: argument 'b' of kernel 'recorder' expects an integer (i64), got a pointer\n");
}

TEST_F(LaunchTest, ValuesOutOfRange) {
  std::vector<ArgValue> args = good_args();
  args[1] = integer(int64_t{1} << 31);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0703]: argument 'a' of kernel 'recorder' is i32, but 2147483648 is out of its range "
            "(-2147483648 to 2147483647)\n");
  args[1] = integer(std::numeric_limits<int32_t>::min());  // the edge is fine
  args[2] = unsigned_integer(uint64_t{1} << 63);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0703]: argument 'b' of kernel 'recorder' is i64, but 9223372036854775808 is out of its range "
            "(-9223372036854775808 to 9223372036854775807)\n");
  args = good_args();
  args[3] = integer(-1);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0703]: argument 'c' of kernel 'recorder' is u64, but -1 is out of its range "
            "(0 to 18446744073709551615)\n");
  args = good_args();
  args[5] = integer(2);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0703]: argument 'e' of kernel 'recorder' is i1, but 2 is out of its range (0 or 1)\n");
  args = good_args();
  args[7] = integer(128);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0703]: argument 'g' of kernel 'recorder' is i8, but 128 is out of its range (-128 to 127)\n");
  args = good_args();
  args[8] = integer(65536);
  EXPECT_EQ(error_of(1, 1, 1, args, ErrorKind::Value),
            "error[E0703]: argument 'h' of kernel 'recorder' is u16, but 65536 is out of its range (0 to 65535)\n");
  for (int64_t v : out_) EXPECT_EQ(v, 0) << "a failed launch ran the kernel";
}

TEST_F(LaunchTest, BadGrids) {
  EXPECT_EQ(error_of(4, -1, 1, good_args(), ErrorKind::Value),
            "error[E0704]: grid dimension 1 is -1; each grid dimension must be between 0 and 2^31 - 1\n");
  EXPECT_EQ(error_of(int64_t{1} << 31, 1, 1, good_args(), ErrorKind::Value),
            "error[E0704]: grid dimension 0 is 2147483648; each grid dimension must be between 0 and 2^31 - 1\n");
  const int64_t big = (int64_t{1} << 31) - 1;
  EXPECT_EQ(error_of(big, big, big, good_args(), ErrorKind::Value),
            "error[E0704]: the grid (2147483647, 2147483647, 2147483647) has more than 2^63 programs\n");
  for (int64_t v : out_) EXPECT_EQ(v, 0);
}

TEST_F(LaunchTest, UnloadedKernelIsAnErrorNotACrash) {
  CompiledKernel empty;
  empty.name = "nothing";
  const int64_t grid[3] = {1, 1, 1};
  try {
    empty.launch(grid, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "error[E0706]: kernel 'nothing' is not loaded\n");
  }
}

}  // namespace
}  // namespace tegula::runtime

namespace tegula::backends {
namespace {

// Every argv entry points at its own slot, whether the slots stay inside
// PackedArguments or spill to the heap, and after appends that move them.
TEST(PackArguments, ArgvPointsAtEachSlotInlineAndSpilled) {
  for (size_t count : {size_t{3}, size_t{24}, size_t{40}}) {
    std::vector<ir::Param> params;
    std::vector<ArgValue> args;
    for (size_t i = 0; i < count; ++i) {
      ir::Param p;
      p.name = "a" + std::to_string(i);
      p.type = ir::Type::of(ir::Scalar::I64);
      params.push_back(p);
      ArgValue v;
      v.kind = ArgValue::Kind::Int;
      v.bits = static_cast<uint64_t>(1000 + 7 * i);
      args.push_back(v);
    }
    PackedArguments packed;
    pack_arguments("k", params, args, packed);
    auto check = [&](size_t expected) {
      ASSERT_EQ(packed.slots.size(), expected);
      ASSERT_EQ(packed.argv.size(), expected);
      for (size_t i = 0; i < expected; ++i) {
        EXPECT_EQ(packed.argv[i], &packed.slots[i]) << "count " << count << ", slot " << i;
        int64_t value = 0;
        std::memcpy(&value, packed.argv[i], sizeof value);
        EXPECT_EQ(value, i < count ? static_cast<int64_t>(1000 + 7 * i) : static_cast<int64_t>(i * 11)) << i;
      }
    };
    check(count);
    for (size_t extra = 0; extra < 3; ++extra) packed.append(static_cast<abi::ArgSlot>((count + extra) * 11));
    check(count + 3);
  }
}

// A parameter passed by value points at its bytes, not at its slot, also after appends move the slots.
TEST(PackArguments, ParametersPassedByValuePointAtTheirBytes) {
  std::vector<ir::Param> params(2);
  params[0].name = "desc";
  params[0].type = ir::Type::ptr(ir::Scalar::U8);
  params[0].by_value_bytes = 128;
  params[1].name = "n";
  params[1].type = ir::Type::of(ir::Scalar::I32);
  alignas(16) unsigned char bytes[128] = {};
  bytes[0] = 42;
  std::vector<ArgValue> args(2);
  args[0].kind = ArgValue::Kind::Pointer;
  args[0].bits = reinterpret_cast<uintptr_t>(bytes);
  args[1].bits = 7;
  PackedArguments packed;
  pack_arguments("k", params, args, packed);
  EXPECT_EQ(packed.argv[0], &packed.slots[0]);  // the CPU backend: the slot holds the address
  packed.pass_by_value(0, bytes);
  for (int extra = 0; extra < 30; ++extra) packed.append(static_cast<abi::ArgSlot>(extra));
  EXPECT_EQ(packed.argv[0], static_cast<void*>(bytes));
  EXPECT_EQ(packed.argv[1], &packed.slots[1]);
  EXPECT_EQ(*static_cast<const int32_t*>(packed.argv[1]), 7);
  EXPECT_EQ(packed.argv[31], &packed.slots[31]);
}

// Narrow float parameters (annotated tl.float16, tl.bfloat16, fp8) travel as
// their bits, rounded once to nearest even from the host's double: rounding
// through f32 first would give 1.0 for both values below. f64 keeps every bit.
TEST(PackArguments, NarrowFloatsAreRoundedOnceFromTheDouble) {
  const double f16_trap = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30);
  const double bf16_trap = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  struct Case {
    ir::Scalar type;
    double value;
    uint64_t bits;
  };
  const Case cases[] = {
      {ir::Scalar::F16, f16_trap, 0x3C01},   {ir::Scalar::F16, 1e6, 0x7C00},      {ir::Scalar::F16, -2.0, 0xC000},
      {ir::Scalar::BF16, bf16_trap, 0x3F81}, {ir::Scalar::BF16, -0.0, 0x8000},    {ir::Scalar::F8E5M2, 1.3, 0x3D},
      {ir::Scalar::F8E4M3, 1.0, 0x38},       {ir::Scalar::F64, 0.1, 0x3FB999999999999AULL},
  };
  for (const Case& c : cases) {
    ir::Param param;
    param.name = "v";
    param.type = ir::Type::of(c.type);
    ArgValue value;
    value.kind = ArgValue::Kind::Float;
    value.real = c.value;
    PackedArguments packed;
    pack_arguments("k", {param}, std::span<const ArgValue>(&value, 1), packed);
    EXPECT_EQ(packed.slots[0], c.bits) << ir::to_string(c.type) << " " << c.value;
  }
}

}  // namespace
}  // namespace tegula::backends
