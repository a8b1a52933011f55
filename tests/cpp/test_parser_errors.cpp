// One test per syntax error of the parser: the exact rendered diagnostic
// (message, line, column, caret, hint), plus the nesting limits that keep any
// input from overflowing the stack.
#include <gtest/gtest.h>

#include <string>

#include "frontend/parser.h"
#include "support/diagnostic.h"

namespace tegula::frontend {
namespace {

// Parses `source` expecting a UserError; returns the rendered diagnostic.
std::string parse_error(const std::string& source) {
  SourceManager sources;
  int32_t file = sources.add("kernel.py", source, 1);
  try {
    parse_function(sources, file);
  } catch (const UserError& e) {
    return render(e.diagnostic(), &sources);
  }
  return "no error";
}

TEST(ParserErrors, MissingColonAfterIf) {
  EXPECT_EQ(parse_error("def k(x):\n    if x > 0\n        x = 1\n"),
            "kernel.py:2:13: error[E0109]: expected ':' after the `if` condition, found the end of the line\n"
            " 2 |     if x > 0\n"
            "   |             ^\n");
}

TEST(ParserErrors, UnexpectedIndent) {
  EXPECT_EQ(parse_error("def k(x):\n    y = 1\n        z = 2\n"),
            "kernel.py:3:9: error[E0107]: unexpected indent\n"
            " 3 |         z = 2\n"
            "   |         ^\n"
            "hint: line this statement up with the one before it\n");
}

TEST(ParserErrors, ExpectedIndentedBlock) {
  EXPECT_EQ(parse_error("def k(x):\n    for i in range(3):\n    y = i\n"),
            "kernel.py:3:5: error[E0107]: expected an indented block after the `for` statement on line 2\n"
            " 3 |     y = i\n"
            "   |     ^\n");
}

TEST(ParserErrors, ExpectedAnExpression) {
  EXPECT_EQ(parse_error("def k(x):\n    y = x +\n"),
            "kernel.py:2:12: error[E0109]: invalid syntax: expected an expression, found the end of the line\n"
            " 2 |     y = x +\n"
            "   |            ^\n");
}

TEST(ParserErrors, ExpectedEndOfStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    y = x 2\n"),
            "kernel.py:2:11: error[E0109]: invalid syntax: expected the end of the statement, found '2'\n"
            " 2 |     y = x 2\n"
            "   |           ^\n"
            "hint: is an operator or a comma missing?\n");
}

TEST(ParserErrors, AsyncComprehension) {
  EXPECT_EQ(parse_error("def k(x):\n    ys = [v async for v in x]\n"),
            "kernel.py:2:13: error[E0110]: asynchronous comprehensions are not supported inside a kernel\n"
            " 2 |     ys = [v async for v in x]\n"
            "   |             ^~~~~\n"
            "hint: write a `for` loop (over `tl.static_range` to unroll it) instead\n");
}

TEST(ParserErrors, GeneratorArgumentWithOthers) {
  EXPECT_EQ(parse_error("def k(x):\n    return f(v for v in x, 1)\n"),
            "kernel.py:2:26: error[E0109]: a generator expression must be parenthesized unless it is the only "
            "argument of the call\n"
            " 2 |     return f(v for v in x, 1)\n"
            "   |                          ^\n");
}

TEST(ParserErrors, WithStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    with open(x) as f:\n        pass\n"),
            "kernel.py:2:5: error[E0110]: `with` statements are not supported inside a kernel\n"
            " 2 |     with open(x) as f:\n"
            "   |     ^~~~\n"
            "hint: a kernel has no context managers; write the body directly\n");
}

TEST(ParserErrors, LambdaStarParameter) {
  EXPECT_EQ(parse_error("def k(x):\n    f = lambda *v: v\n"),
            "kernel.py:2:16: error[E0110]: a `lambda` in a kernel takes its parameters by name only\n"
            " 2 |     f = lambda *v: v\n"
            "   |                ^\n"
            "hint: list every parameter by name\n");
}

TEST(ParserErrors, ClassDefinition) {
  EXPECT_EQ(parse_error("def k(x):\n    class A:\n        pass\n"),
            "kernel.py:2:5: error[E0110]: `class` definitions are not supported inside a kernel\n"
            " 2 |     class A:\n"
            "   |     ^~~~~\n"
            "hint: define classes outside the kernel and pass their values as arguments\n");
}

