// The parser: golden AST dumps of representative kernels, exact spans, the
// module reader of the CLI, and one test per syntax error (rendered text with
// line, column and caret).
#include <gtest/gtest.h>

#include <string>

#include "frontend/parser.h"
#include "support/diagnostic.h"

namespace tegula::frontend {
namespace {

std::string dump_of(const std::string& source, int32_t first_line = 1) {
  SourceManager sources;
  int32_t file = sources.add("kernel.py", source, first_line);
  try {
    return ast::dump(parse_function(sources, file));
  } catch (const UserError& e) {
    return render(e.diagnostic(), &sources);
  }
}

ast::FunctionDef parse(const std::string& source, int32_t first_line = 1) {
  SourceManager sources;
  return parse_function(sources, sources.add("kernel.py", source, first_line));
}

// The kernel of DESIGN.md section 1.
TEST(ParserGolden, VectorAdd) {
  const char* source = R"py(@tegula.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
)py";
  EXPECT_EQ(dump_of(source, 1), R"dump(FunctionDef add @2:5
  decorator: Attribute .jit @1:2
    Name tegula @1:2
  Param x_ptr @2:9
  Param y_ptr @2:16
  Param out_ptr @2:23
  Param n @2:32
  Param BLOCK @2:35
    annotation: Attribute .constexpr @2:42
      Name tl @2:42
  body:
    Assign @3:5
      target: Name pid @3:5
      value: Call @3:11
        func: Attribute .program_id @3:11
          Name tl @3:11
        arg: Int 0 @3:25
    Assign @4:5
      target: Name offs @4:5
      value: Binary + @4:12
        Binary * @4:12
          Name pid @4:12
          Name BLOCK @4:18
        Call @4:26
          func: Attribute .arange @4:26
            Name tl @4:26
          arg: Int 0 @4:36
          arg: Name BLOCK @4:39
    Assign @5:5
      target: Name mask @5:5
      value: Compare < @5:12
        Name offs @5:12
        Name n @5:19
    Assign @6:5
      target: Name x @6:5
      value: Call @6:9
        func: Attribute .load @6:9
          Name tl @6:9
        arg: Binary + @6:17
          Name x_ptr @6:17
          Name offs @6:25
        Keyword mask @6:31
          Name mask @6:36
    Assign @7:5
      target: Name y @7:5
      value: Call @7:9
        func: Attribute .load @7:9
          Name tl @7:9
        arg: Binary + @7:17
          Name y_ptr @7:17
          Name offs @7:25
        Keyword mask @7:31
          Name mask @7:36
    Expr @8:5
      Call @8:5
        func: Attribute .store @8:5
          Name tl @8:5
        arg: Binary + @8:14
          Name out_ptr @8:14
          Name offs @8:24
        arg: Binary + @8:30
          Name x @8:30
          Name y @8:34
        Keyword mask @8:37
          Name mask @8:42
)dump");
}

// A decorator call with keywords, constexpr defaults, a docstring, `[:, None]` broadcasting.
TEST(ParserGolden, TwoDimensionalTileWithNoneIndexing) {
  const char* source = R"py(@triton.jit(do_not_specialize=["M"])
def copy2d(src, dst, M, N, stride_m, BLOCK_M: tl.constexpr = 32, BLOCK_N: tl.constexpr = 64):
    """Copies one tile.

    Rows are masked.
    """
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    ptrs = src + rm[:, None] * stride_m + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(ptrs, mask=mask, other=0.0)
    tl.store(dst + rm[:, None] * stride_m + rn[None, :], tile, mask=mask)
)py";
  EXPECT_EQ(dump_of(source, 1), R"dump(FunctionDef copy2d @2:5
  decorator: Call @1:2
    func: Attribute .jit @1:2
      Name triton @1:2
    Keyword do_not_specialize @1:13
      List @1:31
        Str "M" @1:32
  Param src @2:12
  Param dst @2:17
  Param M @2:22
  Param N @2:25
  Param stride_m @2:28
  Param BLOCK_M @2:38
    annotation: Attribute .constexpr @2:47
      Name tl @2:47
    default: Int 32 @2:62
  Param BLOCK_N @2:66
    annotation: Attribute .constexpr @2:75
      Name tl @2:75
    default: Int 64 @2:90
  docstring: "Copies one tile.\n\n    Rows are masked.\n    "
  body:
    Assign @7:5
      target: Name rm @7:5
      value: Binary + @7:10
        Binary * @7:10
          Call @7:10
            func: Attribute .program_id @7:10
              Name tl @7:10
            arg: Int 0 @7:24
          Name BLOCK_M @7:29
        Call @7:39
          func: Attribute .arange @7:39
            Name tl @7:39
          arg: Int 0 @7:49
          arg: Name BLOCK_M @7:52
    Assign @8:5
      target: Name rn @8:5
      value: Call @8:10
        func: Attribute .arange @8:10
          Name tl @8:10
        arg: Int 0 @8:20
        arg: Name BLOCK_N @8:23
    Assign @9:5
      target: Name ptrs @9:5
      value: Binary + @9:12
        Binary + @9:12
          Name src @9:12
          Binary * @9:18
            Subscript @9:18
              Name rm @9:18
              Slice @9:21
              None @9:24
            Name stride_m @9:32
        Subscript @9:43
          Name rn @9:43
          None @9:46
          Slice @9:52
    Assign @10:5
      target: Name mask @10:5
      value: Binary & @10:12
        Compare < @10:13
          Subscript @10:13
            Name rm @10:13
            Slice @10:16
            None @10:19
          Name M @10:27
        Compare < @10:33
          Subscript @10:33
            Name rn @10:33
            None @10:36
            Slice @10:42
          Name N @10:47
    Assign @11:5
      target: Name tile @11:5
      value: Call @11:12
        func: Attribute .load @11:12
          Name tl @11:12
        arg: Name ptrs @11:20
        Keyword mask @11:26
          Name mask @11:31
        Keyword other @11:37
          Float 0.0 @11:43
    Expr @12:5
      Call @12:5
        func: Attribute .store @12:5
          Name tl @12:5
        arg: Binary + @12:14
          Binary + @12:14
            Name dst @12:14
            Binary * @12:20
              Subscript @12:20
                Name rm @12:20
                Slice @12:23
                None @12:26
              Name stride_m @12:34
          Subscript @12:45
            Name rn @12:45
            None @12:48
            Slice @12:54
        arg: Name tile @12:58
        Keyword mask @12:64
          Name mask @12:69
)dump");
}

