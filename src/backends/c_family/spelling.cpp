#include "backends/c_family/spelling.h"

#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "support/diagnostic.h"

namespace tegula::backends::c_family {

using ir::Scalar;

namespace {

struct ScalarSpelling {
  const char* cpu;
  const char* cuda;
};

// The dialects' columns of ir/scalar_types.def.
constexpr ScalarSpelling kScalarSpellings[] = {
#define SCALAR(name, text, bits, kind, mantissa, bias, specials, ties, tl, short_name, digits, cpu, cuda) {cpu, cuda},
#include "ir/scalar_types.def"
#undef SCALAR
};
static_assert(std::size(kScalarSpellings) == ir::kNumScalars);

}  // namespace

std::string scalar_type(Scalar s, Dialect d) {
  const ScalarSpelling& row = kScalarSpellings[static_cast<int>(s)];
  return d == Dialect::Cpu ? row.cpu : row.cuda;
}

std::string memory_type(Scalar s, Dialect d) { return scalar_type(s == Scalar::I1 ? Scalar::U8 : s, d); }

std::string element_type(const ir::Type& t, Dialect d) {
  return t.is_pointer() ? memory_type(t.scalar, d) + "*" : scalar_type(t.scalar, d);
}

std::string const_type(const ir::Type& t, Dialect d) {
  return t.is_pointer() ? element_type(t, d) + " const" : "const " + element_type(t, d);
}

bool is_half(Scalar s) { return ir::is_narrow_float(s); }

std::string address_type(Dialect d) { return d == Dialect::Cpu ? "uintptr_t" : "unsigned long long"; }

std::string compute_type(Scalar s, Dialect d) { return is_half(s) ? "float" : scalar_type(s, d); }

// The preludes' conversions are named after the IR's kinds: tg_f16_to_f32,
// tg_f32_to_bf16, tg_f8e4m3_to_f32, ...
std::string to_compute(Scalar s, const std::string& expr) {
  if (!is_half(s)) return expr;
  return "tg_" + std::string(ir::to_string(s)) + "_to_f32(" + expr + ")";
}

std::string from_compute(Scalar s, const std::string& expr) {
  if (!is_half(s)) return expr;
  return "tg_f32_to_" + std::string(ir::to_string(s)) + "(" + expr + ")";
}

std::string int_literal(int64_t value, Scalar s) {
  if (s == Scalar::I1) return value != 0 ? "true" : "false";
  int bits = ir::bit_width(s);
  if (!ir::is_signed(s)) {
    uint64_t u = static_cast<uint64_t>(value);
    if (bits < 64) u &= (uint64_t{1} << bits) - 1;
    return std::to_string(u) + (bits == 64 ? "ull" : "u");
  }
  if (bits == 64) {
    if (value == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return std::to_string(value) + "LL";
  }
  if (value == INT32_MIN) return "(-2147483647 - 1)";
  return std::to_string(value);
}

std::string shortest_decimal(double value, int max_digits) {
  char buf[64];
  for (int precision = 1; precision <= max_digits; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (max_digits == 9 ? std::strtof(buf, nullptr) == static_cast<float>(value) : std::strtod(buf, nullptr) == value)
      break;
  }
  std::string text = buf;
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

}  // namespace tegula::backends::c_family
