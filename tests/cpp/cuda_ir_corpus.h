// IR kernels written by hand for the CUDA code generator's tests
// (test_cuda_codegen.cpp): every op of ops.def over its dtypes, as IR text.
// Each builder returns a whole kernel; ir_cases() lists them all.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tegula::cuda_test {

struct IrCase {
  std::string label;
  std::string ir;
  int num_warps = 4;
  bool debug = false;
};

inline const std::vector<std::string> kFloatTypes = {"f16", "bf16", "f32", "f64"};
inline const std::vector<std::string> kIntTypes = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};
inline const std::vector<std::string> kAllTypes = {"i1",  "i8",  "i16", "i32", "i64", "u8",  "u16",
                                            "u32", "u64", "f16", "bf16", "f32", "f64"};

// A 1-d kernel over `size` elements: loads one tile per input type (masked,
// from its own pointer), applies `op` with `attrs`, stores the result.
inline std::string ew_kernel(const std::string& op, const std::vector<std::string>& inputs, const std::string& out,
                      const std::string& attrs = "", int size = 256) {
  std::string t = "tile<" + std::to_string(size) + "x";
  std::string params, body;
  for (size_t i = 0; i < inputs.size(); ++i) params += "%p" + std::to_string(i) + ": ptr<" + inputs[i] + "> div(16), ";
  params += "%o: ptr<" + out + "> div(16), %n: i32";
  body += "  %pid = program_id {axis = 0} : i32\n";
  body += "  %bs = constant {value = " + std::to_string(size) + "} : i32\n";
  body += "  %base = mul %pid, %bs : i32\n";
  body += "  %r = arange {start = 0, end = " + std::to_string(size) + "} : " + t + "i32>\n";
  body += "  %sb = splat %base : " + t + "i32>\n";
  body += "  %offs = add %sb, %r : " + t + "i32>\n";
  body += "  %sn = splat %n : " + t + "i32>\n";
  body += "  %mask = cmp %offs, %sn {pred = \"lt\"} : " + t + "i1>\n";
  std::string args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string k = std::to_string(i);
    body += "  %s" + k + " = splat %p" + k + " : " + t + "ptr<" + inputs[i] + ">>\n";
    body += "  %q" + k + " = addptr %s" + k + ", %offs : " + t + "ptr<" + inputs[i] + ">>\n";
    body += "  %x" + k + " = load %q" + k + ", %mask : " + t + inputs[i] + ">\n";
    args += (i ? ", %x" : "%x") + k;
  }
  body += "  %res = " + op + " " + args + (attrs.empty() ? "" : " " + attrs) + " : " + t + out + ">\n";
  body += "  %so = splat %o : " + t + "ptr<" + out + ">>\n";
  body += "  %qo = addptr %so, %offs : " + t + "ptr<" + out + ">>\n";
  body += "  store %qo, %res, %mask\n  return\n";
  return "kernel @k(" + params + ") {\n" + body + "}\n";
}

inline void add_elementwise_cases(std::vector<IrCase>& cases) {
  for (const std::string& f : kFloatTypes) {
    for (const char* op : {"add", "sub", "mul", "div", "rem", "min", "max", "pow"})
      cases.push_back({std::string(op) + "_" + f, ew_kernel(op, {f, f}, f)});
    for (const char* op : {"min", "max"})
      cases.push_back({std::string(op) + "_nan_" + f, ew_kernel(op, {f, f}, f, "{propagate_nan = 1}")});
    for (const char* op :
         {"neg", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "floor", "ceil"})
      cases.push_back({std::string(op) + "_" + f, ew_kernel(op, {f}, f)});
    cases.push_back({"fma_" + f, ew_kernel("fma", {f, f, f}, f)});
  }
  for (const std::string& i : kIntTypes) {
    for (const char* op : {"add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max", "umulhi"})
      cases.push_back({std::string(op) + "_" + i, ew_kernel(op, {i, i}, i)});
    for (const char* op : {"neg", "abs", "not"}) cases.push_back({std::string(op) + "_" + i, ew_kernel(op, {i}, i)});
  }
  for (const char* op : {"and", "or", "xor"}) cases.push_back({std::string(op) + "_i1", ew_kernel(op, {"i1", "i1"}, "i1")});
  cases.push_back({"not_i1", ew_kernel("not", {"i1"}, "i1")});
  for (std::string t : {"i8", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64", "i1"})
    for (const char* pred : {"eq", "ne", "lt", "le", "gt", "ge"})
      cases.push_back({"cmp_" + std::string(pred) + "_" + t,
                       ew_kernel("cmp", {t, t}, "i1", "{pred = \"" + std::string(pred) + "\"}")});
  for (std::string t : {"f32", "f16", "i64", "i1", "u8"})
    cases.push_back({"select_" + t, ew_kernel("select", {"i1", t, t}, t)});
  for (const std::string& from : kAllTypes)
    for (const std::string& to : kAllTypes)
      if (from != to) cases.push_back({"cast_" + from + "_" + to, ew_kernel("cast", {from}, to)});
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"f32", "f16"}, {"f32", "bf16"}, {"f64", "f32"}, {"f64", "f16"}, {"f64", "bf16"}})
    cases.push_back({"cast_rtz_" + from + "_" + to, ew_kernel("cast", {from}, to, "{rounding = \"rtz\"}")});
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"f32", "i32"},
                                                                                {"i32", "f32"},
                                                                                {"u32", "f32"},
                                                                                {"f64", "i64"},
                                                                                {"u64", "f64"},
                                                                                {"f16", "bf16"},
                                                                                {"bf16", "i16"},
                                                                                {"u16", "f16"},
                                                                                {"i8", "u8"}})
    cases.push_back({"bitcast_" + from + "_" + to, ew_kernel("bitcast", {from}, to)});
}

