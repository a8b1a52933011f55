// Elementwise ops and value sources (constant, program_id, num_programs,
// arange). Arithmetic is table-driven: each row gives the C++ form of the op
// on floats, on integers and on i1, with $0..$2 standing for the operands'
// elements, $T for the result's C++ type and $C for the compute type.
//
// Numerics (docs/backend-cpu.md): f16/bf16 are widened to float, computed,
// and rounded back after every op; integer arithmetic wraps (tg_add & co.);
// division by zero, out-of-range shifts and float->int overflow are defined
// (see prelude.h) instead of undefined.
#include <string>
#include <vector>

#include "backends/cpu/codegen_context.h"
#include "ir/fp8.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;
using ir::Scalar;

namespace {

struct ArithmeticForm {
  OpKind kind;
  const char* on_float;  // nullptr: not defined on floats
  const char* on_int;    // nullptr: not defined on integers
  const char* on_bool;   // i1, read as integers modulo 2
};

// i1 rows follow arithmetic modulo 2 and the integer conventions of
// prelude.h (x / 0 == 0, x % 0 == x, shifts by >= 1 give 0). Masks use `&`
// and `|`, not `&&` and `||`: both operands are 0/1 and already computed,
// and a short circuit would turn the second into a conditional read that
// keeps g++ from vectorizing the loop.
constexpr ArithmeticForm kArithmetic[] = {
    {OpKind::Add, "$0 + $1", "tg_add($0, $1)", "$0 != $1"},
    {OpKind::Sub, "$0 - $1", "tg_sub($0, $1)", "$0 != $1"},
    {OpKind::Mul, "$0 * $1", "tg_mul($0, $1)", "$0 & $1"},
    {OpKind::Div, "$0 / $1", "tg_div($0, $1)", "$0 && $1"},
    {OpKind::Rem, "std::fmod($0, $1)", "tg_rem($0, $1)", "$0 && !$1"},
    {OpKind::And, nullptr, "($T)($0 & $1)", "$0 & $1"},
    {OpKind::Or, nullptr, "($T)($0 | $1)", "$0 | $1"},
    {OpKind::Xor, nullptr, "($T)($0 ^ $1)", "$0 != $1"},
    {OpKind::Shl, nullptr, "tg_shl($0, $1)", "$0 && !$1"},
    {OpKind::Shr, nullptr, "tg_shr($0, $1)", "$0 && !$1"},
    {OpKind::Min, "tg_fmin($0, $1)", "std::min($0, $1)", "$0 & $1"},
    {OpKind::Max, "tg_fmax($0, $1)", "std::max($0, $1)", "$0 | $1"},
    {OpKind::UMulHi, nullptr, "tg_umulhi($0, $1)", "false"},
    {OpKind::Pow, "std::pow($0, $1)", "tg_ipow($0, $1)", "$0 || !$1"},
    {OpKind::Fma, "std::fma($0, $1, $2)", "tg_add(tg_mul($0, $1), $2)", "($0 && $1) != $2"},
    {OpKind::Neg, "-$0", "tg_neg($0)", "$0"},
    {OpKind::Not, nullptr, "($T)~$0", "!$0"},
    {OpKind::Abs, "std::fabs($0)", "tg_abs($0)", "$0"},
    {OpKind::Exp, "std::exp($0)", nullptr, nullptr},
    {OpKind::Exp2, "std::exp2($0)", nullptr, nullptr},
    {OpKind::Log, "std::log($0)", nullptr, nullptr},
    {OpKind::Log2, "std::log2($0)", nullptr, nullptr},
    {OpKind::Sqrt, "std::sqrt($0)", nullptr, nullptr},
    {OpKind::Rsqrt, "$C(1) / std::sqrt($0)", nullptr, nullptr},
    {OpKind::Sin, "std::sin($0)", nullptr, nullptr},
    {OpKind::Cos, "std::cos($0)", nullptr, nullptr},
    {OpKind::Tanh, "std::tanh($0)", nullptr, nullptr},
    {OpKind::Erf, "std::erf($0)", nullptr, nullptr},
    {OpKind::Floor, "std::floor($0)", nullptr, nullptr},
    {OpKind::Ceil, "std::ceil($0)", nullptr, nullptr},
};

const ArithmeticForm* find_arithmetic(OpKind kind) {
  for (const ArithmeticForm& f : kArithmetic)
    if (f.kind == kind) return &f;
  return nullptr;
}

std::string substitute(std::string_view form, const std::vector<std::string>& operands,
                       const std::string& result_type, const std::string& compute_type) {
  std::string out;
  for (size_t i = 0; i < form.size(); ++i) {
    if (form[i] != '$' || i + 1 >= form.size()) {
      out.push_back(form[i]);
      continue;
    }
    char c = form[++i];
    if (c == 'T') {
      out += result_type;
    } else if (c == 'C') {
      out += compute_type;
    } else {
      size_t k = static_cast<size_t>(c - '0');
      TEGULA_ASSERT(k < operands.size(), "operand placeholder out of range");
      out += operands[k];
    }
  }
  return out;
}

// Whether min/max propagate NaN: the optional attr `propagate_nan` ("all" or
// a non-zero integer). Without it they return the non-NaN operand.
bool propagates_nan(const ir::Op& op) {
  const ir::Attr* a = op.attr("propagate_nan");
  if (a == nullptr) return false;
  if (std::holds_alternative<std::string>(*a)) return std::get<std::string>(*a) == "all";
  if (std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a) != 0;
  return false;
}

std::string arithmetic_expr(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  const ArithmeticForm* form = find_arithmetic(op.kind);
  TEGULA_ASSERT(form != nullptr, std::string("no C++ form for ") + ir::name(op.kind));
  Scalar s = ctx.fn.type(op.results[0]).scalar;
  const char* text = s == Scalar::I1 ? form->on_bool : ir::is_float(s) ? form->on_float : form->on_int;
  TEGULA_ASSERT(text != nullptr, std::string(ir::name(op.kind)) + " is not defined on " + ir::to_string(s));
  if (ir::is_float(s) && (op.kind == OpKind::Min || op.kind == OpKind::Max) && propagates_nan(op))
    text = op.kind == OpKind::Min ? "tg_fmin_nan($0, $1)" : "tg_fmax_nan($0, $1)";
  std::vector<std::string> computed;
  for (const std::string& e : operands) computed.push_back(to_compute(s, e));
  return from_compute(s, substitute(text, computed, c_scalar(s), c_compute(s)));
}

std::string cmp_operator(const ir::Op& op) {
  static constexpr const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static constexpr const char* kOperators[] = {"==", "!=", "<", "<=", ">", ">="};
  const ir::Attr* a = op.attr("pred");
  TEGULA_ASSERT(a != nullptr, "cmp without pred");
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == kNames[i]) return kOperators[i];
    if (std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) == static_cast<int64_t>(i))
      return kOperators[i];
  }
  TEGULA_ASSERT(false, "unknown cmp predicate");
}

