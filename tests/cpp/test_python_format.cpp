// Python's text forms of compile-time values (frontend/python_format.h), which
// f-strings and tl.static_print build from, against Python's own: str(),
// repr() and ascii() of each kind, and format(value, spec) over the format
// specification mini-language for int, bool, float and str, refusals
// included (Python's ValueError text is the error).
//
// Every expected string below is CPython 3.11's output, pasted in, never
// written by hand: `format(v, spec)` for each value and spec, `repr(x)` and
// `ascii(s)`. To add a case, run the same expression in python3 and paste
// what it prints (C escapes for control characters and invisible ones).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/python_format.h"

namespace tegula::frontend {
namespace python_format_test {
namespace {

using namespace std::string_view_literals;

ConstValue I(int64_t v) { return ConstValue::integer(v); }
// An integer literal above INT64_MAX, as the lexer keeps it (its bits, marked unsigned).
ConstValue U(uint64_t v) {
  ConstValue c = ConstValue::integer(static_cast<int64_t>(v));
  c.is_unsigned = true;
  return c;
}
ConstValue B(bool v) { return ConstValue::boolean(v); }
ConstValue F(double v) { return ConstValue::real(v); }
ConstValue S(std::string_view v) { return ConstValue::string(std::string(v)); }
ConstValue N() { return ConstValue::none(); }

// One spec and what it makes of each value of a list (kInts, kFloats...), in order.
struct SpecRow {
  const char* spec;
  std::vector<std::string_view> expected;
};
// One value, one spec, and the text (or for kErrors, the error) Python gives.
struct Case {
  ConstValue value;
  const char* spec;
  std::string_view expected;
};
struct FloatCase {
  double value;
  const char* repr;
};
struct StrCase {
  std::string_view text;
  const char* repr;
  const char* ascii;
};

const ConstValue kInts[] = {I(0), I(42), I(-7), I(1234567), I(INT64_MAX), I(INT64_MIN)};
const ConstValue kFloats[] = {F(0.1), F(1e15), F(1e16), F(1e-5), F(-0.0), F(123456.789),
                              F(NAN), F(INFINITY), F(-INFINITY), F(2.5), F(100.0), F(0.3333333333333333)};
const ConstValue kStrs[] = {S("abc"), S("héllo"), S("")};
const ConstValue kBools[] = {B(true), B(false)};

// clang-format off
// format(v, spec) for each v of kInts, in order.
const SpecRow kIntRows[] = {
    {"", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {">8", {"       0"sv, "      42"sv, "      -7"sv, " 1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"<8", {"0       "sv, "42      "sv, "-7      "sv, "1234567 "sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"^9", {"    0    "sv, "   42    "sv, "   -7    "sv, " 1234567 "sv, "9223372036854775807"sv,
            "-9223372036854775808"sv}},
    {"*^9", {"****0****"sv, "***42****"sv, "***-7****"sv, "*1234567*"sv, "9223372036854775807"sv,
             "-9223372036854775808"sv}},
    {"é^9", {"éééé0éééé"sv, "ééé42éééé"sv, "ééé-7éééé"sv, "é1234567é"sv, "9223372036854775807"sv,
             "-9223372036854775808"sv}},
    {"\n>5", {"\n\n\n\n0"sv, "\n\n\n42"sv, "\n\n\n-7"sv, "1234567"sv, "9223372036854775807"sv,
              "-9223372036854775808"sv}},
    {"=+10", {"+        0"sv, "+       42"sv, "-        7"sv, "+  1234567"sv, "+9223372036854775807"sv,
              "-9223372036854775808"sv}},
    {"+", {"+0"sv, "+42"sv, "-7"sv, "+1234567"sv, "+9223372036854775807"sv, "-9223372036854775808"sv}},
    {" ", {" 0"sv, " 42"sv, "-7"sv, " 1234567"sv, " 9223372036854775807"sv, "-9223372036854775808"sv}},
    {"-", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"-^9", {"----0----"sv, "---42----"sv, "----7----"sv, "-1234567-"sv, "9223372036854775807"sv,
             "-9223372036854775808"sv}},
    {"08", {"00000000"sv, "00000042"sv, "-0000007"sv, "01234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"010", {"0000000000"sv, "0000000042"sv, "-000000007"sv, "0001234567"sv, "9223372036854775807"sv,
             "-9223372036854775808"sv}},
    {"00", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"0", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"0>5", {"00000"sv, "00042"sv, "000-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"0=8", {"00000000"sv, "00000042"sv, "-0000007"sv, "01234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"<08", {"00000000"sv, "42000000"sv, "-7000000"sv, "12345670"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"^08", {"00000000"sv, "00042000"sv, "000-7000"sv, "12345670"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"=08", {"00000000"sv, "00000042"sv, "-0000007"sv, "01234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"x<08", {"0xxxxxxx"sv, "42xxxxxx"sv, "-7xxxxxx"sv, "1234567x"sv, "9223372036854775807"sv,
              "-9223372036854775808"sv}},
    {"010,", {"00,000,000"sv, "00,000,042"sv, "-0,000,007"sv, "01,234,567"sv, "9,223,372,036,854,775,807"sv,
              "-9,223,372,036,854,775,808"sv}},
    {"_", {"0"sv, "42"sv, "-7"sv, "1_234_567"sv, "9_223_372_036_854_775_807"sv, "-9_223_372_036_854_775_808"sv}},
    {",", {"0"sv, "42"sv, "-7"sv, "1,234,567"sv, "9,223,372,036,854,775,807"sv, "-9,223,372,036,854,775,808"sv}},
    {",d", {"0"sv, "42"sv, "-7"sv, "1,234,567"sv, "9,223,372,036,854,775,807"sv, "-9,223,372,036,854,775,808"sv}},
    {"_d", {"0"sv, "42"sv, "-7"sv, "1_234_567"sv, "9_223_372_036_854_775_807"sv, "-9_223_372_036_854_775_808"sv}},
    {"#,d", {"0"sv, "42"sv, "-7"sv, "1,234,567"sv, "9,223,372,036,854,775,807"sv, "-9,223,372,036,854,775,808"sv}},
    {"^+12,", {"     +0     "sv, "    +42     "sv, "     -7     "sv, " +1,234,567 "sv,
               "+9,223,372,036,854,775,807"sv, "-9,223,372,036,854,775,808"sv}},
    {"=12", {"           0"sv, "          42"sv, "-          7"sv, "     1234567"sv, "9223372036854775807"sv,
             "-9223372036854775808"sv}},
    {"<", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"^", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"=", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"==5", {"====0"sv, "===42"sv, "-===7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"c<5", {"0cccc"sv, "42ccc"sv, "-7ccc"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"x", {"0"sv, "2a"sv, "-7"sv, "12d687"sv, "7fffffffffffffff"sv, "-8000000000000000"sv}},
    {"X", {"0"sv, "2A"sv, "-7"sv, "12D687"sv, "7FFFFFFFFFFFFFFF"sv, "-8000000000000000"sv}},
    {"b", {"0"sv, "101010"sv, "-111"sv, "100101101011010000111"sv,
           "111111111111111111111111111111111111111111111111111111111111111"sv,
           "-1000000000000000000000000000000000000000000000000000000000000000"sv}},
    {"o", {"0"sv, "52"sv, "-7"sv, "4553207"sv, "777777777777777777777"sv, "-1000000000000000000000"sv}},
    {"#x", {"0x0"sv, "0x2a"sv, "-0x7"sv, "0x12d687"sv, "0x7fffffffffffffff"sv, "-0x8000000000000000"sv}},
    {"#X", {"0X0"sv, "0X2A"sv, "-0X7"sv, "0X12D687"sv, "0X7FFFFFFFFFFFFFFF"sv, "-0X8000000000000000"sv}},
    {"#b", {"0b0"sv, "0b101010"sv, "-0b111"sv, "0b100101101011010000111"sv,
            "0b111111111111111111111111111111111111111111111111111111111111111"sv,
            "-0b1000000000000000000000000000000000000000000000000000000000000000"sv}},
    {"#o", {"0o0"sv, "0o52"sv, "-0o7"sv, "0o4553207"sv, "0o777777777777777777777"sv, "-0o1000000000000000000000"sv}},
    {"_b", {"0"sv, "10_1010"sv, "-111"sv, "1_0010_1101_0110_1000_0111"sv,
            "111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111"sv,
            "-1000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000"sv}},
    {"_x", {"0"sv, "2a"sv, "-7"sv, "12_d687"sv, "7fff_ffff_ffff_ffff"sv, "-8000_0000_0000_0000"sv}},
    {"_o", {"0"sv, "52"sv, "-7"sv, "455_3207"sv, "7_7777_7777_7777_7777_7777"sv, "-10_0000_0000_0000_0000_0000"sv}},
    {"#_x", {"0x0"sv, "0x2a"sv, "-0x7"sv, "0x12_d687"sv, "0x7fff_ffff_ffff_ffff"sv, "-0x8000_0000_0000_0000"sv}},
    {"#_b", {"0b0"sv, "0b10_1010"sv, "-0b111"sv, "0b1_0010_1101_0110_1000_0111"sv,
             "0b111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111_1111"sv,
             "-0b1000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000"sv}},
    {"#10x", {"       0x0"sv, "      0x2a"sv, "      -0x7"sv, "  0x12d687"sv, "0x7fffffffffffffff"sv,
              "-0x8000000000000000"sv}},
    {"#010x", {"0x00000000"sv, "0x0000002a"sv, "-0x0000007"sv, "0x0012d687"sv, "0x7fffffffffffffff"sv,
               "-0x8000000000000000"sv}},
    {"+#x", {"+0x0"sv, "+0x2a"sv, "-0x7"sv, "+0x12d687"sv, "+0x7fffffffffffffff"sv, "-0x8000000000000000"sv}},
    {"d", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"n", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {".3f", {"0.000"sv, "42.000"sv, "-7.000"sv, "1234567.000"sv, "9223372036854775808.000"sv,
             "-9223372036854775808.000"sv}},
    {".0f", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775808"sv, "-9223372036854775808"sv}},
    {"#.0f", {"0."sv, "42."sv, "-7."sv, "1234567."sv, "9223372036854775808."sv, "-9223372036854775808."sv}},
    {".20f", {"0.00000000000000000000"sv, "42.00000000000000000000"sv, "-7.00000000000000000000"sv,
              "1234567.00000000000000000000"sv, "9223372036854775808.00000000000000000000"sv,
              "-9223372036854775808.00000000000000000000"sv}},
    {"08.3f", {"0000.000"sv, "0042.000"sv, "-007.000"sv, "1234567.000"sv, "9223372036854775808.000"sv,
               "-9223372036854775808.000"sv}},
    {",.2f", {"0.00"sv, "42.00"sv, "-7.00"sv, "1,234,567.00"sv, "9,223,372,036,854,775,808.00"sv,
              "-9,223,372,036,854,775,808.00"sv}},
    {"_.3f", {"0.000"sv, "42.000"sv, "-7.000"sv, "1_234_567.000"sv, "9_223_372_036_854_775_808.000"sv,
              "-9_223_372_036_854_775_808.000"sv}},
    {"015,.2f", {"0,000,000,000.00"sv, "0,000,000,042.00"sv, "-000,000,007.00"sv, "0,001,234,567.00"sv,
                 "9,223,372,036,854,775,808.00"sv, "-9,223,372,036,854,775,808.00"sv}},
    {"F", {"0.000000"sv, "42.000000"sv, "-7.000000"sv, "1234567.000000"sv, "9223372036854775808.000000"sv,
           "-9223372036854775808.000000"sv}},
    {"e", {"0.000000e+00"sv, "4.200000e+01"sv, "-7.000000e+00"sv, "1.234567e+06"sv, "9.223372e+18"sv,
           "-9.223372e+18"sv}},
    {"E", {"0.000000E+00"sv, "4.200000E+01"sv, "-7.000000E+00"sv, "1.234567E+06"sv, "9.223372E+18"sv,
           "-9.223372E+18"sv}},
    {".2E", {"0.00E+00"sv, "4.20E+01"sv, "-7.00E+00"sv, "1.23E+06"sv, "9.22E+18"sv, "-9.22E+18"sv}},
    {".0e", {"0e+00"sv, "4e+01"sv, "-7e+00"sv, "1e+06"sv, "9e+18"sv, "-9e+18"sv}},
    {"#.0e", {"0.e+00"sv, "4.e+01"sv, "-7.e+00"sv, "1.e+06"sv, "9.e+18"sv, "-9.e+18"sv}},
    {"+.2e", {"+0.00e+00"sv, "+4.20e+01"sv, "-7.00e+00"sv, "+1.23e+06"sv, "+9.22e+18"sv, "-9.22e+18"sv}},
    {".30e", {"0.000000000000000000000000000000e+00"sv, "4.200000000000000000000000000000e+01"sv,
              "-7.000000000000000000000000000000e+00"sv, "1.234567000000000000000000000000e+06"sv,
              "9.223372036854775808000000000000e+18"sv, "-9.223372036854775808000000000000e+18"sv}},
    {"g", {"0"sv, "42"sv, "-7"sv, "1.23457e+06"sv, "9.22337e+18"sv, "-9.22337e+18"sv}},
    {"G", {"0"sv, "42"sv, "-7"sv, "1.23457E+06"sv, "9.22337E+18"sv, "-9.22337E+18"sv}},
    {"#g", {"0.00000"sv, "42.0000"sv, "-7.00000"sv, "1.23457e+06"sv, "9.22337e+18"sv, "-9.22337e+18"sv}},
    {"#.3g", {"0.00"sv, "42.0"sv, "-7.00"sv, "1.23e+06"sv, "9.22e+18"sv, "-9.22e+18"sv}},
    {"10.3g", {"         0"sv, "        42"sv, "        -7"sv, "  1.23e+06"sv, "  9.22e+18"sv, " -9.22e+18"sv}},
    {".10g", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9.223372037e+18"sv, "-9.223372037e+18"sv}},
    {".0g", {"0"sv, "4e+01"sv, "-7"sv, "1e+06"sv, "9e+18"sv, "-9e+18"sv}},
    {"#.0g", {"0."sv, "4.e+01"sv, "-7."sv, "1.e+06"sv, "9.e+18"sv, "-9.e+18"sv}},
    {"#", {"0"sv, "42"sv, "-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"%", {"0.000000%"sv, "4200.000000%"sv, "-700.000000%"sv, "123456700.000000%"sv,
           "922337203685477580800.000000%"sv, "-922337203685477580800.000000%"sv}},
    {".1%", {"0.0%"sv, "4200.0%"sv, "-700.0%"sv, "123456700.0%"sv, "922337203685477580800.0%"sv,
             "-922337203685477580800.0%"sv}},
    {".0%", {"0%"sv, "4200%"sv, "-700%"sv, "123456700%"sv, "922337203685477580800%"sv, "-922337203685477580800%"sv}},
    {".2%", {"0.00%"sv, "4200.00%"sv, "-700.00%"sv, "123456700.00%"sv, "922337203685477580800.00%"sv,
             "-922337203685477580800.00%"sv}},
    {"z.1f", {"0.0"sv, "42.0"sv, "-7.0"sv, "1234567.0"sv, "9223372036854775808.0"sv, "-9223372036854775808.0"sv}},
    {"+z.0f", {"+0"sv, "+42"sv, "-7"sv, "+1234567"sv, "+9223372036854775808"sv, "-9223372036854775808"sv}},
    {"z>5", {"zzzz0"sv, "zzz42"sv, "zzz-7"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
    {"{^5", {"{{0{{"sv, "{42{{"sv, "{-7{{"sv, "1234567"sv, "9223372036854775807"sv, "-9223372036854775808"sv}},
};

// format(v, spec) for each v of kFloats, in order.
const SpecRow kFloatRows[] = {
    {"", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
          "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {">8", {"     0.1"sv, "1000000000000000.0"sv, "   1e+16"sv, "   1e-05"sv, "    -0.0"sv, "123456.789"sv,
            "     nan"sv, "     inf"sv, "    -inf"sv, "     2.5"sv, "   100.0"sv, "0.3333333333333333"sv}},
    {"<8", {"0.1     "sv, "1000000000000000.0"sv, "1e+16   "sv, "1e-05   "sv, "-0.0    "sv, "123456.789"sv,
            "nan     "sv, "inf     "sv, "-inf    "sv, "2.5     "sv, "100.0   "sv, "0.3333333333333333"sv}},
    {"^9", {"   0.1   "sv, "1000000000000000.0"sv, "  1e+16  "sv, "  1e-05  "sv, "  -0.0   "sv, "123456.789"sv,
            "   nan   "sv, "   inf   "sv, "  -inf   "sv, "   2.5   "sv, "  100.0  "sv, "0.3333333333333333"sv}},
    {"*^9", {"***0.1***"sv, "1000000000000000.0"sv, "**1e+16**"sv, "**1e-05**"sv, "**-0.0***"sv, "123456.789"sv,
             "***nan***"sv, "***inf***"sv, "**-inf***"sv, "***2.5***"sv, "**100.0**"sv, "0.3333333333333333"sv}},
    {"é^9", {"ééé0.1ééé"sv, "1000000000000000.0"sv, "éé1e+16éé"sv, "éé1e-05éé"sv, "éé-0.0ééé"sv, "123456.789"sv,
             "ééénanééé"sv, "éééinfééé"sv, "éé-infééé"sv, "ééé2.5ééé"sv, "éé100.0éé"sv, "0.3333333333333333"sv}},
    {"\n>5", {"\n\n0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "\n-0.0"sv, "123456.789"sv, "\n\nnan"sv,
              "\n\ninf"sv, "\n-inf"sv, "\n\n2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"=+10", {"+      0.1"sv, "+1000000000000000.0"sv, "+    1e+16"sv, "+    1e-05"sv, "-      0.0"sv,
              "+123456.789"sv, "+      nan"sv, "+      inf"sv, "-      inf"sv, "+      2.5"sv, "+    100.0"sv,
              "+0.3333333333333333"sv}},
    {"+", {"+0.1"sv, "+1000000000000000.0"sv, "+1e+16"sv, "+1e-05"sv, "-0.0"sv, "+123456.789"sv, "+nan"sv, "+inf"sv,
           "-inf"sv, "+2.5"sv, "+100.0"sv, "+0.3333333333333333"sv}},
    {" ", {" 0.1"sv, " 1000000000000000.0"sv, " 1e+16"sv, " 1e-05"sv, "-0.0"sv, " 123456.789"sv, " nan"sv, " inf"sv,
           "-inf"sv, " 2.5"sv, " 100.0"sv, " 0.3333333333333333"sv}},
    {"-", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"-^9", {"---0.1---"sv, "1000000000000000.0"sv, "--1e+16--"sv, "--1e-05--"sv, "---0.0---"sv, "123456.789"sv,
             "---nan---"sv, "---inf---"sv, "---inf---"sv, "---2.5---"sv, "--100.0--"sv, "0.3333333333333333"sv}},
    {"08", {"000000.1"sv, "1000000000000000.0"sv, "0001e+16"sv, "0001e-05"sv, "-00000.0"sv, "123456.789"sv,
            "00000nan"sv, "00000inf"sv, "-0000inf"sv, "000002.5"sv, "000100.0"sv, "0.3333333333333333"sv}},
    {"010", {"00000000.1"sv, "1000000000000000.0"sv, "000001e+16"sv, "000001e-05"sv, "-0000000.0"sv, "123456.789"sv,
             "0000000nan"sv, "0000000inf"sv, "-000000inf"sv, "00000002.5"sv, "00000100.0"sv, "0.3333333333333333"sv}},
    {"00", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
            "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"0", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"0>5", {"000.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "0-0.0"sv, "123456.789"sv, "00nan"sv,
             "00inf"sv, "0-inf"sv, "002.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"0=8", {"000000.1"sv, "1000000000000000.0"sv, "0001e+16"sv, "0001e-05"sv, "-00000.0"sv, "123456.789"sv,
             "00000nan"sv, "00000inf"sv, "-0000inf"sv, "000002.5"sv, "000100.0"sv, "0.3333333333333333"sv}},
    {"<08", {"0.100000"sv, "1000000000000000.0"sv, "1e+16000"sv, "1e-05000"sv, "-0.00000"sv, "123456.789"sv,
             "nan00000"sv, "inf00000"sv, "-inf0000"sv, "2.500000"sv, "100.0000"sv, "0.3333333333333333"sv}},
    {"^08", {"000.1000"sv, "1000000000000000.0"sv, "01e+1600"sv, "01e-0500"sv, "00-0.000"sv, "123456.789"sv,
             "00nan000"sv, "00inf000"sv, "00-inf00"sv, "002.5000"sv, "0100.000"sv, "0.3333333333333333"sv}},
    {"=08", {"000000.1"sv, "1000000000000000.0"sv, "0001e+16"sv, "0001e-05"sv, "-00000.0"sv, "123456.789"sv,
             "00000nan"sv, "00000inf"sv, "-0000inf"sv, "000002.5"sv, "000100.0"sv, "0.3333333333333333"sv}},
    {"x<08", {"0.1xxxxx"sv, "1000000000000000.0"sv, "1e+16xxx"sv, "1e-05xxx"sv, "-0.0xxxx"sv, "123456.789"sv,
              "nanxxxxx"sv, "infxxxxx"sv, "-infxxxx"sv, "2.5xxxxx"sv, "100.0xxx"sv, "0.3333333333333333"sv}},
    {"010,", {"0,000,000.1"sv, "1,000,000,000,000,000.0"sv, "00,001e+16"sv, "00,001e-05"sv, "-000,000.0"sv,
              "123,456.789"sv, "0000000nan"sv, "0000000inf"sv, "-000000inf"sv, "0,000,002.5"sv, "0,000,100.0"sv,
              "0.3333333333333333"sv}},
    {"_", {"0.1"sv, "1_000_000_000_000_000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123_456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {",", {"0.1"sv, "1,000,000,000,000,000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123,456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"^+12,", {"    +0.1    "sv, "+1,000,000,000,000,000.0"sv, "   +1e+16   "sv, "   +1e-05   "sv, "    -0.0    "sv,
               "+123,456.789"sv, "    +nan    "sv, "    +inf    "sv, "    -inf    "sv, "    +2.5    "sv,
               "   +100.0   "sv, "+0.3333333333333333"sv}},
    {"=12", {"         0.1"sv, "1000000000000000.0"sv, "       1e+16"sv, "       1e-05"sv, "-        0.0"sv,
             "  123456.789"sv, "         nan"sv, "         inf"sv, "-        inf"sv, "         2.5"sv,
             "       100.0"sv, "0.3333333333333333"sv}},
    {"<", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"^", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"=", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"==5", {"==0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-=0.0"sv, "123456.789"sv, "==nan"sv,
             "==inf"sv, "-=inf"sv, "==2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"c<5", {"0.1cc"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0c"sv, "123456.789"sv, "nancc"sv,
             "infcc"sv, "-infc"sv, "2.5cc"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"n", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0"sv, "123457"sv, "nan"sv, "inf"sv, "-inf"sv, "2.5"sv,
           "100"sv, "0.333333"sv}},
    {".2", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "1.2e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2.5"sv,
            "1e+02"sv, "0.33"sv}},
    {".3f", {"0.100"sv, "1000000000000000.000"sv, "10000000000000000.000"sv, "0.000"sv, "-0.000"sv, "123456.789"sv,
             "nan"sv, "inf"sv, "-inf"sv, "2.500"sv, "100.000"sv, "0.333"sv}},
    {".0f", {"0"sv, "1000000000000000"sv, "10000000000000000"sv, "0"sv, "-0"sv, "123457"sv, "nan"sv, "inf"sv,
             "-inf"sv, "2"sv, "100"sv, "0"sv}},
    {"#.0f", {"0."sv, "1000000000000000."sv, "10000000000000000."sv, "0."sv, "-0."sv, "123457."sv, "nan"sv, "inf"sv,
              "-inf"sv, "2."sv, "100."sv, "0."sv}},
    {".20f", {"0.10000000000000000555"sv, "1000000000000000.00000000000000000000"sv,
              "10000000000000000.00000000000000000000"sv, "0.00001000000000000000"sv, "-0.00000000000000000000"sv,
              "123456.78900000000430736691"sv, "nan"sv, "inf"sv, "-inf"sv, "2.50000000000000000000"sv,
              "100.00000000000000000000"sv, "0.33333333333333331483"sv}},
    {"08.3f", {"0000.100"sv, "1000000000000000.000"sv, "10000000000000000.000"sv, "0000.000"sv, "-000.000"sv,
               "123456.789"sv, "00000nan"sv, "00000inf"sv, "-0000inf"sv, "0002.500"sv, "0100.000"sv, "0000.333"sv}},
    {",.2f", {"0.10"sv, "1,000,000,000,000,000.00"sv, "10,000,000,000,000,000.00"sv, "0.00"sv, "-0.00"sv,
              "123,456.79"sv, "nan"sv, "inf"sv, "-inf"sv, "2.50"sv, "100.00"sv, "0.33"sv}},
    {"_.3f", {"0.100"sv, "1_000_000_000_000_000.000"sv, "10_000_000_000_000_000.000"sv, "0.000"sv, "-0.000"sv,
              "123_456.789"sv, "nan"sv, "inf"sv, "-inf"sv, "2.500"sv, "100.000"sv, "0.333"sv}},
    {"015,.2f", {"0,000,000,000.10"sv, "1,000,000,000,000,000.00"sv, "10,000,000,000,000,000.00"sv,
                 "0,000,000,000.00"sv, "-000,000,000.00"sv, "0,000,123,456.79"sv, "000000000000nan"sv,
                 "000000000000inf"sv, "-00000000000inf"sv, "0,000,000,002.50"sv, "0,000,000,100.00"sv,
                 "0,000,000,000.33"sv}},
    {"F", {"0.100000"sv, "1000000000000000.000000"sv, "10000000000000000.000000"sv, "0.000010"sv, "-0.000000"sv,
           "123456.789000"sv, "NAN"sv, "INF"sv, "-INF"sv, "2.500000"sv, "100.000000"sv, "0.333333"sv}},
    {"e", {"1.000000e-01"sv, "1.000000e+15"sv, "1.000000e+16"sv, "1.000000e-05"sv, "-0.000000e+00"sv,
           "1.234568e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2.500000e+00"sv, "1.000000e+02"sv, "3.333333e-01"sv}},
    {"E", {"1.000000E-01"sv, "1.000000E+15"sv, "1.000000E+16"sv, "1.000000E-05"sv, "-0.000000E+00"sv,
           "1.234568E+05"sv, "NAN"sv, "INF"sv, "-INF"sv, "2.500000E+00"sv, "1.000000E+02"sv, "3.333333E-01"sv}},
    {".2E", {"1.00E-01"sv, "1.00E+15"sv, "1.00E+16"sv, "1.00E-05"sv, "-0.00E+00"sv, "1.23E+05"sv, "NAN"sv, "INF"sv,
             "-INF"sv, "2.50E+00"sv, "1.00E+02"sv, "3.33E-01"sv}},
    {".0e", {"1e-01"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0e+00"sv, "1e+05"sv, "nan"sv, "inf"sv, "-inf"sv,
             "2e+00"sv, "1e+02"sv, "3e-01"sv}},
    {"#.0e", {"1.e-01"sv, "1.e+15"sv, "1.e+16"sv, "1.e-05"sv, "-0.e+00"sv, "1.e+05"sv, "nan"sv, "inf"sv, "-inf"sv,
              "2.e+00"sv, "1.e+02"sv, "3.e-01"sv}},
    {"+.2e", {"+1.00e-01"sv, "+1.00e+15"sv, "+1.00e+16"sv, "+1.00e-05"sv, "-0.00e+00"sv, "+1.23e+05"sv, "+nan"sv,
              "+inf"sv, "-inf"sv, "+2.50e+00"sv, "+1.00e+02"sv, "+3.33e-01"sv}},
    {".30e", {"1.000000000000000055511151231258e-01"sv, "1.000000000000000000000000000000e+15"sv,
              "1.000000000000000000000000000000e+16"sv, "1.000000000000000081803053914031e-05"sv,
              "-0.000000000000000000000000000000e+00"sv, "1.234567890000000043073669075966e+05"sv, "nan"sv, "inf"sv,
              "-inf"sv, "2.500000000000000000000000000000e+00"sv, "1.000000000000000000000000000000e+02"sv,
              "3.333333333333333148296162562474e-01"sv}},
    {"g", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0"sv, "123457"sv, "nan"sv, "inf"sv, "-inf"sv, "2.5"sv,
           "100"sv, "0.333333"sv}},
    {"G", {"0.1"sv, "1E+15"sv, "1E+16"sv, "1E-05"sv, "-0"sv, "123457"sv, "NAN"sv, "INF"sv, "-INF"sv, "2.5"sv,
           "100"sv, "0.333333"sv}},
    {"#g", {"0.100000"sv, "1.00000e+15"sv, "1.00000e+16"sv, "1.00000e-05"sv, "-0.00000"sv, "123457."sv, "nan"sv,
            "inf"sv, "-inf"sv, "2.50000"sv, "100.000"sv, "0.333333"sv}},
    {".3", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0.0"sv, "1.23e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2.5"sv,
            "1e+02"sv, "0.333"sv}},
    {"#.3g", {"0.100"sv, "1.00e+15"sv, "1.00e+16"sv, "1.00e-05"sv, "-0.00"sv, "1.23e+05"sv, "nan"sv, "inf"sv,
              "-inf"sv, "2.50"sv, "100."sv, "0.333"sv}},
    {"10.3g", {"       0.1"sv, "     1e+15"sv, "     1e+16"sv, "     1e-05"sv, "        -0"sv, "  1.23e+05"sv,
               "       nan"sv, "       inf"sv, "      -inf"sv, "       2.5"sv, "       100"sv, "     0.333"sv}},
    {".10g", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0"sv, "123456.789"sv, "nan"sv, "inf"sv, "-inf"sv, "2.5"sv,
              "100"sv, "0.3333333333"sv}},
    {".0g", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0"sv, "1e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2"sv,
             "1e+02"sv, "0.3"sv}},
    {"#.0g", {"0.1"sv, "1.e+15"sv, "1.e+16"sv, "1.e-05"sv, "-0."sv, "1.e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2."sv,
              "1.e+02"sv, "0.3"sv}},
    {".0", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0e+00"sv, "1e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2e+00"sv,
            "1e+02"sv, "0.3"sv}},
    {"#.0", {"0.1"sv, "1.e+15"sv, "1.e+16"sv, "1.e-05"sv, "-0.e+00"sv, "1.e+05"sv, "nan"sv, "inf"sv, "-inf"sv,
             "2.e+00"sv, "1.e+02"sv, "0.3"sv}},
    {".1", {"0.1"sv, "1e+15"sv, "1e+16"sv, "1e-05"sv, "-0e+00"sv, "1e+05"sv, "nan"sv, "inf"sv, "-inf"sv, "2e+00"sv,
            "1e+02"sv, "0.3"sv}},
    {".17", {"0.10000000000000001"sv, "1000000000000000.0"sv, "1e+16"sv, "1.0000000000000001e-05"sv, "-0.0"sv,
             "123456.789"sv, "nan"sv, "inf"sv, "-inf"sv, "2.5"sv, "100.0"sv, "0.33333333333333331"sv}},
    {"#", {"0.1"sv, "1000000000000000.0"sv, "1.e+16"sv, "1.e-05"sv, "-0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"%", {"10.000000%"sv, "100000000000000000.000000%"sv, "1000000000000000000.000000%"sv, "0.001000%"sv,
           "-0.000000%"sv, "12345678.900000%"sv, "nan%"sv, "inf%"sv, "-inf%"sv, "250.000000%"sv, "10000.000000%"sv,
           "33.333333%"sv}},
    {".1%", {"10.0%"sv, "100000000000000000.0%"sv, "1000000000000000000.0%"sv, "0.0%"sv, "-0.0%"sv, "12345678.9%"sv,
             "nan%"sv, "inf%"sv, "-inf%"sv, "250.0%"sv, "10000.0%"sv, "33.3%"sv}},
    {".0%", {"10%"sv, "100000000000000000%"sv, "1000000000000000000%"sv, "0%"sv, "-0%"sv, "12345679%"sv, "nan%"sv,
             "inf%"sv, "-inf%"sv, "250%"sv, "10000%"sv, "33%"sv}},
    {".2%", {"10.00%"sv, "100000000000000000.00%"sv, "1000000000000000000.00%"sv, "0.00%"sv, "-0.00%"sv,
             "12345678.90%"sv, "nan%"sv, "inf%"sv, "-inf%"sv, "250.00%"sv, "10000.00%"sv, "33.33%"sv}},
    {"z.1f", {"0.1"sv, "1000000000000000.0"sv, "10000000000000000.0"sv, "0.0"sv, "0.0"sv, "123456.8"sv, "nan"sv,
              "inf"sv, "-inf"sv, "2.5"sv, "100.0"sv, "0.3"sv}},
    {"+z.0f", {"+0"sv, "+1000000000000000"sv, "+10000000000000000"sv, "+0"sv, "+0"sv, "+123457"sv, "+nan"sv,
               "+inf"sv, "-inf"sv, "+2"sv, "+100"sv, "+0"sv}},
    {"z", {"0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "0.0"sv, "123456.789"sv, "nan"sv, "inf"sv,
           "-inf"sv, "2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"z>5", {"zz0.1"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "z-0.0"sv, "123456.789"sv, "zznan"sv,
             "zzinf"sv, "z-inf"sv, "zz2.5"sv, "100.0"sv, "0.3333333333333333"sv}},
    {"{^5", {"{0.1{"sv, "1000000000000000.0"sv, "1e+16"sv, "1e-05"sv, "-0.0{"sv, "123456.789"sv, "{nan{"sv,
             "{inf{"sv, "-inf{"sv, "{2.5{"sv, "100.0"sv, "0.3333333333333333"sv}},
};

// format(v, spec) for each v of kStrs, in order.
const SpecRow kStrRows[] = {
    {"", {"abc"sv, "héllo"sv, ""sv}},
    {">8", {"     abc"sv, "   héllo"sv, "        "sv}},
    {"<8", {"abc     "sv, "héllo   "sv, "        "sv}},
    {"^9", {"   abc   "sv, "  héllo  "sv, "         "sv}},
    {"*^9", {"***abc***"sv, "**héllo**"sv, "*********"sv}},
    {"é^9", {"éééabcééé"sv, "ééhélloéé"sv, "ééééééééé"sv}},
    {"\n>5", {"\n\nabc"sv, "héllo"sv, "\n\n\n\n\n"sv}},
    {"-^9", {"---abc---"sv, "--héllo--"sv, "---------"sv}},
    {"08", {"abc00000"sv, "héllo000"sv, "00000000"sv}},
    {"010", {"abc0000000"sv, "héllo00000"sv, "0000000000"sv}},
    {"00", {"abc"sv, "héllo"sv, ""sv}},
    {"0", {"abc"sv, "héllo"sv, ""sv}},
    {"0>5", {"00abc"sv, "héllo"sv, "00000"sv}},
    {"<08", {"abc00000"sv, "héllo000"sv, "00000000"sv}},
    {"^08", {"00abc000"sv, "0héllo00"sv, "00000000"sv}},
    {"x<08", {"abcxxxxx"sv, "hélloxxx"sv, "xxxxxxxx"sv}},
    {"<", {"abc"sv, "héllo"sv, ""sv}},
    {"^", {"abc"sv, "héllo"sv, ""sv}},
    {"c<5", {"abccc"sv, "héllo"sv, "ccccc"sv}},
    {"s", {"abc"sv, "héllo"sv, ""sv}},
    {">10.3s", {"       abc"sv, "       hél"sv, "          "sv}},
    {".2", {"ab"sv, "hé"sv, ""sv}},
    {".0s", {""sv, ""sv, ""sv}},
    {".2s", {"ab"sv, "hé"sv, ""sv}},
    {"^5.1s", {"  a  "sv, "  h  "sv, "     "sv}},
    {".3", {"abc"sv, "hél"sv, ""sv}},
    {".0", {""sv, ""sv, ""sv}},
    {".1", {"a"sv, "h"sv, ""sv}},
    {".17", {"abc"sv, "héllo"sv, ""sv}},
    {"z>5", {"zzabc"sv, "héllo"sv, "zzzzz"sv}},
    {"{^5", {"{abc{"sv, "héllo"sv, "{{{{{"sv}},
};

// format(v, spec) for each v of kBools, in order.
const SpecRow kBoolRows[] = {
    {"", {"True"sv, "False"sv}},
    {">8", {"       1"sv, "       0"sv}},
    {"^9", {"    1    "sv, "    0    "sv}},
    {"d", {"1"sv, "0"sv}},
    {"#x", {"0x1"sv, "0x0"sv}},
    {"08", {"00000001"sv, "00000000"sv}},
    {"+", {"+1"sv, "+0"sv}},
    {"c", {"\x01"sv, "\x00"sv}},
    {".2f", {"1.00"sv, "0.00"sv}},
    {"e", {"1.000000e+00"sv, "0.000000e+00"sv}},
    {"%", {"100.000000%"sv, "0.000000%"sv}},
    {"n", {"1"sv, "0"sv}},
    {"=+10", {"+        1"sv, "+        0"sv}},
};

// format(value, spec) of one value.
const Case kSingles[] = {
    {I(0), "c", "\x00"sv},
    {I(42), "c", "*"sv},
    {F(0.1), ".60f", "0.100000000000000005551115123125782702118158340454101562500000"sv},
    {F(1e+22), "", "1e+22"sv},
    {F(5e-324), "", "5e-324"sv},
    {F(5e-324), ".3", "4.94e-324"sv},
    {F(1e+22), ",.0f", "10,000,000,000,000,000,000,000"sv},
    {F(9007199254740992.0), ",.1f", "9,007,199,254,740,992.0"sv},
    {F(1e+23), ".17g", "9.9999999999999992e+22"sv},
    {F(0.5), ".0f", "0"sv},
    {F(1.5), ".0f", "2"sv},
    {F(2.675), ".2f", "2.67"sv},
    {I(1234567), "_x", "12_d687"sv},
    {I(INT64_MIN), "_b", "-1000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000"sv},
    {I(INT64_MAX), "#o", "0o777777777777777777777"sv},
    {I(65), "c", "A"sv},
    {I(1114111), "c", "\U0010ffff"sv},
    {I(233), "c", "é"sv},
    {F(1.0), "n", "1"sv},
    {F(1e+16), "n", "1e+16"sv},
    {I(-1234567), "015,", "-00,001,234,567"sv},
    {F(1234.5), "012,.1f", "00,001,234.5"sv},
    {F(-0.0001), "z.1f", "0.0"sv},
    {F(-0.0), "z", "0.0"sv},
    {F(-0.0), "z.0e", "0e+00"sv},
    {I(-1), "z.1f", "-1.0"sv},
    {S("abc"), "0", "abc"sv},
    {S("abc"), "08", "abc00000"sv},
    {U(18446744073709551615u), "", "18446744073709551615"sv},
    {U(18446744073709551615u), "x", "ffffffffffffffff"sv},
    {U(18446744073709551615u), ",", "18,446,744,073,709,551,615"sv},
    {U(9223372036854775808u), "#b", "0b1000000000000000000000000000000000000000000000000000000000000000"sv},
    {U(18446744073709551615u), ".3e", "1.845e+19"sv},
    {U(18446744073709551615u), "+", "+18446744073709551615"sv},
};

// Specs Python refuses for the value, and its ValueError's (TypeError's for None) text.
const Case kErrors[] = {
    {I(0), ",x", "Cannot specify ',' with 'x'."sv},
    {I(0), ",b", "Cannot specify ',' with 'b'."sv},
    {I(-7), "c", "%c arg not in range(0x110000)"sv},
    {I(1234567), "c", "%c arg not in range(0x110000)"sv},
    {I(INT64_MAX), "c", "%c arg not in range(0x110000)"sv},
    {I(INT64_MIN), "c", "%c arg not in range(0x110000)"sv},
    {I(0), "_c", "Cannot specify '_' with 'c'."sv},
    {I(0), ",c", "Cannot specify ',' with 'c'."sv},
    {I(0), "_n", "Cannot specify '_' with 'n'."sv},
    {I(0), ",n", "Cannot specify ',' with 'n'."sv},
    {I(0), "s", "Unknown format code 's' for object of type 'int'"sv},
    {I(0), ",s", "Cannot specify ',' with 's'."sv},
    {I(0), "_s", "Cannot specify '_' with 's'."sv},
    {I(0), ">10.3s", "Unknown format code 's' for object of type 'int'"sv},
    {I(0), ".2", "Precision not allowed in integer format specifier"sv},
    {I(0), ".0s", "Unknown format code 's' for object of type 'int'"sv},
    {I(0), ".2s", "Unknown format code 's' for object of type 'int'"sv},
    {I(0), "^5.1s", "Unknown format code 's' for object of type 'int'"sv},
    {I(0), ".3", "Precision not allowed in integer format specifier"sv},
    {I(0), ".0", "Precision not allowed in integer format specifier"sv},
    {I(0), "#.0", "Precision not allowed in integer format specifier"sv},
    {I(0), ".1", "Precision not allowed in integer format specifier"sv},
    {I(0), ".17", "Precision not allowed in integer format specifier"sv},
    {I(0), "z", "Negative zero coercion (z) not allowed in integer format specifier"sv},
    {I(0), "zd", "Negative zero coercion (z) not allowed in integer format specifier"sv},
    {I(0), ",_", "Cannot specify both ',' and '_'."sv},
    {I(0), "_,", "Cannot specify both ',' and '_'."sv},
    {I(0), ".", "Format specifier missing precision"sv},
    {I(0), ".f", "Format specifier missing precision"sv},
    {I(0), "5.", "Format specifier missing precision"sv},
    {I(0), "5.5.5", "Invalid format specifier '5.5.5' for object of type 'int'"sv},
    {I(0), "99999999999999999999", "Too many decimal digits in format string"sv},
    {F(0.1), ",d", "Unknown format code 'd' for object of type 'float'"sv},
    {F(0.1), "_d", "Unknown format code 'd' for object of type 'float'"sv},
    {F(0.1), "#,d", "Unknown format code 'd' for object of type 'float'"sv},
    {F(0.1), "x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), "X", "Unknown format code 'X' for object of type 'float'"sv},
    {F(0.1), "b", "Unknown format code 'b' for object of type 'float'"sv},
    {F(0.1), "o", "Unknown format code 'o' for object of type 'float'"sv},
    {F(0.1), "#x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), "#X", "Unknown format code 'X' for object of type 'float'"sv},
    {F(0.1), "#b", "Unknown format code 'b' for object of type 'float'"sv},
    {F(0.1), "#o", "Unknown format code 'o' for object of type 'float'"sv},
    {F(0.1), "_b", "Unknown format code 'b' for object of type 'float'"sv},
    {F(0.1), "_x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), "_o", "Unknown format code 'o' for object of type 'float'"sv},
    {F(0.1), "#_x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), "#_b", "Unknown format code 'b' for object of type 'float'"sv},
    {F(0.1), "#10x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), "#010x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), "+#x", "Unknown format code 'x' for object of type 'float'"sv},
    {F(0.1), ",x", "Cannot specify ',' with 'x'."sv},
    {F(0.1), ",b", "Cannot specify ',' with 'b'."sv},
    {F(0.1), "c", "Unknown format code 'c' for object of type 'float'"sv},
    {F(0.1), "_c", "Cannot specify '_' with 'c'."sv},
    {F(0.1), ",c", "Cannot specify ',' with 'c'."sv},
    {F(0.1), "d", "Unknown format code 'd' for object of type 'float'"sv},
    {F(0.1), "_n", "Cannot specify '_' with 'n'."sv},
    {F(0.1), ",n", "Cannot specify ',' with 'n'."sv},
    {F(0.1), "s", "Unknown format code 's' for object of type 'float'"sv},
    {F(0.1), ",s", "Cannot specify ',' with 's'."sv},
    {F(0.1), "_s", "Cannot specify '_' with 's'."sv},
    {F(0.1), ">10.3s", "Unknown format code 's' for object of type 'float'"sv},
    {F(0.1), ".0s", "Unknown format code 's' for object of type 'float'"sv},
    {F(0.1), ".2s", "Unknown format code 's' for object of type 'float'"sv},
    {F(0.1), "^5.1s", "Unknown format code 's' for object of type 'float'"sv},
    {F(0.1), "zd", "Unknown format code 'd' for object of type 'float'"sv},
    {F(0.1), ",_", "Cannot specify both ',' and '_'."sv},
    {F(0.1), "_,", "Cannot specify both ',' and '_'."sv},
    {F(0.1), ".", "Format specifier missing precision"sv},
    {F(0.1), ".f", "Format specifier missing precision"sv},
    {F(0.1), "5.", "Format specifier missing precision"sv},
    {F(0.1), "5.5.5", "Invalid format specifier '5.5.5' for object of type 'float'"sv},
    {F(0.1), "99999999999999999999", "Too many decimal digits in format string"sv},
    {S("abc"), "=+10", "Sign not allowed in string format specifier"sv},
    {S("abc"), "+", "Sign not allowed in string format specifier"sv},
    {S("abc"), " ", "Space not allowed in string format specifier"sv},
    {S("abc"), "-", "Sign not allowed in string format specifier"sv},
    {S("abc"), "0=8", "'=' alignment not allowed in string format specifier"sv},
    {S("abc"), "=08", "'=' alignment not allowed in string format specifier"sv},
    {S("abc"), "010,", "Cannot specify ',' with 's'."sv},
    {S("abc"), "_", "Cannot specify '_' with 's'."sv},
    {S("abc"), ",", "Cannot specify ',' with 's'."sv},
    {S("abc"), ",d", "Unknown format code 'd' for object of type 'str'"sv},
    {S("abc"), "_d", "Unknown format code 'd' for object of type 'str'"sv},
    {S("abc"), "#,d", "Unknown format code 'd' for object of type 'str'"sv},
    {S("abc"), "^+12,", "Cannot specify ',' with 's'."sv},
    {S("abc"), "=12", "'=' alignment not allowed in string format specifier"sv},
    {S("abc"), "=", "'=' alignment not allowed in string format specifier"sv},
    {S("abc"), "==5", "'=' alignment not allowed in string format specifier"sv},
    {S("abc"), "x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), "X", "Unknown format code 'X' for object of type 'str'"sv},
    {S("abc"), "b", "Unknown format code 'b' for object of type 'str'"sv},
    {S("abc"), "o", "Unknown format code 'o' for object of type 'str'"sv},
    {S("abc"), "#x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), "#X", "Unknown format code 'X' for object of type 'str'"sv},
    {S("abc"), "#b", "Unknown format code 'b' for object of type 'str'"sv},
    {S("abc"), "#o", "Unknown format code 'o' for object of type 'str'"sv},
    {S("abc"), "_b", "Unknown format code 'b' for object of type 'str'"sv},
    {S("abc"), "_x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), "_o", "Unknown format code 'o' for object of type 'str'"sv},
    {S("abc"), "#_x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), "#_b", "Unknown format code 'b' for object of type 'str'"sv},
    {S("abc"), "#10x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), "#010x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), "+#x", "Unknown format code 'x' for object of type 'str'"sv},
    {S("abc"), ",x", "Cannot specify ',' with 'x'."sv},
    {S("abc"), ",b", "Cannot specify ',' with 'b'."sv},
    {S("abc"), "c", "Unknown format code 'c' for object of type 'str'"sv},
    {S("abc"), "_c", "Cannot specify '_' with 'c'."sv},
    {S("abc"), ",c", "Cannot specify ',' with 'c'."sv},
    {S("abc"), "d", "Unknown format code 'd' for object of type 'str'"sv},
    {S("abc"), "n", "Unknown format code 'n' for object of type 'str'"sv},
    {S("abc"), "_n", "Cannot specify '_' with 'n'."sv},
    {S("abc"), ",n", "Cannot specify ',' with 'n'."sv},
    {S("abc"), ",s", "Cannot specify ',' with 's'."sv},
    {S("abc"), "_s", "Cannot specify '_' with 's'."sv},
    {S("abc"), ".3f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), ".0f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "#.0f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), ".20f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "08.3f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), ",.2f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "_.3f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "015,.2f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "F", "Unknown format code 'F' for object of type 'str'"sv},
    {S("abc"), "e", "Unknown format code 'e' for object of type 'str'"sv},
    {S("abc"), "E", "Unknown format code 'E' for object of type 'str'"sv},
    {S("abc"), ".2E", "Unknown format code 'E' for object of type 'str'"sv},
    {S("abc"), ".0e", "Unknown format code 'e' for object of type 'str'"sv},
    {S("abc"), "#.0e", "Unknown format code 'e' for object of type 'str'"sv},
    {S("abc"), "+.2e", "Unknown format code 'e' for object of type 'str'"sv},
    {S("abc"), ".30e", "Unknown format code 'e' for object of type 'str'"sv},
    {S("abc"), "g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), "G", "Unknown format code 'G' for object of type 'str'"sv},
    {S("abc"), "#g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), "#.3g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), "10.3g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), ".10g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), ".0g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), "#.0g", "Unknown format code 'g' for object of type 'str'"sv},
    {S("abc"), "#.0", "Alternate form (#) not allowed in string format specifier"sv},
    {S("abc"), "#", "Alternate form (#) not allowed in string format specifier"sv},
    {S("abc"), "%", "Unknown format code '%' for object of type 'str'"sv},
    {S("abc"), ".1%", "Unknown format code '%' for object of type 'str'"sv},
    {S("abc"), ".0%", "Unknown format code '%' for object of type 'str'"sv},
    {S("abc"), ".2%", "Unknown format code '%' for object of type 'str'"sv},
    {S("abc"), "z.1f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "+z.0f", "Unknown format code 'f' for object of type 'str'"sv},
    {S("abc"), "z", "Negative zero coercion (z) not allowed in string format specifier"sv},
    {S("abc"), "zd", "Unknown format code 'd' for object of type 'str'"sv},
    {S("abc"), ",_", "Cannot specify both ',' and '_'."sv},
    {S("abc"), "_,", "Cannot specify both ',' and '_'."sv},
    {S("abc"), ".", "Format specifier missing precision"sv},
    {S("abc"), ".f", "Format specifier missing precision"sv},
    {S("abc"), "5.", "Format specifier missing precision"sv},
    {S("abc"), "5.5.5", "Invalid format specifier '5.5.5' for object of type 'str'"sv},
    {S("abc"), "99999999999999999999", "Too many decimal digits in format string"sv},
    {B(true), "s", "Unknown format code 's' for object of type 'bool'"sv},
    {B(true), ".3", "Precision not allowed in integer format specifier"sv},
    {B(true), ",x", "Cannot specify ',' with 'x'."sv},
    {B(true), "z", "Negative zero coercion (z) not allowed in integer format specifier"sv},
    {I(1114112), "c", "%c arg not in range(0x110000)"sv},
    {I(-1), "c", "%c arg not in range(0x110000)"sv},
    {I(INT64_MAX), "c", "%c arg not in range(0x110000)"sv},
    {N(), ">3", "unsupported format string passed to NoneType.__format__"sv},
    {N(), "s", "unsupported format string passed to NoneType.__format__"sv},
    {I(5), ".2d", "Precision not allowed in integer format specifier"sv},
    {S("a"), "d", "Unknown format code 'd' for object of type 'str'"sv},
    {I(1), ",x", "Cannot specify ',' with 'x'."sv},
    {S("a"), "+", "Sign not allowed in string format specifier"sv},
    {I(3), "5.5.5", "Invalid format specifier '5.5.5' for object of type 'int'"sv},
    {F(1.5), "5.5.5", "Invalid format specifier '5.5.5' for object of type 'float'"sv},
    {S("a"), "5.5.5", "Invalid format specifier '5.5.5' for object of type 'str'"sv},
};

// repr(x) of floats.
const FloatCase kFloatReprs[] = {
    {0.1, "0.1"},
    {0.30000000000000004, "0.30000000000000004"},
    {1000000000000000.0, "1000000000000000.0"},
    {1e+16, "1e+16"},
    {1e-05, "1e-05"},
    {0.0001, "0.0001"},
    {0.0001234, "0.0001234"},
    {-0.0, "-0.0"},
    {0.0, "0.0"},
    {123456.789, "123456.789"},
    {2.5, "2.5"},
    {0.3333333333333333, "0.3333333333333333"},
    {100.0, "100.0"},
    {1e+22, "1e+22"},
    {1e+23, "1e+23"},
    {5e-324, "5e-324"},
    {1.7976931348623157e+308, "1.7976931348623157e+308"},
    {2.2250738585072014e-308, "2.2250738585072014e-308"},
    {9007199254740992.0, "9007199254740992.0"},
    {1234567890123456.8, "1234567890123456.8"},
    {1.2345678901234568e+16, "1.2345678901234568e+16"},
    {-1.5, "-1.5"},
    {3.0, "3.0"},
    {1.5e-07, "1.5e-07"},
    {NAN, "nan"},
    {INFINITY, "inf"},
    {-INFINITY, "-inf"},
};

// repr(s) and ascii(s) of strings.
const StrCase kStrReprs[] = {
    {"abc"sv, "'abc'", "'abc'"},
    {""sv, "''", "''"},
    {"it's"sv, "\"it's\"", "\"it's\""},
    {"say \"hi\""sv, "'say \"hi\"'", "'say \"hi\"'"},
    {"both ' and \""sv, "'both \\' and \"'", "'both \\' and \"'"},
    {"back\\slash"sv, "'back\\\\slash'", "'back\\\\slash'"},
    {"tab\tnew\nline\rend"sv, "'tab\\tnew\\nline\\rend'", "'tab\\tnew\\nline\\rend'"},
    {"\x00\x01\x1f\x7f"sv, "'\\x00\\x01\\x1f\\x7f'", "'\\x00\\x01\\x1f\\x7f'"},
    {"héllo"sv, "'héllo'", "'h\\xe9llo'"},
    {"日本語"sv, "'日本語'", "'\\u65e5\\u672c\\u8a9e'"},
    {"emoji 😀"sv, "'emoji 😀'", "'emoji \\U0001f600'"},
    {"\xc2\x80\xc2\x9f"sv, "'\\x80\\x9f'", "'\\x80\\x9f'"},
    {"\u00a0nbsp"sv, "'\\xa0nbsp'", "'\\xa0nbsp'"},
    {"soft\u00adhyphen"sv, "'soft\\xadhyphen'", "'soft\\xadhyphen'"},
    {"zero\u200bwidth"sv, "'zero\\u200bwidth'", "'zero\\u200bwidth'"},
    {"line\u2028sep"sv, "'line\\u2028sep'", "'line\\u2028sep'"},
    {"tag\U000e0001"sv, "'tag\\U000e0001'", "'tag\\U000e0001'"},
};
// clang-format on

// What format(v, spec) gives, as the tables spell it: the text, or "error: " and why.
std::string format_or_error(const ConstValue& v, std::string_view spec) {
  std::string error;
  std::optional<std::string> text = python_format(v, spec, &error);
  if (!text) return "error: " + error;
  EXPECT_TRUE(error.empty()) << "an error message beside a result: " << error;
  return *text;
}

// "format(1.5, '>8')", for failure messages.
std::string call(const ConstValue& v, std::string_view spec) {
  return "format(" + python_repr(v) + ", " + python_repr(S(spec)) + ")";
}

template <size_t N>
void expect_rows(const ConstValue (&values)[N], const SpecRow* begin, const SpecRow* end) {
  for (const SpecRow* row = begin; row != end; ++row) {
    ASSERT_EQ(row->expected.size(), N) << "spec '" << row->spec << "'";
    for (size_t k = 0; k < N; ++k)
      EXPECT_EQ(format_or_error(values[k], row->spec), row->expected[k]) << call(values[k], row->spec);
  }
}

TEST(PythonFormat, Integers) { expect_rows(kInts, std::begin(kIntRows), std::end(kIntRows)); }

TEST(PythonFormat, Floats) { expect_rows(kFloats, std::begin(kFloatRows), std::end(kFloatRows)); }

TEST(PythonFormat, Strings) { expect_rows(kStrs, std::begin(kStrRows), std::end(kStrRows)); }

// A bool is True/False with the empty spec and its int (1/0) with any other.
TEST(PythonFormat, Bools) { expect_rows(kBools, std::begin(kBoolRows), std::end(kBoolRows)); }

TEST(PythonFormat, SingleValues) {
  for (const Case& c : kSingles) EXPECT_EQ(format_or_error(c.value, c.spec), c.expected) << call(c.value, c.spec);
}

// A refused spec is nullopt, and the error says why as Python's ValueError does (TypeError for None).
TEST(PythonFormat, RefusedSpecsSayWhyInPythonsWords) {
  for (const Case& c : kErrors) {
    std::string error;
    std::optional<std::string> text = python_format(c.value, c.spec, &error);
    EXPECT_FALSE(text.has_value()) << call(c.value, c.spec) << " gave '" << text.value_or("") << "'";
    EXPECT_EQ(error, c.expected) << call(c.value, c.spec);
  }
}

TEST(PythonFormat, FloatReprIsPythons) {
  for (const FloatCase& c : kFloatReprs) {
    EXPECT_EQ(python_float(c.value), c.repr);
    EXPECT_EQ(python_str(F(c.value)), c.repr);
    EXPECT_EQ(python_repr(F(c.value)), c.repr);
    EXPECT_EQ(python_ascii(F(c.value)), c.repr);
  }
}

TEST(PythonFormat, StringStrReprAndAsciiArePythons) {
  for (const StrCase& c : kStrReprs) {
    EXPECT_EQ(python_str(S(c.text)), c.text);
    EXPECT_EQ(python_repr(S(c.text)), c.repr) << "repr of " << c.repr;
    EXPECT_EQ(python_ascii(S(c.text)), c.ascii) << "ascii of " << c.repr;
  }
}

TEST(PythonFormat, StrAndReprOfIntsBoolsAndNone) {
  EXPECT_EQ(python_str(I(-42)), "-42");
  EXPECT_EQ(python_repr(I(INT64_MIN)), "-9223372036854775808");
  EXPECT_EQ(python_str(U(18446744073709551615u)), "18446744073709551615");
  EXPECT_EQ(python_str(B(true)), "True");
  EXPECT_EQ(python_repr(B(false)), "False");
  EXPECT_EQ(python_ascii(B(true)), "True");
  EXPECT_EQ(python_str(N()), "None");
  EXPECT_EQ(python_repr(N()), "None");
  // The empty spec is str(): format(True, '') is 'True', format(None, '') is 'None'.
  EXPECT_EQ(format_or_error(B(true), ""), "True");
  EXPECT_EQ(format_or_error(N(), ""), "None");
}

// Dtypes read as Triton's: str() its short name, repr() the module path.
TEST(PythonFormat, DtypesAsTritonPrintsThem) {
  EXPECT_EQ(python_str(ConstValue::type(ir::Scalar::F32)), "fp32");
  EXPECT_EQ(python_str(ConstValue::type(ir::Scalar::BF16)), "bf16");
  EXPECT_EQ(python_str(ConstValue::type(ir::Scalar::I64)), "int64");
  EXPECT_EQ(python_repr(ConstValue::type(ir::Scalar::F32)), "triton.language.float32");
  EXPECT_EQ(python_repr(ConstValue::type(ir::Scalar::U8)), "triton.language.uint8");
  EXPECT_EQ(format_or_error(ConstValue::type(ir::Scalar::F16), ""), "fp16");
  ConstValue pointer = ConstValue::type(ir::Scalar::F32);
  pointer.pointer = true;
  EXPECT_EQ(python_str(pointer), "pointer<fp32>");
  EXPECT_EQ(python_repr(pointer), "pointer<fp32>");
  // Only the empty spec applies: dtype has no __format__ of its own (object.__format__).
  EXPECT_EQ(format_or_error(ConstValue::type(ir::Scalar::F32), ">8"),
            "error: unsupported format string passed to dtype.__format__");
}

}  // namespace
}  // namespace python_format_test
}  // namespace tegula::frontend