// range/static_range loops, elif chains, while, comments, tuple unpacking, a ternary.
TEST(ParserGolden, LoopsNestedIfsAndTupleUnpacking) {
  const char* source = R"py(def reduce_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)  # running sum
    for start in range(0, n, BLOCK):
        # load one chunk
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n, other=0.)
    for i in tl.static_range(4):
        if i % 2 == 0:
            if i == 0:
                acc = acc * 2
            elif i > 2:
                continue
            else:
                acc = -acc
        else:
            pass
    i = 0
    while i < n and not done:
        i += 1
    total, count = tl.sum(acc, axis=0), n
    lo, hi = (0, n)
    tl.store(out_ptr, total / count if count != 0 else 0.0)
)py";
  EXPECT_EQ(dump_of(source, 1), R"dump(FunctionDef reduce_rows @1:5
  Param x_ptr @1:17
  Param out_ptr @1:24
  Param n @1:33
  Param BLOCK @1:36
    annotation: Attribute .constexpr @1:43
      Name tl @1:43
  body:
    Assign @2:5
      target: Name acc @2:5
      value: Call @2:11
        func: Attribute .zeros @2:11
          Name tl @2:11
        arg: Tuple @2:20
          Name BLOCK @2:21
        Keyword dtype @2:30
          Attribute .float32 @2:36
            Name tl @2:36
    For @3:5
      target: Name start @3:9
      iter: Call @3:18
        func: Name range @3:18
        arg: Int 0 @3:24
        arg: Name n @3:27
        arg: Name BLOCK @3:30
      body:
        Assign @5:9
          target: Name cols @5:9
          value: Binary + @5:16
            Name start @5:16
            Call @5:24
              func: Attribute .arange @5:24
                Name tl @5:24
              arg: Int 0 @5:34
              arg: Name BLOCK @5:37
        AugAssign += @6:9
          target: Name acc @6:9
          value: Call @6:16
            func: Attribute .load @6:16
              Name tl @6:16
            arg: Binary + @6:24
              Name x_ptr @6:24
              Name cols @6:32
            Keyword mask @6:38
              Compare < @6:43
                Name cols @6:43
                Name n @6:50
            Keyword other @6:53
              Float 0.0 @6:59
    For @7:5
      target: Name i @7:9
      iter: Call @7:14
        func: Attribute .static_range @7:14
          Name tl @7:14
        arg: Int 4 @7:30
      body:
        If @8:9
          test: Compare == @8:12
            Binary % @8:12
              Name i @8:12
              Int 2 @8:16
            Int 0 @8:21
          body:
            If @9:13
              test: Compare == @9:16
                Name i @9:16
                Int 0 @9:21
              body:
                Assign @10:17
                  target: Name acc @10:17
                  value: Binary * @10:23
                    Name acc @10:23
                    Int 2 @10:29
              orelse:
                If @11:13
                  test: Compare > @11:18
                    Name i @11:18
                    Int 2 @11:22
                  body:
                    Continue @12:17
                  orelse:
                    Assign @14:17
                      target: Name acc @14:17
                      value: Unary - @14:23
                        Name acc @14:24
          orelse:
            Pass @16:13
    Assign @17:5
      target: Name i @17:5
      value: Int 0 @17:9
    While @18:5
      test: BoolOp and @18:11
        Compare < @18:11
          Name i @18:11
          Name n @18:15
        Unary not @18:21
          Name done @18:25
      body:
        AugAssign += @19:9
          target: Name i @19:9
          value: Int 1 @19:14
    Assign @20:5
      target: Tuple @20:5
        Name total @20:5
        Name count @20:12
      value: Tuple @20:20
        Call @20:20
          func: Attribute .sum @20:20
            Name tl @20:20
          arg: Name acc @20:27
          Keyword axis @20:32
            Int 0 @20:37
        Name n @20:41
    Assign @21:5
      target: Tuple @21:5
        Name lo @21:5
        Name hi @21:9
      value: Tuple @21:14
        Int 0 @21:15
        Name n @21:18
    Expr @22:5
      Call @22:5
        func: Attribute .store @22:5
          Name tl @22:5
        arg: Name out_ptr @22:14
        arg: IfExp @22:23
          test: Compare != @22:40
            Name count @22:40
            Int 0 @22:49
          then: Binary / @22:23
            Name total @22:23
            Name count @22:31
          else: Float 0.0 @22:56
)dump");
}

