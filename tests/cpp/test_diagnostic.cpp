#include "support/diagnostic.h"

#include <gtest/gtest.h>

namespace tegula {
namespace {

SourceLoc at(int32_t file, int32_t line, int32_t col, int32_t end_col) {
  return SourceLoc{file, line, col, end_col};
}

TEST(Diagnostic, QuotesTheLineWithACaretUnderTheSpan) {
  SourceManager sources;
  int32_t f = sources.add("add.py", "def add(x_ptr):\n    x = tl.load(x_ptr + offs, mask=m)\n", 11);
  Diagnostic d{at(f, 12, 9, 16), Diag::UndefinedName, "undefined name 'offs'", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "add.py:12:9: error[E0201]: undefined name 'offs'\n"
            " 12 |     x = tl.load(x_ptr + offs, mask=m)\n"
            "    |         ^~~~~~~\n");
}

TEST(Diagnostic, EmptySpanGetsASingleCaret) {
  SourceManager sources;
  int32_t f = sources.add("k.py", "y = x +\n", 1);
  Diagnostic d{at(f, 1, 8, 8), Diag::InvalidSyntax, "expected an expression", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "k.py:1:8: error[E0109]: expected an expression\n"
            " 1 | y = x +\n"
            "   |        ^\n");
}

TEST(Diagnostic, GutterWidensWithTheLineNumber) {
  SourceManager sources;
  int32_t f = sources.add("wide.py", "a\nb = 1\n", 99);
  Diagnostic d{at(f, 100, 1, 2), Diag::InvalidSyntax, "bad", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "wide.py:100:1: error[E0109]: bad\n"
            " 100 | b = 1\n"
            "     | ^\n");
}

TEST(Diagnostic, TabsInTheLineAreKeptInTheCaretPadding) {
  SourceManager sources;
  int32_t f = sources.add("tabs.py", "\tif\tx:\n", 5);
  Diagnostic d{at(f, 5, 5, 6), Diag::ConditionNotScalar, "bad condition", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "tabs.py:5:5: error[E0605]: bad condition\n"
            " 5 | \tif\tx:\n"
            "   | \t  \t^\n");
}

TEST(Diagnostic, TheCallsThatLedToTheErrorFollowItsHintWithTritonsPositions) {
  SourceManager sources;
  int32_t f = sources.add("k.py",
                          "@jit\n"
                          "def helper(x):\n"
                          "    return x + y\n"
                          "\n"
                          "    @jit\n"
                          "    def kernel(p):\n"
                          "        z = helper(p)\n",
                          1);
  Diagnostic d{at(f, 3, 16, 17), Diag::UndefinedName, "name `y` is not defined", "define it", ErrorKind::Compile};
  d.stack = {CallFrame{"helper", at(f, 2, 5, 11), at(f, 7, 13, 22)}, CallFrame{"kernel", at(f, 6, 9, 15), SourceLoc{}}};
  std::string error =
      "k.py:3:16: error[E0201]: name `y` is not defined\n"
      " 3 |     return x + y\n"
      "   |                ^\n"
      "hint: define it\n";
  // Lines count from the def as 1; columns from 0 in the function's source without its indentation.
  EXPECT_EQ(render(d, &sources), error +
                                     "note: in `helper` at 2:15:\n"
                                     "k.py:7:13: note: called from `kernel` at 2:8:\n"
                                     " 7 |         z = helper(p)\n"
                                     "   |             ^~~~~~~~~\n");
  // Seen inside the called function alone (Python chains it as the cause).
  EXPECT_EQ(render(d, &sources, 1), error + "note: in `helper` at 2:15:\n");
  // A location outside the innermost function (a callee's default argument, reported in its caller) gets no
  // position there.
  Diagnostic before = d;
  before.loc = at(f, 2, 12, 13);
  before.stack.erase(before.stack.begin());
  EXPECT_EQ(render(before, &sources),
            "k.py:2:12: error[E0201]: name `y` is not defined\n"
            " 2 | def helper(x):\n"
            "   |            ^\n"
            "hint: define it\n");
  // Without the sources there is nothing to count positions in.
  EXPECT_EQ(render(d, nullptr), "error[E0201]: name `y` is not defined\nhint: define it\n");
}

TEST(Diagnostic, HintComesLast) {
  SourceManager sources;
  int32_t f = sources.add("k.py", "z = tl.dot(a, b)\n", 3);
  Diagnostic d{at(f, 3, 5, 17), Diag::WrongRank, "tl.dot needs 2-D tiles", "reshape a to (M, K)", ErrorKind::Type};
  EXPECT_EQ(render(d, &sources),
            "k.py:3:5: error[E0504]: tl.dot needs 2-D tiles\n"
            " 3 | z = tl.dot(a, b)\n"
            "   |     ^~~~~~~~~~~~\n"
            "hint: reshape a to (M, K)\n");
}

TEST(Diagnostic, WithoutALocationOnlyTheMessageAndHint) {
  SourceManager sources;
  sources.add("k.py", "x = 1\n", 1);
  Diagnostic d{SourceLoc{}, Diag::LaunchArgumentCount, "kernel takes 3 arguments, got 2", "pass n", ErrorKind::Value};
  EXPECT_EQ(render(d, &sources), "error[E0701]: kernel takes 3 arguments, got 2\nhint: pass n\n");
  EXPECT_EQ(render(d, nullptr), "error[E0701]: kernel takes 3 arguments, got 2\nhint: pass n\n");
}

TEST(Diagnostic, LineOutsideTheSourceStillNamesThePlace) {
  SourceManager sources;
  int32_t f = sources.add("k.py", "x = 1\n", 10);
  Diagnostic d{at(f, 40, 2, 3), Diag::UndefinedName, "somewhere else", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources), "k.py:40:2: error[E0201]: somewhere else\n");
}

TEST(Diagnostic, ErrorAtThrowsALocatedCompileError) {
  try {
    error_at(at(0, 2, 3, 4), Diag::NotBoolean, "boom", "fix it");
    FAIL() << "error_at returned";
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostic().message, "boom");
    EXPECT_EQ(e.diagnostic().hint, "fix it");
    EXPECT_EQ(e.diagnostic().loc.line, 2);
    EXPECT_EQ(e.diagnostic().kind, ErrorKind::Compile);
    EXPECT_EQ(e.diagnostic().code, Diag::NotBoolean);
    EXPECT_STREQ(e.what(), "boom");
  }
}

