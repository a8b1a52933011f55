// The `--signature` of `tegula compile`: each kind of entry, constexpr
// literals, how entries, --const and defaults bind to parameters, and the
// exact error for each mistake.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/signature.h"

namespace tegula::tools {
namespace {

using frontend::ArgSpec;
using frontend::GlobalValue;

KernelParam runtime_param(std::string name) { return KernelParam{std::move(name), false, std::nullopt}; }
KernelParam constexpr_param(std::string name) { return KernelParam{std::move(name), true, std::nullopt}; }

GlobalValue literal(const std::string& text) {
  std::optional<GlobalValue> v = parse_constexpr_literal(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v.value_or(GlobalValue{});
}

std::string entry_error(const std::string& entry, const KernelParam& param) {
  try {
    parse_entry(entry, param);
  } catch (const SignatureError& e) {
    return e.what();
  }
  return "no error";
}

std::string bind_error(const std::string& signature, const std::vector<KernelParam>& params,
                       const std::vector<std::pair<std::string, std::string>>& consts = {}) {
  try {
    bind_signature("k", signature, params, consts);
  } catch (const SignatureError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Signature, PointerEntries) {
  ArgSpec p = parse_entry("*fp32:16", runtime_param("x"));
  EXPECT_EQ(p.kind, ArgSpec::Kind::Pointer);
  EXPECT_EQ(p.dtype, ir::Scalar::F32);
  EXPECT_EQ(p.divisibility, 16);
  ArgSpec q = parse_entry(" * bfloat16 ", runtime_param("x"));
  EXPECT_EQ(q.kind, ArgSpec::Kind::Pointer);
  EXPECT_EQ(q.dtype, ir::Scalar::BF16);
  EXPECT_EQ(q.divisibility, 1);
  EXPECT_EQ(parse_entry("*i1", runtime_param("x")).dtype, ir::Scalar::I1);
  EXPECT_EQ(parse_entry("*u8", runtime_param("x")).dtype, ir::Scalar::U8);
  EXPECT_EQ(parse_entry("*int64", runtime_param("x")).dtype, ir::Scalar::I64);
}

TEST(Signature, HostTmaDescriptorEntry) {
  ArgSpec d = parse_entry("nvTmaDesc", runtime_param("desc"));
  EXPECT_EQ(d.kind, ArgSpec::Kind::Pointer);
  EXPECT_EQ(d.dtype, ir::Scalar::U8);
  EXPECT_EQ(d.by_value_bytes, 128);
  EXPECT_EQ(parse_entry("*u8", runtime_param("x")).by_value_bytes, 0);
}

TEST(Signature, ScalarEntries) {
  ArgSpec n = parse_entry("i32:16", runtime_param("n"));
  EXPECT_EQ(n.kind, ArgSpec::Kind::Int);
  EXPECT_EQ(n.dtype, ir::Scalar::I32);
  EXPECT_EQ(n.divisibility, 16);
  EXPECT_FALSE(n.is_one);
  ArgSpec one = parse_entry("i64:1", runtime_param("n"));
  EXPECT_EQ(one.dtype, ir::Scalar::I64);
  EXPECT_TRUE(one.is_one);
  EXPECT_EQ(one.divisibility, 1);
  EXPECT_EQ(parse_entry("u64", runtime_param("n")).dtype, ir::Scalar::U64);
  EXPECT_EQ(parse_entry("int32", runtime_param("n")).kind, ArgSpec::Kind::Int);
  ArgSpec f = parse_entry("fp32", runtime_param("alpha"));
  EXPECT_EQ(f.kind, ArgSpec::Kind::Float);
  EXPECT_EQ(f.dtype, ir::Scalar::F32);
  ArgSpec b = parse_entry("i1", runtime_param("flag"));
  EXPECT_EQ(b.kind, ArgSpec::Kind::Bool);
  EXPECT_EQ(b.dtype, ir::Scalar::I1);
}

TEST(Signature, ConstexprLiterals) {
  EXPECT_EQ(literal("1024").kind, GlobalValue::Kind::Int);
  EXPECT_EQ(literal("1024").int_value, 1024);
  EXPECT_EQ(literal("-1").int_value, -1);
  EXPECT_EQ(literal("0x10").int_value, 16);
  EXPECT_EQ(literal("1_000").int_value, 1000);
  EXPECT_EQ(literal("-9223372036854775808").int_value, INT64_MIN);
  EXPECT_EQ(literal("0.5").kind, GlobalValue::Kind::Float);
  EXPECT_DOUBLE_EQ(literal("1e-6").float_value, 1e-6);
  EXPECT_DOUBLE_EQ(literal("-.25").float_value, -0.25);
  EXPECT_EQ(literal("True").kind, GlobalValue::Kind::Bool);
  EXPECT_EQ(literal("True").int_value, 1);
  EXPECT_EQ(literal("False").int_value, 0);
  EXPECT_EQ(literal("None").kind, GlobalValue::Kind::None);
  EXPECT_EQ(literal("'a,b'").kind, GlobalValue::Kind::Str);
  EXPECT_EQ(literal("\"rowwise\"").text, "rowwise");
  EXPECT_EQ(literal("fp16").kind, GlobalValue::Kind::DType);
  EXPECT_EQ(literal("fp16").text, "float16");
  EXPECT_EQ(literal("tl.bfloat16").text, "bfloat16");
  EXPECT_EQ(literal("i1").text, "int1");
  EXPECT_EQ(literal("u32").text, "uint32");
  for (const char* bad : {"", "x", "1 2", "9223372036854775808", "f(1)", "1 +", "'open", "a.b.float16"})
    EXPECT_FALSE(parse_constexpr_literal(bad).has_value()) << bad;
}

TEST(Signature, ConstexprEntry) {
  ArgSpec block = parse_entry("1024", constexpr_param("BLOCK"));
  EXPECT_EQ(block.kind, ArgSpec::Kind::Constexpr);
  EXPECT_EQ(block.value.kind, GlobalValue::Kind::Int);
  EXPECT_EQ(block.value.int_value, 1024);
  ArgSpec dtype = parse_entry("bf16", constexpr_param("DTYPE"));
  EXPECT_EQ(dtype.value.kind, GlobalValue::Kind::DType);
  EXPECT_EQ(dtype.value.text, "bfloat16");
}

TEST(SignatureErrors, EachMistakeSaysWhy) {
  EXPECT_EQ(entry_error("*fp33", runtime_param("x")),
            "'fp33' is not a dtype; expected one of fp16, bf16, fp32, fp64, i1, i8, i16, i32, i64, u8, u16, u32, u64");
  EXPECT_EQ(entry_error("i33", runtime_param("n")),
            "'i33' is not a dtype; expected one of fp16, bf16, fp32, fp64, i1, i8, i16, i32, i64, u8, u16, u32, u64, "
            "or *DTYPE for a pointer");
  EXPECT_EQ(entry_error("*fp32:8", runtime_param("x")), "a pointer entry takes only ':16' (16-byte aligned), not ':8'");
  EXPECT_EQ(entry_error("i32:4", runtime_param("n")),
            "an integer entry takes ':16' (divisible by 16) or ':1' (equal to 1), not ':4'");
  EXPECT_EQ(entry_error("i32:", runtime_param("n")), "'i32:' ends with ':'; write ':16' or leave the suffix out");
  EXPECT_EQ(entry_error("fp32:16", runtime_param("a")), "'fp32' takes no ':' suffix");
  EXPECT_EQ(entry_error("fp16", runtime_param("a")),
            "float scalar arguments are passed as fp32, not fp16 (pointers may point to any dtype: *fp16)");
  EXPECT_EQ(entry_error("i8", runtime_param("a")),
            "integer scalar arguments are passed as i32, i64 or u64, not i8 (pointers may point to any dtype: *i8)");
  EXPECT_EQ(entry_error("1024", runtime_param("n")),
            "'1024' is a value, but parameter 'n' is a runtime argument, so its entry must be a type such as i32, "
            "fp32 or *fp16:16 (annotate it `tl.constexpr` to compile for one value)");
  EXPECT_EQ(entry_error("*fp32", constexpr_param("BLOCK")),
            "'*fp32' is not a value; parameter 'BLOCK' is a tl.constexpr, so its entry must be a value such as 1024, "
            "-1, 0.5, True, None, fp16 or 'text'");
}

TEST(Signature, BindsEntriesConstsAndDefaults) {
  KernelParam scale = constexpr_param("SCALE");
  scale.default_value = literal("0.5");
  KernelParam count = runtime_param("count");
  count.default_value = literal("32");
  std::vector<KernelParam> params = {runtime_param("x"), runtime_param("n"), constexpr_param("BLOCK"), scale, count};
  std::vector<ArgSpec> specs = bind_signature("k", "*fp16:16, i32", params, {{"BLOCK", "256"}});
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].kind, ArgSpec::Kind::Pointer);
  EXPECT_EQ(specs[1].kind, ArgSpec::Kind::Int);
  EXPECT_EQ(specs[2].kind, ArgSpec::Kind::Constexpr);
  EXPECT_EQ(specs[2].value.int_value, 256);
  EXPECT_EQ(specs[3].kind, ArgSpec::Kind::Constexpr);
  EXPECT_DOUBLE_EQ(specs[3].value.float_value, 0.5);
  // A runtime parameter's literal default binds like a launch with that value.
  EXPECT_EQ(specs[4].kind, ArgSpec::Kind::Int);
  EXPECT_EQ(specs[4].dtype, ir::Scalar::I32);
  EXPECT_EQ(specs[4].divisibility, 16);
  // A string constexpr may hold a comma.
  std::vector<ArgSpec> quoted = bind_signature("k", "'a,b'", {constexpr_param("MODE")}, {});
  ASSERT_EQ(quoted.size(), 1u);
  EXPECT_EQ(quoted[0].value.text, "a,b");
  EXPECT_TRUE(bind_signature("k", "  ", {}, {}).empty());
}

TEST(SignatureErrors, Binding) {
  std::vector<KernelParam> params = {runtime_param("x"), runtime_param("n"), constexpr_param("BLOCK")};
  EXPECT_EQ(bind_error("*fp32, i32, 16, 1", params),
            "the signature has 4 entries but kernel 'k' has 3 parameters (x, n, BLOCK)");
  EXPECT_EQ(bind_error("*fp32, i33, 16", params),
            "signature entry 2 ('i33') for parameter 'n': 'i33' is not a dtype; expected one of fp16, bf16, fp32, "
            "fp64, i1, i8, i16, i32, i64, u8, u16, u32, u64, or *DTYPE for a pointer");
  EXPECT_EQ(bind_error("*fp32, , 16", params), "signature entry 2 ('') for parameter 'n': the entry is empty");
  EXPECT_EQ(bind_error("*fp32", params), "no signature entry for parameter 'n' (entry 2); give its type, e.g. i32 or *fp32");
  EXPECT_EQ(bind_error("*fp32, i32", params),
            "no signature entry for parameter 'BLOCK' (entry 3); give its value in the signature or with --const "
            "BLOCK=VALUE");
  EXPECT_EQ(bind_error("*fp32, i32, 16", params, {{"BLOCK", "32"}}),
            "signature entry 3 ('16') for parameter 'BLOCK': the parameter is also given by --const BLOCK");
  EXPECT_EQ(bind_error("*fp32, i32", params, {{"BLOCKS", "32"}}), "--const BLOCKS: kernel 'k' has no parameter 'BLOCKS'");
  EXPECT_EQ(bind_error("*fp32", params, {{"n", "32"}}),
            "--const n: parameter 'n' is not a tl.constexpr; give its type in the signature instead");
  EXPECT_EQ(bind_error("*fp32, i32", params, {{"BLOCK", "big"}}),
            "--const BLOCK=big: 'big' is not a value; parameter 'BLOCK' is a tl.constexpr, so its entry must be a "
            "value such as 1024, -1, 0.5, True, None, fp16 or 'text'");
  EXPECT_EQ(bind_error("*fp32, i32", params, {{"BLOCK", "1"}, {"BLOCK", "2"}}), "--const BLOCK is given twice");
}

}  // namespace
}  // namespace tegula::tools