// A method as inspect.getsource returns it (line 20 of its file): locations are the real ones.
TEST(ParserGolden, IndentedMethodKeepsRealLinesAndColumns) {
  const char* source = R"py(    @staticmethod
    @tegula.jit
    def scale(x_ptr, n,
              factor: float = 2.0):
        x = tl.load(x_ptr +
                    tl.arange(0, 16))
        tl.store(x_ptr, x * factor)
)py";
  EXPECT_EQ(dump_of(source, 20), R"dump(FunctionDef scale @22:9
  decorator: Name staticmethod @20:6
  decorator: Attribute .jit @21:6
    Name tegula @21:6
  Param x_ptr @22:15
  Param n @22:22
  Param factor @23:15
    annotation: Name float @23:23
    default: Float 2.0 @23:31
  body:
    Assign @24:9
      target: Name x @24:9
      value: Call @24:13
        func: Attribute .load @24:13
          Name tl @24:13
        arg: Binary + @24:21
          Name x_ptr @24:21
          Call @25:21
            func: Attribute .arange @25:21
              Name tl @25:21
            arg: Int 0 @25:31
            arg: Int 16 @25:34
    Expr @26:9
      Call @26:9
        func: Attribute .store @26:9
          Name tl @26:9
        arg: Name x_ptr @26:18
        arg: Binary * @26:25
          Name x @26:25
          Name factor @26:29
)dump");
}

