// Elementwise ops and value sources (constant, program_id, num_programs,
// arange, splat), on scalars and on tiles in any layout.
//
// The ops are spelled by the C-family table and printer pieces both backends
// share (backends/c_family/op_syntax.h); this file adds the CUDA spelling of
// what differs: contracted products, approximate division and exp, conversions
// from floats, bitcasts and addptr. f16/bf16 compute in float and round back
// after every op.
#include <string>
#include <vector>

#include "backends/c_family/op_syntax.h"
#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using c_family::Dialect;
using ir::OpKind;
using ir::Scalar;

namespace {

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

// The form that replaces the table's for `op` (with result element type
// `s`), or nullptr: products NVRTC may contract, approximate quotients
// (sigmoid, fdiv: div.full.f32, 2 ulp, no slow path) and the approximate
// exp of tl.exp (ex2.approx); f64 stays exact.
const char* dialect_form(const CudaContext& ctx, const ir::Op& op, Scalar s) {
  if (contractible_product(ctx, op, s)) return "$0 * $1";
  if (op.kind == OpKind::Div && s != Scalar::F64 && ir::is_float(s) && op.has_attr("approx")) return "tg_div_full($0, $1)";
  if (op.kind == OpKind::Exp && s != Scalar::F64 && op.has_attr("approx")) return "tg_exp_approx($0)";
  return nullptr;
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
  if (std::optional<std::string> common = c_family::common_cast(Dialect::Cuda, from, to, x)) return *common;
  Scalar s = from.scalar, d = to.scalar;
  std::string v = to_compute(s, x);
  if (ir::is_integer(d)) return float_to_int(d, v);
  if (d == Scalar::F64) return "(double)" + v;
  if (d == Scalar::F32) {
    if (s == Scalar::F64) return toward_zero ? "__double2float_rz(" + v + ")" : "__double2float_rn(" + v + ")";
    return v;
  }
  if (d == Scalar::F8E5M2 && toward_zero) {  // f16 without its low mantissa byte: truncating twice truncates once
    std::string f = s == Scalar::F64 ? "__double2float_rz(" + v + ")" : v;
    return "(unsigned char)((unsigned short)tg_f32_to_f16_rz(" + f + ") >> 8)";
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

// An integer or f64 converted to f32/f64 in a directed rounding `mode`: the
// intrinsic of that name (__int2float_rd, __ull2double_ru, __double2float_rz).
std::string directed_intrinsic(Scalar from, Scalar to, const std::string& mode, const std::string& x) {
  std::string source = from == Scalar::F64         ? "double"
                       : ir::bit_width(from) == 64 ? (ir::is_signed(from) ? "ll" : "ull")
                                                   : (ir::is_signed(from) ? "int" : "uint");
  return "__" + source + "2" + (to == Scalar::F32 ? "float" : "double") + "_" + mode + "(" + x + ")";
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
  if (ir::is_integer(s)) return int_literal(c_family::integer_constant(op), s);
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
  const ir::Type from = ctx.fn.type(op.operands[0]).element(), to = ctx.fn.type(op.results[0]).element();
  switch (op.kind) {
    case OpKind::Cast:
      if (std::string mode = c_family::directed_conversion(op, from, to); !mode.empty())
        return directed_intrinsic(from.scalar, to.scalar, mode, operands[0]);
      return cast_expr(from, to, operands[0], c_family::rounds_toward_zero(op));
    case OpKind::Bitcast: return bitcast_expr(from, to, operands[0]);
    case OpKind::AddPtr: {
      std::string offset = ir::is_signed(ctx.fn.type(op.operands[1]).scalar) ? "(long long)" : "(unsigned long long)";
      if (ctx.debug_sites)  // debug mode: an offset whose bytes wrap gives an address no array holds
        return "tg_addptr_checked(" + operands[0] + ", " + offset + operands[1] + ")";
      return operands[0] + " + " + offset + operands[1];
    }
    default:
      return c_family::elementwise_expr(Dialect::Cuda, ctx.fn, op, operands, dialect_form(ctx, op, to.scalar));
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
      case OpKind::GlobalTimer: value = "tg_globaltimer()"; break;
      case OpKind::Smid: value = "tg_smid()"; break;
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