// A 2-d [32 x 64] f32 kernel with `body` in the middle: %x is the loaded
// tile, %offs the offsets, %mask the mask; the body leaves %out (of
// `out_type`, shape 32x64 unless `out_shape` says otherwise), which is stored
// through `out_offsets` (an offsets tile of the out shape, defined by body)
// or %offs.
inline std::string tile2d_kernel(const std::string& body, const std::string& out_type = "f32",
                          const std::string& out_shape = "32x64", const std::string& out_offsets = "%offs",
                          const std::string& in_type = "f32") {
  std::string s = "kernel @k2(%x_ptr: ptr<" + in_type + "> div(16), %o: ptr<" + out_type +
                  "> div(16), %m: i32, %stride: i32 div(16)) {\n";
  s += "  %pid = program_id {axis = 0} : i32\n";
  s += "  %rows = arange {start = 0, end = 32} : tile<32xi32>\n";
  s += "  %cols = arange {start = 0, end = 64} : tile<64xi32>\n";
  s += "  %r2 = expand_dims %rows {axis = 1} : tile<32x1xi32>\n";
  s += "  %st = splat %stride : tile<32x1xi32>\n";
  s += "  %rs = mul %r2, %st : tile<32x1xi32>\n";
  s += "  %rb = broadcast %rs : tile<32x64xi32>\n";
  s += "  %c2 = expand_dims %cols {axis = 0} : tile<1x64xi32>\n";
  s += "  %cb = broadcast %c2 : tile<32x64xi32>\n";
  s += "  %offs = add %rb, %cb : tile<32x64xi32>\n";
  s += "  %sm = splat %m : tile<32x1xi32>\n";
  s += "  %rm = cmp %r2, %sm {pred = \"lt\"} : tile<32x1xi1>\n";
  s += "  %mask = broadcast %rm : tile<32x64xi1>\n";
  s += "  %xp = splat %x_ptr : tile<32x64xptr<" + in_type + ">>\n";
  s += "  %xq = addptr %xp, %offs : tile<32x64xptr<" + in_type + ">>\n";
  s += "  %x = load %xq, %mask : tile<32x64x" + in_type + ">\n";
  s += body;
  s += "  %op = splat %o : tile<" + out_shape + "xptr<" + out_type + ">>\n";
  s += "  %oq = addptr %op, " + out_offsets + " : tile<" + out_shape + "xptr<" + out_type + ">>\n";
  s += "  store %oq, %out\n  return\n}\n";
  return s;
}

// A 1-d index tile %i of `shape` elements, for storing results of other shapes.
inline std::string iota(const std::string& name, int64_t n) {
  return "  " + name + " = arange {start = 0, end = " + std::to_string(n) + "} : tile<" + std::to_string(n) + "xi32>\n";
}