// Python's precedence and associativity, every atom and target form.
TEST(ParserGolden, ExpressionPrecedenceAndAtoms) {
  const char* source = R"py(def exprs(a, b):
    x = -a ** 2 + ~b - +a
    y = 2 ** -a ** b
    z = a if b else a + 1 if a else b
    w = a < b <= 3 != 4 is not None
    v = a not in b or not a and b in a
    u = a | b ^ a & b << 1 >> 2
    t = a // b % 3 @ b / 2 * a
    s = f(a, b=1,)[1:, ::2, None, a:b:2][0]
    r = (), (a,), [a, b], [], (a)
    q = "a" 'b' """c"""
    p = True, False, None, 0x10, 1.5e3, 0.5
    a.b.c[0] = d = e
    (m, [k, j]) = 1, 2
    x: tl.tensor = 3
    assert x, "message"
    return
)py";
  EXPECT_EQ(dump_of(source, 1), R"dump(FunctionDef exprs @1:5
  Param a @1:11
  Param b @1:14
  body:
    Assign @2:5
      target: Name x @2:5
      value: Binary - @2:9
        Binary + @2:9
          Unary - @2:9
            Binary ** @2:10
              Name a @2:10
              Int 2 @2:15
          Unary ~ @2:19
            Name b @2:20
        Unary + @2:24
          Name a @2:25
    Assign @3:5
      target: Name y @3:5
      value: Binary ** @3:9
        Int 2 @3:9
        Unary - @3:14
          Binary ** @3:15
            Name a @3:15
            Name b @3:20
    Assign @4:5
      target: Name z @4:5
      value: IfExp @4:9
        test: Name b @4:14
        then: Name a @4:9
        else: IfExp @4:21
          test: Name a @4:30
          then: Binary + @4:21
            Name a @4:21
            Int 1 @4:25
          else: Name b @4:37
    Assign @5:5
      target: Name w @5:5
      value: Compare < <= != is not @5:9
        Name a @5:9
        Name b @5:13
        Int 3 @5:18
        Int 4 @5:23
        None @5:32
    Assign @6:5
      target: Name v @6:5
      value: BoolOp or @6:9
        Compare not in @6:9
          Name a @6:9
          Name b @6:18
        BoolOp and @6:23
          Unary not @6:23
            Name a @6:27
          Compare in @6:33
            Name b @6:33
            Name a @6:38
    Assign @7:5
      target: Name u @7:5
      value: Binary | @7:9
        Name a @7:9
        Binary ^ @7:13
          Name b @7:13
          Binary & @7:17
            Name a @7:17
            Binary >> @7:21
              Binary << @7:21
                Name b @7:21
                Int 1 @7:26
              Int 2 @7:31
    Assign @8:5
      target: Name t @8:5
      value: Binary * @8:9
        Binary / @8:9
          Binary @ @8:9
            Binary % @8:9
              Binary // @8:9
                Name a @8:9
                Name b @8:14
              Int 3 @8:18
            Name b @8:22
          Int 2 @8:26
        Name a @8:30
    Assign @9:5
      target: Name s @9:5
      value: Subscript @9:9
        Subscript @9:9
          Call @9:9
            func: Name f @9:9
            arg: Name a @9:11
            Keyword b @9:14
              Int 1 @9:16
          Slice @9:20
            lower: Int 1 @9:20
          Slice @9:24
            step: Int 2 @9:26
          None @9:29
          Slice @9:35
            lower: Name a @9:35
            upper: Name b @9:37
            step: Int 2 @9:39
        Int 0 @9:42
    Assign @10:5
      target: Name r @10:5
      value: Tuple @10:9
        Tuple @10:9
        Tuple @10:13
          Name a @10:14
        List @10:19
          Name a @10:20
          Name b @10:23
        List @10:27
        Name a @10:32
    Assign @11:5
      target: Name q @11:5
      value: Str "abc" @11:9
    Assign @12:5
      target: Name p @12:5
      value: Tuple @12:9
        Bool True @12:9
        Bool False @12:15
        None @12:22
        Int 16 @12:28
        Float 1500.0 @12:34
        Float 0.5 @12:41
    Assign @13:5
      target: Subscript @13:5
        Attribute .c @13:5
          Attribute .b @13:5
            Name a @13:5
        Int 0 @13:11
      target: Name d @13:16
      value: Name e @13:20
    Assign @14:5
      target: Tuple @14:5
        Name m @14:6
        List @14:9
          Name k @14:10
          Name j @14:13
      value: Tuple @14:19
        Int 1 @14:19
        Int 2 @14:22
    AnnAssign @15:5
      target: Name x @15:5
      annotation: Attribute .tensor @15:8
        Name tl @15:8
      value: Int 3 @15:20
    Assert @16:5
      test: Name x @16:12
      msg: Str "message" @16:15
    Return @17:5
)dump");
}

