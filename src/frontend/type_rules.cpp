#include "frontend/type_rules.h"

#include <cmath>
#include <limits>
#include <utility>

namespace tegula::frontend {

using ir::Scalar;

int kind_rank(Scalar s) {
  if (s == Scalar::I1) return 0;
  return ir::is_float(s) ? 2 : 1;
}

std::string literal_fit_problem(const ConstValue& c, Scalar to) {
  if (c.kind != ConstValue::Kind::Int || !ir::is_integer(to) || to == Scalar::I1) return "";
  int bits = ir::bit_width(to);
  if (c.is_unsigned) {  // above INT64_MAX: fits only u64
    if (to == Scalar::U64) return "";
    return "the constant " + std::to_string(static_cast<uint64_t>(c.i)) + " is out of range for " + triton_name(to);
  }
  if (!ir::is_signed(to) && c.i < 0)
    return "the negative constant " + std::to_string(c.i) + " cannot be combined with an unsigned " + triton_name(to) +
           " value";
  bool fits = ir::is_signed(to) ? bits == 64 || (c.i >= -(int64_t{1} << (bits - 1)) && c.i < (int64_t{1} << (bits - 1)))
                                : bits == 64 || c.i < (int64_t{1} << bits);
  if (fits) return "";
  return "the constant " + std::to_string(c.i) + " is out of range for " + triton_name(to);
}

// Triton's to_tensor_type: the first of i32, u32, i64, u64 that holds an
// integer; f32 for a float unless f32 would overflow it or flush it below
// the normal range (zero, infinities and NaN stay f32).
Scalar literal_type(const ConstValue& c) {
  switch (c.kind) {
    case ConstValue::Kind::Bool: return Scalar::I1;
    case ConstValue::Kind::Float: {
      double magnitude = std::fabs(c.f);
      bool f32 = magnitude == 0.0 || std::isinf(magnitude) || std::isnan(magnitude) ||
                 (magnitude >= std::numeric_limits<float>::min() && magnitude <= std::numeric_limits<float>::max());
      return f32 ? Scalar::F32 : Scalar::F64;
    }
    case ConstValue::Kind::Int:
      if (c.is_unsigned) return Scalar::U64;
      if (c.i >= std::numeric_limits<int32_t>::min() && c.i <= std::numeric_limits<int32_t>::max())
        return Scalar::I32;
      if (c.i > 0 && c.i <= std::numeric_limits<uint32_t>::max()) return Scalar::U32;
      return Scalar::I64;
    default: return Scalar::I32;
  }
}

Scalar promote_integers(Scalar a, Scalar b) {
  if (a == b) return a;
  int wa = ir::bit_width(a), wb = ir::bit_width(b);
  bool sa = ir::is_signed(a) || a == Scalar::I1, sb = ir::is_signed(b) || b == Scalar::I1;
  if (a == Scalar::I1) return b;
  if (b == Scalar::I1) return a;
  if (sa == sb) return wa >= wb ? a : b;
  // Mixed signedness: the unsigned type wins unless the signed one is wider.
  Scalar u = sa ? b : a, s = sa ? a : b;
  return ir::bit_width(u) >= ir::bit_width(s) ? u : s;
}

bool arithmetic_right_shift(TypedOperand lhs, TypedOperand rhs) {
  const TypedOperand& tile = lhs.is_literal && !rhs.is_literal ? rhs : lhs;
  return ir::is_integer(tile.scalar) && ir::is_signed(tile.scalar);
}

std::optional<Scalar> promote(TypedOperand a, TypedOperand b, bool div_or_mod) {
  auto is_half = [](Scalar s) { return s == Scalar::F16 || s == Scalar::BF16 || ir::is_fp8(s); };
  if (a.is_literal != b.is_literal) {
    const TypedOperand& lit = a.is_literal ? a : b;
    const TypedOperand& tile = a.is_literal ? b : a;
    if (kind_rank(lit.scalar) <= kind_rank(tile.scalar)) {
      if (div_or_mod && is_half(tile.scalar)) return Scalar::F32;
      return tile.scalar;
    }
  }
  Scalar x = a.scalar, y = b.scalar;
  if (x == Scalar::F64 || y == Scalar::F64) return Scalar::F64;
  if (x == Scalar::F32 || y == Scalar::F32) return Scalar::F32;
  if (x == Scalar::F16 || y == Scalar::F16) return div_or_mod ? Scalar::F32 : Scalar::F16;
  // bf16 stays bf16 only against bf16; mixed with anything else it computes in f32.
  if (x == Scalar::BF16 && y == Scalar::BF16) return div_or_mod ? Scalar::F32 : Scalar::BF16;
  if (x == Scalar::BF16 || y == Scalar::BF16) return Scalar::F32;
  // fp8 stays fp8 only against the same fp8 type; two different fp8 types meet in f16, as in Triton.
  // Division and modulo compute in f32 like f16's; an fp8 against an integer tile computes in f32
  // (Triton rejects that mix).
  if (ir::is_fp8(x) || ir::is_fp8(y)) {
    if (div_or_mod || !ir::is_fp8(x) || !ir::is_fp8(y)) return Scalar::F32;
    return x == y ? x : Scalar::F16;
  }
  if (div_or_mod && x != Scalar::I1 && y != Scalar::I1 && ir::is_signed(x) != ir::is_signed(y))
    return std::nullopt;
  return promote_integers(x, y);
}

std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b, std::string* why) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) {
      if (why)
        *why = "dimension " + std::to_string(i) + " is " + std::to_string(da) + " on one side and " +
               std::to_string(db) + " on the other";
      return std::nullopt;
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<Scalar> dtype_from_name(const std::string& name) {
  // Every type by its tl, short and IR names (scalar_types.def), and the
  // Python, C and NumPy spellings Triton also accepts.
  static const std::pair<const char*, Scalar> kAliases[] = {
      {"bool", Scalar::I1},     {"half", Scalar::F16},   {"float", Scalar::F32},
      {"double", Scalar::F64},  {"float8_e4m3fn", Scalar::F8E4M3}, {"float8_e5m2", Scalar::F8E5M2},
      {"float8_e4m3fnuz", Scalar::F8E4B8}, {"float8_e5m2fnuz", Scalar::F8E5B16},
  };
  for (int i = 0; i < ir::kNumScalars; ++i) {
    auto s = static_cast<Scalar>(i);
    const ir::ScalarInfo& row = ir::scalar_info(s);
    if (name == row.tl_name || name == row.short_name || name == row.name) return s;
  }
  for (const auto& [alias, s] : kAliases)
    if (name == alias) return s;
  return std::nullopt;
}

std::string triton_name(Scalar s) { return ir::scalar_info(s).short_name; }

}  // namespace tegula::frontend