inline void add_shape_and_reduce_cases(std::vector<IrCase>& cases) {
  cases.push_back({"broadcast_rows", tile2d_kernel("  %c0 = constant {value = 0} : tile<32x64xi32>\n"
                                                   "  %out = add %x, %x : tile<32x64xf32>\n")});
  cases.push_back({"trans_2d", tile2d_kernel("  %out = trans %x {perm = [1, 0]} : tile<64x32xf32>\n" + iota("%ti", 2048) +
                                      "  %ot = reshape %ti : tile<64x32xi32>\n",
                                  "f32", "64x32", "%ot")});
  cases.push_back({"reshape_flat", tile2d_kernel("  %out = reshape %x : tile<2048xf32>\n" + iota("%of", 2048), "f32",
                                                 "2048", "%of")});
  cases.push_back({"reshape_4d", tile2d_kernel("  %out = reshape %x : tile<4x8x8x8xf32>\n" + iota("%of", 2048) +
                                                   "  %o4 = reshape %of : tile<4x8x8x8xi32>\n",
                                               "f32", "4x8x8x8", "%o4")});
  cases.push_back({"trans_3d", tile2d_kernel("  %x3 = reshape %x : tile<8x4x64xf32>\n"
                                             "  %out = trans %x3 {perm = [2, 0, 1]} : tile<64x8x4xf32>\n" +
                                                 iota("%of", 2048) + "  %o3 = reshape %of : tile<64x8x4xi32>\n",
                                             "f32", "64x8x4", "%o3")});
  cases.push_back({"join", tile2d_kernel("  %y = neg %x : tile<32x64xf32>\n"
                                         "  %out = join %x, %y : tile<32x64x2xf32>\n" +
                                             iota("%of", 4096) + "  %o3 = reshape %of : tile<32x64x2xi32>\n",
                                         "f32", "32x64x2", "%o3")});
  cases.push_back({"split", tile2d_kernel("  %x3 = reshape %x : tile<32x32x2xf32>\n"
                                          "  %a, %b = split %x3 : tile<32x32xf32>, tile<32x32xf32>\n"
                                          "  %out = sub %a, %b : tile<32x32xf32>\n" +
                                              iota("%of", 1024) + "  %o2 = reshape %of : tile<32x32xi32>\n",
                                          "f32", "32x32", "%o2")});
  cases.push_back({"split_to_scalars_and_join", tile2d_kernel(
                                                    "  %x1 = reshape %x : tile<1024x2xf32>\n"
                                                    "  %s0 = reduce %x1 {axis = 0} : tile<2xf32> {\n"
                                                    "  ^bb(%a0: f32, %b0: f32):\n"
                                                    "    %c0 = add %a0, %b0 : f32\n"
                                                    "    yield %c0\n  }\n"
                                                    "  %u, %v = split %s0 : f32, f32\n"
                                                    "  %w = mul %u, %v : f32\n"
                                                    "  %j = join %w, %u : tile<2xf32>\n"
                                                    "  %out = reshape %j : tile<2xf32>\n" +
                                                        iota("%of", 2),
                                                    "f32", "2", "%of")});
  cases.push_back({"one_element_tiles", tile2d_kernel("  %one = splat %m : tile<1xi32>\n"
                                                      "  %back = reshape %one : tile<1x1xi32>\n"
                                                      "  %f = cast %back : tile<1x1xf32>\n"
                                                      "  %out = broadcast %f : tile<32x64xf32>\n")});
  auto sum_region = [](const std::string& t) {
    return " {\n  ^bb(%a0: " + t + ", %b0: " + t + "):\n    %c0 = add %a0, %b0 : " + t + "\n    yield %c0\n  }\n";
  };
  cases.push_back({"reduce_rows", tile2d_kernel("  %s = reduce %x {axis = 1} : tile<32xf32>" + sum_region("f32") +
                                                    "  %out = reshape %s : tile<32xf32>\n" + iota("%of", 32),
                                                "f32", "32", "%of")});
  cases.push_back({"reduce_cols", tile2d_kernel("  %s = reduce %x {axis = 0} : tile<64xf32>" + sum_region("f32") +
                                                    "  %out = reshape %s : tile<64xf32>\n" + iota("%of", 64),
                                                "f32", "64", "%of")});
  cases.push_back({"reduce_rows_broadcast_back",
                   tile2d_kernel("  %s = reduce %x {axis = 1} : tile<32xf32>" + sum_region("f32") +
                                 "  %s2 = expand_dims %s {axis = 1} : tile<32x1xf32>\n"
                                 "  %sb = broadcast %s2 : tile<32x64xf32>\n"
                                 "  %out = div %x, %sb : tile<32x64xf32>\n")});
  cases.push_back({"reduce_all", tile2d_kernel("  %s = reduce %x {axis = 1} : tile<32xf32>" + sum_region("f32") +
                                               "  %t = reduce %s {axis = 0} : f32" + sum_region("f32") +
                                               "  %out = splat %t : tile<32x64xf32>\n")});
  cases.push_back({"reduce_i64", tile2d_kernel("  %xi = cast %x : tile<32x64xi64>\n"
                                               "  %s = reduce %xi {axis = 0} : tile<64xi64>" +
                                                   sum_region("i64") + "  %out = cast %s : tile<64xf32>\n" +
                                                   iota("%of", 64),
                                               "f32", "64", "%of")});
  cases.push_back({"reduce_max_f16",
                   tile2d_kernel("  %s = reduce %x {axis = 1} : tile<32xf16> {\n"
                                 "  ^bb(%a0: f16, %b0: f16):\n    %c0 = max %a0, %b0 : f16\n    yield %c0\n  }\n"
                                 "  %out = reshape %s : tile<32xf16>\n" + iota("%of", 32),
                                 "f16", "32", "%of", "f16")});
  cases.push_back({"argmax_rows",
                   tile2d_kernel("  %ib = broadcast %c2 : tile<32x64xi32>\n"
                                 "  %v, %ix = reduce %x, %ib {axis = 1} : tile<32xf32>, tile<32xi32> {\n"
                                 "  ^bb(%av: f32, %ai: i32, %bv: f32, %bi: i32):\n"
                                 "    %gt = cmp %bv, %av {pred = \"gt\"} : i1\n"
                                 "    %eq = cmp %bv, %av {pred = \"eq\"} : i1\n"
                                 "    %lt = cmp %bi, %ai {pred = \"lt\"} : i1\n"
                                 "    %tie = and %eq, %lt : i1\n"
                                 "    %take = or %gt, %tie : i1\n"
                                 "    %nv = select %take, %bv, %av : f32\n"
                                 "    %ni = select %take, %bi, %ai : i32\n"
                                 "    yield %nv, %ni\n  }\n"
                                 "  %out = reshape %ix : tile<32xi32>\n" + iota("%of", 32),
                                 "i32", "32", "%of")});
  cases.push_back({"reduce_3d_middle",
                   tile2d_kernel("  %x3 = reshape %x : tile<8x4x64xf32>\n"
                                 "  %s = reduce %x3 {axis = 1} : tile<8x64xf32>" + sum_region("f32") +
                                 "  %out = reshape %s : tile<512xf32>\n" + iota("%of", 512),
                                 "f32", "512", "%of")});
  for (int w : {1, 2, 8, 16}) {
    IrCase c{"reduce_rows_w" + std::to_string(w),
             tile2d_kernel("  %s = reduce %x {axis = 1} : tile<32xf32>" + sum_region("f32") +
                           "  %s2 = expand_dims %s {axis = 1} : tile<32x1xf32>\n"
                           "  %sb = broadcast %s2 : tile<32x64xf32>\n"
                           "  %out = sub %x, %sb : tile<32x64xf32>\n"),
             w};
    cases.push_back(c);
  }
}

