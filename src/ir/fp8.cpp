#include "ir/fp8.h"

#include <algorithm>
#include <cmath>

#include "support/diagnostic.h"

namespace tegula::ir {

namespace {

struct Fp8Format {
  int mantissa_bits;
  int bias;
  uint32_t max_code;  // the largest finite magnitude's code
  bool has_inf;       // e5m2: exponent all ones is inf/NaN; e4m3: only S.1111.111 is NaN
};

Fp8Format format_of(Scalar s) {
  TEGULA_ASSERT(is_fp8(s), "not an fp8 type");
  return s == Scalar::F8E4M3 ? Fp8Format{3, 7, 0x7e, false} : Fp8Format{2, 15, 0x7b, true};
}

}  // namespace

uint8_t encode_fp8(double x, Scalar s) {
  Fp8Format f = format_of(s);
  if (std::isnan(x)) return 0x7f;
  uint32_t sign = std::signbit(x) ? 0x80u : 0u;
  double a = std::fabs(x);
  if (a == 0.0) return static_cast<uint8_t>(sign);
  if (std::isinf(a)) return static_cast<uint8_t>(sign | f.max_code);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): its binade is 2^(e-1)
  if (e - 1 > 2 * f.bias + 2) return static_cast<uint8_t>(sign | f.max_code);  // far above the largest
  // Subnormals share the smallest normal binade's step.
  int binade = std::max(e - 1, 1 - f.bias);
  // The magnitude in steps of this binade (exact scaling), rounded to nearest even.
  double steps = std::nearbyint(std::ldexp(a, f.mantissa_bits - binade));
  // Normal codes are (biased exponent << M) + (steps - 2^M); a carry to 2^(M+1)
  // steps moves to the next binade by itself, and subnormals have binade 0.
  double code = std::ldexp(static_cast<double>(binade + f.bias - 1), f.mantissa_bits) + steps;
  if (code > f.max_code) return static_cast<uint8_t>(sign | f.max_code);
  return static_cast<uint8_t>(sign | static_cast<uint32_t>(code));
}

double decode_fp8(uint8_t bits, Scalar s) {
  Fp8Format f = format_of(s);
  double sign = (bits & 0x80u) ? -1.0 : 1.0;
  uint32_t magnitude = bits & 0x7fu;
  uint32_t exponent = magnitude >> f.mantissa_bits, mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  if (!f.has_inf && magnitude == 0x7fu) return std::nan("");
  if (f.has_inf && exponent == (0x7fu >> f.mantissa_bits))
    return mantissa == 0 ? sign * INFINITY : std::nan("");
  if (exponent == 0) return sign * std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits);
  return sign * std::ldexp(static_cast<double>(mantissa + (1u << f.mantissa_bits)),
                           static_cast<int>(exponent) - f.bias - f.mantissa_bits);
}

double round_to_fp8(double x, Scalar s) { return decode_fp8(encode_fp8(x, s), s); }

bool uses_fp8(const Function& fn) {
  for (size_t i = 0; i < fn.num_values(); ++i)
    if (is_fp8(fn.type(ValueId{static_cast<uint32_t>(i)}).scalar)) return true;
  return false;
}

}  // namespace tegula::ir
