#include "frontend/python_format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "ir/type.h"
#include "support/utf8.h"

namespace tegula::frontend {

namespace {


size_t code_points(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += utf8_length(static_cast<unsigned char>(s[i]))) ++n;
  return n;
}

// The first `n` code points of `s`.
std::string_view first_code_points(std::string_view s, size_t n) {
  size_t i = 0;
  for (; i < s.size() && n > 0; --n) i += utf8_length(static_cast<unsigned char>(s[i]));
  return s.substr(0, std::min(i, s.size()));
}

// The code point at s[i] (a stray or truncated byte reads as itself).
uint32_t decode_utf8(std::string_view s, size_t i, size_t* length) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = utf8_length(c);
  if (n == 1 || i + n > s.size()) {
    *length = 1;
    return c;
  }
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *length = n;
  return cp;
}


std::string hex_escape(char kind, uint32_t cp, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\%c%0*x", kind, digits, cp);
  return buf;
}

// Whether Python's str.isprintable() holds for code point `cp`: false for controls, format characters,
// separators other than the space, surrogates and private use. (Python also escapes unassigned code
// points, which this table does not know; kernels' strings do not hold them.)
bool is_printable(uint32_t cp) {
  struct Range {
    uint32_t first, last;
  };
  static constexpr Range kUnprintable[] = {
      {0x00, 0x1F},       {0x7F, 0xA0},       {0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},
      {0x6DD, 0x6DD},     {0x70F, 0x70F},     {0x1680, 0x1680},   {0x180E, 0x180E},   {0x2000, 0x200F},
      {0x2028, 0x202F},   {0x205F, 0x206F},   {0x3000, 0x3000},   {0xD800, 0xF8FF},   {0xFEFF, 0xFEFF},
      {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
      {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
  };
  for (const Range& r : kUnprintable)
    if (cp >= r.first && cp <= r.last) return false;
  return true;
}

std::string escape_code_point(uint32_t cp) {
  if (cp < 0x100) return hex_escape('x', cp, 2);
  if (cp < 0x10000) return hex_escape('u', cp, 4);
  return hex_escape('U', cp, 8);
}

// Python's repr of a str: single quotes unless the text holds one and no double quote.
std::string quote_string(std::string_view s) {
  char q = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    size_t length = 1;
    uint32_t cp = decode_utf8(s, i, &length);
    if (cp == static_cast<unsigned char>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!is_printable(cp)) {
      out += escape_code_point(cp);
    } else {
      out.append(s.substr(i, length));
    }
    i += length;
  }
  return out + q;
}

// What a format spec says, as Python's mini-language reads it:
// [[fill]align][sign]["z"]["#"]["0"][width][grouping]["." precision][type]
// Fill and alignment are resolved: a '0' before the width fills with zeros (unless a fill is written)
// and, for numbers without an alignment, pads after the sign.
struct Spec {
  std::string fill = " ";  // one code point
  char align = 0;          // '<' '>' '^' '='
  char sign = 0;           // '+' '-' ' ' or 0
  bool no_negative_zero = false;  // 'z'
  bool alternate = false;         // '#'
  int64_t width = -1;
  char grouping = 0;  // ',' '_' or 0
  int64_t precision = -1;
  char type = 0;      // the written type, else the value's default ('d' for int, 's' for str, 0 for float)
};

bool is_align(char c) { return c == '<' || c == '>' || c == '^' || c == '='; }

// Reads decimal digits at s[i]; -1 when there are none, -2 when they pass 2^20 (no text a kernel
// prints is a megabyte wide, and the limit keeps a hostile spec from taking the compiler's memory).
int64_t read_count(std::string_view s, size_t& i) {
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return -1;
  int64_t n = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    n = n * 10 + (s[i] - '0');
    if (n > (1 << 20)) return -2;
  }
  return n;
}