inline std::string dot_kernel(const std::string& in, const std::string& acc, const std::string& shape_a,
                       const std::string& shape_b, const std::string& shape_c, int64_t na, int64_t nb, int64_t nc) {
  std::string s = "kernel @dot(%a: ptr<" + in + "> div(16), %b: ptr<" + in + "> div(16), %c: ptr<" + acc +
                  "> div(16)) {\n";
  s += iota("%ia", na) + "  %ja = reshape %ia : tile<" + shape_a + "xi32>\n";
  s += iota("%ib", nb) + "  %jb = reshape %ib : tile<" + shape_b + "xi32>\n";
  s += iota("%ic", nc) + "  %jc = reshape %ic : tile<" + shape_c + "xi32>\n";
  for (const auto& [p, j, shape, t] : std::vector<std::array<std::string, 4>>{
           {"%a", "%ja", shape_a, in}, {"%b", "%jb", shape_b, in}, {"%c", "%jc", shape_c, acc}}) {
    std::string n = p.substr(1);
    s += "  %s" + n + " = splat " + p + " : tile<" + shape + "xptr<" + t + ">>\n";
    s += "  %q" + n + " = addptr %s" + n + ", " + j + " : tile<" + shape + "xptr<" + t + ">>\n";
    s += "  %v" + n + " = load %q" + n + " : tile<" + shape + "x" + t + ">\n";
  }
  s += "  %d = dot %va, %vb, %vc : tile<" + shape_c + "x" + acc + ">\n";
  s += "  store %qc, %d\n  return\n}\n";
  return s;
}

inline void add_dot_cases(std::vector<IrCase>& cases) {
  for (const auto& [in, acc] : std::vector<std::pair<std::string, std::string>>{
           {"f32", "f32"}, {"f16", "f32"}, {"bf16", "f32"}, {"f16", "f16"}, {"i8", "i32"}, {"f64", "f64"}})
    cases.push_back({"dot_" + in + "_" + acc, dot_kernel(in, acc, "32x16", "16x64", "32x64", 512, 1024, 2048)});
  cases.push_back({"dot_small_f64", dot_kernel("f64", "f64", "16x16", "16x8", "16x8", 256, 128, 128)});
  cases.push_back({"dot_64x64x32_w8", dot_kernel("f16", "f32", "64x32", "32x64", "64x64", 2048, 2048, 4096), 8});
  // Tensor cores: tf32 (the attribute the front end sets for fp32), int8
  // with K a multiple of 32, an f16 result, one warp, replicated warps.
  std::string tf32 = dot_kernel("f32", "f32", "64x32", "32x32", "64x32", 2048, 1024, 2048);
  tf32.replace(tf32.find(" : tile<64x32xf32>\n  store"), 0, " {precision = \"tf32\"}");
  cases.push_back({"dot_tf32_64x32x32", tf32});
  cases.push_back({"dot_i8_64x32x64", dot_kernel("i8", "i32", "64x64", "64x32", "64x32", 4096, 2048, 2048)});
  cases.push_back({"dot_bf16_f16_w1", dot_kernel("bf16", "f16", "16x32", "32x16", "16x16", 512, 512, 256), 1});
  cases.push_back({"dot_f16_16x16x16_w8", dot_kernel("f16", "f32", "16x16", "16x16", "16x16", 256, 256, 256), 8});
}

