// Tensor cores in the CUDA code generator, without a GPU: the MMA
// accumulator layout as bits, which dots take tensor cores, which values
// keep the accumulator layout, the instructions the generated code uses, and
// which K loops are software-pipelined. (Execution is checked by
// tests/python/test_tensor_cores.py, on a GPU or through the emulator;
// compilation for sm_80/sm_90a by the corpus of test_cuda_codegen.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/codegen.h"
#include "backends/cuda/layout.h"
#include "cuda_ir_corpus.h"
#include "ir/parser.h"
#include "passes/axis_info.h"

using namespace tegula;
using backends::cuda::CodegenOptions;
using backends::cuda::CudaKernel;
using backends::cuda::Distribution;
using backends::cuda::Layout;
using backends::cuda::MmaLayout;

namespace {

Layout mma(int warps_m, int warps_n) { return Layout{{}, {}, MmaLayout{warps_m, warps_n, 8}}; }

std::string kernel_part(const std::string& source) { return source.substr(source.find("// ---- kernel ----")); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

CudaKernel generate(const std::string& ir_text, int num_warps = 4, int arch = 90, int num_stages = 3) {
  CodegenOptions options;
  options.num_warps = num_warps;
  options.arch = arch;
  options.num_stages = num_stages;
  return backends::cuda::emit_cuda(ir::parse(ir_text), options);
}

}  // namespace

TEST(CudaTensorCores, AccumulatorLayoutBits) {
  // 64x32 (row bits 5-10, column bits 0-4 of the linear index), 2x2 warps.
  Distribution d = distribute(mma(2, 2), {64, 32});
  // c0/c1 adjacent columns, c2/c3 8 rows down; then column and row repeats.
  EXPECT_EQ(d.register_bits, (std::vector<int>{0, 8, 4, 10}));
  // lane % 4 picks column pairs, lane / 4 the row.
  EXPECT_EQ(d.lane_bits, (std::vector<int>{1, 2, 5, 6, 7}));
  // warp % 2 picks 16 rows, warp / 2 eight columns.
  EXPECT_EQ(d.warp_bits, (std::vector<int>{9, 3}));
  EXPECT_FALSE(d.replicated());
  EXPECT_EQ(backends::cuda::to_string(mma(2, 2)), "mma{wpc=[2, 2], warp_n=8}");

  // The slice along the columns (a row reduction's result): rows 3 and 5
  // in registers, lanes along the columns hold the same values.
  Layout rows = backends::cuda::slice(mma(2, 2), 1);
  EXPECT_EQ(backends::cuda::to_string(rows), "slice{dim=1, parent=mma{wpc=[2, 2], warp_n=8}}");
  Distribution r = distribute(rows, {64});
  EXPECT_EQ(r.register_bits, (std::vector<int>{3, 5}));
  EXPECT_EQ(r.lane_bits, (std::vector<int>{-1, -1, 0, 1, 2}));
  EXPECT_EQ(r.warp_bits, (std::vector<int>{4, -1}));
  EXPECT_EQ(r, distribute(mma(2, 2), {64, 1}));  // expand_dims is free
}

// The linear layouts shape ops leave an accumulator in (layout_linear.cpp):
// an mma tile reshaped to [64, 2, 16] and permuted to [64, 16, 2] keeps every
// thread's elements, its halves split apart stay in registers, and joining
// them gives the permuted tile's distribution back.
TEST(CudaTensorCores, ShapeOpsOfAnAccumulatorStayInItsThreads) {
  using backends::cuda::linear_layout;
  Distribution d = distribute(mma(2, 2), {64, 32});
  Layout same = linear_layout(d, {64, 32});
  EXPECT_EQ(distribute(same, {64, 32}), d);
  EXPECT_EQ(backends::cuda::to_string(same),
            "linear{reg=[1:0, 0:3, 1:4, 0:5], lane=[1:1, 1:2, 0:0, 0:1, 0:2], warp=[0:4, 1:3]}");
  // [64, 2, 16] -> [64, 16, 2]: column bit 4 (the half) becomes linear bit 0.
  Distribution permuted = backends::cuda::renamed(d, backends::cuda::trans_bit_map({64, 2, 16}, {64, 16, 2}, {0, 2, 1}));
  std::optional<Distribution> half = backends::cuda::split_distribution(permuted);
  ASSERT_TRUE(half.has_value());
  EXPECT_EQ(half->registers(), d.registers() / 2);
  // The same lanes hold the same rows and columns of either half as of the whole.
  EXPECT_EQ(linear_layout(*half, {64, 16}).linear->lanes, same.linear->lanes);
  EXPECT_EQ(backends::cuda::joined_distribution(*half).lane_bits, permuted.lane_bits);
  EXPECT_EQ(distribute(linear_layout(*half, {64, 16}), {64, 16}), *half);
  // A slice of a linear layout (a row reduction of a half) is the slice of its bits.
  Layout rows = backends::cuda::slice(linear_layout(*half, {64, 16}), 1);
  EXPECT_EQ(distribute(rows, {64}), distribute(backends::cuda::slice(mma(2, 2), 1), {64}));
  // Lanes along the split dim: no layout keeps the halves in place.
  Distribution across = d;
  std::swap(across.register_bits[0], across.lane_bits[0]);
  EXPECT_FALSE(backends::cuda::split_distribution(across).has_value());
}

TEST(CudaTensorCores, WhichDotsTakeTensorCores) {
  auto choice = [](const std::string& in, const std::string& acc, const std::string& a, const std::string& b,
                   const std::string& c, int64_t na, int64_t nb, int64_t nc, int warps, int arch,
                   const std::string& precision = "") {
    std::string text = cuda_test::dot_kernel(in, acc, a, b, c, na, nb, nc);
    if (!precision.empty())
      text.replace(text.find(" : tile<" + c + "x" + acc + ">\n  store"), 0, " {precision = \"" + precision + "\"}");
    ir::Function fn = ir::parse(text);
    std::string found = "fma";
    fn.walk([&](ir::OpId id) {
      if (fn.op(id).kind != ir::OpKind::Dot) return;
      if (auto l = backends::cuda::tensor_core_layout(fn, fn.op(id), warps, arch))
        found = backends::cuda::to_string(*l);
    });
    return found;
  };
  EXPECT_EQ(choice("f16", "f32", "64x32", "32x64", "64x64", 2048, 2048, 4096, 4, 80), "mma{wpc=[2, 2], warp_n=8}");
  // sm_90, whole warpgroups, 64-row slabs: wgmma, warpgroups along M first.
  EXPECT_EQ(choice("f16", "f32", "64x32", "32x64", "64x64", 2048, 2048, 4096, 4, 90), "wgmma{wpc=[4, 1], warp_n=64}");
  EXPECT_EQ(choice("bf16", "f32", "128x32", "32x256", "128x256", 4096, 8192, 32768, 8, 90), "wgmma{wpc=[8, 1], warp_n=256}");
  EXPECT_EQ(choice("bf16", "f32", "64x32", "32x256", "64x256", 2048, 8192, 16384, 8, 90), "wgmma{wpc=[4, 2], warp_n=128}");
  EXPECT_EQ(choice("f16", "f32", "32x32", "32x64", "32x64", 1024, 2048, 2048, 4, 90), "mma{wpc=[2, 2], warp_n=8}");  // M below 64
  EXPECT_EQ(choice("f16", "f32", "64x32", "32x64", "64x64", 2048, 2048, 4096, 2, 90), "mma{wpc=[2, 1], warp_n=8}");  // half a warpgroup
  EXPECT_EQ(choice("bf16", "f32", "128x32", "32x64", "128x64", 4096, 2048, 8192, 8, 80), "mma{wpc=[4, 2], warp_n=8}");
  // More warps than 16x16 tiles: the extra warps replicate along the rows.
  EXPECT_EQ(choice("f16", "f32", "16x16", "16x16", "16x16", 256, 256, 256, 8, 90), "mma{wpc=[8, 1], warp_n=8}");
  EXPECT_EQ(choice("f16", "f16", "16x32", "32x64", "16x64", 512, 2048, 1024, 4, 90), "mma{wpc=[1, 4], warp_n=8}");
  EXPECT_EQ(choice("f32", "f32", "32x16", "16x32", "32x32", 512, 512, 1024, 4, 90, "tf32"), "mma{wpc=[2, 2], warp_n=8}");
  EXPECT_EQ(choice("f32", "f32", "32x16", "16x32", "32x32", 512, 512, 1024, 4, 90, "ieee"), "fma");
  EXPECT_EQ(choice("f32", "f32", "32x16", "16x32", "32x32", 512, 512, 1024, 4, 90), "fma");
  EXPECT_EQ(choice("i8", "i32", "32x32", "32x32", "32x32", 1024, 1024, 1024, 4, 90), "mma{wpc=[2, 2], warp_n=8}");
  EXPECT_EQ(choice("i8", "i32", "32x16", "16x32", "32x32", 512, 512, 1024, 4, 90), "fma");  // K below 32
  EXPECT_EQ(choice("f64", "f64", "16x16", "16x16", "16x16", 256, 256, 256, 4, 90), "fma");
  EXPECT_EQ(choice("f16", "f32", "64x32", "32x64", "64x64", 2048, 2048, 4096, 4, 75), "fma");  // before sm_80
  EXPECT_EQ(choice("f16", "f32", "16x16", "16x8", "16x8", 256, 128, 128, 4, 90), "fma");       // N below 16
}

namespace {

// relu(a @ b + bias) narrowed to f16, 64x64x32.
std::string epilogue_kernel() {
  using cuda_test::iota;
  return "kernel @epilogue(%a: ptr<f16> div(16), %b: ptr<f16> div(16), %bias: ptr<f32> div(16), "
                     "%o: ptr<f16> div(16)) {\n" +
                     iota("%ia", 2048) + "  %ja = reshape %ia : tile<64x32xi32>\n" + iota("%io", 4096) +
                     "  %jb = reshape %ia : tile<32x64xi32>\n  %jo = reshape %io : tile<64x64xi32>\n" +
                     iota("%in", 64) +
                     "  %sa = splat %a : tile<64x32xptr<f16>>\n  %pa = addptr %sa, %ja : tile<64x32xptr<f16>>\n"
                     "  %va = load %pa : tile<64x32xf16>\n"
                     "  %sb = splat %b : tile<32x64xptr<f16>>\n  %pb = addptr %sb, %jb : tile<32x64xptr<f16>>\n"
                     "  %vb = load %pb : tile<32x64xf16>\n"
                     "  %sc = splat %bias : tile<64xptr<f32>>\n  %pc = addptr %sc, %in : tile<64xptr<f32>>\n"
                     "  %vc = load %pc : tile<64xf32>\n"
                     "  %ec = expand_dims %vc {axis = 0} : tile<1x64xf32>\n"
                     "  %bc = broadcast %ec : tile<64x64xf32>\n"
                     "  %z = constant {value = 0.0} : tile<64x64xf32>\n"
                     "  %d = dot %va, %vb, %z : tile<64x64xf32>\n"
                     "  %e = add %d, %bc : tile<64x64xf32>\n"
                     "  %r = max %e, %z : tile<64x64xf32>\n"
                     "  %h = cast %r : tile<64x64xf16>\n"
                     "  %so = splat %o : tile<64x64xptr<f16>>\n  %po = addptr %so, %jo : tile<64x64xptr<f16>>\n"
                     "  store %po, %h\n  return\n}\n";
}

// The add, the max and the cast keep the accumulator's layout; only the f16
// result converts, for the store. The bias row is loaded straight in the
// accumulator's column slice.
void expect_epilogue_in_accumulator_layout(const CudaKernel& k, const std::string& accumulator) {
  // Values are numbered in the layouts text: find them by type.
  size_t f32_tiles = 0;
  for (size_t at = k.layouts.find(" tile<64x64xf32>: "); at != std::string::npos;
       at = k.layouts.find(" tile<64x64xf32>: ", at + 1), ++f32_tiles) {
    std::string line = k.layouts.substr(at, k.layouts.find('\n', at) - at);
    EXPECT_NE(line.find(accumulator), std::string::npos) << line;  // bias, zeros, dot, add, max
    EXPECT_EQ(line.find("also"), std::string::npos) << line;
  }
  EXPECT_EQ(f32_tiles, 5u) << k.layouts;
  EXPECT_NE(k.layouts.find(" tile<64xf32>: slice{dim=0, parent=" + accumulator), std::string::npos) << k.layouts;
  EXPECT_NE(k.layouts.find(" tile<64x64xf16>: " + accumulator + "; also blocked"), std::string::npos) << k.layouts;
}

}  // namespace

TEST(CudaTensorCores, EpiloguesStayInTheAccumulatorLayout) {
  CudaKernel k = generate(epilogue_kernel(), 4, 80);
  expect_epilogue_in_accumulator_layout(k, "mma{wpc=[2, 2], warp_n=8}");
  std::string body = kernel_part(k.source);
  EXPECT_EQ(count(body, "tg_mma_f16("), 1u);
  EXPECT_EQ(count(body, "tg_ldmatrix_x4("), 1u);        // a: rows along K
  EXPECT_EQ(count(body, "tg_ldmatrix_x4_trans("), 1u);  // b: loaded [K][N], rows along N
}

TEST(CudaTensorCores, HopperRunsTheDotAsWgmma) {
  CudaKernel k = generate(epilogue_kernel(), 4, 90);
  expect_epilogue_in_accumulator_layout(k, "wgmma{wpc=[4, 1], warp_n=64}");
  std::string body = kernel_part(k.source);
  // a [M][K] (rows along K), b [K][N] (rows along N: transposed for wgmma).
  EXPECT_EQ(count(body, "tg_wgmma_m64n64k16_f16_kn("), 1u);  // in the (unrolled) loop over K steps
  EXPECT_EQ(count(body, "tg_wgmma_commit();"), 1u);
  EXPECT_EQ(count(body, "tg_wgmma_wait<0>();"), 1u);
  EXPECT_EQ(count(body, "tg_fence_proxy_async();"), 1u);  // after staging the operands
  EXPECT_EQ(body.find("tg_ldmatrix"), std::string::npos);
  // The instruction is defined once, before the kernel.
  EXPECT_EQ(count(k.source, "TG_DEVICE void tg_wgmma_m64n64k16_f16_kn("), 1u);
  EXPECT_NE(k.source.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), std::string::npos);
}

TEST(CudaTensorCores, FmaPathBeforeSm80) {
  std::string text = cuda_test::dot_kernel("f16", "f32", "64x32", "32x64", "64x64", 2048, 2048, 4096);
  CudaKernel k = generate(text, 4, 75);
  EXPECT_EQ(k.source.find("tg_mma"), std::string::npos);
  EXPECT_NE(k.source.find("fmaf("), std::string::npos);
}
