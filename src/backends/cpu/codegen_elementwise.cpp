// Elementwise ops and value sources (constant, program_id, num_programs,
// arange). The ops are spelled by the C-family table and printer pieces
// both backends share (backends/c_family/op_syntax.h); this file adds the C++
// spelling of what differs: conversions from floats, bitcasts and addptr.
//
// Numerics (docs/backend-cpu.md): f16/bf16 are widened to float, computed,
// and rounded back after every op; integer arithmetic wraps (tg_add & co.);
// division by zero, out-of-range shifts and float->int overflow are defined
// (see prelude.h) instead of undefined.
#include <string>
#include <vector>

#include "backends/c_family/op_syntax.h"
#include "backends/cpu/codegen_context.h"
#include "ir/fp8.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using c_family::Dialect;
using ir::OpKind;
using ir::Scalar;

namespace {

// Value conversion between element kinds; see docs/backend-cpu.md for the
// rounding and saturation rules.
std::string cast_expr(const ir::Type& from, const ir::Type& to, const std::string& x) {
  if (std::optional<std::string> common = c_family::common_cast(Dialect::Cpu, from, to, x)) return *common;
  Scalar s = from.scalar, d = to.scalar;
  std::string dt = c_scalar(d);
  // From a float.
  std::string v = to_compute(s, x);
  if (ir::is_integer(d)) return "tg_float_to_int<" + dt + ">(" + v + ")";
  if (d == Scalar::F32 || d == Scalar::F64) return "(" + dt + ")" + v;
  if (ir::is_fp8(d)) return s == Scalar::F64 ? from_compute(d, "tg_f64_to_f32_odd(" + v + ")") : from_compute(d, v);
  if (s == Scalar::F64) return d == Scalar::F16 ? "tg_f64_to_f16(" + v + ")" : "tg_f64_to_bf16(" + v + ")";
  return from_compute(d, v);
}

// A float -> narrower float conversion rounding toward zero: through float
// (truncating f64 first; truncating twice is truncating once, as every f16
// and bf16 value is a float), then to f16/bf16.
std::string cast_toward_zero(Scalar from, Scalar to, const std::string& x) {
  std::string v = from == Scalar::F64 ? "tg_f64_to_f32_rtz(" + x + ")" : to_compute(from, x);
  if (to == Scalar::F16) return "tg_f32_to_f16_rtz(" + v + ")";
  if (to == Scalar::BF16) return "tg_f32_to_bf16_rtz(" + v + ")";
  // e5m2 is f16 without its low mantissa byte: truncating twice truncates once (inf, NaN and saturation at
  // the largest finite value carry over).
  if (to == Scalar::F8E5M2) return "(uint8_t)(tg_f32_to_f16_rtz(" + v + ") >> 8)";
  return v;  // f32
}

bool narrows_float(Scalar from, Scalar to) {
  return ir::is_float(from) && ir::is_float(to) && from != to &&
         (from == Scalar::F64 || to == Scalar::F16 || to == Scalar::BF16 || to == Scalar::F8E5M2);
}

std::string bitcast_expr(const ir::Type& from, const ir::Type& to, const std::string& x) {
  if (to.is_pointer() || from.is_pointer()) return cast_expr(from, to, x);
  if (c_scalar(from.scalar) == c_scalar(to.scalar)) return x;
  return "tg_bitcast<" + c_scalar(to.scalar) + ">(" + x + ")";
}

}  // namespace

std::string elementwise_expr(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  const ir::Type from = ctx.fn.type(op.operands[0]).element(), to = ctx.fn.type(op.results[0]).element();
  switch (op.kind) {
    case OpKind::Cast:
      // libdevice's directed conversions: the host's conversion in that rounding mode.
      if (std::string mode = c_family::directed_conversion(op, from, to); !mode.empty())
        return "tg_cvt_" + mode + "<" + c_scalar(to.scalar) + ">(" + operands[0] + ")";
      if (c_family::rounds_toward_zero(op) && !from.is_pointer() && !to.is_pointer() &&
          narrows_float(from.scalar, to.scalar))
        return cast_toward_zero(from.scalar, to.scalar, operands[0]);
      return cast_expr(from, to, operands[0]);
    case OpKind::Bitcast: return bitcast_expr(from, to, operands[0]);
    case OpKind::AddPtr: return std::string(ctx.addptr()) + "(" + operands[0] + ", " + operands[1] + ")";
    default: return c_family::elementwise_expr(Dialect::Cpu, ctx.fn, op, operands);
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
  if (ir::is_integer(s)) {
    int64_t v = c_family::integer_constant(op);
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
    case OpKind::GlobalTimer: value = "tg_globaltimer()"; break;
    case OpKind::Smid: value = "tg_smid()"; break;
    case OpKind::NumPrograms:
      program_axis(op.int_attr("axis"));
      value = "(" + ct + ")grid[" + std::to_string(op.int_attr("axis")) + "]";
      break;
    default: TEGULA_ASSERT(false, "not a scalar value source");
  }
  ctx.out.line("const " + ct + " " + ctx.name(result) + " = " + value + ";");
}

bool uses_vector_math(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) {
    const ir::Op& o = fn.op(id);
    if (found || o.results.empty() || !fn.type(o.results[0]).is_tile() || !ir::is_float(fn.type(o.results[0]).scalar))
      return;
    switch (o.kind) {
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sin:
      case OpKind::Cos: case OpKind::Tanh: case OpKind::Erf: case OpKind::Pow: case OpKind::Tan:
      case OpKind::Atan: case OpKind::Asin: case OpKind::Acos: case OpKind::Sinh: case OpKind::Cosh:
      case OpKind::Asinh: case OpKind::Acosh: case OpKind::Atanh: case OpKind::Erfc: case OpKind::Cbrt:
      case OpKind::Hypot: case OpKind::FastExpf: case OpKind::FastLogf: case OpKind::FastSinf:
      case OpKind::FastCosf: case OpKind::FastPowf: found = true; break;
      default: break;
    }
  });
  return found;
}

}  // namespace tegula::backends::cpu