inline void add_control_and_memory_cases(std::vector<IrCase>& cases) {
  // for: two carried tiles swapped every iteration, a carried scalar, nested if.
  cases.push_back({"for_swap_if", R"(kernel @loop(%x: ptr<f32> div(16), %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %r = arange {start = 0, end = 128} : tile<128xi32>
  %xs = splat %x : tile<128xptr<f32>>
  %p = addptr %xs, %r : tile<128xptr<f32>>
  %a0 = load %p : tile<128xf32>
  %b0 = constant {value = 1.5} : tile<128xf32>
  %f0 = constant {value = 0.0} : f32
  %ra, %rb, %rs = for %z, %n, %one, %a0, %b0, %f0 : tile<128xf32>, tile<128xf32>, f32 {
  ^bb(%i: i32, %a: tile<128xf32>, %b: tile<128xf32>, %s: f32):
    %sum = reduce %a {axis = 0} : f32 {
    ^bb(%u: f32, %v: f32):
      %w = add %u, %v : f32
      yield %w
    }
    %pos = cmp %sum, %f0 {pred = "gt"} : i1
    %t = if %pos : tile<128xf32> {
      %aa = add %a, %b : tile<128xf32>
      yield %aa
    } else {
      yield %a
    }
    %s2 = add %s, %sum : f32
    yield %b, %t, %s2
  }
  %fin = splat %rs : tile<128xf32>
  %o = add %ra, %fin : tile<128xf32>
  %o2 = mul %o, %rb : tile<128xf32>
  store %p, %o2
  return
}
)"});
  cases.push_back({"while_tile", R"(kernel @w(%x: ptr<i32> div(16), %limit: i32) {
  %r = arange {start = 0, end = 64} : tile<64xi32>
  %xs = splat %x : tile<64xptr<i32>>
  %p = addptr %xs, %r : tile<64xptr<i32>>
  %v0 = load %p : tile<64xi32>
  %k0 = constant {value = 0} : i32
  %vr, %kr = while %v0, %k0 : tile<64xi32>, i32 {
  ^bb(%v: tile<64xi32>, %k: i32):
    %go = cmp %k, %limit {pred = "lt"} : i1
    condition %go, %v, %k
  } do {
  ^bb(%v1: tile<64xi32>, %k1: i32):
    %two = constant {value = 2} : tile<64xi32>
    %v2 = mul %v1, %two : tile<64xi32>
    %one = constant {value = 1} : i32
    %k2 = add %k1, %one : i32
    yield %v2, %k2
  }
  store %p, %vr
  return
}
)"});
  cases.push_back({"load_store_variants", R"(kernel @mem(%f: ptr<f64> div(16), %h: ptr<f16>, %b: ptr<i1> div(16), %s: ptr<u8> div(16), %n: i32 div(16)) {
  %r = arange {start = 0, end = 512} : tile<512xi32>
  %sn = splat %n : tile<512xi32>
  %m = cmp %r, %sn {pred = "lt"} : tile<512xi1>
  %fs = splat %f : tile<512xptr<f64>>
  %fp = addptr %fs, %r : tile<512xptr<f64>>
  %other = constant {value = -1.0} : tile<512xf64>
  %fv = load %fp, %m, %other : tile<512xf64>
  %hs = splat %h : tile<512xptr<f16>>
  %hp = addptr %hs, %r : tile<512xptr<f16>>
  %hv = load %hp, %m {volatile = 1} : tile<512xf16>
  %bs = splat %b : tile<512xptr<i1>>
  %bp = addptr %bs, %r : tile<512xptr<i1>>
  %bv = load %bp : tile<512xi1>
  %ss = splat %s : tile<512xptr<u8>>
  %sp = addptr %ss, %r : tile<512xptr<u8>>
  %sv = load %sp, %bv : tile<512xu8>
  %hf = cast %hv : tile<512xf64>
  %sum = add %fv, %hf : tile<512xf64>
  store %fp, %sum, %m
  %nb = not %bv : tile<512xi1>
  store %bp, %nb
  %s1 = load %s : u8
  %ss1 = splat %s1 : tile<512xu8>
  %sv2 = add %sv, %ss1 : tile<512xu8>
  store %sp, %sv2, %m
  %k = constant {value = 7} : i64
  %f7 = addptr %f, %k : ptr<f64>
  %one = constant {value = 1.0} : f64
  store %f7, %one
  %ld = load %f7 : f64
  %ldv = splat %ld : tile<512xf64>
  store %fp, %ldv, %m
  return
}
)"});
  cases.push_back({"small_replicated_tiles", R"(kernel @small(%x: ptr<f32> div(16), %o: ptr<f32> div(16)) {
  %r = arange {start = 0, end = 16} : tile<16xi32>
  %xs = splat %x : tile<16xptr<f32>>
  %p = addptr %xs, %r : tile<16xptr<f32>>
  %v = load %p : tile<16xf32>
  %t = reduce %v {axis = 0} : f32 {
  ^bb(%a: f32, %b: f32):
    %c = max %a, %b : f32
    yield %c
  }
  %st = splat %t : tile<16xf32>
  %d = sub %v, %st : tile<16xf32>
  %os = splat %o : tile<16xptr<f32>>
  %q = addptr %os, %r : tile<16xptr<f32>>
  store %q, %d
  %r1 = arange {start = 0, end = 1} : tile<1xi32>
  %p1 = splat %o : tile<1xptr<f32>>
  %q1 = addptr %p1, %r1 : tile<1xptr<f32>>
  %one = splat %t : tile<1xf32>
  store %q1, %one
  return
}
)"});
  cases.push_back({"program_ids_and_pointer_ops", R"(kernel @ids(%o: ptr<i64> div(16), %off: i64, %u: u32) {
  %x = program_id {axis = 0} : i32
  %y = program_id {axis = 1} : i32
  %z = program_id {axis = 2} : i32
  %nx = num_programs {axis = 0} : i32
  %ny = num_programs {axis = 1} : i32
  %nz = num_programs {axis = 2} : i32
  %a = mul %z, %ny : i32
  %b = add %a, %y : i32
  %c = mul %b, %nx : i32
  %d = add %c, %x : i32
  %e = mul %nz, %d : i32
  %w = cast %e : i64
  %q = addptr %o, %off : ptr<i64>
  %r = arange {start = 0, end = 32} : tile<32xi32>
  %r64 = cast %r : tile<32xi64>
  %qs = splat %q : tile<32xptr<i64>>
  %q2 = addptr %qs, %r64 : tile<32xptr<i64>>
  %su = splat %u : tile<32xu32>
  %q3 = addptr %q2, %su : tile<32xptr<i64>>
  %ws = splat %w : tile<32xi64>
  %pv = cast %q3 : tile<32xi64>
  %eq = cmp %q3, %q2 {pred = "ne"} : tile<32xi1>
  %v = select %eq, %ws, %pv : tile<32xi64>
  %bc = bitcast %q3 : tile<32xptr<f64>>
  %back = bitcast %bc : tile<32xptr<i64>>
  %ip = cast %r64 : tile<32xptr<i64>>
  %nn = cast %ip : tile<32xi1>
  %v2 = select %nn, %v, %ws : tile<32xi64>
  store %back, %v2
  return
}
)"});
  cases.push_back({"constants", R"(kernel @consts(%o: ptr<f32> div(16), %h: ptr<f16> div(16), %b: ptr<bf16> div(16), %l: ptr<i64> div(16), %d: ptr<f64> div(16)) {
  %r = arange {start = 0, end = 64} : tile<64xi32>
  %nan = constant {value = nan} : tile<64xf32>
  %inf = constant {value = -inf} : tile<64xf32>
  %x = max %nan, %inf : tile<64xf32>
  %os = splat %o : tile<64xptr<f32>>
  %op = addptr %os, %r : tile<64xptr<f32>>
  store %op, %x
  %hc = constant {value = 65504.0} : tile<64xf16>
  %hs = splat %h : tile<64xptr<f16>>
  %hp = addptr %hs, %r : tile<64xptr<f16>>
  store %hp, %hc
  %bc = constant {value = -0.0} : tile<64xbf16>
  %bs = splat %b : tile<64xptr<bf16>>
  %bp = addptr %bs, %r : tile<64xptr<bf16>>
  store %bp, %bc
  %lc = constant {value = -9223372036854775808} : tile<64xi64>
  %ls = splat %l : tile<64xptr<i64>>
  %lp = addptr %ls, %r : tile<64xptr<i64>>
  store %lp, %lc
  %dc = constant {value = 1e-300} : tile<64xf64>
  %ds = splat %d : tile<64xptr<f64>>
  %dp = addptr %ds, %r : tile<64xptr<f64>>
  store %dp, %dc
  return
}
)"});
  cases.push_back({"print_and_assert", R"(kernel @dbg(%x: ptr<f16> div(16), %n: i32) {
  %r = arange {start = 0, end = 32} : tile<32xi32>
  %xs = splat %x : tile<32xptr<f16>>
  %p = addptr %xs, %r : tile<32xptr<f16>>
  %v = load %p : tile<32xf16>
  print %n {prefix = "n = %d"}
  print %v, %r {prefix = "v: "}
  %sn = splat %n : tile<32xi32>
  %ok = cmp %r, %sn {pred = "lt"} : tile<32xi1>
  assert %ok {message = "index out of range"}
  return
}
)",
                   4, true});
}

