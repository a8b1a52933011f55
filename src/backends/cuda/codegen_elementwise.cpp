// Elementwise ops and value sources (constant, program_id, num_programs,
// arange, splat), on scalars and on tiles in any layout.
//
// Arithmetic is table-driven: each row gives the CUDA form of the op on
// floats, on integers and on i1, with $0..$2 standing for the operands, $T
// for the result's C++ type, $f for the math-function suffix ("f" for float,
// "" for double) and $r for the intrinsic's precision letter ("f" or "d").
// f16/bf16 compute in float and round back after every op.
#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;
using ir::Scalar;

namespace {

struct ArithmeticForm {
  OpKind kind;
  const char* on_float;  // nullptr: not defined on floats
  const char* on_int;    // nullptr: not defined on integers
  const char* on_bool;   // i1, read as integers modulo 2 (the CPU backend's rules)
};

// Quotients and square roots use the _rn intrinsics: no compiler flag may
// replace them by approximations. Products use them too unless fp_fusion is
// on (see contractible_product).
constexpr ArithmeticForm kArithmetic[] = {
    {OpKind::Add, "$0 + $1", "tg_add($0, $1)", "$0 != $1"},
    {OpKind::Sub, "$0 - $1", "tg_sub($0, $1)", "$0 != $1"},
    {OpKind::Mul, "__$rmul_rn($0, $1)", "tg_mul($0, $1)", "$0 && $1"},
    {OpKind::Div, "__$rdiv_rn($0, $1)", "tg_div($0, $1)", "$0 && $1"},
    {OpKind::Rem, "fmod$f($0, $1)", "tg_rem($0, $1)", "$0 && !$1"},
    {OpKind::And, nullptr, "($T)($0 & $1)", "$0 && $1"},
    {OpKind::Or, nullptr, "($T)($0 | $1)", "$0 || $1"},
    {OpKind::Xor, nullptr, "($T)($0 ^ $1)", "$0 != $1"},
    {OpKind::Shl, nullptr, "tg_shl($0, $1)", "$0 && !$1"},
    {OpKind::Shr, nullptr, "tg_shr($0, $1)", "$0 && !$1"},
    {OpKind::Min, "tg_fmin($0, $1)", "($1 < $0 ? $1 : $0)", "$0 && $1"},
    {OpKind::Max, "tg_fmax($0, $1)", "($0 < $1 ? $1 : $0)", "$0 || $1"},
    {OpKind::UMulHi, nullptr, "tg_umulhi($0, $1)", "false"},
    {OpKind::Pow, "pow$f($0, $1)", "tg_ipow($0, $1)", "$0 || !$1"},
    {OpKind::Fma, "fma$f($0, $1, $2)", "tg_add(tg_mul($0, $1), $2)", "($0 && $1) != $2"},
    {OpKind::Neg, "-$0", "tg_neg($0)", "$0"},
    {OpKind::Not, nullptr, "($T)~$0", "!$0"},
    {OpKind::Abs, "fabs$f($0)", "tg_abs($0)", "$0"},
    {OpKind::Exp, "exp$f($0)", nullptr, nullptr},
    {OpKind::Exp2, "tg_exp2($0)", nullptr, nullptr},
    {OpKind::Log, "log$f($0)", nullptr, nullptr},
    {OpKind::Log2, "log2$f($0)", nullptr, nullptr},
    {OpKind::Sqrt, "__$rsqrt_rn($0)", nullptr, nullptr},
    {OpKind::Rsqrt, "__$rdiv_rn(1, __$rsqrt_rn($0))", nullptr, nullptr},
    {OpKind::Sin, "sin$f($0)", nullptr, nullptr},
    {OpKind::Cos, "cos$f($0)", nullptr, nullptr},
    {OpKind::Tanh, "tanh$f($0)", nullptr, nullptr},
    {OpKind::Erf, "erf$f($0)", nullptr, nullptr},
    {OpKind::Floor, "floor$f($0)", nullptr, nullptr},
    {OpKind::Ceil, "ceil$f($0)", nullptr, nullptr},
};

const ArithmeticForm* find_arithmetic(OpKind kind) {
  for (const ArithmeticForm& f : kArithmetic)
    if (f.kind == kind) return &f;
  return nullptr;
}

std::string substitute(std::string_view form, const std::vector<std::string>& operands, Scalar result) {
  bool single = c_compute(result) == "float";
  std::string out;
  for (size_t i = 0; i < form.size(); ++i) {
    if (form[i] != '$' || i + 1 >= form.size()) {
      out.push_back(form[i]);
      continue;
    }
    char c = form[++i];
    if (c == 'T') {
      out += c_scalar(result);
    } else if (c == 'f') {
      out += single ? "f" : "";
    } else if (c == 'r') {
      out += single ? "f" : "d";
    } else {
      size_t k = static_cast<size_t>(c - '0');
      TEGULA_ASSERT(k < operands.size(), "operand placeholder out of range");
      out += operands[k];
    }
  }
  return out;
}

bool propagates_nan(const ir::Op& op) {
  const ir::Attr* a = op.attr("propagate_nan");
  if (a == nullptr) return false;
  if (std::holds_alternative<std::string>(*a)) return std::get<std::string>(*a) == "all";
  if (std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a) != 0;
  return false;
}

// With fp_fusion an f32/f64 product is a plain `*`, which NVRTC (--fmad=true)
// may fuse with the add or subtract it feeds. Adds and subtracts are plain in
// both modes: without fusion nothing they could fuse with is a plain `*`.
// f16/bf16 products keep the intrinsic: they are rounded to 16 bits after the
// op, and a contraction across that rounding would change the result.
bool contractible_product(const CudaContext& ctx, const ir::Op& op, Scalar result) {
  if (!ctx.options.fp_fusion || op.kind != OpKind::Mul) return false;
  if (result != Scalar::F32 && result != Scalar::F64) return false;
  for (ir::ValueId v : op.operands)
    if (ctx.fn.type(v).scalar != result) return false;
  return true;
}

std::string arithmetic_expr(const CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  const ArithmeticForm* form = find_arithmetic(op.kind);
  TEGULA_ASSERT(form != nullptr, std::string("no CUDA form for ") + ir::name(op.kind));
  Scalar s = ctx.fn.type(op.results[0]).scalar;
  const char* text = s == Scalar::I1 ? form->on_bool : ir::is_float(s) ? form->on_float : form->on_int;
  // The verifier admits only the element types each form covers.
  TEGULA_ASSERT(text != nullptr, std::string("no CUDA form for `") + ir::name(op.kind) + "` on " + ir::to_string(s));
  if (ir::is_float(s) && (op.kind == OpKind::Min || op.kind == OpKind::Max) && propagates_nan(op))
    text = op.kind == OpKind::Min ? "tg_fmin_nan($0, $1)" : "tg_fmax_nan($0, $1)";
  if (contractible_product(ctx, op, s)) text = "$0 * $1";
  // An approximate quotient (sigmoid, fdiv): div.full.f32, 2 ulp, no slow
  // path; f64 stays IEEE.
  if (op.kind == OpKind::Div && s != Scalar::F64 && ir::is_float(s) && op.has_attr("approx"))
    text = "tg_div_full($0, $1)";
  std::vector<std::string> computed;
  for (const std::string& e : operands) computed.push_back(to_compute(s, e));
  return from_compute(s, substitute(text, computed, s));
}

std::string cmp_operator(const ir::Op& op) {
  static constexpr const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static constexpr const char* kOperators[] = {"==", "!=", "<", "<=", ">", ">="};
  const ir::Attr* a = op.attr("pred");
  TEGULA_ASSERT(a != nullptr, "cmp without pred");
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == kNames[i]) return kOperators[i];
    if (std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) == static_cast<int64_t>(i)) return kOperators[i];
  }
  TEGULA_ASSERT(false, "unknown cmp predicate");
}