std::string cmp_expr(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  const ir::Type& t = ctx.fn.type(op.operands[0]);
  std::string a = operands[0], b = operands[1];
  if (t.is_pointer()) {
    a = "reinterpret_cast<uintptr_t>(" + a + ")";
    b = "reinterpret_cast<uintptr_t>(" + b + ")";
  } else {
    a = to_compute(t.scalar, a);
    b = to_compute(t.scalar, b);
  }
  return a + " " + cmp_operator(op) + " " + b;
}

// Value conversion between element kinds; see docs/backend-cpu.md for the
// rounding and saturation rules.
std::string cast_expr(const ir::Type& from, const ir::Type& to, const std::string& x) {
  if (to.is_pointer() || from.is_pointer()) {
    if (to.is_pointer() && from.is_pointer()) return "reinterpret_cast<" + c_element(to) + ">(" + x + ")";
    if (to.is_pointer()) return "reinterpret_cast<" + c_element(to) + ">((uintptr_t)(" + x + "))";
    if (to.scalar == Scalar::I1) return x + " != nullptr";
    return "(" + c_scalar(to.scalar) + ")reinterpret_cast<uintptr_t>(" + x + ")";
  }
  Scalar s = from.scalar, d = to.scalar;
  std::string dt = c_scalar(d);
  if (s == d) return x;
  if (d == Scalar::I1) return to_compute(s, x) + " != 0";
  if (ir::is_integer(s)) {
    if (ir::is_integer(d)) return "(" + dt + ")" + x;
    if (d == Scalar::F32 || d == Scalar::F64) return "(" + dt + ")" + x;
    // Integers beyond float's 24 bits are far beyond fp8's range: one float rounding is enough.
    if (ir::is_fp8(d)) return from_compute(d, "(float)" + x);
    // Every integer below 65520 is exact in float and every larger one
    // overflows f16, so one float conversion rounds correctly.
    if (d == Scalar::F16) return "tg_f32_to_f16((float)" + x + ")";
    int bits = ir::bit_width(s);
    if (bits <= 32) return "tg_f64_to_bf16((double)" + x + ")";
    return ir::is_signed(s) ? "tg_f32_to_bf16(tg_i64_to_f32_odd(" + x + "))"
                            : "tg_f32_to_bf16(tg_u64_to_f32_odd(" + x + "))";
  }
  // From a float.
  std::string v = to_compute(s, x);
  if (ir::is_integer(d)) return "tg_float_to_int<" + dt + ">(" + v + ")";
  if (d == Scalar::F32 || d == Scalar::F64) return "(" + dt + ")" + v;
  if (ir::is_fp8(d)) return s == Scalar::F64 ? from_compute(d, "tg_f64_to_f32_odd(" + v + ")") : from_compute(d, v);
  if (s == Scalar::F64) return d == Scalar::F16 ? "tg_f64_to_f16(" + v + ")" : "tg_f64_to_bf16(" + v + ")";
  return from_compute(d, v);
}

