// The textual IR: exact printed form, print -> parse -> print round trips,
// structural equality of parsed functions, location comments, and parse
// errors located in the IR text.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir_samples.h"
#include "support/diagnostic.h"

namespace tegula::ir {
namespace {

using namespace samples;

// --- structural equality ------------------------------------------------------------

// Describes the first difference between two functions ("" when equal). Values
// of `a` are matched to values of `b` by position, so numbering may differ.
class Compare {
 public:
  Compare(const Function& a, const Function& b) : a_(a), b_(b) {}

  std::string run() {
    if (a_.name != b_.name) return "name " + a_.name + " vs " + b_.name;
    if (a_.params.size() != b_.params.size()) return "param count";
    for (size_t i = 0; i < a_.params.size(); ++i) {
      const Param &p = a_.params[i], &q = b_.params[i];
      if (p.name != q.name || !(p.type == q.type) || p.divisibility != q.divisibility ||
          p.by_value_bytes != q.by_value_bytes)
        return "param " + std::to_string(i);
    }
    return blocks(a_.body(), b_.body());
  }

 private:
  std::string blocks(BlockId x, BlockId y) {
    const Block &bx = a_.block(x), &by = b_.block(y);
    if (bx.args.size() != by.args.size()) return "block arg count";
    for (size_t i = 0; i < bx.args.size(); ++i) {
      if (!(a_.type(bx.args[i]) == b_.type(by.args[i]))) return "block arg type";
      map_[bx.args[i].index] = by.args[i].index;
    }
    if (bx.ops.size() != by.ops.size()) return "op count in block";
    for (size_t i = 0; i < bx.ops.size(); ++i) {
      std::string d = ops(bx.ops[i], by.ops[i]);
      if (!d.empty()) return "op " + std::to_string(i) + " (" + name(a_.op(bx.ops[i]).kind) + "): " + d;
    }
    return "";
  }

  std::string ops(OpId x, OpId y) {
    const Op &ox = a_.op(x), &oy = b_.op(y);
    if (ox.kind != oy.kind) return "kind";
    if (ox.operands.size() != oy.operands.size()) return "operand count";
    for (size_t i = 0; i < ox.operands.size(); ++i) {
      auto it = map_.find(ox.operands[i].index);
      if (it == map_.end() || it->second != oy.operands[i].index) return "operand " + std::to_string(i);
    }
    if (ox.attrs.size() != oy.attrs.size()) return "attr count";
    for (size_t i = 0; i < ox.attrs.size(); ++i) {
      if (ox.attrs[i].name != oy.attrs[i].name) return "attr name";
      if (!same_attr(ox.attrs[i].value, oy.attrs[i].value)) return "attr " + ox.attrs[i].name;
    }
    if (ox.results.size() != oy.results.size()) return "result count";
    for (size_t i = 0; i < ox.results.size(); ++i) {
      if (!(a_.type(ox.results[i]) == b_.type(oy.results[i]))) return "result type";
      map_[ox.results[i].index] = oy.results[i].index;
    }
    if (ox.loc.valid() != oy.loc.valid()) return "location presence";
    if (ox.loc.valid() && (a_.files.at(ox.loc.file) != b_.files.at(oy.loc.file) || ox.loc.line != oy.loc.line ||
                           ox.loc.col != oy.loc.col))
      return "location";
    if (ox.regions.size() != oy.regions.size()) return "region count";
    for (size_t i = 0; i < ox.regions.size(); ++i) {
      std::string d = blocks(ox.regions[i], oy.regions[i]);
      if (!d.empty()) return "region " + std::to_string(i) + ": " + d;
    }
    return "";
  }

  static bool same_attr(const Attr& x, const Attr& y) {
    if (x.index() != y.index()) return false;
    if (const double* d = std::get_if<double>(&x)) {
      double e = std::get<double>(y);
      // Bit equality: -0.0 must stay -0.0; NaN compares equal to NaN here.
      return std::bit_cast<uint64_t>(*d) == std::bit_cast<uint64_t>(e) || (std::isnan(*d) && std::isnan(e));
    }
    return x == y;
  }

  const Function& a_;
  const Function& b_;
  std::map<uint32_t, uint32_t> map_;
};

std::string structural_diff(const Function& a, const Function& b) { return Compare(a, b).run(); }

// print -> parse -> print must reproduce the text and an equal function.
void expect_round_trip(const Function& fn) {
  std::string text = print(fn);
  Function parsed = parse(text);
  EXPECT_EQ(print(parsed), text);
  EXPECT_EQ(structural_diff(fn, parsed), "");
  EXPECT_EQ(print(parsed, PrintOptions{false}), print(fn, PrintOptions{false}));
}

// The diagnostic of a parse error, rendered against the text as `<ir>`.
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const UserError& e) {
    SourceManager sources;
    sources.add("<ir>", text);
    return render(e.diagnostic(), &sources);
  }
  return "no error";
}

// --- printer --------------------------------------------------------------------------