std::string cmp_expr(const CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  const ir::Type& t = ctx.fn.type(op.operands[0]);
  std::string a = operands[0], b = operands[1];
  if (t.is_pointer()) {
    a = "reinterpret_cast<unsigned long long>(" + a + ")";
    b = "reinterpret_cast<unsigned long long>(" + b + ")";
  } else {
    a = to_compute(t.scalar, a);
    b = to_compute(t.scalar, b);
  }
  return a + " " + cmp_operator(op) + " " + b;
}

bool rounds_toward_zero(const ir::Op& op) {
  const ir::Attr* a = op.attr("rounding");
  return a != nullptr && std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == "rtz";
}

// float -> integer: truncation toward zero, saturating, NaN -> 0.
std::string float_to_int(Scalar d, const std::string& v) {
  switch (d) {
    case Scalar::I8: return "(signed char)tg_f2i_clamp(" + v + ", -128, 127)";
    case Scalar::I16: return "(short)tg_f2i_clamp(" + v + ", -32768, 32767)";
    case Scalar::I32: return "tg_f2i(" + v + ")";
    case Scalar::I64: return "tg_f2ll(" + v + ")";
    case Scalar::U8: return "(unsigned char)tg_f2u_clamp(" + v + ", 255u)";
    case Scalar::U16: return "(unsigned short)tg_f2u_clamp(" + v + ", 65535u)";
    case Scalar::U32: return "tg_f2u(" + v + ")";
    case Scalar::U64: return "tg_f2ull(" + v + ")";
    default: TEGULA_ASSERT(false, "not an integer destination");
  }
}