TEST(ParserGolden, FStringFieldsConversionsAndSpecs) {
  // Adjacent literals join the f-string; `{B=}` writes its text and takes repr; a spec holds fields.
  const char* source = R"py(def k(x, B: tl.constexpr):
    tl.static_print(f"{B=} {x.dtype!r:>{B}} {{lit}}" "tail", rf"\d{B + 1:#x}")
)py";
  EXPECT_EQ(dump_of(source, 1), R"dump(FunctionDef k @1:5
  Param x @1:7
  Param B @1:10
    annotation: Attribute .constexpr @1:13
      Name tl @1:13
  body:
    Expr @2:5
      Call @2:5
        func: Attribute .static_print @2:5
          Name tl @2:5
        arg: JoinedStr @2:21
          Str "B=" @2:21
          FormattedValue !r @2:23
            value: Name B @2:24
          Str " " @2:21
          FormattedValue !r @2:28
            value: Attribute .dtype @2:29
              Name x @2:29
            spec: JoinedStr @2:28
              Str ">" @2:28
              FormattedValue @2:40
                value: Name B @2:41
          Str " {lit}tail" @2:21
        arg: JoinedStr @2:62
          Str "\\d" @2:62
          FormattedValue @2:67
            value: Binary + @2:68
              Name B @2:68
              Int 1 @2:72
            spec: JoinedStr @2:67
              Str "#x" @2:67
)dump");
}

TEST(Parser, SpansCoverTheWholeConstruct) {
  ast::FunctionDef fn = parse("def k(x, BLOCK: tl.constexpr = 4):\n    y = tl.load(x + 1, mask=m)\n    return y\n");
  EXPECT_EQ(fn.loc.line, 1);
  EXPECT_EQ(fn.loc.col, 5);
  EXPECT_EQ(fn.loc.end_col, 6);
  EXPECT_EQ(fn.params[1].loc.col, 10);
  EXPECT_EQ(fn.params[1].loc.end_col, 33);  // `BLOCK: tl.constexpr = 4`
  const ast::Stmt& assign = *fn.body[0];
  EXPECT_EQ(assign.loc.col, 5);
  EXPECT_EQ(assign.loc.end_col, 31);
  const ast::Expr& call = *assign.value;
  EXPECT_EQ(call.loc.col, 9);
  EXPECT_EQ(call.loc.end_col, 31);
  EXPECT_EQ(call.children[0]->loc.end_col, 16);  // `tl.load`
  EXPECT_EQ(call.children[1]->loc.col, 17);      // `x + 1`
  EXPECT_EQ(call.children[1]->loc.end_col, 22);
  EXPECT_EQ(call.keywords[0].loc.col, 24);       // `mask=m`
  EXPECT_EQ(call.keywords[0].loc.end_col, 30);
  // A construct over several lines ends at its last token on the first line.
  ast::FunctionDef multi = parse("def k(x):\n    y = f(a,\n          b)\n");
  EXPECT_EQ(multi.body[0]->value->loc.col, 9);
  EXPECT_EQ(multi.body[0]->value->loc.end_col, 13);
  EXPECT_EQ(multi.file, 0);
}

