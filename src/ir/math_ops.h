// Two elementwise ops of the tile IR that are not plain arithmetic:
//
//  * `math`: the long tail of floating-point library functions (tan, atan2,
//    log1p, rint, ...), one op kind whose attribute `fn` names the function.
//    The common functions with their own op kinds (exp, log, sin, sqrt, ...)
//    keep them; everything else goes here so that adding a function is one
//    row of the table below, not an op kind in every pass and backend.
//    Operands: `arity` floats of the result type. The function is the C
//    library's (`tanf` for f32, `tan` for f64); backends call their math
//    library (libm/SLEEF on the CPU, the CUDA math library on the GPU), so
//    the last bit of the transcendental ones may differ between backends
//    (rint, round, trunc, copysign and nextafter are exact everywhere).
//  * `hint`: the identity on its operand, carrying facts the program promises
//    about the value for the axis analysis (tl.multiple_of, tl.max_contiguous,
//    tl.max_constancy, tl.assume): attributes `divisibility`, `contiguity`,
//    `constancy`, each an optional list of powers of two, one per dimension
//    (one entry for a scalar). A backend may rely on them (vector loads), so a
//    false hint gives unspecified results, as in Triton.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/ir.h"

namespace tegula::ir {

enum class MathFn : uint8_t {
  Tan, Atan, Asin, Acos, Sinh, Cosh, Asinh, Acosh, Atanh, Erfc, Exp10, Expm1, Log10, Log1p, Cbrt,
  Rint,   // round to nearest integer, ties to even (also tl nearbyint)
  Round,  // round to nearest integer, ties away from zero
  Trunc,  // round toward zero
  Atan2, Hypot, Copysign, Nextafter,
};

struct MathFunction {
  MathFn fn;
  const char* name;  // the `fn` attribute and the C library name of the double version
  int arity;         // 1 or 2 operands
};

// The row of `name` ("tan"), or nullptr.
const MathFunction* find_math_function(std::string_view name);
const MathFunction& math_function(MathFn fn);
// The function a `math` op computes (the op must have passed the verifier).
const MathFunction& math_function_of(const Op& op);

// The host's value of the function in f32 or f64 (the op's own precision),
// for constant folding; nothing when the host has no such function (exp10
// is not standard C++).
std::optional<float> evaluate_math(MathFn fn, float x, float y);
std::optional<double> evaluate_math(MathFn fn, double x, double y);

// "" when `op` (a math or hint op) is well formed, else what is wrong, for
// the verifier to report.
std::string math_family_problem(const Function& fn, const Op& op);

// Hint attribute names, in the order the axis analysis reads them.
inline constexpr const char* kHintDivisibility = "divisibility";
inline constexpr const char* kHintContiguity = "contiguity";
inline constexpr const char* kHintConstancy = "constancy";

}  // namespace tegula::ir