std::optional<Spec> parse_spec(std::string_view s, const char* type_name, char default_type, char default_align,
                               std::string* error) {
  Spec spec;
  size_t i = 0;
  bool fill_written = false;
  size_t first = s.empty() ? 0 : utf8_length(static_cast<unsigned char>(s[0]));
  if (first < s.size() && is_align(s[first])) {
    spec.fill = std::string(s.substr(0, first));
    spec.align = s[first];
    fill_written = true;
    i = first + 1;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == 'z') spec.no_negative_zero = (++i, true);
  if (i < s.size() && s[i] == '#') spec.alternate = (++i, true);
  if (i < s.size() && s[i] == '0') {
    if (!fill_written) spec.fill = "0";
    if (!spec.align && default_align == '>') spec.align = '=';
    ++i;
  }
  if (!spec.align) spec.align = default_align;
  spec.width = read_count(s, i);
  bool too_big = spec.width == -2;
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) {
    spec.grouping = s[i++];
    if (i < s.size() && (s[i] == ',' || s[i] == '_') && s[i] != spec.grouping) {
      *error = "Cannot specify both ',' and '_'.";
      return std::nullopt;
    }
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    spec.precision = read_count(s, i);
    if (spec.precision == -1) {
      *error = "Format specifier missing precision";
      return std::nullopt;
    }
    too_big |= spec.precision == -2;
  }
  if (too_big) {
    *error = "Too many decimal digits in format string";
    return std::nullopt;
  }
  spec.type = i < s.size() ? s[i++] : default_type;
  if (i < s.size()) {
    *error = "Invalid format specifier '" + std::string(s) + "' for object of type '" + type_name + "'";
    return std::nullopt;
  }
  if (spec.grouping) {
    // Grouping goes with decimal and float types; '_' also with binary, octal and hex (every 4 digits).
    static constexpr std::string_view kDecimal = "deEfFgG%";
    bool allowed = spec.type == 0 || kDecimal.find(spec.type) != std::string_view::npos ||
                   (spec.grouping == '_' && std::string_view("boxX").find(spec.type) != std::string_view::npos);
    if (!allowed) {
      *error = std::string("Cannot specify '") + spec.grouping + "' with '" + spec.type + "'.";
      return std::nullopt;
    }
  }
  return spec;
}

// Groups the digits of `digits` (no sign) by `every` with `sep`.
std::string group(std::string_view digits, char sep, size_t every) {
  std::string out;
  size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % every == 0) out += sep;
    out += digits[i];
  }
  return out;
}

// Lays out `sign` + `prefix` + `body` in the spec's width. With '=' the fill goes between the sign and
// the digits, and zeros filling grouped digits are grouped too (0,001,234): `raw_digits` are the digits
// before grouping, `after_digits` what follows them in `body`.
std::string pad(const Spec& spec, std::string_view sign, std::string_view prefix, std::string body,
                std::string_view raw_digits = {}, size_t group_every = 3, std::string_view after_digits = {}) {
  auto width = static_cast<size_t>(std::max<int64_t>(spec.width, 0));
  size_t used = sign.size() + prefix.size() + code_points(body);
  if (used >= width) return std::string(sign) + std::string(prefix) + body;
  size_t missing = width - used;
  if (spec.align == '=' && spec.fill == "0" && spec.grouping && !raw_digits.empty()) {
    std::string digits(raw_digits);
    std::string grouped = body;
    size_t target = width - sign.size() - prefix.size();
    while (code_points(grouped) < target) {
      digits.insert(digits.begin(), '0');
      grouped = group(digits, spec.grouping, group_every) + std::string(after_digits);
    }
    return std::string(sign) + std::string(prefix) + grouped;
  }
  auto repeat = [&](size_t n) {
    std::string out;
    for (size_t k = 0; k < n; ++k) out += spec.fill;
    return out;
  };
  switch (spec.align) {
    case '<': return std::string(sign) + std::string(prefix) + body + repeat(missing);
    case '^': return repeat(missing / 2) + std::string(sign) + std::string(prefix) + body + repeat(missing - missing / 2);
    case '=': return std::string(sign) + std::string(prefix) + repeat(missing) + body;
    default: return repeat(missing) + std::string(sign) + std::string(prefix) + body;
  }
}

std::string sign_text(const Spec& spec, bool negative) {
  if (negative) return "-";
  if (spec.sign == '+') return "+";
  if (spec.sign == ' ') return " ";
  return "";
}

std::optional<std::string> format_string(const std::string& s, const Spec& spec, std::string* error) {
  if (spec.type != 's') {
    *error = std::string("Unknown format code '") + spec.type + "' for object of type 'str'";
    return std::nullopt;
  }
  if (spec.sign == ' ') return (*error = "Space not allowed in string format specifier", std::nullopt);
  if (spec.sign) return (*error = "Sign not allowed in string format specifier", std::nullopt);
  if (spec.no_negative_zero)
    return (*error = "Negative zero coercion (z) not allowed in string format specifier", std::nullopt);
  if (spec.alternate) return (*error = "Alternate form (#) not allowed in string format specifier", std::nullopt);
  if (spec.align == '=') return (*error = "'=' alignment not allowed in string format specifier", std::nullopt);
  std::string body(spec.precision >= 0 ? first_code_points(s, static_cast<size_t>(spec.precision)) : s);
  return pad(spec, "", "", body);
}