TEST(IrPrinter, VectorAddGolden) {
  EXPECT_EQ(print(vector_add()),
            "kernel @add(%x: ptr<f32> div(16), %y: ptr<f32> div(16), %out: ptr<f32> div(16), %n: i32) {\n"
            "  %0 = program_id {axis = 0} : i32                          // add.py:3:11\n"
            "  %1 = constant {value = 1024} : i32                        // add.py:3:11\n"
            "  %2 = mul %0, %1 : i32                                     // add.py:3:11\n"
            "  %3 = arange {start = 0, end = 1024} : tile<1024xi32>      // add.py:3:23\n"
            "  %4 = splat %2 : tile<1024xi32>                            // add.py:3:23\n"
            "  %5 = add %4, %3 : tile<1024xi32>                          // add.py:3:23\n"
            "  %6 = splat %n : tile<1024xi32>                            // add.py:4:12\n"
            "  %7 = cmp %5, %6 {pred = \"lt\"} : tile<1024xi1>             // add.py:4:12\n"
            "  %8 = splat %x : tile<1024xptr<f32>>                       // add.py:5:9\n"
            "  %9 = addptr %8, %5 : tile<1024xptr<f32>>                  // add.py:5:9\n"
            "  %10 = load %9, %7 : tile<1024xf32>                        // add.py:5:9\n"
            "  %11 = splat %y : tile<1024xptr<f32>>                      // add.py:6:9\n"
            "  %12 = addptr %11, %5 : tile<1024xptr<f32>>                // add.py:6:9\n"
            "  %13 = load %12, %7 : tile<1024xf32>                       // add.py:6:9\n"
            "  %14 = add %10, %13 : tile<1024xf32>                       // add.py:7:5\n"
            "  %15 = splat %out : tile<1024xptr<f32>>                    // add.py:7:5\n"
            "  %16 = addptr %15, %5 : tile<1024xptr<f32>>                // add.py:7:5\n"
            "  store %16, %14, %7                                        // add.py:7:5\n"
            "  return\n"
            "}\n");
}

TEST(IrPrinter, WithoutLocations) {
  std::string text = print(vector_add(), PrintOptions{false});
  EXPECT_EQ(text.find("//"), std::string::npos);
  EXPECT_NE(text.find("  %14 = add %10, %13 : tile<1024xf32>\n"), std::string::npos);
}

