#include "ir/float_format.h"

#include <algorithm>
#include <cmath>

#include "support/diagnostic.h"

namespace tegula::ir {

namespace {

struct Format {
  int mantissa;           // explicit mantissa bits
  int exponent;           // exponent bits
  int bias;
  uint64_t sign;          // the sign bit
  uint64_t max_code;      // the largest finite magnitude's code
  uint64_t limit;         // the largest magnitude a conversion gives (max_code, but 1.75 for f8e4b15)
  uint64_t overflow;      // what a magnitude beyond `limit` encodes as: inf, or `limit` (fp8 saturates)
  uint64_t nan;           // all ones below the sign; the sign bit alone (fnuz); `limit` (+1.75) without NaN
  FloatSpecials specials;
  FloatTies ties;
};

Format format_of(Scalar s) {
  const ScalarInfo& info = scalar_info(s);
  TEGULA_ASSERT(info.kind == ScalarKind::Float, std::string("not a float type: ") + info.name);
  Format f;
  f.mantissa = info.mantissa;
  f.exponent = info.bits - 1 - info.mantissa;
  f.bias = info.bias;
  f.sign = uint64_t{1} << (f.exponent + f.mantissa);
  f.specials = info.specials;
  f.ties = info.ties;
  uint64_t top_exponent = ((uint64_t{1} << f.exponent) - 1) << f.mantissa;
  uint64_t all_mantissa = (uint64_t{1} << f.mantissa) - 1;
  uint64_t inf = top_exponent, all_ones = top_exponent | all_mantissa;
  switch (f.specials) {
    case FloatSpecials::Ieee: f.max_code = inf - 1; break;
    case FloatSpecials::TopNan: f.max_code = all_ones - 1; break;
    case FloatSpecials::None:
    case FloatSpecials::Fnuz: f.max_code = all_ones; break;
  }
  // Without NaN the top code is a value, but conversions stop one below it
  // (Triton's conversion to f8e4b15 clamps at 1.75).
  f.limit = f.specials == FloatSpecials::None ? all_ones - 1 : f.max_code;
  f.overflow = is_fp8(s) ? f.limit : inf;
  switch (f.specials) {
    case FloatSpecials::Ieee:
    case FloatSpecials::TopNan: f.nan = all_ones; break;
    case FloatSpecials::None: f.nan = f.limit; break;
    case FloatSpecials::Fnuz: f.nan = f.sign; break;
  }
  return f;
}

// A magnitude's code with the sign; the fnuz formats have no -0 (its code is their NaN).
uint64_t with_sign(const Format& f, bool negative, uint64_t code) {
  if (code == 0 && f.specials == FloatSpecials::Fnuz) return 0;
  return negative ? f.sign | code : code;
}

}  // namespace

uint64_t encode_float(double x, Scalar s) {
  Format f = format_of(s);
  if (std::isnan(x)) return f.nan;
  bool negative = std::signbit(x);
  double a = std::fabs(x);
  if (a == 0.0) return with_sign(f, negative, 0);
  // An infinity saturates like any large value, except in the fnuz formats:
  // having no infinity, they make it their NaN (Triton's AMD rule).
  if (std::isinf(a)) return f.specials == FloatSpecials::Fnuz ? f.nan : with_sign(f, negative, f.overflow);
  // Subnormals share the smallest normal binade's step.
  int binade = std::max(std::ilogb(a), 1 - f.bias);
  // Far above the largest value: saturates here, which keeps the shifts below in range.
  if (binade > f.bias + 1) return with_sign(f, negative, f.overflow);
  // The magnitude in steps of this binade (exact scaling), rounded to nearest
  // with the format's rule for ties.
  double scaled = std::ldexp(a, f.mantissa - binade);
  auto steps = static_cast<uint64_t>(f.ties == FloatTies::Even ? std::nearbyint(scaled) : std::round(scaled));
  // Normal codes are ((binade + bias) << M) + (steps - 2^M); a carry to
  // 2^(M+1) steps moves to the next binade by itself, and subnormals (binade
  // 1 - bias, fewer than 2^M steps) are their steps.
  uint64_t code = (static_cast<uint64_t>(binade + f.bias - 1) << f.mantissa) + steps;
  return with_sign(f, negative, code > f.limit ? f.overflow : code);
}

double decode_float(uint64_t bits, Scalar s) {
  Format f = format_of(s);
  if (f.specials == FloatSpecials::Fnuz && bits == f.nan) return std::nan("");
  int width = f.exponent + f.mantissa;
  double sign = (bits >> width) & 1 ? -1.0 : 1.0;
  uint64_t magnitude = bits & (f.sign - 1);
  if (magnitude > f.max_code)
    return f.specials == FloatSpecials::Ieee && magnitude == f.max_code + 1 ? sign * INFINITY : std::nan("");
  uint64_t exponent = magnitude >> f.mantissa, mantissa = magnitude & ((uint64_t{1} << f.mantissa) - 1);
  if (exponent == 0) return sign * std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa);
  return sign * std::ldexp(static_cast<double>(mantissa + (uint64_t{1} << f.mantissa)),
                           static_cast<int>(exponent) - f.bias - f.mantissa);
}

double round_to_float(double x, Scalar s) {
  if (s == Scalar::F64) return x;
  return decode_float(encode_float(x, s), s);
}

}  // namespace tegula::ir