TEST(Parser, LiteralValues) {
  ast::FunctionDef fn = parse(
      "def k():\n"
      "    a = 18446744073709551615\n"
      "    b = 1_000_000\n"
      "    c = 'x\\ty' r'\\n'\n"
      "    d = 1e-6\n");
  EXPECT_TRUE(fn.body[0]->value->is_unsigned);
  EXPECT_EQ(static_cast<uint64_t>(fn.body[0]->value->int_value), 18446744073709551615ull);
  EXPECT_EQ(fn.body[1]->value->int_value, 1000000);
  EXPECT_EQ(fn.body[2]->value->name, "x\ty\\n");
  EXPECT_DOUBLE_EQ(fn.body[3]->value->float_value, 1e-6);
}

TEST(Parser, SingleLineBodiesAndSemicolons) {
  EXPECT_EQ(dump_of("def k(x): x = 1; return x;\n"),
            "FunctionDef k @1:5\n"
            "  Param x @1:7\n"
            "  body:\n"
            "    Assign @1:11\n"
            "      target: Name x @1:11\n"
            "      value: Int 1 @1:15\n"
            "    Return @1:18\n"
            "      value: Name x @1:25\n");
  EXPECT_EQ(dump_of("def k(x):\n    \"\"\"Only a docstring.\"\"\"\n"),
            "FunctionDef k @1:5\n"
            "  Param x @1:7\n"
            "  docstring: \"Only a docstring.\"\n"
            "  body: (empty)\n");
}

TEST(Parser, LoopElseIsParsedForTheBuilderToReject) {
  EXPECT_EQ(dump_of("def k(n):\n    while n:\n        break\n    else:\n        pass\n"),
            "FunctionDef k @1:5\n"
            "  Param n @1:7\n"
            "  body:\n"
            "    While @2:5\n"
            "      test: Name n @2:11\n"
            "      body:\n"
            "        Break @3:9\n"
            "      orelse:\n"
            "        Pass @5:9\n");
}

TEST(Parser, DecoratorsAreAnyExpression) {
  ast::FunctionDef fn = parse("@triton.autotune(configs=[])\n@triton.jit\ndef k():\n    pass\n");
  ASSERT_EQ(fn.decorators.size(), 2u);
  EXPECT_EQ(fn.decorators[0]->kind, ast::ExprKind::Call);
  EXPECT_EQ(fn.decorators[1]->kind, ast::ExprKind::Attribute);
  EXPECT_EQ(fn.name, "k");
  EXPECT_EQ(fn.loc.line, 3);
}

TEST(Parser, ReturnAnnotation) {
  ast::FunctionDef fn = parse("def k(x) -> tl.tensor:\n    return x\n");
  ASSERT_TRUE(fn.returns);
  EXPECT_EQ(fn.returns->name, "tensor");
}

// ---- parse_module: what the CLI reads from a whole file --------------------

const char* kModule = R"py(#!/usr/bin/env python
"""Host code and kernels side by side."""
import math, numpy as np
import tegula
import tegula.language as tl
import triton.language
from triton import language as tl2, jit
from typing import (List,
                    Dict)

BLOCK = 128
EPS: tl.constexpr = 1e-6
A = B = -3
WIDTH = tl.constexpr(4)
NAME = f"block {BLOCK}"
X, Y = 1, 2
TABLE = {"a": 1}

class Model:
    @triton.jit
    def method(x):
        return x

def host_helper(xs):
    return {x: -x for x in xs}

@triton.jit
def helper(x):
    s = """a string
def inside: not a statement"""
    return x * 2

@tegula.jit
def kernel(x_ptr,
           n):
    v = helper(tl.load(x_ptr))
# a column-1 comment inside the body
    tl.store(x_ptr, v)

if __name__ == "__main__":
    x = np.ones(10)
    kernel[(1,)](x, 10)
print(f"done {x!r}")
)py";