TEST(ParserErrors, GlobalStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    global y\n"),
            "kernel.py:2:5: error[E0110]: `global` statements are not supported inside a kernel\n"
            " 2 |     global y\n"
            "   |     ^~~~~~\n"
            "hint: a kernel reads module-level constants directly but cannot rebind them\n");
}

TEST(ParserErrors, NonlocalStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    nonlocal y\n"),
            "kernel.py:2:5: error[E0110]: `nonlocal` statements are not supported inside a kernel\n"
            " 2 |     nonlocal y\n"
            "   |     ^~~~~~~~\n"
            "hint: a kernel has no enclosing function scope; pass values as arguments\n");
}

TEST(ParserErrors, TryStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    try:\n        pass\n    except Exception:\n        pass\n"),
            "kernel.py:2:5: error[E0110]: `try` statements are not supported inside a kernel\n"
            " 2 |     try:\n"
            "   |     ^~~\n"
            "hint: a kernel cannot catch exceptions; check conditions with `tl.device_assert`\n");
}

TEST(ParserErrors, MatchStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    match (x, 1):\n        case (1, 1):\n            pass\n"),
            "kernel.py:2:5: error[E0110]: `match` statements are not supported inside a kernel\n"
            " 2 |     match (x, 1):\n"
            "   |     ^~~~~\n"
            "hint: test the value with if / elif / else\n");
}

// `match` is a soft keyword: elsewhere it is a name like any other.
TEST(ParserErrors, MatchAsAName) {
  EXPECT_EQ(parse_error("def k(x):\n    match = x\n    match(x)\n    match[0] = x\n    y = match.real\n"),
            "no error");
}

TEST(ParserErrors, DelStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    del x\n"),
            "kernel.py:2:5: error[E0110]: `del` statements are not supported inside a kernel\n"
            " 2 |     del x\n"
            "   |     ^~~\n"
            "hint: leave the name unused, or rebind it\n");
}

TEST(ParserErrors, ImportInsideKernel) {
  EXPECT_EQ(parse_error("def k(x):\n    import math\n"),
            "kernel.py:2:5: error[E0110]: `import` statements are not supported inside a kernel\n"
            " 2 |     import math\n"
            "   |     ^~~~~~\n"
            "hint: import at module level; the kernel sees the module's globals\n");
}

TEST(ParserErrors, FromImportInsideKernel) {
  EXPECT_EQ(parse_error("def k(x):\n    from math import sqrt\n"),
            "kernel.py:2:5: error[E0110]: `import` statements are not supported inside a kernel\n"
            " 2 |     from math import sqrt\n"
            "   |     ^~~~\n"
            "hint: import at module level; the kernel sees the module's globals\n");
}

TEST(ParserErrors, Yield) {
  EXPECT_EQ(parse_error("def k(x):\n    yield x\n"),
            "kernel.py:2:5: error[E0110]: `yield` is not supported inside a kernel\n"
            " 2 |     yield x\n"
            "   |     ^~~~~\n"
            "hint: a kernel is not a generator; write results through a pointer with tl.store\n");
}

TEST(ParserErrors, YieldInExpression) {
  EXPECT_EQ(parse_error("def k(x):\n    y = (yield)\n"),
            "kernel.py:2:10: error[E0110]: `yield` is not supported inside a kernel\n"
            " 2 |     y = (yield)\n"
            "   |          ^~~~~\n"
            "hint: a kernel is not a generator; write results through a pointer with tl.store\n");
}

TEST(ParserErrors, DictLiteral) {
  EXPECT_EQ(parse_error("def k(x):\n    d = {\"a\": x}\n"),
            "kernel.py:2:9: error[E0110]: dict and set literals are not supported inside a kernel\n"
            " 2 |     d = {\"a\": x}\n"
            "   |         ^\n"
            "hint: use a tuple, or separate variables\n");
}

TEST(ParserErrors, SetLiteral) {
  EXPECT_EQ(parse_error("def k(x):\n    s = {x}\n"),
            "kernel.py:2:9: error[E0110]: dict and set literals are not supported inside a kernel\n"
            " 2 |     s = {x}\n"
            "   |         ^\n"
            "hint: use a tuple, or separate variables\n");
}

