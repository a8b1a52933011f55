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
  Diagnostic d{at(f, 12, 9, 16), "undefined name 'offs'", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "add.py:12:9: error: undefined name 'offs'\n"
            " 12 |     x = tl.load(x_ptr + offs, mask=m)\n"
            "    |         ^~~~~~~\n");
}

TEST(Diagnostic, EmptySpanGetsASingleCaret) {
  SourceManager sources;
  int32_t f = sources.add("k.py", "y = x +\n", 1);
  Diagnostic d{at(f, 1, 8, 8), "expected an expression", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "k.py:1:8: error: expected an expression\n"
            " 1 | y = x +\n"
            "   |        ^\n");
}

TEST(Diagnostic, GutterWidensWithTheLineNumber) {
  SourceManager sources;
  int32_t f = sources.add("wide.py", "a\nb = 1\n", 99);
  Diagnostic d{at(f, 100, 1, 2), "bad", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "wide.py:100:1: error: bad\n"
            " 100 | b = 1\n"
            "     | ^\n");
}

TEST(Diagnostic, TabsInTheLineAreKeptInTheCaretPadding) {
  SourceManager sources;
  int32_t f = sources.add("tabs.py", "\tif\tx:\n", 5);
  Diagnostic d{at(f, 5, 5, 6), "bad condition", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources),
            "tabs.py:5:5: error: bad condition\n"
            " 5 | \tif\tx:\n"
            "   | \t  \t^\n");
}

TEST(Diagnostic, HintComesLast) {
  SourceManager sources;
  int32_t f = sources.add("k.py", "z = tl.dot(a, b)\n", 3);
  Diagnostic d{at(f, 3, 5, 17), "tl.dot needs 2-D tiles", "reshape a to (M, K)", ErrorKind::Type};
  EXPECT_EQ(render(d, &sources),
            "k.py:3:5: error: tl.dot needs 2-D tiles\n"
            " 3 | z = tl.dot(a, b)\n"
            "   |     ^~~~~~~~~~~~\n"
            "hint: reshape a to (M, K)\n");
}

TEST(Diagnostic, WithoutALocationOnlyTheMessageAndHint) {
  SourceManager sources;
  sources.add("k.py", "x = 1\n", 1);
  Diagnostic d{SourceLoc{}, "kernel takes 3 arguments, got 2", "pass n", ErrorKind::Value};
  EXPECT_EQ(render(d, &sources), "error: kernel takes 3 arguments, got 2\nhint: pass n\n");
  EXPECT_EQ(render(d, nullptr), "error: kernel takes 3 arguments, got 2\nhint: pass n\n");
}

TEST(Diagnostic, LineOutsideTheSourceStillNamesThePlace) {
  SourceManager sources;
  int32_t f = sources.add("k.py", "x = 1\n", 10);
  Diagnostic d{at(f, 40, 2, 3), "somewhere else", "", ErrorKind::Compile};
  EXPECT_EQ(render(d, &sources), "k.py:40:2: error: somewhere else\n");
}

TEST(Diagnostic, ErrorAtThrowsALocatedCompileError) {
  try {
    error_at(at(0, 2, 3, 4), "boom", "fix it");
    FAIL() << "error_at returned";
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostic().message, "boom");
    EXPECT_EQ(e.diagnostic().hint, "fix it");
    EXPECT_EQ(e.diagnostic().loc.line, 2);
    EXPECT_EQ(e.diagnostic().kind, ErrorKind::Compile);
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

}  // namespace
}  // namespace tegula
