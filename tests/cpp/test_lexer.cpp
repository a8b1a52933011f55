// The tokenizer: token kinds, literal values, layout tokens, real locations,
// and one test per lexical error (message, line, column, rendered caret).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/lexer.h"
#include "support/diagnostic.h"

namespace tegula::frontend {
namespace {

// Tokens as compact text: `Name:x Op:= Int:1 NEWLINE`.
std::string show(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    if (!out.empty()) out += ' ';
    switch (t.kind) {
      case TokenKind::Name: out += "Name:" + t.text; break;
      case TokenKind::Keyword: out += "Kw:" + t.text; break;
      case TokenKind::Int:
        out += "Int:" + (t.is_unsigned ? std::to_string(static_cast<uint64_t>(t.int_value)) + "u"
                                       : std::to_string(t.int_value));
        break;
      case TokenKind::Float: out += "Float:" + std::to_string(t.float_value); break;
      case TokenKind::String: out += "Str:[" + t.value + "]"; break;
      case TokenKind::Op: out += "Op:" + t.text; break;
      case TokenKind::Newline: out += "NEWLINE"; break;
      case TokenKind::Indent: out += "INDENT"; break;
      case TokenKind::Dedent: out += "DEDENT"; break;
      case TokenKind::EndOfFile: out += "EOF"; break;
    }
  }
  return out;
}

std::vector<Token> lex(const std::string& text, int32_t first_line = 1) {
  static SourceManager sources;  // tokens keep only locations, so one manager serves all tests
  return tokenize(sources, sources.add("t.py", text, first_line));
}

// Lexes `text` expecting a UserError; returns the rendered diagnostic.
std::string lex_error(const std::string& text) {
  SourceManager sources;
  int32_t file = sources.add("k.py", text, 1);
  try {
    tokenize(sources, file);
  } catch (const UserError& e) {
    return render(e.diagnostic(), &sources);
  }
  return "no error";
}

TEST(Lexer, NamesKeywordsAndOperators) {
  EXPECT_EQ(show(lex("x = not a is b\n")),
            "Name:x Op:= Kw:not Name:a Kw:is Name:b NEWLINE EOF");
  EXPECT_EQ(show(lex("a **= b // c ** d -> e @ f\n")),
            "Name:a Op:**= Name:b Op:// Name:c Op:** Name:d Op:-> Name:e Op:@ Name:f NEWLINE EOF");
  EXPECT_EQ(show(lex("a<<=b>>=c<=d>=e==f!=g\n")),
            "Name:a Op:<<= Name:b Op:>>= Name:c Op:<= Name:d Op:>= Name:e Op:== Name:f Op:!= Name:g NEWLINE EOF");
  EXPECT_EQ(show(lex("x += 1; y -= 2; z *= 3; w /= 4; v //= 5; u %= 6\n")),
            "Name:x Op:+= Int:1 Op:; Name:y Op:-= Int:2 Op:; Name:z Op:*= Int:3 Op:; Name:w Op:/= Int:4 "
            "Op:; Name:v Op://= Int:5 Op:; Name:u Op:%= Int:6 NEWLINE EOF");
  EXPECT_EQ(show(lex("a &= b; a |= b; a ^= b; a **= b\n")),
            "Name:a Op:&= Name:b Op:; Name:a Op:|= Name:b Op:; Name:a Op:^= Name:b Op:; Name:a Op:**= Name:b "
            "NEWLINE EOF");
  EXPECT_EQ(show(lex("(n := 1) ...\n")), "Op:( Name:n Op::= Int:1 Op:) Op:... NEWLINE EOF");
  EXPECT_EQ(show(lex("match = print\n")), "Name:match Op:= Name:print NEWLINE EOF");
}

TEST(Lexer, Numbers) {
  EXPECT_EQ(show(lex("0 7 1_000 0x1F 0o17 0b1010 0X_ff 0000\n")),
            "Int:0 Int:7 Int:1000 Int:31 Int:15 Int:10 Int:255 Int:0 NEWLINE EOF");
  std::vector<Token> floats = lex("1e-6 .5 1. 2.5e3 1_0.2_5 3E+2\n");
  ASSERT_EQ(floats.size(), 8u);
  EXPECT_EQ(floats[0].kind, TokenKind::Float);
  EXPECT_DOUBLE_EQ(floats[0].float_value, 1e-6);
  EXPECT_DOUBLE_EQ(floats[1].float_value, 0.5);
  EXPECT_DOUBLE_EQ(floats[2].float_value, 1.0);
  EXPECT_DOUBLE_EQ(floats[3].float_value, 2500.0);
  EXPECT_DOUBLE_EQ(floats[4].float_value, 10.25);
  EXPECT_DOUBLE_EQ(floats[5].float_value, 300.0);
  EXPECT_EQ(show(lex("9223372036854775807 9223372036854775808 0xFFFFFFFFFFFFFFFF\n")),
            "Int:9223372036854775807 Int:9223372036854775808u Int:18446744073709551615u NEWLINE EOF");
  // `x.y` after a number is an attribute, and `1 .real`-style spacing is kept apart.
  EXPECT_EQ(show(lex("a.b\n")), "Name:a Op:. Name:b NEWLINE EOF");
}

TEST(Lexer, Strings) {
  EXPECT_EQ(show(lex("'a' \"b\" r'\\n' b'x' 'q\\'s' \"t\\tu\\x41\\u00e9\\101\"\n")),
            "Str:[a] Str:[b] Str:[\\n] Str:[x] Str:[q's] Str:[t\tuA\xc3\xa9" "A] NEWLINE EOF");
  std::vector<Token> triple = lex("s = '''one\ntwo''' + \"\"\"x\"y\"\"\"\nt = 1\n");
  EXPECT_EQ(show(triple), "Name:s Op:= Str:[one\ntwo] Op:+ Str:[x\"y] NEWLINE Name:t Op:= Int:1 NEWLINE EOF");
  // Tokens after a multi-line string sit on the string's last line.
  EXPECT_EQ(triple[3].loc.line, 2);
  EXPECT_EQ(triple[3].loc.col, 8);
  EXPECT_EQ(triple[6].loc.line, 3);
  // Backslash-newline inside a string continues it without a newline.
  EXPECT_EQ(show(lex("s = 'ab\\\ncd'\n")), "Name:s Op:= Str:[abcd] NEWLINE EOF");
  EXPECT_EQ(show(lex("'unknown \\q escape'\n")), "Str:[unknown \\q escape] NEWLINE EOF");
}

TEST(Lexer, IndentationProducesBlocks) {
  EXPECT_EQ(show(lex("if a:\n    b\n    if c:\n        d\ne\n")),
            "Kw:if Name:a Op:: NEWLINE INDENT Name:b NEWLINE Kw:if Name:c Op:: NEWLINE INDENT Name:d NEWLINE "
            "DEDENT DEDENT Name:e NEWLINE EOF");
  // Blank lines, comment-only lines (at any indentation) and trailing comments are not code.
  EXPECT_EQ(show(lex("if a:  # why\n\n  # note\n        \n    b\n# col 1\n    c\n")),
            "Kw:if Name:a Op:: NEWLINE INDENT Name:b NEWLINE Name:c NEWLINE DEDENT EOF");
  // A tab advances to the next multiple of 8, as in Python.
  EXPECT_EQ(show(lex("if a:\n\tb\n\tc\n")), "Kw:if Name:a Op:: NEWLINE INDENT Name:b NEWLINE Name:c NEWLINE DEDENT EOF");
  // No final newline: NEWLINE and DEDENT are still produced.
  EXPECT_EQ(show(lex("if a:\n    b")), "Kw:if Name:a Op:: NEWLINE INDENT Name:b NEWLINE DEDENT EOF");
  // Windows line endings.
  EXPECT_EQ(show(lex("if a:\r\n    b\r\n")), "Kw:if Name:a Op:: NEWLINE INDENT Name:b NEWLINE DEDENT EOF");
}

TEST(Lexer, LineJoining) {
  // Inside brackets newlines and indentation mean nothing.
  EXPECT_EQ(show(lex("f(a,\n        b,\n  c)\nd\n")),
            "Name:f Op:( Name:a Op:, Name:b Op:, Name:c Op:) NEWLINE Name:d NEWLINE EOF");
  EXPECT_EQ(show(lex("x = [1,  # one\n\n     2]\n")), "Name:x Op:= Op:[ Int:1 Op:, Int:2 Op:] NEWLINE EOF");
  // So does an explicit backslash continuation.
  std::vector<Token> tokens = lex("x = a + \\\n        b\ny\n");
  EXPECT_EQ(show(tokens), "Name:x Op:= Name:a Op:+ Name:b NEWLINE Name:y NEWLINE EOF");
  EXPECT_EQ(tokens[4].loc.line, 2);
  EXPECT_EQ(tokens[4].loc.col, 9);
}

TEST(Lexer, UniformIndentationKeepsRealColumns) {
  // A method as inspect.getsource returns it, starting on line 10 of its file.
  std::vector<Token> tokens = lex("    @jit\n    def k(x):\n        return x\n", 10);
  EXPECT_EQ(show(tokens),
            "Op:@ Name:jit NEWLINE Kw:def Name:k Op:( Name:x Op:) Op:: NEWLINE INDENT Kw:return Name:x NEWLINE "
            "DEDENT EOF");
  EXPECT_EQ(tokens[0].loc.line, 10);
  EXPECT_EQ(tokens[0].loc.col, 5);
  EXPECT_EQ(tokens[4].loc.line, 11);
  EXPECT_EQ(tokens[4].loc.col, 9);
  EXPECT_EQ(tokens[4].loc.end_col, 10);
  EXPECT_EQ(tokens[11].loc.col, 9);
  EXPECT_EQ(tokens[12].loc.line, 12);
  EXPECT_EQ(tokens[12].loc.col, 16);
}

TEST(Lexer, TokenSpans) {
  std::vector<Token> tokens = lex("total = 1_000 + 'abc'\n");
  EXPECT_EQ(tokens[0].loc.col, 1);
  EXPECT_EQ(tokens[0].loc.end_col, 6);
  EXPECT_EQ(tokens[2].loc.col, 9);
  EXPECT_EQ(tokens[2].loc.end_col, 14);
  EXPECT_EQ(tokens[4].loc.col, 17);
  EXPECT_EQ(tokens[4].loc.end_col, 22);
  // A string running over lines ends at the end of its first line.
  std::vector<Token> multi = lex("s = \"\"\"ab\ncd\"\"\"\n");
  EXPECT_EQ(multi[2].loc.col, 5);
  EXPECT_EQ(multi[2].loc.end_col, 10);
}

TEST(LexerErrors, UnterminatedString) {
  EXPECT_EQ(lex_error("x = 'abc\n"),
            "k.py:1:5: error[E0101]: unterminated string literal\n"
            " 1 | x = 'abc\n"
            "   |     ^~~~\n"
            "hint: close the string with ' on the same line, or use a triple-quoted string\n");
}

TEST(LexerErrors, UnterminatedTripleQuotedString) {
  EXPECT_EQ(lex_error("a = 1\nx = \"\"\"abc\n\n"),
            "k.py:2:5: error[E0101]: unterminated triple-quoted string literal\n"
            " 2 | x = \"\"\"abc\n"
            "   |     ^~~~~~\n"
            "hint: close the string with \"\"\"\n");
}

TEST(LexerErrors, FStringSingleClosingBrace) {
  EXPECT_EQ(lex_error("msg = f\"x={x}}\"\n"),
            "k.py:1:14: error[E0109]: f-string: single '}' is not allowed\n"
            " 1 | msg = f\"x={x}}\"\n"
            "   |              ^\n"
            "hint: write '}}' for a literal brace\n");
}

TEST(LexerErrors, FStringEmptyField) {
  EXPECT_EQ(lex_error("msg = f\"x={ }\"\n"),
            "k.py:1:11: error[E0109]: f-string: empty expression in a replacement field\n"
            " 1 | msg = f\"x={ }\"\n"
            "   |           ^~~\n"
            "hint: write an expression between the braces\n");
}

TEST(LexerErrors, FStringUnterminatedField) {
  EXPECT_EQ(lex_error("msg = f\"x={x\"\n"),
            "k.py:1:7: error[E0101]: unterminated f-string\n"
            " 1 | msg = f\"x={x\"\n"
            "   |       ^~~~~~~\n"
            "hint: close the f-string with \"\n");
}

TEST(LexerErrors, UnmatchedClosingBracket) {
  EXPECT_EQ(lex_error("y = f(x))\n"),
            "k.py:1:9: error[E0106]: unmatched ')'\n"
            " 1 | y = f(x))\n"
            "   |         ^\n"
            "hint: remove it or add the opening bracket\n");
}

TEST(LexerErrors, MismatchedBracket) {
  EXPECT_EQ(lex_error("y = (x,\n  z]\n"),
            "k.py:2:4: error[E0106]: closing bracket ']' does not match opening bracket '(' on line 1\n"
            " 2 |   z]\n"
            "   |    ^\n");
}

TEST(LexerErrors, BracketNeverClosed) {
  EXPECT_EQ(lex_error("y = g(x,\n  z\n"),
            "k.py:1:6: error[E0106]: '(' was never closed\n"
            " 1 | y = g(x,\n"
            "   |      ^\n"
            "hint: add the matching ')'\n");
}

TEST(LexerErrors, InconsistentDedent) {
  EXPECT_EQ(lex_error("if a:\n    b\n  c\n"),
            "k.py:3:3: error[E0107]: unindent does not match any outer indentation level\n"
            " 3 |   c\n"
            "   |   ^\n"
            "hint: line this statement up with the block it belongs to\n");
}

TEST(LexerErrors, UnindentBelowTheFunction) {
  EXPECT_EQ(lex_error("    def k():\n        a\n  b\n"),
            "k.py:3:3: error[E0107]: unexpected unindent: this line is indented less than the function's first line\n"
            " 3 |   b\n"
            "   |   ^\n"
            "hint: indent every line of the function at least as deep as its `def`\n");
}

TEST(LexerErrors, TabsAndSpacesMixedAmbiguously) {
  EXPECT_EQ(lex_error("if a:\n        b\n\tc\n"),
            "k.py:3:2: error[E0107]: inconsistent use of tabs and spaces in indentation\n"
            " 3 | \tc\n"
            "   | \t^\n"
            "hint: indent with spaces only\n");
}

TEST(LexerErrors, BadNumbers) {
  EXPECT_EQ(lex_error("x = 012\n"),
            "k.py:1:5: error[E0102]: leading zeros in decimal integer literals are not permitted\n"
            " 1 | x = 012\n"
            "   |     ^~~\n"
            "hint: write 0o... for an octal number\n");
  EXPECT_EQ(lex_error("x = 1__0\n"),
            "k.py:1:5: error[E0102]: invalid number literal: `_` must separate two digits\n"
            " 1 | x = 1__0\n"
            "   |     ^~\n");
  EXPECT_EQ(lex_error("x = 0x\n"),
            "k.py:1:5: error[E0102]: invalid hexadecimal literal\n"
            " 1 | x = 0x\n"
            "   |     ^~\n");
  EXPECT_EQ(lex_error("x = 0b102\n"),
            "k.py:1:5: error[E0102]: invalid binary literal\n"
            " 1 | x = 0b102\n"
            "   |     ^~~~~\n");
  EXPECT_EQ(lex_error("x = 3abc\n"),
            "k.py:1:5: error[E0102]: invalid decimal literal\n"
            " 1 | x = 3abc\n"
            "   |     ^~\n"
            "hint: a name cannot start with a digit\n");
  EXPECT_EQ(lex_error("x = 2j\n"),
            "k.py:1:5: error[E0110]: complex literals are not supported inside a kernel\n"
            " 1 | x = 2j\n"
            "   |     ^~\n");
  EXPECT_EQ(lex_error("x = 18446744073709551616\n"),
            "k.py:1:5: error[E0103]: integer literal is too large: kernels use at most 64-bit integers\n"
            " 1 | x = 18446744073709551616\n"
            "   |     ^~~~~~~~~~~~~~~~~~~~\n");
}

TEST(LexerErrors, Continuation) {
  EXPECT_EQ(lex_error("x = a \\ b\n"),
            "k.py:1:7: error[E0105]: unexpected character after line continuation character\n"
            " 1 | x = a \\ b\n"
            "   |       ^\n"
            "hint: a backslash continues a line only as the last character of the line\n");
}

TEST(LexerErrors, InvalidCharacter) {
  EXPECT_EQ(lex_error("x = a $ b\n"),
            "k.py:1:7: error[E0105]: invalid character '$' in kernel source\n"
            " 1 | x = a $ b\n"
            "   |       ^\n");
  EXPECT_EQ(lex_error("x = a ? b\n").substr(0, 59), "k.py:1:7: error[E0105]: invalid character '?' in kernel sou");
}

TEST(LexerErrors, BadEscape) {
  EXPECT_EQ(lex_error("s = '\\x4'\n"),
            "k.py:1:6: error[E0104]: truncated \\x escape in string literal\n"
            " 1 | s = '\\x4'\n"
            "   |      ^~~~\n"
            "hint: write exactly 2 hex digits after \\x\n");
}

TEST(LexerErrors, NestingLimits) {
  EXPECT_NE(lex_error("x = " + std::string(300, '(') + "\n").find("error[E0108]: too many nested parentheses"),
            std::string::npos);
  std::string deep;
  for (int i = 0; i < 120; ++i) deep += std::string(static_cast<size_t>(i), ' ') + "if a:\n";
  EXPECT_NE(lex_error(deep).find("error[E0108]: too many levels of indentation"), std::string::npos);
}

TEST(SplitTopLevel, StatementsDecoratorsAndContinuations) {
  std::string text =
      "import a\n"
      "\n"
      "X = (1,\n"
      "2)\n"
      "S = '''\n"
      "not a statement\n"
      "'''\n"
      "# comment\n"
      "@deco\n"
      "@other(\n"
      ")\n"
      "def f():\n"
      "    x = 1\n"
      "# column-1 comment inside a body\n"
      "    return x\n"
      "Y = 1 + \\\n"
      "2\n"
      "bad = f'{x'\n";
  std::vector<TextRange> ranges = split_top_level(text);
  std::vector<std::string> pieces;
  for (const TextRange& r : ranges) pieces.push_back(text.substr(r.begin, r.end - r.begin));
  ASSERT_EQ(pieces.size(), 6u);
  EXPECT_EQ(pieces[0], "import a\n\n");
  EXPECT_EQ(pieces[1], "X = (1,\n2)\n");
  EXPECT_EQ(pieces[2], "S = '''\nnot a statement\n'''\n# comment\n");
  EXPECT_EQ(pieces[3], "@deco\n@other(\n)\ndef f():\n    x = 1\n# column-1 comment inside a body\n    return x\n");
  EXPECT_EQ(pieces[4], "Y = 1 + \\\n2\n");
  EXPECT_EQ(pieces[5], "bad = f'{x'\n");
}

TEST(SplitTopLevel, NeverFailsOnBrokenPython) {
  for (const char* text : {"(((", "'''", "x = '\n", "\\", "@", "@\n@\n", ")))\nx\n", ""}) {
    std::string s = text;
    for (const TextRange& r : split_top_level(s)) {
      EXPECT_LE(r.begin, r.end);
      EXPECT_LE(r.end, s.size());
    }
  }
}

}  // namespace
}  // namespace tegula::frontend