// C's printf of a float in one of its conversions ('e', 'f', 'g'), with Python's '#'.
std::string printf_float(double x, char conversion, int64_t precision, bool alternate) {
  char format[16];
  std::snprintf(format, sizeof format, "%%%s.*%c", alternate ? "#" : "", conversion);
  int n = std::snprintf(nullptr, 0, format, static_cast<int>(precision), x);
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, static_cast<int>(precision), x);
  out.resize(static_cast<size_t>(n));
  return out;
}

// Trailing zeros of a mantissa dropped, and the point if nothing follows it.
std::string strip_zeros(std::string mantissa) {
  if (mantissa.find('.') == std::string::npos) return mantissa;
  while (mantissa.back() == '0') mantissa.pop_back();
  if (mantissa.back() == '.') mantissa.pop_back();
  return mantissa;
}

// A finite, non-negative float formatted without a type: repr without a precision; with precision p,
// p significant digits in scientific notation when the exponent is below -4 or at least p - 1, else
// positional with at least one digit after the point. '#' keeps the point and the trailing zeros.
std::string untyped_float(double x, int64_t precision, bool alternate) {
  if (precision < 0) {
    std::string text = python_float(x);
    if (alternate && text.find('.') == std::string::npos) text.insert(text.find('e'), ".");
    return text;
  }
  int64_t p = std::max<int64_t>(precision, 1);
  std::string sci = printf_float(x, 'e', p - 1, alternate);
  size_t e = sci.find('e');
  int64_t exponent = std::atoi(sci.c_str() + e + 1);
  if (exponent < -4 || exponent >= p - 1) return alternate ? sci : strip_zeros(sci.substr(0, e)) + sci.substr(e);
  std::string fixed = printf_float(x, 'f', p - 1 - exponent, alternate);
  if (alternate) return fixed;
  fixed = strip_zeros(fixed);
  return fixed.find('.') == std::string::npos ? fixed + ".0" : fixed;
}

std::optional<std::string> format_float(double x, const Spec& spec, std::string* error) {
  static constexpr std::string_view kTypes = "eEfFgGn%";
  if (spec.type && kTypes.find(spec.type) == std::string_view::npos) {
    *error = std::string("Unknown format code '") + spec.type + "' for object of type 'float'";
    return std::nullopt;
  }
  bool upper = spec.type == 'E' || spec.type == 'F' || spec.type == 'G';
  bool negative = std::signbit(x) && !std::isnan(x);
  double magnitude = std::fabs(x);
  std::string body;
  if (std::isnan(x) || std::isinf(x)) {
    body = std::isnan(x) ? "nan" : "inf";
    if (upper) body = std::isnan(x) ? "NAN" : "INF";
    if (spec.type == '%') body += '%';
  } else {
    int64_t precision = spec.precision;
    switch (spec.type) {
      case 'e':
      case 'E': body = printf_float(magnitude, 'e', precision < 0 ? 6 : precision, spec.alternate); break;
      case 'f':
      case 'F': body = printf_float(magnitude, 'f', precision < 0 ? 6 : precision, spec.alternate); break;
      case '%': body = printf_float(magnitude * 100, 'f', precision < 0 ? 6 : precision, spec.alternate) + "%"; break;
      case 'g':
      case 'G':
      case 'n':
        body = printf_float(magnitude, 'g', precision < 0 ? 6 : std::max<int64_t>(precision, 1), spec.alternate);
        break;
      default:
        body = untyped_float(magnitude, precision, spec.alternate);
    }
    if (upper)
      for (char& c : body) c = static_cast<char>(c == 'e' ? 'E' : c);
    if (negative && spec.no_negative_zero && body.find_first_of("123456789") == std::string::npos) negative = false;
  }
  std::string digits, rest;
  size_t end = body.find_first_not_of("0123456789");
  digits = body.substr(0, end);
  rest = end == std::string::npos ? "" : body.substr(end);
  if (spec.grouping && !digits.empty() && std::isfinite(x)) body = group(digits, spec.grouping, 3) + rest;
  return pad(spec, sign_text(spec, negative), "", body, std::isfinite(x) ? digits : "", 3, rest);
}

