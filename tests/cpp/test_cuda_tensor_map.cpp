// TMA tensor maps without a GPU: the rules a tensor must meet (and the
// message for each), the driver's argument order, and the cache (one
// encoding per key, across threads; failures reported).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backends/cuda/tensor_map.h"

namespace tegula::backends::cuda {
namespace {

// A bf16 matrix of 300 x 1000 (row stride 1024), read in 128 x 64 blocks.
TensorMapKey matrix() {
  TensorMapKey k;
  k.base = 0x7f0000001000;
  k.dtype = ir::Scalar::BF16;
  k.shape = {300, 1000};
  k.strides = {1024, 1};
  k.box = {128, 64};
  k.swizzle = TmaSwizzle::Bytes128;
  return k;
}

std::string problem_with(void (*change)(TensorMapKey&)) {
  TensorMapKey k = matrix();
  change(k);
  return tma_problem(k);
}

TEST(TensorMap, RulesOfTheHardware) {
  EXPECT_EQ(tma_problem(matrix()), "");
  EXPECT_NE(problem_with([](TensorMapKey& k) { k.base += 8; }).find("base address"), std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) { k.strides = {1001, 1}; }).find("2002 bytes"), std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) { k.strides = {1024, 2}; }).find("innermost stride"), std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) { k.box = {512, 64}; }).find("1 to 256"), std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) { k.box = {128, 4}; }).find("8 bytes"), std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) { k.box = {128, 128}; }).find("128-byte swizzle span"),
            std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) {
              k.shape = {1, 2, 3, 4, 5, 6};
              k.strides = k.box = k.shape;
            }).find("1 to 5"),
            std::string::npos);
  EXPECT_NE(problem_with([](TensorMapKey& k) {
              k.dtype = ir::Scalar::I16;
              k.nan_fill = true;
            }).find("NaN padding"),
            std::string::npos);
  // Without swizzle a row may be longer than 128 bytes.
  EXPECT_EQ(problem_with([](TensorMapKey& k) {
              k.box = {16, 256};
              k.swizzle = TmaSwizzle::None;
            }),
            "");
}

TEST(TensorMap, DriverArgumentsRunInnermostFirst) {
  TensorMapKey k = matrix();
  k.nan_fill = true;
  TiledEncoding e = tiled_encoding(k);
  EXPECT_EQ(e.data_type, 9);  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(e.rank, 2u);
  EXPECT_EQ(e.base, k.base);
  EXPECT_EQ(e.dims[0], 1000u);
  EXPECT_EQ(e.dims[1], 300u);
  EXPECT_EQ(e.byte_strides[0], 2048u);
  EXPECT_EQ(e.box[0], 64u);
  EXPECT_EQ(e.box[1], 128u);
  EXPECT_EQ(e.element_strides[0], 1u);
  EXPECT_EQ(e.element_strides[1], 1u);
  EXPECT_EQ(e.swizzle, 3);
  EXPECT_EQ(e.oob_fill, 1);

  TensorMapKey cube;
  cube.base = 4096;
  cube.dtype = ir::Scalar::I8;
  cube.shape = {7, 9, 48};
  cube.strides = {9 * 64, 64, 1};
  cube.box = {1, 8, 32};
  TiledEncoding c = tiled_encoding(cube);
  EXPECT_EQ(c.data_type, 0);  // UINT8: integers travel as bits
  EXPECT_EQ(c.rank, 3u);
  EXPECT_EQ(c.dims[2], 7u);
  EXPECT_EQ(c.byte_strides[0], 64u);
  EXPECT_EQ(c.byte_strides[1], 576u);
  EXPECT_EQ(c.box[2], 1u);
}

TEST(TensorMap, CacheEncodesEachKeyOnce) {
  std::atomic<int> calls{0};
  TensorMapCache cache([&](TensorMap* out, const TiledEncoding& e) {
    ++calls;
    out->opaque[0] = e.base;
    out->opaque[1] = e.dims[0];
    return kSuccess;
  });
  TensorMapKey a = matrix(), b = matrix();
  b.shape[1] = 999;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(cache.get(a).opaque[1], 1000u);
        EXPECT_EQ(cache.get(b).opaque[1], 999u);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cache.size(), 2u);
  // Two threads may both miss the first time; never more than one encoding per key and thread.
  EXPECT_GE(calls.load(), 2);
  EXPECT_LE(calls.load(), 16);
  int before = calls.load();
  cache.get(a);
  EXPECT_EQ(calls.load(), before);
}

TEST(TensorMap, CacheReportsRulesAndDriverFailures) {
  int calls = 0;
  TensorMapCache cache([&](TensorMap*, const TiledEncoding&) {
    ++calls;
    return kErrorInvalidValue;
  });
  TensorMapKey bad = matrix();
  bad.strides = {1001, 1};
  try {
    cache.get(bad);
    FAIL() << "a stride of 2002 bytes must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Diag::InvalidTensorDescriptor);
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(e.what()).find("cannot be copied by TMA"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(cache.get(matrix()), DriverError);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace tegula::backends::cuda
