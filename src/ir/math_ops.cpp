// The functions of the `math` op and the verifier rules of `math` and `hint`
// (see math_ops.h).
#include "ir/math_ops.h"

#include <cmath>
#include <variant>

#include "support/diagnostic.h"

namespace tegula::ir {

namespace {

constexpr MathFunction kMathFunctions[] = {
    {MathFn::Tan, "tan", 1},         {MathFn::Atan, "atan", 1},       {MathFn::Asin, "asin", 1},
    {MathFn::Acos, "acos", 1},       {MathFn::Sinh, "sinh", 1},       {MathFn::Cosh, "cosh", 1},
    {MathFn::Asinh, "asinh", 1},     {MathFn::Acosh, "acosh", 1},     {MathFn::Atanh, "atanh", 1},
    {MathFn::Erfc, "erfc", 1},       {MathFn::Exp10, "exp10", 1},     {MathFn::Expm1, "expm1", 1},
    {MathFn::Log10, "log10", 1},     {MathFn::Log1p, "log1p", 1},     {MathFn::Cbrt, "cbrt", 1},
    {MathFn::Rint, "rint", 1},       {MathFn::Round, "round", 1},     {MathFn::Trunc, "trunc", 1},
    {MathFn::Atan2, "atan2", 2},     {MathFn::Hypot, "hypot", 2},     {MathFn::Copysign, "copysign", 2},
    {MathFn::Nextafter, "nextafter", 2},
};

template <class F>
std::optional<F> evaluate(MathFn fn, F x, F y) {
  switch (fn) {
    case MathFn::Tan: return std::tan(x);
    case MathFn::Atan: return std::atan(x);
    case MathFn::Asin: return std::asin(x);
    case MathFn::Acos: return std::acos(x);
    case MathFn::Sinh: return std::sinh(x);
    case MathFn::Cosh: return std::cosh(x);
    case MathFn::Asinh: return std::asinh(x);
    case MathFn::Acosh: return std::acosh(x);
    case MathFn::Atanh: return std::atanh(x);
    case MathFn::Erfc: return std::erfc(x);
    case MathFn::Exp10: return std::nullopt;
    case MathFn::Expm1: return std::expm1(x);
    case MathFn::Log10: return std::log10(x);
    case MathFn::Log1p: return std::log1p(x);
    case MathFn::Cbrt: return std::cbrt(x);
    case MathFn::Rint: return std::nearbyint(x);  // the default rounding mode: ties to even
    case MathFn::Round: return std::round(x);
    case MathFn::Trunc: return std::trunc(x);
    case MathFn::Atan2: return std::atan2(x, y);
    case MathFn::Hypot: return std::hypot(x, y);
    case MathFn::Copysign: return std::copysign(x, y);
    case MathFn::Nextafter: return std::nextafter(x, y);
  }
  return std::nullopt;
}

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string math_problem(const Function& fn, const Op& op) {
  const Attr* a = op.attr("fn");
  if (a == nullptr || !std::holds_alternative<std::string>(*a)) return "needs a string attribute `fn`";
  const std::string& name = std::get<std::string>(*a);
  const MathFunction* f = find_math_function(name);
  if (f == nullptr) return "unknown function \"" + name + "\"";
  if (static_cast<int>(op.operands.size()) != f->arity)
    return "\"" + name + "\" takes " + std::to_string(f->arity) + " operands, got " +
           std::to_string(op.operands.size());
  const Type& result = fn.type(op.results[0]);
  if (result.is_pointer() || !is_float(result.scalar)) return "needs a float result, got " + to_string(result);
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (!(fn.type(op.operands[i]) == result))
      return "operand " + std::to_string(i) + " (" + to_string(fn.type(op.operands[i])) +
             ") must have the result type (" + to_string(result) + ")";
  return "";
}

std::string hint_problem(const Function& fn, const Op& op) {
  const Type& x = fn.type(op.operands[0]);
  if (!(fn.type(op.results[0]) == x))
    return "the result (" + to_string(fn.type(op.results[0])) + ") must have the operand type (" + to_string(x) + ")";
  size_t entries = x.is_tile() ? x.shape.size() : 1;
  for (const char* name : {kHintDivisibility, kHintContiguity, kHintConstancy}) {
    const Attr* a = op.attr(name);
    if (a == nullptr) continue;
    const auto* values = std::get_if<std::vector<int64_t>>(a);
    if (values == nullptr) return std::string("attribute `") + name + "` must be a list of integers";
    if (values->size() != entries)
      return std::string("attribute `") + name + "` needs " + std::to_string(entries) + " entries (one per dimension), got " +
             std::to_string(values->size());
    for (int64_t v : *values)
      if (!is_power_of_two(v))
        return std::string("attribute `") + name + "` holds " + std::to_string(v) + ", not a power of two";
  }
  return "";
}

}  // namespace

const MathFunction* find_math_function(std::string_view name) {
  for (const MathFunction& f : kMathFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

const MathFunction& math_function(MathFn fn) {
  for (const MathFunction& f : kMathFunctions)
    if (f.fn == fn) return f;
  TEGULA_ASSERT(false, "math function missing from the table");
}

const MathFunction& math_function_of(const Op& op) {
  const MathFunction* f = find_math_function(op.str_attr("fn"));
  TEGULA_ASSERT(f != nullptr, "math op with an unknown function");
  return *f;
}

std::optional<float> evaluate_math(MathFn fn, float x, float y) { return evaluate<float>(fn, x, y); }
std::optional<double> evaluate_math(MathFn fn, double x, double y) { return evaluate<double>(fn, x, y); }

std::string math_family_problem(const Function& fn, const Op& op) {
  if (op.kind == OpKind::Math) return math_problem(fn, op);
  if (op.kind == OpKind::Hint) return hint_problem(fn, op);
  return "not a math or hint op";
}

}  // namespace tegula::ir