// Value conversion between element kinds (docs/backend-cuda.md, Numerics).
std::string cast_expr(const ir::Type& from, const ir::Type& to, const std::string& x, bool toward_zero) {
  if (to.is_pointer() || from.is_pointer()) {
    if (to.is_pointer() && from.is_pointer()) return "reinterpret_cast<" + c_element(to) + ">(" + x + ")";
    if (to.is_pointer())
      return "reinterpret_cast<" + c_element(to) + ">((unsigned long long)(" +
             std::string(ir::is_signed(from.scalar) ? "(long long)" : "") + x + "))";
    if (to.scalar == Scalar::I1) return x + " != nullptr";
    return "(" + c_scalar(to.scalar) + ")reinterpret_cast<unsigned long long>(" + x + ")";
  }
  Scalar s = from.scalar, d = to.scalar;
  std::string dt = c_scalar(d);
  if (s == d) return x;
  if (d == Scalar::I1) return to_compute(s, x) + " != 0";
  if (ir::is_integer(s)) {
    if (ir::is_integer(d) || d == Scalar::F32 || d == Scalar::F64) return "(" + dt + ")" + x;
    // Integers beyond float's 24 bits are far beyond fp8's range: one float rounding is enough.
    if (ir::is_fp8(d)) return from_compute(d, "(float)" + x);
    // Every integer below 65520 is exact in float and every larger one
    // overflows f16, so one rounding through float is exact.
    if (d == Scalar::F16) return "tg_f32_to_f16((float)" + x + ")";
    if (ir::bit_width(s) <= 32) return "tg_f64_to_bf16((double)" + x + ")";
    return ir::is_signed(s) ? "tg_f32_to_bf16(tg_i64_to_f32_odd(" + x + "))"
                            : "tg_f32_to_bf16(tg_u64_to_f32_odd(" + x + "))";
  }
  std::string v = to_compute(s, x);
  if (ir::is_integer(d)) return float_to_int(d, v);
  if (d == Scalar::F64) return "(double)" + v;
  if (d == Scalar::F32) {
    if (s == Scalar::F64) return toward_zero ? "__double2float_rz(" + v + ")" : "__double2float_rn(" + v + ")";
    return v;
  }
  if (ir::is_fp8(d)) return s == Scalar::F64 ? from_compute(d, "tg_f64_to_f32_odd(" + v + ")") : from_compute(d, v);
  // To f16/bf16.
  std::string suffix = toward_zero ? "_rz" : "";
  std::string name = d == Scalar::F16 ? "tg_f32_to_f16" : "tg_f32_to_bf16";
  if (s == Scalar::F64) {
    if (toward_zero) return name + "_rz(__double2float_rz(" + v + "))";
    return d == Scalar::F16 ? "tg_f64_to_f16(" + v + ")" : "tg_f64_to_bf16(" + v + ")";
  }
  return name + suffix + "(" + v + ")";
}

// Reinterprets bits; 16-bit floats are already their bits.
std::string bitcast_expr(const ir::Type& from, const ir::Type& to, const std::string& x) {
  if (to.is_pointer() || from.is_pointer()) return cast_expr(from, to, x, false);
  Scalar s = from.scalar, d = to.scalar;
  std::string dt = c_scalar(d);
  if (s == d) return x;
  if (s == Scalar::F32) return "(" + dt + ")__float_as_uint(" + x + ")";
  if (d == Scalar::F32) return "__uint_as_float((unsigned)" + x + ")";
  if (s == Scalar::F64) return "(" + dt + ")__double_as_longlong(" + x + ")";
  if (d == Scalar::F64) return "__longlong_as_double((long long)" + x + ")";
  return "(" + dt + ")" + x;
}

std::string constant_expr(const ir::Op& op, Scalar s) {
  const ir::Attr* a = op.attr("value");
  TEGULA_ASSERT(a != nullptr, "constant without value");
  if (ir::is_integer(s)) {
    int64_t v = std::holds_alternative<int64_t>(*a) ? std::get<int64_t>(*a)
                                                      : static_cast<int64_t>(op.float_attr("value"));
    return int_literal(v, s);
  }
  return float_literal(op.float_attr("value"), s);
}