// The math library ops (tan, atan2, ...: a row each in ir/ops.def) on f32 and f64 (and, as the
// backend allows though the front end computes them in f32, on f16/bf16),
// and `hint` on integers and pointers.
inline void add_math_and_hint_cases(std::vector<IrCase>& cases) {
  for (const char* fn : {"tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "exp10",
                         "expm1", "log10", "log1p", "cbrt", "rint", "round", "trunc", "lgamma"})
    for (const char* f : {"f32", "f64"})
      cases.push_back({std::string("math_") + fn + "_" + f, ew_kernel(fn, {f}, f)});
  for (const char* fn : {"atan2", "hypot", "copysign", "nextafter"})
    for (const char* f : {"f32", "f64"})
      cases.push_back({std::string("math_") + fn + "_" + f, ew_kernel(fn, {f, f}, f)});
  cases.push_back({"math_log1p_f16", ew_kernel("log1p", {"f16"}, "f16")});
  cases.push_back({"math_atan2_bf16", ew_kernel("atan2", {"bf16", "bf16"}, "bf16")});
  for (const char* t : {"i32", "i64", "u32"})
    cases.push_back({std::string("hint_") + t,
                     ew_kernel("hint", {t}, t, "{divisibility = [16], contiguity = [8], constancy = [1]}")});
  cases.push_back({"hint_pointer_offsets",
                   tile2d_kernel("  %h = hint %offs {contiguity = [1, 64], divisibility = [16, 16]} : tile<32x64xi32>\n"
                                 "  %hq = addptr %xp, %h : tile<32x64xptr<f32>>\n"
                                 "  %out = load %hq, %mask : tile<32x64xf32>\n")});
  // libdevice (ops.def's LIB rows) and tl.extra.cuda.
  for (const char* f : {"f32", "f64"}) {
    for (const char* fn : {"add_round", "sub_round", "mul_round", "div_round"})
      cases.push_back({std::string("libdevice_") + fn + "_" + f, ew_kernel(fn, {f, f}, f, "{rounding = \"rd\"}")});
    cases.push_back({std::string("libdevice_fma_round_") + f, ew_kernel("fma_round", {f, f, f}, f, "{rounding = \"ru\"}")});
    cases.push_back({std::string("libdevice_sqrt_round_") + f, ew_kernel("sqrt_round", {f}, f, "{rounding = \"rz\"}")});
    for (const char* fn : {"sinpi", "cospi", "erfinv", "erfcinv", "erfcx", "normcdf", "normcdfinv", "tgamma", "j0",
                           "j1", "y0", "y1", "cyl_bessel_i0", "cyl_bessel_i1", "rcbrt", "logb"})
      cases.push_back({std::string("libdevice_") + fn + "_" + f, ew_kernel(fn, {f}, f)});
    for (const char* fn : {"fdim", "remainder", "rhypot"})
      cases.push_back({std::string("libdevice_") + fn + "_" + f, ew_kernel(fn, {f, f}, f)});
    cases.push_back({std::string("libdevice_norm3d_") + f, ew_kernel("norm3d", {f, f, f}, f)});
    cases.push_back({std::string("libdevice_rnorm3d_") + f, ew_kernel("rnorm3d", {f, f, f}, f)});
    cases.push_back({std::string("libdevice_norm4d_") + f, ew_kernel("norm4d", {f, f, f, f}, f)});
    cases.push_back({std::string("libdevice_rnorm4d_") + f, ew_kernel("rnorm4d", {f, f, f, f}, f)});
    for (const char* fn : {"ldexp", "jn", "yn"})
      cases.push_back({std::string("libdevice_") + fn + "_" + f, ew_kernel(fn, {f, "i32"}, f)});
  }
  for (const char* fn : {"rsqrt_rn", "saturatef", "fast_expf", "fast_exp10f", "fast_logf", "fast_log2f", "fast_log10f",
                         "fast_sinf", "fast_cosf", "fast_tanf"})
    cases.push_back({std::string("libdevice_") + fn, ew_kernel(fn, {"f32"}, "f32")});
  cases.push_back({"libdevice_fast_powf", ew_kernel("fast_powf", {"f32", "f32"}, "f32")});
  cases.push_back({"libdevice_rcp64h", ew_kernel("rcp64h", {"f64"}, "f64")});
  for (const char* t : {"i32", "i64", "u32", "u64"})
    for (const char* fn : {"popc", "clz", "brev"})
      cases.push_back({std::string("libdevice_") + fn + "_" + t, ew_kernel(fn, {t}, t)});
  cases.push_back({"extra_cuda_queries",
                   "kernel @k(%o: ptr<i64> div(16), %s: ptr<i32> div(16)) {\n"
                   "  gdc_wait\n"
                   "  %t = globaltimer : i64\n"
                   "  store %o, %t\n"
                   "  %m = smid : i32\n"
                   "  store %s, %m\n"
                   "  gdc_launch_dependents\n"
                   "  return\n"
                   "}\n"});
}