TEST(ParserErrors, StarOutsideACall) {
  // f(*t) unpacks a tuple into a call; a star anywhere else is refused.
  EXPECT_EQ(parse_error("def k(x):\n    y = *x, 1\n"),
            "kernel.py:2:9: error[E0110]: star expressions (`*x`, `**x`) are not supported inside a kernel\n"
            " 2 |     y = *x, 1\n"
            "   |         ^\n"
            "hint: pass or unpack the values one by one\n");
}

TEST(ParserErrors, DoubleStarArgument) {
  EXPECT_EQ(parse_error("def k(x):\n    f(**x)\n"),
            "kernel.py:2:7: error[E0110]: star expressions (`*x`, `**x`) are not supported inside a kernel\n"
            " 2 |     f(**x)\n"
            "   |       ^~\n"
            "hint: pass or unpack the values one by one\n");
}

TEST(ParserErrors, StarParameter) {
  EXPECT_EQ(parse_error("def k(x, **rest):\n    pass\n"),
            "kernel.py:1:10: error[E0110]: `**kwargs` and the bare `*` marker are not supported in a kernel signature\n"
            " 1 | def k(x, **rest):\n"
            "   |          ^~\n"
            "hint: list every parameter by name (a @jit helper may take `*args`)\n");
}

TEST(ParserErrors, PositionalOnlyMarker) {
  EXPECT_EQ(parse_error("def k(x, /, y):\n    pass\n"),
            "kernel.py:1:10: error[E0110]: the positional-only marker `/` is not supported in a kernel signature\n"
            " 1 | def k(x, /, y):\n"
            "   |          ^\n"
            "hint: remove the `/`\n");
}

TEST(ParserErrors, WalrusTarget) {
  EXPECT_EQ(parse_error("def k(x):\n    if (n[0] := x) > 0:\n        pass\n"),
            "kernel.py:2:14: error[E0109]: an assignment expression (`:=`) assigns to a plain name\n"
            " 2 |     if (n[0] := x) > 0:\n"
            "   |              ^~\n"
            "hint: assign the value on its own line first\n");
}

TEST(ParserErrors, NestedDef) {
  EXPECT_EQ(parse_error("def k(x):\n    def helper(v):\n        return v\n"),
            "kernel.py:2:5: error[E0110]: nested function definitions are not supported inside a kernel\n"
            " 2 |     def helper(v):\n"
            "   |     ^~~\n"
            "hint: define the helper at module level with @tegula.jit and call it from the kernel\n");
}

TEST(ParserErrors, DecoratedNestedDef) {
  EXPECT_EQ(parse_error("def k(x):\n    @tegula.jit\n    def helper(v):\n        return v\n"),
            "kernel.py:2:5: error[E0110]: decorators are not supported on nested functions\n"
            " 2 |     @tegula.jit\n"
            "   |     ^\n"
            "hint: define the helper at module level with @tegula.jit and call it from the kernel\n");
}

TEST(ParserErrors, AsyncFunction) {
  EXPECT_EQ(parse_error("async def k(x):\n    pass\n"),
            "kernel.py:1:1: error[E0110]: `async` functions cannot be kernels\n"
            " 1 | async def k(x):\n"
            "   | ^~~~~\n"
            "hint: remove `async`\n");
}

TEST(ParserErrors, AsyncStatement) {
  EXPECT_EQ(parse_error("def k(x):\n    async for v in x:\n        pass\n"),
            "kernel.py:2:5: error[E0110]: `async` is not supported inside a kernel\n"
            " 2 |     async for v in x:\n"
            "   |     ^~~~~\n"
            "hint: kernels are plain functions\n");
}

TEST(ParserErrors, Await) {
  EXPECT_EQ(parse_error("def k(x):\n    y = await x\n"),
            "kernel.py:2:9: error[E0110]: `await` is not supported inside a kernel\n"
            " 2 |     y = await x\n"
            "   |         ^~~~~\n"
            "hint: kernels are plain functions\n");
}