const char* grid_axis(const ir::Op& op, const char* base) {
  int64_t axis = op.int_attr("axis");
  TEGULA_ASSERT(axis >= 0 && axis < 3, "program axis out of range");
  static constexpr const char* kBlock[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  static constexpr const char* kGrid[] = {"gridDim.x", "gridDim.y", "gridDim.z"};
  return std::string(base) == "block" ? kBlock[axis] : kGrid[axis];
}

// Register bits along which the elements of `v` repeat (axis-info
// constancy): a register with any of them set holds the same value as the
// one with them cleared, so only those are computed (a mask `offs < n` with
// n divisible by 16 takes one compare per group of 16, not 16).
int repeating_register_bits(const CudaContext& ctx, ir::ValueId v, const Distribution& d) {
  const ir::Type& t = ctx.fn.type(v);
  const passes::AxisInfo& facts = ctx.axis_info.get(v);
  int mask = 0;
  for (size_t k = 0; k < d.register_bits.size(); ++k) {
    CoordinateBit c = coordinate_bit(t.shape, d.register_bits[k]);
    if (c.dim < 0 || static_cast<size_t>(c.dim) >= facts.constancy.size()) continue;
    int64_t run = facts.constancy[static_cast<size_t>(c.dim)];
    run &= -run;  // aligned runs of this power of two lie inside the runs
    if ((int64_t{2} << c.bit) <= run) mask |= 1 << k;
  }
  return mask;
}

}  // namespace

std::string elementwise_expr(const CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  switch (op.kind) {
    case OpKind::Cmp: return cmp_expr(ctx, op, operands);
    case OpKind::Select: return operands[0] + " ? " + operands[1] + " : " + operands[2];
    case OpKind::Cast:
      return cast_expr(ctx.fn.type(op.operands[0]).element(), ctx.fn.type(op.results[0]).element(), operands[0],
                       rounds_toward_zero(op));
    case OpKind::Bitcast:
      return bitcast_expr(ctx.fn.type(op.operands[0]).element(), ctx.fn.type(op.results[0]).element(), operands[0]);
    case OpKind::Math:
    case OpKind::Hint: return math_expr(ctx, op, operands);
    case OpKind::AddPtr: {
      std::string offset = ir::is_signed(ctx.fn.type(op.operands[1]).scalar) ? "(long long)" : "(unsigned long long)";
      return operands[0] + " + " + offset + operands[1];
    }
    default: return arithmetic_expr(ctx, op, operands);
  }
}

void emit_elementwise(CudaContext& ctx, ir::OpId id, const Layout* layout, const std::string& dest) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(op.results.size() == 1, "elementwise op with more than one result");
  const ir::Type& t = ctx.fn.type(op.results[0]);

  if (!t.is_tile()) {
    std::string value;
    switch (op.kind) {
      case OpKind::Constant: value = constant_expr(op, t.scalar); break;
      case OpKind::ProgramId: value = std::string("(int)") + grid_axis(op, "block"); break;
      case OpKind::NumPrograms: value = std::string("(int)") + grid_axis(op, "grid"); break;
      default: {
        std::vector<std::string> operands;
        for (ir::ValueId v : op.operands) operands.push_back(ctx.name(v));
        value = elementwise_expr(ctx, op, operands);
      }
    }
    ctx.out.line(c_const(t) + " " + dest + " = " + value + ";");
    return;
  }

  TEGULA_ASSERT(layout != nullptr, "tile op without a layout");
  int registers = ctx.declare_tile(dest, t, *layout);
  std::string value;
  std::string i;
  switch (op.kind) {
    case OpKind::Constant: value = constant_expr(op, t.scalar); break;
    case OpKind::Splat: value = ctx.name(op.operands[0]); break;
    case OpKind::Arange: {
      Distribution d = ctx.distribution(*layout, t.shape);
      i = ctx.open_unrolled(registers);
      int64_t start = op.int_attr("start");
      std::string index = ctx.element_index(d, i);
      ctx.out.line(dest + "[" + i + "] = " + (start == 0 ? index : std::to_string(start) + " + " + index) + ";");
      ctx.out.close();
      return;
    }
    default: break;
  }
  int repeats = value.empty() ? repeating_register_bits(ctx, op.results[0], ctx.distribution(*layout, t.shape)) : 0;
  i = ctx.open_unrolled(registers);
  if (value.empty()) {
    std::vector<std::string> operands;
    for (ir::ValueId v : op.operands)
      operands.push_back(ctx.fn.type(v).is_tile() ? ctx.tile(v, *layout) + "[" + i + "]" : ctx.name(v));
    value = elementwise_expr(ctx, op, operands);
  }
  if (repeats != 0) {
    std::string m = std::to_string(repeats);
    ctx.out.line("if ((" + i + " & " + m + ") != 0) " + dest + "[" + i + "] = " + dest + "[" + i + " & ~" + m +
                 "];  // equal elements (axis info)");
    ctx.out.line("else " + dest + "[" + i + "] = " + value + ";");
  } else {
    ctx.out.line(dest + "[" + i + "] = " + value + ";");
  }
  ctx.out.close();
}

}  // namespace tegula::backends::cuda