// scan (one operand and a tuple, each axis, reversed), sort, gather and
// histogram (ir/scan_ops.h), at several warp counts.
inline void add_scan_cases(std::vector<IrCase>& cases) {
  auto sum_region = [](const std::string& t) {
    return " {\n  ^bb(%a0: " + t + ", %b0: " + t + "):\n    %c0 = add %a0, %b0 : " + t + "\n    yield %c0\n  }\n";
  };
  for (int w : {1, 4, 8})
    for (const char* axis : {"0", "1"})
      cases.push_back({std::string("scan_axis") + axis + "_w" + std::to_string(w),
                       tile2d_kernel(std::string("  %out = scan %x {axis = ") + axis + ", reverse = " +
                                         (w == 8 ? "1" : "0") + "} : tile<32x64xf32>" + sum_region("f32")),
                       w});
  cases.push_back({"scan_f16_rows", tile2d_kernel("  %out = scan %x {axis = 1, reverse = 0} : tile<32x64xf16>" +
                                                      sum_region("f16"),
                                                  "f16", "32x64", "%offs", "f16")});
  cases.push_back({"scan_pair_affine",
                   tile2d_kernel("  %b = neg %x : tile<32x64xf32>\n"
                                 "  %out, %h = scan %x, %b {axis = 1, reverse = 1} : tile<32x64xf32>, tile<32x64xf32> {\n"
                                 "  ^bb(%a1: f32, %b1: f32, %a2: f32, %b2: f32):\n"
                                 "    %aa = mul %a1, %a2 : f32\n"
                                 "    %ab = mul %a2, %b1 : f32\n"
                                 "    %bb = add %ab, %b2 : f32\n"
                                 "    yield %aa, %bb\n  }\n")});
  for (int w : {1, 4, 16})
    cases.push_back({"sort_rows_w" + std::to_string(w),
                     tile2d_kernel("  %out = sort %x {axis = 1, descending = 0} : tile<32x64xf32>\n"), w});
  cases.push_back({"sort_cols_desc_bf16", tile2d_kernel("  %out = sort %x {axis = 0, descending = 1} : tile<32x64xbf16>\n",
                                                        "bf16", "32x64", "%offs", "bf16")});
  cases.push_back({"sort_i64", tile2d_kernel("  %xi = cast %x : tile<32x64xi64>\n"
                                             "  %s = sort %xi {axis = 1} : tile<32x64xi64>\n"
                                             "  %out = cast %s : tile<32x64xf32>\n")});
  cases.push_back({"gather_rows", tile2d_kernel("  %ix = cast %x : tile<32x64xi32>\n"
                                                "  %out = gather %x, %ix {axis = 1} : tile<32x64xf32>\n")});
  cases.push_back({"gather_cols_u8", tile2d_kernel("  %ix = cast %x : tile<32x64xu8>\n"
                                                   "  %out = gather %x, %ix {axis = 0} : tile<32x64xf32>\n")});
  cases.push_back({"histogram", tile2d_kernel("  %ix = cast %x : tile<32x64xi32>\n"
                                              "  %hist = histogram %ix, %mask : tile<64xi32>\n"
                                              "  %out = cast %hist : tile<64xf32>\n" + iota("%of", 64),
                                              "f32", "64", "%of")});
}