TEST(IrPrinter, EveryOpGolden) {
  // Regions: reduce's combiner, a for with a nested if/else, a while with its
  // before (condition) and after (do) regions; multi-result split; every
  // attribute kind; names numbered in text order.
  EXPECT_EQ(print(every_op(), PrintOptions{false}),
            "kernel @every_op(%x: ptr<f32> div(16), %n: i32 div(16), %flag: i1) {\n"
            "  %0 = program_id {axis = 0} : i32\n"
            "  %1 = num_programs {axis = 2} : i32\n"
            "  %2 = arange {start = 0, end = 16} : tile<16xi32>\n"
            "  %3 = constant {value = 2} : i32\n"
            "  %4 = splat %3 : tile<16xi32>\n"
            "  %5 = add %2, %4 : tile<16xi32>\n"
            "  %6 = sub %5, %4 : tile<16xi32>\n"
            "  %7 = mul %6, %4 : tile<16xi32>\n"
            "  %8 = div %7, %4 : tile<16xi32>\n"
            "  %9 = rem %8, %4 : tile<16xi32>\n"
            "  %10 = and %9, %4 : tile<16xi32>\n"
            "  %11 = or %10, %4 : tile<16xi32>\n"
            "  %12 = xor %11, %4 : tile<16xi32>\n"
            "  %13 = shl %12, %4 : tile<16xi32>\n"
            "  %14 = shr %13, %4 : tile<16xi32>\n"
            "  %15 = min %14, %4 : tile<16xi32>\n"
            "  %16 = max %15, %4 : tile<16xi32>\n"
            "  %17 = umulhi %16, %4 : tile<16xi32>\n"
            "  %18 = neg %17 : tile<16xi32>\n"
            "  %19 = not %18 : tile<16xi32>\n"
            "  %20 = abs %19 : tile<16xi32>\n"
            "  %21 = cmp %20, %4 {pred = \"lt\"} : tile<16xi1>\n"
            "  %22 = constant {value = 1.5} : f32\n"
            "  %23 = splat %22 : tile<16xf32>\n"
            "  %24 = cast %2 : tile<16xf32>\n"
            "  %25 = pow %24, %23 : tile<16xf32>\n"
            "  %26 = fma %25, %23, %23 : tile<16xf32>\n"
            "  %27 = exp %26 : tile<16xf32>\n"
            "  %28 = exp2 %27 : tile<16xf32>\n"
            "  %29 = log %28 : tile<16xf32>\n"
            "  %30 = log2 %29 : tile<16xf32>\n"
            "  %31 = sqrt %30 : tile<16xf32>\n"
            "  %32 = rsqrt %31 : tile<16xf32>\n"
            "  %33 = sin %32 : tile<16xf32>\n"
            "  %34 = cos %33 : tile<16xf32>\n"
            "  %35 = tanh %34 : tile<16xf32>\n"
            "  %36 = erf %35 : tile<16xf32>\n"
            "  %37 = floor %36 : tile<16xf32>\n"
            "  %38 = ceil %37 : tile<16xf32>\n"
            "  %39 = select %21, %38, %23 : tile<16xf32>\n"
            "  %40 = bitcast %39 : tile<16xi32>\n"
            "  %41 = splat %x : tile<16xptr<f32>>\n"
            "  %42 = addptr %41, %2 : tile<16xptr<f32>>\n"
            "  %43 = load %42, %21, %23 {cache_modifier = \".cg\", volatile = 1} : tile<16xf32>\n"
            "  store %42, %43, %21 {eviction_policy = \"evict_last\"}\n"
            "  %44 = expand_dims %39 {axis = 1} : tile<16x1xf32>\n"
            "  %45 = broadcast %44 : tile<16x8xf32>\n"
            "  %46 = reshape %45 : tile<128xf32>\n"
            "  %47 = trans %45 {perm = [1, 0]} : tile<8x16xf32>\n"
            "  %48 = join %38, %39 : tile<16x2xf32>\n"
            "  %49, %50 = split %48 : tile<16xf32>, tile<16xf32>\n"
            "  %51 = constant {value = 0.0} : f32\n"
            "  %52 = splat %51 : tile<16x16xf32>\n"
            "  %53 = dot %45, %47, %52 {precision = \"ieee\"} : tile<16x16xf32>\n"
            "  %54 = reduce %45 {axis = 1} : tile<16xf32> {\n"
            "  ^bb(%55: f32, %56: f32):\n"
            "    %57 = add %55, %56 : f32\n"
            "    yield %57\n"
            "  }\n"
            "  %58 = constant {value = 0} : i32\n"
            "  %59 = constant {value = 1} : i32\n"
            "  %60 = for %58, %n, %59, %54 : tile<16xf32> {\n"
            "  ^bb(%61: i32, %62: tile<16xf32>):\n"
            "    %63 = splat %61 : tile<16xi32>\n"
            "    %64 = cast %63 : tile<16xf32>\n"
            "    %65 = if %flag : tile<16xf32> {\n"
            "      %66 = add %62, %64 : tile<16xf32>\n"
            "      yield %66\n"
            "    } else {\n"
            "      yield %62\n"
            "    }\n"
            "    yield %65\n"
            "  }\n"
            "  %67 = while %58 : i32 {\n"
            "  ^bb(%68: i32):\n"
            "    %69 = cmp %68, %n {pred = \"lt\"} : i1\n"
            "    condition %69, %68\n"
            "  } do {\n"
            "  ^bb(%70: i32):\n"
            "    %71 = add %70, %0 : i32\n"
            "    yield %71\n"
            "  }\n"
            "  %72 = atomic_rmw %42, %43, %21 {op = \"max\", sem = \"relaxed\", scope = \"cta\"} : tile<16xf32>\n"
            "  %73 = atomic_cas %42, %72, %43 {sem = \"acq_rel\", scope = \"gpu\"} : tile<16xf32>\n"
            "  %74 = constant {value = 1} : i32\n"
            "  %75 = desc_load %x, %n, %74, %0 {padding = \"nan\"} : tile<16xf32>\n"
            "  desc_store %x, %n, %74, %0, %75\n"
            "  desc_atomic %x, %n, %74, %0, %75 {op = \"add\"}\n"
            "  %76 = hint %2 {divisibility = [16], contiguity = [16]} : tile<16xi32>\n"
            "  %77 = log1p %39 : tile<16xf32>\n"
            "  %78 = atan2 %77, %23 : tile<16xf32>\n"
            "  %79 = scan %39 {axis = 0, reverse = 1} : tile<16xf32> {\n"
            "  ^bb(%80: f32, %81: f32):\n"
            "    %82 = add %80, %81 : f32\n"
            "    yield %82\n"
            "  }\n"
            "  %83 = sort %79 {axis = 0, descending = 1} : tile<16xf32>\n"
            "  %84 = gather %83, %2 {axis = 0} : tile<16xf32>\n"
            "  %85 = histogram %2, %21 : tile<8xi32>\n"
            "  %86 = tan %77 : tile<16xf32>\n"
            "  %87 = atan %86 : tile<16xf32>\n"
            "  %88 = asin %87 : tile<16xf32>\n"
            "  %89 = acos %88 : tile<16xf32>\n"
            "  %90 = sinh %89 : tile<16xf32>\n"
            "  %91 = cosh %90 : tile<16xf32>\n"
            "  %92 = asinh %91 : tile<16xf32>\n"
            "  %93 = acosh %92 : tile<16xf32>\n"
            "  %94 = atanh %93 : tile<16xf32>\n"
            "  %95 = erfc %94 : tile<16xf32>\n"
            "  %96 = exp10 %95 : tile<16xf32>\n"
            "  %97 = expm1 %96 : tile<16xf32>\n"
            "  %98 = log10 %97 : tile<16xf32>\n"
            "  %99 = cbrt %98 : tile<16xf32>\n"
            "  %100 = rint %99 : tile<16xf32>\n"
            "  %101 = round %100 : tile<16xf32>\n"
            "  %102 = trunc %101 : tile<16xf32>\n"
            "  %103 = lgamma %102 : tile<16xf32>\n"
            "  %104 = hypot %103, %23 : tile<16xf32>\n"
            "  %105 = copysign %104, %23 : tile<16xf32>\n"
            "  %106 = nextafter %105, %23 : tile<16xf32>\n"
            "  %107 = add_round %106, %23 {rounding = \"rd\"} : tile<16xf32>\n"
            "  %108 = sub_round %107, %23 {rounding = \"rd\"} : tile<16xf32>\n"
            "  %109 = mul_round %108, %23 {rounding = \"rd\"} : tile<16xf32>\n"
            "  %110 = div_round %109, %23 {rounding = \"rd\"} : tile<16xf32>\n"
            "  %111 = fma_round %110, %23, %23 {rounding = \"ru\"} : tile<16xf32>\n"
            "  %112 = sqrt_round %111 {rounding = \"rz\"} : tile<16xf32>\n"
            "  %113 = rsqrt_rn %112 : tile<16xf32>\n"
            "  %114 = sinpi %113 : tile<16xf32>\n"
            "  %115 = cospi %114 : tile<16xf32>\n"
            "  %116 = erfinv %115 : tile<16xf32>\n"
            "  %117 = erfcinv %116 : tile<16xf32>\n"
            "  %118 = erfcx %117 : tile<16xf32>\n"
            "  %119 = normcdf %118 : tile<16xf32>\n"
            "  %120 = normcdfinv %119 : tile<16xf32>\n"
            "  %121 = tgamma %120 : tile<16xf32>\n"
            "  %122 = j0 %121 : tile<16xf32>\n"
            "  %123 = j1 %122 : tile<16xf32>\n"
            "  %124 = y0 %123 : tile<16xf32>\n"
            "  %125 = y1 %124 : tile<16xf32>\n"
            "  %126 = cyl_bessel_i0 %125 : tile<16xf32>\n"
            "  %127 = cyl_bessel_i1 %126 : tile<16xf32>\n"
            "  %128 = rcbrt %127 : tile<16xf32>\n"
            "  %129 = logb %128 : tile<16xf32>\n"
            "  %130 = saturatef %129 : tile<16xf32>\n"
            "  %131 = rcp64h %130 : tile<16xf32>\n"
            "  %132 = fast_expf %131 : tile<16xf32>\n"
            "  %133 = fast_exp10f %132 : tile<16xf32>\n"
            "  %134 = fast_logf %133 : tile<16xf32>\n"
            "  %135 = fast_log2f %134 : tile<16xf32>\n"
            "  %136 = fast_log10f %135 : tile<16xf32>\n"
            "  %137 = fast_sinf %136 : tile<16xf32>\n"
            "  %138 = fast_cosf %137 : tile<16xf32>\n"
            "  %139 = fast_tanf %138 : tile<16xf32>\n"
            "  %140 = fdim %139, %23 : tile<16xf32>\n"
            "  %141 = remainder %140, %23 : tile<16xf32>\n"
            "  %142 = rhypot %141, %23 : tile<16xf32>\n"
            "  %143 = fast_powf %142, %23 : tile<16xf32>\n"
            "  %144 = norm3d %143, %23, %23 : tile<16xf32>\n"
            "  %145 = rnorm3d %144, %23, %23 : tile<16xf32>\n"
            "  %146 = norm4d %145, %23, %23, %23 : tile<16xf32>\n"
            "  %147 = rnorm4d %146, %23, %23, %23 : tile<16xf32>\n"
            "  %148 = ldexp %147, %2 : tile<16xf32>\n"
            "  %149 = jn %148, %2 : tile<16xf32>\n"
            "  %150 = yn %149, %2 : tile<16xf32>\n"
            "  %151 = popc %2 : tile<16xi32>\n"
            "  %152 = clz %2 : tile<16xi32>\n"
            "  %153 = brev %2 : tile<16xi32>\n"
            "  %154 = globaltimer : i64\n"
            "  %155 = smid : i32\n"
            "  gdc_wait\n"
            "  gdc_launch_dependents\n"
            "  print %60, %67 {prefix = \"acc \\\"and\\\" i:\\n\\t\\\\\"}\n"
            "  assert %21 {message = \"offsets must be small\"}\n"
            "  %156, %157 = inline_asm %150, %23 {asm = \"add.f32 $0, $2, $3; mov.b32 $1, $2;\", constraints = \"=f,=r,f,f\", pack = 1, pure = 1} : tile<16xf32>, tile<16xi32>\n"
            "  return\n"
            "}\n");
}