TEST(ParserErrors, Ellipsis) {
  EXPECT_EQ(parse_error("def k(x):\n    y = x[..., None]\n"),
            "kernel.py:2:11: error[E0110]: `...` (Ellipsis) is not supported inside a kernel\n"
            " 2 |     y = x[..., None]\n"
            "   |           ^~~\n"
            "hint: spell out the slices, e.g. x[:, :]\n");
}

TEST(ParserErrors, PositionalAfterKeyword) {
  EXPECT_EQ(parse_error("def k(x):\n    tl.store(x, mask=m, 1)\n"),
            "kernel.py:2:25: error[E0113]: positional argument follows keyword argument\n"
            " 2 |     tl.store(x, mask=m, 1)\n"
            "   |                         ^\n"
            "hint: pass it by name, or move it before the keyword arguments\n");
}

TEST(ParserErrors, RepeatedKeyword) {
  EXPECT_EQ(parse_error("def k(x):\n    tl.load(x, mask=m, mask=n)\n"),
            "kernel.py:2:24: error[E0113]: keyword argument repeated: 'mask'\n"
            " 2 |     tl.load(x, mask=m, mask=n)\n"
            "   |                        ^~~~\n");
}

TEST(ParserErrors, AssignToCall) {
  EXPECT_EQ(parse_error("def k(x):\n    f(x) = 1\n"),
            "kernel.py:2:5: error[E0111]: cannot assign to a function call in assignment\n"
            " 2 |     f(x) = 1\n"
            "   |     ^~~~\n"
            "hint: did you mean '==' instead of '='?\n");
}

TEST(ParserErrors, AssignToLiteral) {
  EXPECT_EQ(parse_error("def k(x):\n    a, 1 = x\n"),
            "kernel.py:2:8: error[E0111]: cannot assign to a literal in assignment\n"
            " 2 |     a, 1 = x\n"
            "   |        ^\n");
}

TEST(ParserErrors, AssignToExpression) {
  EXPECT_EQ(parse_error("def k(x):\n    x + 1 = 2\n"),
            "kernel.py:2:5: error[E0111]: cannot assign to an expression in assignment\n"
            " 2 |     x + 1 = 2\n"
            "   |     ^~~~~\n"
            "hint: the left side must be a name, a subscript, an attribute, or a tuple of them\n");
}

TEST(ParserErrors, AugmentedAssignToTuple) {
  EXPECT_EQ(parse_error("def k(x):\n    a, b += 1\n"),
            "kernel.py:2:5: error[E0111]: invalid target for augmented assignment `+=`\n"
            " 2 |     a, b += 1\n"
            "   |     ^~~~\n"
            "hint: an augmented assignment updates one name, attribute or subscript\n");
}

TEST(ParserErrors, AnnotatedTuple) {
  EXPECT_EQ(parse_error("def k(x):\n    a, b: int = 1, 2\n"),
            "kernel.py:2:5: error[E0111]: only a single name, attribute or subscript can be annotated\n"
            " 2 |     a, b: int = 1, 2\n"
            "   |     ^~~~\n");
}

TEST(ParserErrors, ForWithoutIn) {
  EXPECT_EQ(parse_error("def k(x):\n    for i range(10):\n        pass\n"),
            "kernel.py:2:11: error[E0109]: expected 'in' after the `for` target, found 'range'\n"
            " 2 |     for i range(10):\n"
            "   |           ^~~~~\n");
}

TEST(ParserErrors, MissingColonAfterForIterator) {
  EXPECT_EQ(parse_error("def k(x):\n    for i in range(10)\n        pass\n"),
            "kernel.py:2:23: error[E0109]: expected ':' after the `for` iterator, found the end of the line\n"
            " 2 |     for i in range(10)\n"
            "   |                       ^\n");
}

TEST(ParserErrors, MissingColonAfterWhile) {
  EXPECT_EQ(parse_error("def k(x):\n    while x\n        pass\n"),
            "kernel.py:2:12: error[E0109]: expected ':' after the `while` condition, found the end of the line\n"
            " 2 |     while x\n"
            "   |            ^\n");
}

TEST(ParserErrors, MissingColonAfterElse) {
  EXPECT_EQ(parse_error("def k(x):\n    if x:\n        pass\n    else\n        pass\n"),
            "kernel.py:4:9: error[E0109]: expected ':' after `else`, found the end of the line\n"
            " 4 |     else\n"
            "   |         ^\n");
}