// Whether a cast rounds float narrowing toward zero (attr rounding = "rtz",
// from tl.cast(..., fp_downcast_rounding="rtz")); the default is to nearest.
bool rounds_toward_zero(const ir::Op& op) {
  const ir::Attr* a = op.attr("rounding");
  return a != nullptr && std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == "rtz";
}

// A float -> narrower float conversion rounding toward zero: through float
// (truncating f64 first; truncating twice is truncating once, as every f16
// and bf16 value is a float), then to f16/bf16.
std::string cast_toward_zero(Scalar from, Scalar to, const std::string& x) {
  std::string v = from == Scalar::F64 ? "tg_f64_to_f32_rtz(" + x + ")" : to_compute(from, x);
  if (to == Scalar::F16) return "tg_f32_to_f16_rtz(" + v + ")";
  if (to == Scalar::BF16) return "tg_f32_to_bf16_rtz(" + v + ")";
  return v;  // f32
}

bool narrows_float(Scalar from, Scalar to) {
  return ir::is_float(from) && ir::is_float(to) && from != to &&
         (from == Scalar::F64 || to == Scalar::F16 || to == Scalar::BF16);
}

std::string bitcast_expr(const ir::Type& from, const ir::Type& to, const std::string& x) {
  if (to.is_pointer() || from.is_pointer()) return cast_expr(from, to, x);
  if (c_scalar(from.scalar) == c_scalar(to.scalar)) return x;
  return "tg_bitcast<" + c_scalar(to.scalar) + ">(" + x + ")";
}

}  // namespace