std::optional<std::string> format_integer(const ConstValue& v, const Spec& spec, const char* type_name,
                                          std::string* error) {
  static constexpr std::string_view kFloatTypes = "eEfFgG%";
  if (kFloatTypes.find(spec.type) != std::string_view::npos)
    return format_float(v.as_double(), spec, error);
  static constexpr std::string_view kTypes = "bcdoxXn";
  if (kTypes.find(spec.type) == std::string_view::npos) {
    *error = std::string("Unknown format code '") + spec.type + "' for object of type '" + type_name + "'";
    return std::nullopt;
  }
  if (spec.precision >= 0) return (*error = "Precision not allowed in integer format specifier", std::nullopt);
  if (spec.no_negative_zero)
    return (*error = "Negative zero coercion (z) not allowed in integer format specifier", std::nullopt);
  char type = spec.type;
  bool negative = !v.is_unsigned && v.i < 0;
  uint64_t magnitude = v.is_unsigned || v.i >= 0 ? static_cast<uint64_t>(v.i) : 0 - static_cast<uint64_t>(v.i);
  if (type == 'c') {
    if (spec.sign) return (*error = "Sign not allowed with integer format specifier 'c'", std::nullopt);
    if (spec.alternate)
      return (*error = "Alternate form (#) not allowed with integer format specifier 'c'", std::nullopt);
    if (negative || magnitude > 0x10FFFF) return (*error = "%c arg not in range(0x110000)", std::nullopt);
    std::string body;
    append_utf8(body, static_cast<uint32_t>(magnitude));
    return pad(spec, "", "", body);
  }
  unsigned base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
  const char* digit_chars = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string digits;
  do {
    digits.insert(digits.begin(), digit_chars[magnitude % base]);
    magnitude /= base;
  } while (magnitude > 0);
  std::string prefix;
  if (spec.alternate && base != 10) prefix = std::string("0") + (type == 'X' ? 'X' : type);
  size_t every = base == 10 ? 3 : 4;
  std::string body = spec.grouping ? group(digits, spec.grouping, every) : digits;
  return pad(spec, sign_text(spec, negative), prefix, body, digits, every);
}

}  // namespace

std::string python_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // The fewest significant digits that read back as x; then Python's choice of notation:
  // positional for decimal exponents -4 to 15, scientific (with at least two exponent digits) beyond.
  char buf[64];
  int digits = 1;
  for (; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  digits = std::min(digits, 17);
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, x);
  std::string sci = buf;
  size_t e = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e + 1);
  if (exponent >= -4 && exponent < 16) {
    std::snprintf(buf, sizeof buf, "%.*f", std::max(digits - 1 - exponent, 0), x);
    std::string text = buf;
    if (text.find('.') == std::string::npos) text += ".0";
    return text;
  }
  std::string mantissa = sci.substr(0, e);
  if (mantissa.find('.') != std::string::npos) {
    while (mantissa.back() == '0') mantissa.pop_back();
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return mantissa + buf;
}

std::string python_str(const ConstValue& v) {
  switch (v.kind) {
    case ConstValue::Kind::Float: return python_float(v.f);
    case ConstValue::Kind::Str: return v.s;
    case ConstValue::Kind::DType:
      if (v.type_form == ConstValue::TypeForm::Scalar) {
        std::string name = ir::scalar_info(v.dtype).short_name;
        return v.pointer ? "pointer<" + name + ">" : name;
      }
      if (v.type_form == ConstValue::TypeForm::Void) return "void";
      return to_string(v);
    default: return to_string(v);
  }
}

std::string python_repr(const ConstValue& v) {
  if (v.kind == ConstValue::Kind::Str) return quote_string(v.s);
  if (v.kind == ConstValue::Kind::DType && v.type_form == ConstValue::TypeForm::Scalar && !v.pointer)
    return std::string("triton.language.") + ir::scalar_info(v.dtype).tl_name;
  return python_str(v);
}

std::string python_ascii(const ConstValue& v) {
  std::string repr = python_repr(v), out;
  for (size_t i = 0; i < repr.size();) {
    size_t length = 1;
    uint32_t cp = decode_utf8(repr, i, &length);
    if (cp < 0x80) out += static_cast<char>(cp);
    else out += escape_code_point(cp);
    i += length;
  }
  return out;
}

std::optional<std::string> python_format(const ConstValue& v, std::string_view spec_text, std::string* error) {
  if (spec_text.empty()) return python_str(v);
  if (!v.is_numeric() && v.kind != ConstValue::Kind::Str) {
    *error = std::string("unsupported format string passed to ") +
             (v.kind == ConstValue::Kind::None ? "NoneType" : kind_name(v)) + ".__format__";
    return std::nullopt;
  }
  bool is_str = v.kind == ConstValue::Kind::Str, is_float = v.kind == ConstValue::Kind::Float;
  const char* type_name = kind_name(v);  // "int", "bool", "float", "str"
  std::optional<Spec> spec =
      parse_spec(spec_text, type_name, is_str ? 's' : is_float ? '\0' : 'd', is_str ? '<' : '>', error);
  if (!spec) return std::nullopt;
  if (is_str) return format_string(v.s, *spec, error);
  if (is_float) return format_float(v.f, *spec, error);
  return format_integer(v, *spec, type_name, error);  // a bool formats as its int under a non-empty spec
}

}  // namespace tegula::frontend