TEST(ParserErrors, MissingColonAfterElif) {
  EXPECT_EQ(parse_error("def k(x):\n    if x:\n        pass\n    elif x > 1\n        pass\n"),
            "kernel.py:4:15: error[E0109]: expected ':' after the `elif` condition, found the end of the line\n"
            " 4 |     elif x > 1\n"
            "   |               ^\n");
}

TEST(ParserErrors, ConditionalWithoutElse) {
  EXPECT_EQ(parse_error("def k(x):\n    y = 1 if x\n"),
            "kernel.py:2:15: error[E0109]: expected 'else' in the conditional expression, found the end of the line\n"
            " 2 |     y = 1 if x\n"
            "   |               ^\n");
}

TEST(ParserErrors, DuplicateParameter) {
  EXPECT_EQ(parse_error("def k(x, y, x):\n    pass\n"),
            "kernel.py:1:13: error[E0112]: duplicate parameter 'x' in the function definition\n"
            " 1 | def k(x, y, x):\n"
            "   |             ^\n");
}

TEST(ParserErrors, ParameterWithoutDefault) {
  EXPECT_EQ(parse_error("def k(x, BLOCK: tl.constexpr = 16, n):\n    pass\n"),
            "kernel.py:1:36: error[E0112]: parameter 'n' without a default follows a parameter with a default\n"
            " 1 | def k(x, BLOCK: tl.constexpr = 16, n):\n"
            "   |                                    ^\n"
            "hint: give it a default value or move it before the defaulted parameters\n");
}

TEST(ParserErrors, NotAFunction) {
  EXPECT_EQ(parse_error("x = 1\n"),
            "kernel.py:1:1: error[E0109]: expected a function definition (`def`), found 'x'\n"
            " 1 | x = 1\n"
            "   | ^\n");
}

TEST(ParserErrors, CodeAfterFunction) {
  EXPECT_EQ(parse_error("def k(x):\n    pass\nprint(k)\n"),
            "kernel.py:3:1: error[E0109]: unexpected code after the function\n"
            " 3 | print(k)\n"
            "   | ^~~~~\n"
            "hint: the source must hold exactly one function definition\n");
}

TEST(ParserErrors, ElseWithoutIf) {
  EXPECT_EQ(parse_error("def k(x):\n    y = 1\n    else:\n        pass\n"),
            "kernel.py:3:5: error[E0109]: invalid syntax: `else` without a matching `if`\n"
            " 3 |     else:\n"
            "   |     ^~~~\n"
            "hint: line it up with its `if` (or `for` / `while` for `else`)\n");
}

TEST(ParserErrors, CompoundStatementOnSameLine) {
  EXPECT_EQ(parse_error("def k(x):\n    if x: for i in x: pass\n"),
            "kernel.py:2:11: error[E0109]: invalid syntax: a compound statement cannot follow ':' on the same line\n"
            " 2 |     if x: for i in x: pass\n"
            "   |           ^~~\n"
            "hint: start it on a new, indented line\n");
}

TEST(ParserErrors, UnclosedCallArguments) {
  EXPECT_EQ(parse_error("def k(x):\n    f(x y)\n"),
            "kernel.py:2:9: error[E0109]: invalid syntax: expected ',' or ')' in the call on line 2, found 'y'\n"
            " 2 |     f(x y)\n"
            "   |         ^\n");
}

TEST(ParserErrors, BadSubscript) {
  EXPECT_EQ(parse_error("def k(x):\n    y = x[1 2]\n"),
            "kernel.py:2:13: error[E0109]: invalid syntax: expected ',' or ']' in the subscript, found '2'\n"
            " 2 |     y = x[1 2]\n"
            "   |             ^\n");
}

TEST(ParserErrors, BadList) {
  EXPECT_EQ(parse_error("def k(x):\n    y = [1 2]\n"),
            "kernel.py:2:12: error[E0109]: invalid syntax: expected ',' or ']' in the list on line 2, found '2'\n"
            " 2 |     y = [1 2]\n"
            "   |            ^\n");
}