std::string elementwise_expr(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  switch (op.kind) {
    case OpKind::Cmp: return cmp_expr(ctx, op, operands);
    case OpKind::Select: return operands[0] + " ? " + operands[1] + " : " + operands[2];
    case OpKind::Cast: {
      const ir::Type from = ctx.fn.type(op.operands[0]).element(), to = ctx.fn.type(op.results[0]).element();
      if (rounds_toward_zero(op) && !from.is_pointer() && !to.is_pointer() && narrows_float(from.scalar, to.scalar))
        return cast_toward_zero(from.scalar, to.scalar, operands[0]);
      return cast_expr(from, to, operands[0]);
    }
    case OpKind::Bitcast:
      return bitcast_expr(ctx.fn.type(op.operands[0]).element(), ctx.fn.type(op.results[0]).element(),
                          operands[0]);
    case OpKind::Math:
    case OpKind::Hint: return math_expr(ctx, op, operands);
    case OpKind::AddPtr: return "tg_addptr(" + operands[0] + ", " + operands[1] + ")";
    default: return arithmetic_expr(ctx, op, operands);
  }
}

void emit_elementwise(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.results.size() == 1, "elementwise op with more than one result");
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  TEGULA_ASSERT(!t.is_tile(), "tile elementwise ops are emitted in fused loops");
  std::vector<std::string> operands;
  for (ir::ValueId v : op.operands) operands.push_back(ctx.name(v));
  ctx.out.line(c_const(t) + " " + ctx.name(result) + " = " + elementwise_expr(ctx, op, operands) + ";");
}

// --- value sources ------------------------------------------------------------

namespace {

std::string constant_expr(const ir::Op& op, Scalar s) {
  const ir::Attr* a = op.attr("value");
  TEGULA_ASSERT(a != nullptr, "constant without value");
  if (ir::is_integer(s)) {
    int64_t v = std::holds_alternative<int64_t>(*a) ? std::get<int64_t>(*a)
                                                      : static_cast<int64_t>(op.float_attr("value"));
    // A literal's C++ type is int, unsigned, long long...: typed like its
    // element, it matches the other operand of tg_add & co. in fused loops
    // (int8_t, int64_t = long).
    bool typed_by_suffix = s == Scalar::I1 || s == Scalar::I32 || s == Scalar::U32;
    return typed_by_suffix ? int_literal(v, s) : "(" + c_scalar(s) + ")" + int_literal(v, s);
  }
  if (ir::is_fp8(s)) return "(uint8_t)" + std::to_string(ir::encode_fp8(op.float_attr("value"), s)) + "u";
  std::string lit = float_literal(op.float_attr("value"));
  if (s == Scalar::F16) return "tg_f64_to_f16(" + lit + ")";
  if (s == Scalar::BF16) return "tg_f64_to_bf16(" + lit + ")";
  if (s == Scalar::F32) return "(float)" + lit;
  return lit;
}

const char* program_axis(int64_t axis) {
  TEGULA_ASSERT(axis >= 0 && axis < 3, "program axis out of range");
  static constexpr const char* kPids[] = {"pid_x", "pid_y", "pid_z"};
  return kPids[axis];
}

}  // namespace

std::string value_source_element(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands,
                                 const std::string& index) {
  const ir::Type& t = ctx.fn.type(op.results[0]);
  switch (op.kind) {
    case OpKind::Constant: return constant_expr(op, t.scalar);
    case OpKind::Splat: return operands[0];
    case OpKind::Arange: return "(" + c_element(t) + ")(" + std::to_string(op.int_attr("start")) + " + " + index + ")";
    default: TEGULA_ASSERT(false, "not a tile value source");
  }
}

void emit_value_source(CodegenContext& ctx, const ir::Op& op) {
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  TEGULA_ASSERT(!t.is_tile(), "tile value sources are emitted in fused loops");
  std::string ct = c_element(t);
  std::string value;
  switch (op.kind) {
    case OpKind::Constant: value = constant_expr(op, t.scalar); break;
    case OpKind::ProgramId: value = std::string("(") + ct + ")" + program_axis(op.int_attr("axis")); break;
    case OpKind::NumPrograms:
      program_axis(op.int_attr("axis"));
      value = "(" + ct + ")grid[" + std::to_string(op.int_attr("axis")) + "]";
      break;
    default: TEGULA_ASSERT(false, "not a scalar value source");
  }
  ctx.out.line("const " + ct + " " + ctx.name(result) + " = " + value + ";");
}

}  // namespace tegula::backends::cpu