TEST(IrPrinter, LocationCommentsAlignAndOverflow) {
  Function fn;
  fn.name = "k";
  fn.files = {"a very/long:path/name.py"};
  Builder b(fn);
  b.set_insertion_end(fn.body());
  b.set_loc(SourceLoc{0, 12, 34, 40});
  ValueId c = b.int_constant(1, i32());
  ValueId t = b.create1(OpKind::Splat, {c}, tile(Scalar::I32, {1024, 256}));
  ValueId e = b.create1(OpKind::ExpandDims, {t}, tile(Scalar::I32, {1024, 1, 256}), {{"axis", int64_t{1}}});
  b.create1(OpKind::Reshape, {e}, tile(Scalar::I32, {256, 1024}));
  b.set_loc(SourceLoc{7, 1, 1, 2});  // file index out of range: printed as `?`
  b.create(OpKind::Return, {}, {});
  EXPECT_EQ(print(fn),
            "kernel @k() {\n"
            "  %0 = constant {value = 1} : i32                           // a very/long:path/name.py:12:34\n"
            "  %1 = splat %0 : tile<1024x256xi32>                        // a very/long:path/name.py:12:34\n"
            "  %2 = expand_dims %1 {axis = 1} : tile<1024x1x256xi32>     // a very/long:path/name.py:12:34\n"
            "  %3 = reshape %2 : tile<256x1024xi32>                      // a very/long:path/name.py:12:34\n"
            "  return                                                    // ?:1:1\n"
            "}\n");
  // A line longer than the comment column gets two spaces before its comment.
  Function wide;
  wide.name = "w";
  wide.files = {"f.py"};
  Builder wb(wide);
  wb.set_insertion_end(wide.body());
  wb.set_loc(SourceLoc{0, 1, 2, 3});
  ValueId z = wb.int_constant(0, Type::of(Scalar::U64));
  wb.create1(OpKind::Splat, {z}, tile(Scalar::U64, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_NE(print(wide).find("  %1 = splat %0 : tile<2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2xu64>  // f.py:1:2\n"),
            std::string::npos)
      << print(wide);
}

TEST(IrPrinter, AttributesOfEveryKind) {
  Function fn;
  fn.name = "attrs";
  Builder b(fn);
  b.set_insertion_end(fn.body());
  b.create(OpKind::Print, {}, {},
           {{"i", int64_t{-7}},
            {"big", std::numeric_limits<int64_t>::min()},
            {"f1", 1.0},
            {"f2", 0.1},
            {"f3", -0.0},
            {"f4", 1e20},
            {"f5", 5e-324},
            {"f6", std::numeric_limits<double>::infinity()},
            {"f7", -std::numeric_limits<double>::infinity()},
            {"f8", std::numeric_limits<double>::quiet_NaN()},
            {"s", std::string("q\"\\\x01\x7f\xc3\xa9")},
            {"empty", std::string()},
            {"list", std::vector<int64_t>{3, -1, 0}},
            {"none", std::vector<int64_t>{}}});
  b.create(OpKind::Return, {}, {});
  std::string text = print(fn);
  EXPECT_NE(text.find("print {i = -7, big = -9223372036854775808, f1 = 1.0, f2 = 0.1, f3 = -0.0, f4 = 1e+20, "
                      "f5 = 5e-324, f6 = inf, f7 = -inf, f8 = nan, s = \"q\\\"\\\\\\x01\\x7f\xc3\xa9\", "
                      "empty = \"\", list = [3, -1, 0], none = []}\n"),
            std::string::npos)
      << text;
  expect_round_trip(fn);
}

TEST(IrPrinter, OddNamesAreQuoted) {
  Function fn;
  fn.name = "my kernel";
  fn.params = {Param{"2x", Type::of(Scalar::I64), 1}, Param{"a.b", Type::of(Scalar::I64), 1}};
  ValueId a = fn.add_block_arg(fn.body(), Type::of(Scalar::I64));
  fn.add_block_arg(fn.body(), Type::of(Scalar::I64));
  Builder b(fn);
  b.set_insertion_end(fn.body());
  b.create1(OpKind::Neg, {a}, Type::of(Scalar::I64));
  b.create(OpKind::Return, {}, {});
  EXPECT_EQ(print(fn),
            "kernel @\"my kernel\"(%\"2x\": i64, %a.b: i64) {\n"
            "  %0 = neg %\"2x\" : i64\n"
            "  return\n"
            "}\n");
  expect_round_trip(fn);
}

TEST(IrPrinter, MalformedFunctionsPrintWithoutCrashing) {
  Function fn;
  fn.name = "broken";
  Builder b(fn);
  b.set_insertion_end(fn.body());
  ValueId c = b.int_constant(1, i32());
  OpId later = fn.create_op(OpKind::Neg, {c}, {i32()});  // never linked
  b.create1(OpKind::Add, {c, fn.op(later).results[0]}, i32());
  fn.block(fn.body()).ops.push_back(OpId{999});
  std::string text = print(fn);
  EXPECT_NE(text.find("%1 = add %0, %?1 : i32"), std::string::npos) << text;
  EXPECT_NE(text.find("<invalid op 999>"), std::string::npos) << text;
  EXPECT_EQ(print_op(fn, OpId{2}), "%1 = add %0, %?1 : i32");
}

// --- round trips ---------------------------------------------------------------------

TEST(IrRoundTrip, VectorAdd) { expect_round_trip(vector_add()); }

TEST(IrRoundTrip, EveryOpKind) {
  Function fn = every_op();
  EXPECT_EQ(static_cast<int>(kinds_used(fn).size()), kNumOpKinds);
  EXPECT_EQ(verify(fn), "");
  expect_round_trip(fn);
  Function parsed = parse(print(fn));
  EXPECT_EQ(verify(parsed), "");
  // Files are interned in order of first use.
  EXPECT_EQ(parsed.files, (std::vector<std::string>{"k.py", "lib/helpers.py"}));
}

TEST(IrRoundTrip, FloatAttributesAreExact) {
  std::mt19937_64 rng(1234);
  Function fn;
  fn.name = "floats";
  Builder b(fn);
  b.set_insertion_end(fn.body());
  std::vector<double> values = {0.1, 1.0 / 3, 123456789.125, 1e-310, 1.7976931348623157e308, -2.5e-8};
  for (int i = 0; i < 500; ++i) {
    double d = std::bit_cast<double>(rng());
    if (!std::isnan(d)) values.push_back(d);
  }
  for (double d : values) b.float_constant(d, Type::of(Scalar::F64));
  b.create(OpKind::Return, {}, {});
  Function parsed = parse(print(fn));
  EXPECT_EQ(structural_diff(fn, parsed), "");
  size_t i = 0;
  parsed.walk([&](OpId o) {
    if (parsed.op(o).kind == OpKind::Constant) {
      EXPECT_EQ(std::bit_cast<uint64_t>(parsed.op(o).float_attr("value")), std::bit_cast<uint64_t>(values[i]));
      ++i;
    }
  });
  EXPECT_EQ(i, values.size());
}

// A host TMA descriptor's parameter: a pointer whose bytes the launch passes by value.
TEST(IrRoundTrip, ParametersPassedByValue) {
  const std::string text =
      "kernel @k(%desc: ptr<u8> div(16) by_value(128), %n: i32) {\n"
      "  return\n"
      "}\n";
  Function fn = parse(text);
  ASSERT_EQ(fn.params.size(), 2u);
  EXPECT_EQ(fn.params[0].by_value_bytes, 128);
  EXPECT_EQ(fn.params[1].by_value_bytes, 0);
  EXPECT_EQ(verify(fn), "");
  EXPECT_EQ(print(fn), text);
  expect_round_trip(fn);
  fn.params[1].by_value_bytes = 8;
  EXPECT_EQ(verify(fn), "param 1 (n) is passed by value as 8 bytes, which only a pointer parameter may be");
  EXPECT_NE(parse_error("kernel @k(%d: ptr<u8> by_value(0)) {\n  return\n}\n").find("at least 1 byte"),
            std::string::npos);
}

TEST(IrRoundTrip, IntAndFloatAttributesStayDistinct) {
  Function fn = parse(
      "kernel @k() {\n"
      "  %0 = constant {value = 2} : f32\n"
      "  %1 = constant {value = 2.0} : f32\n"
      "  %2 = constant {value = 2e0} : f32\n"
      "  return\n"
      "}\n");
  std::vector<OpId> ops = fn.block(fn.body()).ops;
  EXPECT_TRUE(std::holds_alternative<int64_t>(*fn.op(ops[0]).attr("value")));
  EXPECT_TRUE(std::holds_alternative<double>(*fn.op(ops[1]).attr("value")));
  EXPECT_TRUE(std::holds_alternative<double>(*fn.op(ops[2]).attr("value")));
  EXPECT_EQ(verify(fn), "`constant`: the value of a f32 constant must be a float attribute");
}

TEST(IrParser, AcceptsCommentsBlankLinesAndAnyNames) {
  Function fn = parse(
      "// a test kernel\n"
      "\n"
      "kernel @scale(%p: ptr<f16> div(16), %s: f16) {   // header comment\n"
      "  // a whole-line comment\n"
      "\n"
      "  %off = arange {start = 0, end = 64} : tile<64xi32>   // lib/a:b.py:3:4\n"
      "  %ps = splat %p : tile<64xptr<f16>>\n"
      "  %ptrs = addptr %ps, %off : tile<64xptr<f16>>\n"
      "  %v = load %ptrs : tile<64xf16>\n"
      "  %ss = splat %s : tile<64xf16>\n"
      "  %r = mul %v, %ss : tile<64xf16>   // not a location\n"
      "  store %ptrs, %r\r\n"
      "  return\n"
      "}\n");
  EXPECT_EQ(verify(fn), "");
  EXPECT_EQ(fn.params[0].divisibility, 16);
  EXPECT_EQ(fn.files, std::vector<std::string>{"lib/a:b.py"});
  const Op& arange = fn.op(fn.block(fn.body()).ops[0]);
  EXPECT_EQ(arange.loc.file, 0);
  EXPECT_EQ(arange.loc.line, 3);
  EXPECT_EQ(arange.loc.col, 4);
  EXPECT_FALSE(fn.op(fn.block(fn.body()).ops[5]).loc.valid());
  EXPECT_EQ(print(fn, PrintOptions{false}),
            "kernel @scale(%p: ptr<f16> div(16), %s: f16) {\n"
            "  %0 = arange {start = 0, end = 64} : tile<64xi32>\n"
            "  %1 = splat %p : tile<64xptr<f16>>\n"
            "  %2 = addptr %1, %0 : tile<64xptr<f16>>\n"
            "  %3 = load %2 : tile<64xf16>\n"
            "  %4 = splat %s : tile<64xf16>\n"
            "  %5 = mul %3, %4 : tile<64xf16>\n"
            "  store %2, %5\n"
            "  return\n"
            "}\n");
}

TEST(IrParser, ZeroResultRegionOps) {
  // A `for` without loop-carried values has no `:`; its `{` opens the region.
  std::string text =
      "kernel @k(%n: i32) {\n"
      "  %0 = constant {value = 0} : i32\n"
      "  %1 = constant {value = 1} : i32\n"
      "  for %0, %n, %1 {\n"
      "  ^bb(%2: i32):\n"
      "    print %2 {prefix = \"i\"}\n"
      "    yield\n"
      "  }\n"
      "  if %c {\n"
      "    yield\n"
      "  } else {\n"
      "    yield\n"
      "  }\n"
      "  return\n"
      "}\n";
  EXPECT_EQ(parse_error(text), "<ir>:9:6: error[E0114]: use of undefined value %c\n"
                               " 9 |   if %c {\n"
                               "   |      ^~\n");
  std::string fixed = text;
  fixed.replace(fixed.find("  if %c {"), 9, "  %c = cmp %0, %n {pred = \"ge\"} : i1\n  if %c {");
  Function fn = parse(fixed);
  EXPECT_EQ(verify(fn), "");
  EXPECT_EQ(print(fn, PrintOptions{false}),
            "kernel @k(%n: i32) {\n"
            "  %0 = constant {value = 0} : i32\n"
            "  %1 = constant {value = 1} : i32\n"
            "  for %0, %n, %1 {\n"
            "  ^bb(%2: i32):\n"
            "    print %2 {prefix = \"i\"}\n"
            "    yield\n"
            "  }\n"
            "  %3 = cmp %0, %n {pred = \"ge\"} : i1\n"
            "  if %3 {\n"
            "    yield\n"
            "  } else {\n"
            "    yield\n"
            "  }\n"
            "  return\n"
            "}\n");
}

// Every kernel listed in docs/ir.md parses, verifies and prints back as written.
TEST(IrRoundTrip, ExamplesInTheSpec) {
  std::ifstream in(std::string(TEGULA_SOURCE_DIR) + "/docs/ir.md");
  ASSERT_TRUE(in) << "docs/ir.md not found";
  std::vector<std::string> examples;
  std::string line, block;
  bool in_kernel = false;
  while (std::getline(in, line)) {
    if (!in_kernel && line.rfind("kernel @", 0) == 0) in_kernel = true;
    if (in_kernel && line.rfind("```", 0) == 0) {
      examples.push_back(block);
      block.clear();
      in_kernel = false;
    }
    if (in_kernel) block += line + "\n";
  }
  ASSERT_EQ(examples.size(), 2u);
  for (const std::string& text : examples) {
    Function fn = parse(text);
    EXPECT_EQ(verify(fn), "") << text;
    EXPECT_EQ(print(fn), text);
  }
  EXPECT_EQ(examples[0], print(vector_add()));
}

// --- parse errors -----------------------------------------------------------------------

std::string kernel_with(const std::string& line) {
  return "kernel @k(%x: i32) {\n" + line + "\n  return\n}\n";
}

TEST(IrParseErrors, LocatedMessages) {
  EXPECT_EQ(parse_error(kernel_with("  %0 = ad %x, %x : i32")),
            "<ir>:2:8: error[E0114]: unknown op `ad`\n"
            " 2 |   %0 = ad %x, %x : i32\n"
            "   |        ^~\n");
  EXPECT_EQ(parse_error(kernel_with("  %0 = add %x, %7 : i32")),
            "<ir>:2:16: error[E0114]: use of undefined value %7\n"
            " 2 |   %0 = add %x, %7 : i32\n"
            "   |                ^~\n");
  EXPECT_EQ(parse_error(kernel_with("  %0 = add %x, %x : 32")),
            "<ir>:2:21: error[E0114]: expected type, found `32`\n"
            " 2 |   %0 = add %x, %x : 32\n"
            "   |                     ^~\n");
  EXPECT_EQ(parse_error(kernel_with("  %0 = add %x, %x : f33")),
            "<ir>:2:21: error[E0114]: unknown type `f33`\n"
            " 2 |   %0 = add %x, %x : f33\n"
            "   |                     ^~~\n");
  EXPECT_EQ(parse_error(kernel_with("  %x = neg %x : i32")),
            "<ir>:2:3: error[E0114]: redefinition of value %x\n"
            " 2 |   %x = neg %x : i32\n"
            "   |   ^~\n");
}

TEST(IrParseErrors, Messages) {
  auto message = [](const std::string& text) -> std::string {
    try {
      parse(text);
    } catch (const UserError& e) {
      const SourceLoc& loc = e.diagnostic().loc;
      EXPECT_EQ(loc.file, 0);
      return std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": " + e.diagnostic().message;
    }
    return "no error";
  };
  EXPECT_EQ(message(""), "1:1: expected `kernel`, found end of input");
  EXPECT_EQ(message("func @k() {\n}\n"), "1:1: expected `kernel`, found `func`");
  EXPECT_EQ(message("kernel @k( {\n}\n"), "1:12: expected value name, found `{`");
  EXPECT_EQ(message("kernel @k(%a: i32 div(0)) {\n}\n"), "1:23: divisibility must be at least 1");
  EXPECT_EQ(message("kernel @k() {\n  return\n"), "3:1: expected `}`, found end of input");
  EXPECT_EQ(message("kernel @k() {\n  return\n}\n}\n"), "4:1: unexpected text after the kernel");
  EXPECT_EQ(message(kernel_with("  %0 = add %x %x : i32")), "2:15: expected end of line, found `%x`");
  EXPECT_EQ(message(kernel_with("  %0 = add %x, %x : i32 junk")), "2:25: expected end of line, found `junk`");
  EXPECT_EQ(message(kernel_with("  store %x")), "no error");  // well formed text; the verifier rejects it
  EXPECT_EQ(message(kernel_with("  %0 = neg %x")), "2:3: `neg` has 1 result name(s) but 0 result type(s)");
  EXPECT_EQ(message(kernel_with("  %0, %1 = split %x : i32")), "2:3: `split` has 2 result name(s) but 1 result type(s)");
  EXPECT_EQ(message(kernel_with("  %0 = constant {value = } : i32")), "2:26: expected attribute value, found `}`");
  EXPECT_EQ(message(kernel_with("  %0 = constant {value = 1.5.2} : f32")), "2:26: bad float `1.5.2`");
  EXPECT_EQ(message(kernel_with("  %0 = constant {value = 99999999999999999999} : i64")), "2:26: integer out of range");
  EXPECT_EQ(message(kernel_with("  %0 = constant {value = 1, value = 2} : i32")), "2:29: duplicate attribute `value`");
  EXPECT_EQ(message(kernel_with("  print {prefix = \"abc}")), "2:19: unterminated string");
  EXPECT_EQ(message(kernel_with("  print {prefix = \"a\\qb\"}")), "2:21: unknown escape in string");
  EXPECT_EQ(message(kernel_with("  %0 = trans %x {perm = [1, x]} : i32")), "2:29: expected integer, found `x`");
  EXPECT_EQ(message(kernel_with("  %0 = splat %x : tile<16xi32")), "2:30: expected `>` in type, found end of line");
  EXPECT_EQ(message(kernel_with("  %0 = splat %x : tile<x16xi32>")), "2:24: expected tile dimension, found `x16xi32`");
  EXPECT_EQ(message(kernel_with("  %0 = splat %x : tile<16xptr<tile>>")), "2:31: unknown type `tile`");
  EXPECT_EQ(message(kernel_with("  %0 = neg % : i32")), "2:12: expected value name after `%`");
  EXPECT_EQ(message(kernel_with("  %0 = if %x : i32 {\n    yield %x\n  } {\n    yield %x\n  }")),
            "4:5: expected `else`, found `{`");
  EXPECT_EQ(message(kernel_with("  %0 = if %x : i32 {\n    yield %x\n  } else yield")),
            "4:10: expected `{` opening a region, found `yield`");
}

TEST(IrParseErrors, ResultsAreNotVisibleInsideTheirOwnRegions) {
  EXPECT_EQ(parse_error(kernel_with("  %0 = if %x : i32 {\n    yield %0\n  } else {\n    yield %x\n  }")),
            "<ir>:3:11: error[E0114]: use of undefined value %0\n"
            " 3 |     yield %0\n"
            "   |           ^~\n");
  // Values of a region are out of scope after it.
  EXPECT_EQ(parse_error(kernel_with("  %0 = if %x : i32 {\n    %1 = neg %x : i32\n    yield %1\n  } else {\n"
                                    "    yield %1\n  }")),
            "<ir>:6:11: error[E0114]: use of undefined value %1\n"
            " 6 |     yield %1\n"
            "   |           ^~\n");
}

TEST(IrParseErrors, DeepNestingIsAnErrorNotACrash) {
  std::string text = "kernel @k(%c: i1) {\n";
  for (int i = 0; i < 300; ++i) text += "if %c {\n";
  EXPECT_NE(parse_error(text).find("regions nested too deeply"), std::string::npos);
}

// Random edits of valid text either parse or throw UserError; nothing else.
TEST(IrParseErrors, MutatedTextNeverCrashes) {
  std::string text = print(every_op());
  std::mt19937 rng(42);
  const std::string alphabet = "%@{}()[]<>:,=\"\\^/ \n0123456789xaeiptfd.-";
  int parsed = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string mutated = text;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0: mutated.erase(at, 1 + rng() % 4); break;
        case 1: mutated.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: mutated[at] = alphabet[rng() % alphabet.size()]; break;
      }
    }
    try {
      Function fn = parse(mutated);
      ++parsed;
      verify(fn);  // must not throw either
      print(fn);
    } catch (const UserError&) {
    }
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace tegula::ir