TEST(ParserErrors, BadParenthesized) {
  EXPECT_EQ(parse_error("def k(x):\n    y = (1 2)\n"),
            "kernel.py:2:12: error[E0109]: invalid syntax: expected ',' or ')' in the parenthesized expression on line 2, found '2'\n"
            " 2 |     y = (1 2)\n"
            "   |            ^\n");
}

TEST(ParserErrors, MissingAttributeName) {
  EXPECT_EQ(parse_error("def k(x):\n    y = tl.(x)\n"),
            "kernel.py:2:12: error[E0109]: expected an attribute name after '.', found '('\n"
            " 2 |     y = tl.(x)\n"
            "   |            ^\n");
}

TEST(ParserErrors, DecoratorWithoutNewline) {
  EXPECT_EQ(parse_error("@tegula.jit def k(x):\n    pass\n"),
            "kernel.py:1:13: error[E0109]: expected a new line after the decorator, found 'def'\n"
            " 1 | @tegula.jit def k(x):\n"
            "   |             ^~~\n");
}

TEST(ParserErrors, MissingFunctionName) {
  EXPECT_EQ(parse_error("def (x):\n    pass\n"),
            "kernel.py:1:5: error[E0109]: expected the function name after `def`, found '('\n"
            " 1 | def (x):\n"
            "   |     ^\n");
}

TEST(ParserErrors, MissingParameterListClose) {
  EXPECT_EQ(parse_error("def k(x y):\n    pass\n"),
            "kernel.py:1:9: error[E0109]: expected ',' or ')' in the parameter list, found 'y'\n"
            " 1 | def k(x y):\n"
            "   |         ^\n");
}

TEST(ParserErrors, MissingColonAfterSignature) {
  EXPECT_EQ(parse_error("def k(x)\n    pass\n"),
            "kernel.py:1:9: error[E0109]: expected ':' after the function signature, found the end of the line\n"
            " 1 | def k(x)\n"
            "   |         ^\n");
}

TEST(ParserErrors, UnterminatedStringIsReportedThroughTheParser) {
  EXPECT_EQ(parse_error("def k(x):\n    tl.static_print(\"abc)\n"),
            "kernel.py:2:21: error[E0101]: unterminated string literal\n"
            " 2 |     tl.static_print(\"abc)\n"
            "   |                     ^~~~~\n"
            "hint: close the string with \" on the same line, or use a triple-quoted string\n");
}

TEST(ParserErrors, ErrorsInIndentedSourcesPointAtRealLocations) {
  SourceManager sources;
  int32_t file = sources.add("model.py", "    @jit\n    def k(x):\n        y = x +\n", 41);
  try {
    parse_function(sources, file);
    FAIL() << "expected a syntax error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostic().loc.line, 43);
    EXPECT_EQ(e.diagnostic().loc.col, 16);
    EXPECT_EQ(render(e.diagnostic(), &sources),
              "model.py:43:16: error[E0109]: invalid syntax: expected an expression, found the end of the line\n"
              " 43 |         y = x +\n"
              "    |                ^\n");
  }
}

TEST(ParserErrors, NestingLimitsInsteadOfStackOverflow) {
  EXPECT_NE(parse_error("def k(x):\n    y = " + std::string(500, '-') + "x\n").find("the code is nested too deeply here"),
            std::string::npos);
  // A flat sum is as deep as it is long; Python's own compiler takes about
  // 3,000 terms, so 1,000 parse and 5,000 are refused.
  std::string long_sum = "def k(x):\n    y = x";
  for (int i = 0; i < 1000; ++i) long_sum += " + x";
  EXPECT_EQ(parse_error(long_sum + "\n"), "no error");
  for (int i = 1000; i < 5000; ++i) long_sum += " + x";
  EXPECT_NE(parse_error(long_sum + "\n").find("kernel.py:2:9: error[E0108]: expression is too deeply nested"),
            std::string::npos);
  std::string chain = "def k(x):\n    if x:\n        pass\n";
  for (int i = 0; i < 500; ++i) chain += "    elif x:\n        pass\n";
  EXPECT_NE(parse_error(chain).find("the code is nested too deeply here"), std::string::npos);
  // Ordinary depth is fine.
  EXPECT_EQ(parse_error("def k(x):\n    y = " + std::string(50, '(') + "x" + std::string(50, ')') + "\n"),
            "no error");
}

}  // namespace
}  // namespace tegula::frontend