// Atomics: every op on every element type it supports (tile pointers,
// masked, old values stored), scalar atomics whose old value every thread
// needs, a replicated small tile, and each memory order and scope.
inline void add_atomic_cases(std::vector<IrCase>& cases) {
  auto kernel = [](const std::string& type, int size, const std::string& ops) {
    std::string t = "tile<" + std::to_string(size) + "x";
    return "kernel @k(%p: ptr<" + type + "> div(16), %o: ptr<" + type + "> div(16), %n: i32) {\n"
           "  %r = arange {start = 0, end = " + std::to_string(size) + "} : " + t + "i32>\n"
           "  %sn = splat %n : " + t + "i32>\n"
           "  %mask = cmp %r, %sn {pred = \"lt\"} : " + t + "i1>\n"
           "  %sp = splat %p : " + t + "ptr<" + type + ">>\n"
           "  %q = addptr %sp, %r : " + t + "ptr<" + type + ">>\n"
           "  %so = splat %o : " + t + "ptr<" + type + ">>\n"
           "  %qo = addptr %so, %r : " + t + "ptr<" + type + ">>\n"
           "  %v = load %qo, %mask : " + t + type + ">\n" + ops + "  return\n}\n";
  };
  auto rmw = [](const std::string& type, int size, const std::string& op, const std::string& order) {
    std::string t = "tile<" + std::to_string(size) + "x" + type + ">";
    return "  %" + op + " = atomic_rmw %q, %v, %mask {op = \"" + op + "\", " + order + "} : " + t + "\n"
           "  store %qo, %" + op + ", %mask\n";
  };
  const std::string acq_rel = "sem = \"acq_rel\", scope = \"gpu\"";
  for (const char* type : {"i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"}) {
    std::string ops;
    bool integer = type[0] != 'f' && type[0] != 'b';
    for (const char* op : {"add", "max", "min", "xchg", "and", "or", "xor"})
      if (integer || std::string(op) == "add" || std::string(op) == "max" || std::string(op) == "min" ||
          std::string(op) == "xchg")
        ops += rmw(type, 256, op, acq_rel);
    ops += "  %cas = atomic_cas %q, %v, %xchg {" + acq_rel + "} : tile<256x" + type + ">\n"
           "  store %qo, %cas, %mask\n";
    cases.push_back({std::string("atomic_") + type, kernel(type, 256, ops)});
  }
  cases.push_back({"atomic_replicated_small_tile", kernel("f32", 16, rmw("f32", 16, "add", acq_rel)), 4});
  cases.push_back({"atomic_orders_and_scopes",
                   kernel("i32", 128, rmw("i32", 128, "add", "sem = \"relaxed\", scope = \"cta\"") +
                                          rmw("i32", 128, "max", "sem = \"acquire\", scope = \"gpu\"") +
                                          rmw("i32", 128, "min", "sem = \"release\", scope = \"sys\""))});
  cases.push_back({"atomic_scalar_spin_lock", R"(kernel @k(%lock: ptr<i32>, %acc: ptr<bf16>, %n: i32) {
  %zero = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  while {
    %old = atomic_cas %lock, %zero, %one {sem = "acquire", scope = "gpu"} : i32
    %busy = cmp %old, %one {pred = "eq"} : i1
    condition %busy
  } do {
    yield
  }
  %x = constant {value = 0.5} : bf16
  %pos = cmp %n, %zero {pred = "gt"} : i1
  %a = atomic_rmw %acc, %x, %pos {op = "add", sem = "relaxed", scope = "gpu"} : bf16
  %m = atomic_rmw %acc, %a, %pos {op = "max", sem = "relaxed", scope = "gpu"} : bf16
  %u = atomic_rmw %lock, %zero {op = "xchg", sem = "release", scope = "gpu"} : i32
  return
}
)"});
}

// inline_asm (tl.inline_asm_elementwise): two results; four bytes packed
// in a register, with a short last group (32x64 over 4 warps: 16 registers
// per thread, pack 3 leaves one).
inline void add_inline_asm_cases(std::vector<IrCase>& cases) {
  cases.push_back({"inline_asm_two_results",
                   tile2d_kernel("  %y = mul %x, %x : tile<32x64xf32>\n"
                                 "  %s, %b = inline_asm %x, %y {asm = \"add.f32 $0, $2, $3; mov.b32 $1, $2;\", "
                                 "constraints = \"=f,=r,f,f\", pack = 1, pure = 1} : tile<32x64xf32>, tile<32x64xi32>\n"
                                 "  %bf = cast %b : tile<32x64xf32>\n"
                                 "  %out = add %s, %bf : tile<32x64xf32>\n")});
  cases.push_back({"inline_asm_packed_bytes",
                   tile2d_kernel("  %u = cast %x : tile<32x64xu8>\n"
                                 "  %v = inline_asm %u {asm = \"add.u32 $0, $1, 0x01010101;\", constraints = \"=r,r\", "
                                 "pack = 4, pure = 0} : tile<32x64xu8>\n"
                                 "  %w = inline_asm %u {asm = \"mov.b32 $0, $1;\", constraints = \"=r,r\", "
                                 "pack = 3, pure = 1} : tile<32x64xu8>\n"
                                 "  %vw = add %v, %w : tile<32x64xu8>\n"
                                 "  %out = cast %vw : tile<32x64xf32>\n")});
}

inline std::vector<IrCase> ir_cases() {
  std::vector<IrCase> cases;
  add_scan_cases(cases);
  add_elementwise_cases(cases);
  add_math_and_hint_cases(cases);
  add_shape_and_reduce_cases(cases);
  add_dot_cases(cases);
  add_control_and_memory_cases(cases);
  add_atomic_cases(cases);
  add_inline_asm_cases(cases);
  return cases;
}

}  // namespace tegula::cuda_test