TEST(Diagnostic, AssertThrowsInternalErrorInsteadOfAborting) {
  EXPECT_THROW(TEGULA_ASSERT(1 + 1 == 3, "arithmetic"), InternalError);
  try {
    TEGULA_ASSERT(false, "the detail");
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("the detail"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("internal compiler error"), std::string::npos);
  }
}

TEST(DiagnosticCodes, TableIsOrderedUniqueAndWellFormed) {
  std::span<const DiagInfo> table = all_diagnostics();
  ASSERT_GE(table.size(), 60u);
  for (size_t i = 0; i < table.size(); ++i) {
    const DiagInfo& row = table[i];
    EXPECT_EQ(static_cast<size_t>(row.diag), i);
    ASSERT_EQ(row.code.size(), 5u) << row.code;
    EXPECT_EQ(row.code[0], 'E') << row.code;
    EXPECT_FALSE(row.summary.empty()) << row.code;
    if (i > 0) EXPECT_LT(table[i - 1].code, row.code) << "codes must ascend: " << row.code;
  }
  EXPECT_EQ(info(Diag::WrongArgumentCount).code, "E0401");
  EXPECT_EQ(info(Diag::InternalCompilerError).code, "E0999");
}

TEST(DiagnosticCodes, LookupAcceptsTheUsualSpellings) {
  EXPECT_EQ(find_diagnostic("E0201"), Diag::UndefinedName);
  EXPECT_EQ(find_diagnostic("e0201"), Diag::UndefinedName);
  EXPECT_EQ(find_diagnostic("0201"), Diag::UndefinedName);
  EXPECT_EQ(find_diagnostic("E0000"), std::nullopt);
  EXPECT_EQ(find_diagnostic(""), std::nullopt);
  EXPECT_EQ(find_diagnostic("E02011"), std::nullopt);
}

TEST(InternalErrorLocation, InnermostSourceLocationWins) {
  try {
    at_source(at(0, 3, 1, 4), [] {
      at_source(at(0, 7, 5, 9), [] { TEGULA_ASSERT(false, "inner"); });
    });
    FAIL() << "no throw";
  } catch (const InternalError& e) {
    EXPECT_EQ(e.loc().line, 7);
    EXPECT_EQ(e.loc().col, 5);
  }
}

TEST(InternalErrorLocation, UserErrorsPassThroughUntouched) {
  EXPECT_THROW(at_source(at(0, 1, 1, 2), [] { error_at(SourceLoc{}, Diag::UndefinedName, "x"); }), UserError);
  EXPECT_EQ(at_source(at(0, 1, 1, 2), [] { return 42; }), 42);
}

}  // namespace
}  // namespace tegula