TEST(ParseModule, KeepsImportsConstantsAndFunctions) {
  SourceManager sources;
  ast::Module module = parse_module(sources, sources.add("prog.py", kModule, 1));

  std::string imports;
  for (const ast::Import& imp : module.imports)
    imports += imp.alias + "=" + imp.module + (imp.member.empty() ? "" : "." + imp.member) + "@" +
               std::to_string(imp.loc.line) + " ";
  EXPECT_EQ(imports,
            "math=math@3 np=numpy@3 tegula=tegula@4 tl=tegula.language@5 triton=triton@6 "
            "tl2=triton.language@7 jit=triton.jit@7 List=typing.List@8 Dict=typing.Dict@9 ");

  std::string assigns;
  for (const ast::ModuleAssign& a : module.assigns)
    assigns += a.name + "@" + std::to_string(a.loc.line) + " ";
  EXPECT_EQ(assigns, "BLOCK@11 EPS@12 A@13 B@13 WIDTH@14 NAME@15 ");
  EXPECT_EQ(module.assigns[0].value->int_value, 128);
  EXPECT_DOUBLE_EQ(module.assigns[1].value->float_value, 1e-6);
  EXPECT_EQ(module.assigns[3].value->kind, ast::ExprKind::Unary);
  EXPECT_EQ(module.assigns[4].value->kind, ast::ExprKind::Call);
  EXPECT_EQ(module.assigns[5].value->kind, ast::ExprKind::JoinedStr);

  ASSERT_EQ(module.functions.size(), 2u);
  EXPECT_EQ(module.functions[0].name, "helper");
  EXPECT_EQ(module.functions[0].loc.line, 28);
  EXPECT_EQ(ast::dump(module.functions[1]),
            "FunctionDef kernel @34:5\n"
            "  decorator: Attribute .jit @33:2\n"
            "    Name tegula @33:2\n"
            "  Param x_ptr @34:12\n"
            "  Param n @35:12\n"
            "  body:\n"
            "    Assign @36:5\n"
            "      target: Name v @36:5\n"
            "      value: Call @36:9\n"
            "        func: Name helper @36:9\n"
            "        arg: Call @36:16\n"
            "          func: Attribute .load @36:16\n"
            "            Name tl @36:16\n"
            "          arg: Name x_ptr @36:24\n"
            "    Expr @38:5\n"
            "      Call @38:5\n"
            "        func: Attribute .store @38:5\n"
            "          Name tl @38:5\n"
            "        arg: Name x_ptr @38:14\n"
            "        arg: Name v @38:21\n");
}

TEST(ParseModule, BrokenJitFunctionIsAnError) {
  SourceManager sources;
  int32_t file = sources.add("prog.py", "import tegula\n\n@tegula.jit\ndef k(x):\n    with x:\n        pass\n", 1);
  try {
    parse_module(sources, file);
    FAIL() << "expected a syntax error";
  } catch (const UserError& e) {
    EXPECT_EQ(render(e.diagnostic(), &sources),
              "prog.py:5:5: error[E0110]: `with` statements are not supported inside a kernel\n"
              " 5 |     with x:\n"
              "   |     ^~~~\n"
              "hint: a kernel has no context managers; write the body directly\n");
  }
  // Even when the function does not tokenize.
  int32_t untokenizable = sources.add("prog2.py", "@triton.jit(\n)\ndef k(x):\n    y = $\n", 1);
  EXPECT_THROW(parse_module(sources, untokenizable), UserError);
}

TEST(ParseModule, HostCodeThatIsNotPythonWeKnowIsSkipped) {
  SourceManager sources;
  int32_t file = sources.add("prog.py",
                             "def host():\n    return {k: v for k, v in x}\n"
                             "@numba.njit\ndef other(x):\n    y = x @@ 2\n"
                             "x = $weird\n"
                             "match x:\n    case 1:\n        pass\n"
                             "@jit\ndef k():\n    pass\n",
                             1);
  ast::Module module = parse_module(sources, file);
  ASSERT_EQ(module.functions.size(), 1u);
  EXPECT_EQ(module.functions[0].name, "k");
  EXPECT_TRUE(module.assigns.empty());
}

}  // namespace
}  // namespace tegula::frontend
