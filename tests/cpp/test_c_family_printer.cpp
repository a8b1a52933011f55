// The C-family printer shared by the CPU and CUDA backends
// (src/backends/c_family): the one escaping function every outside text
// goes through, and kernels whose file, kernel and parameter names try to
// break out of their comments, printed in both dialects (the CPU one
// compiled and run against a reference).
#include <algorithm>
#include <random>
#include <sstream>

#include "backends/c_family/spelling.h"
#include "backends/c_family/text.h"
#include "backends/cuda/codegen.h"
#include "cpu_test_support.h"

namespace tegula::cpu_test {
namespace {

using backends::c_family::comment_text;
using backends::c_family::Dialect;
using backends::c_family::escape;
using backends::c_family::string_literal;
using backends::c_family::TextIn;

TEST(CFamilyText, OrdinaryTextIsUnchanged) {
  for (const char* text : {"kernel.py", "examples/softmax.py", "x_ptr", "add_kernel", "a b-c.d:3"}) {
    EXPECT_EQ(comment_text(text), text);
    EXPECT_EQ(escape(text, TextIn::StringLiteral, Dialect::Cpu), text);
    EXPECT_EQ(escape(text, TextIn::StringLiteral, Dialect::Cuda), text);
  }
  // UTF-8 file names stay readable in comments.
  EXPECT_EQ(comment_text("r\xc3\xa9sum\xc3\xa9.py"), "r\xc3\xa9sum\xc3\xa9.py");
}

TEST(CFamilyText, StringLiteralsEscapeWhatWouldEndOrChangeThem) {
  EXPECT_EQ(string_literal("say \"hi\"\\\n\ttab", Dialect::Cpu), "\"say \\\"hi\\\"\\\\\\n\\ttab\"");
  // Control characters, bytes past ASCII and '?' (no trigraph) as octal.
  EXPECT_EQ(string_literal(std::string("a\rb\0c?\x7f\xc3", 8), Dialect::Cpu), "\"a\\015b\\000c\\077\\177\\303\"");
  // CUDA's device printf sees the literal: '%' too.
  EXPECT_EQ(string_literal("100%", Dialect::Cpu), "\"100%\"");
  EXPECT_EQ(string_literal("100%", Dialect::Cuda), "\"100\\045\"");
}

TEST(CFamilyText, CommentsCannotEndEarlyOrSpliceTheNextLine) {
  EXPECT_EQ(comment_text("a\nb"), "a\\nb");
  EXPECT_EQ(comment_text("a\rb"), "a\\015b");  // g++ ends a line at a lone carriage return
  EXPECT_EQ(comment_text("dir\\"), "dir\\134");  // a trailing backslash would splice the next line
  EXPECT_EQ(comment_text("say \"hi\"?"), "say \"hi\"?");
  for (char c = 1; c < 0x20; ++c) EXPECT_EQ(comment_text(std::string(1, c)).find(c), std::string::npos) << int(c);
}

TEST(CFamilySpelling, ScalarTypesHaveAColumnPerDialect) {
  using backends::c_family::scalar_type;
  EXPECT_EQ(scalar_type(Scalar::I32, Dialect::Cpu), "int32_t");
  EXPECT_EQ(scalar_type(Scalar::I32, Dialect::Cuda), "int");
  EXPECT_EQ(scalar_type(Scalar::BF16, Dialect::Cpu), "uint16_t");
  EXPECT_EQ(scalar_type(Scalar::BF16, Dialect::Cuda), "tg_bf16");
  EXPECT_EQ(backends::c_family::element_type(Type::ptr(Scalar::I1), Dialect::Cuda), "unsigned char*");
  EXPECT_EQ(backends::c_family::int_literal(INT64_MIN, Scalar::I64), "(-9223372036854775807LL - 1)");
  EXPECT_EQ(backends::c_family::int_literal(-1, Scalar::U16), "65535u");
}

// --- kernels with hostile names ------------------------------------------------------------

constexpr const char* kInjected = "system(\"touch /tmp/tegula-injected\");";
constexpr int64_t kBlock = 64;

// out[i] = x[i] + y[i] for i < n, with a file name, a kernel name and
// parameter names that each try to end their comment and start a statement.
ir::Function hostile_vector_add() {
  std::string breakout = std::string("\n") + kInjected + "\n";
  KernelBuilder k("add" + breakout + "int also_injected;\\");
  k.fn.files = {"kernel.py" + breakout + "//"};
  ValueId x = k.param("x" + breakout, Type::ptr(Scalar::F32), 16);
  ValueId y = k.param("y\\", Type::ptr(Scalar::F32), 16);
  ValueId out = k.param("out\r" + std::string(kInjected), Type::ptr(Scalar::F32), 16);
  ValueId n = k.param("n", Type::of(Scalar::I32));
  k.at(2, 11);
  ValueId pid = k.op(OpKind::ProgramId, {}, Type::of(Scalar::I32), {{"axis", Attr{int64_t{0}}}});
  ValueId offs = k.binary(OpKind::Add, k.splat(k.binary(OpKind::Mul, pid, k.i32(kBlock)), {kBlock}), k.arange(kBlock));
  k.at(4, 12);
  ValueId mask = k.cmp("lt", offs, k.splat(n, {kBlock}));
  k.at(5, 9);
  ValueId sum = k.binary(OpKind::Add, k.load(k.pointers(x, offs), mask), k.load(k.pointers(y, offs), mask));
  k.at(7, 5);
  k.store(k.pointers(out, offs), sum, mask);
  k.ret();
  return std::move(k.fn);
}

// Every line that names the injected text is a comment, and no comment ends
// in a backslash (which would splice the next line into it).
void expect_injection_stays_in_comments(const std::string& source, const std::string& dialect) {
  std::istringstream lines(source);
  int comments_naming_it = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.find('\r'), std::string::npos) << dialect << ": " << line;
    bool comment = line.find("//") != std::string::npos;
    size_t injected = std::min(line.find("system("), line.find("also_injected"));
    if (injected != std::string::npos) {
      // Whatever precedes the comment on this line is the generator's code.
      EXPECT_LT(line.find("//"), injected) << dialect << ": " << line;
      ++comments_naming_it;
    }
    if (comment) EXPECT_NE(line.back(), '\\') << dialect << ": " << line;
  }
  EXPECT_GT(comments_naming_it, 0) << dialect;
  // The file name appears escaped, on the line of the op it locates.
  EXPECT_NE(source.find("kernel.py\\nsystem(\"touch /tmp/tegula-injected\");\\n//:5:9"), std::string::npos) << dialect;
}

TEST(CFamilyPrinter, HostileNamesStayInsideTheirCommentsOnCpu) {
  ir::Function fn = hostile_vector_add();
  CompiledKernel kernel(fn);
  expect_injection_stays_in_comments(kernel.source, "cpu");
  // The unit compiled; it also computes what the kernel says.
  const int n = 1000;
  std::vector<float> x(n), y(n), out(n + 24, -1.0f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100, 100);
  for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
  Args args;
  args.ptr(x.data()).ptr(y.data()).ptr(out.data()).i32(n);
  kernel.run(args.get(), (n + kBlock - 1) / kBlock);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << i;
  for (int i = n; i < n + 24; ++i) ASSERT_EQ(out[i], -1.0f) << i;
}

TEST(CFamilyPrinter, HostileNamesStayInsideTheirCommentsOnCuda) {
  ir::Function fn = hostile_vector_add();
  for (int arch : {90, 80}) {
    backends::cuda::CodegenOptions options;
    options.arch = arch;
    std::string source = backends::cuda::emit_cuda(fn, options).source;
    expect_injection_stays_in_comments(source, "cuda sm_" + std::to_string(arch));
  }
}

}  // namespace
}  // namespace tegula::cpu_test
