// Compile-time values (constexprs) and the Python semantics of operations on
// them: `BLOCK // 2`, `N * 4 + 1`, `1e-6`, `"fp32"`, `tl.float16`, `None`.
//
// Integers are held in 64 bits; results that leave the int64 range are an
// error (Python would grow them; a kernel has no use for such constants).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ast.h"
#include "ir/type.h"

namespace tegula::frontend {

struct ConstValue {
  enum class Kind { Int, Float, Bool, Str, None, DType };
  Kind kind = Kind::None;
  int64_t i = 0;          // Int (and Bool as 0/1)
  bool is_unsigned = false;  // Int: the literal was above INT64_MAX (bits in `i`)
  double f = 0.0;         // Float
  std::string s;          // Str
  ir::Scalar dtype = ir::Scalar::I32;  // DType
  bool pointer = false;                // DType: `ptr.dtype` is a pointer type; `.element_ty` drops it
  // DType: which of Triton's type objects it is. A block type (tl.block_type,
  // `tile.type`) has `dtype` (and `pointer`) for its elements and `shape`.
  enum class TypeForm : uint8_t { Scalar, Block, Void, Constexpr };
  TypeForm type_form = TypeForm::Scalar;
  std::vector<int64_t> shape;  // DType, Block: the block's shape
  // DType, Constexpr: the constant's Python text ("10", "(5, 6, 7)"); two
  // constexpr_types are equal when their constants print alike.
  std::string constexpr_of;

  static ConstValue integer(int64_t v) { ConstValue c; c.kind = Kind::Int; c.i = v; return c; }
  static ConstValue real(double v) { ConstValue c; c.kind = Kind::Float; c.f = v; return c; }
  static ConstValue boolean(bool v) { ConstValue c; c.kind = Kind::Bool; c.i = v; return c; }
  static ConstValue string(std::string v) { ConstValue c; c.kind = Kind::Str; c.s = std::move(v); return c; }
  static ConstValue none() { return ConstValue{}; }
  static ConstValue type(ir::Scalar t) { ConstValue c; c.kind = Kind::DType; c.dtype = t; return c; }

  bool is_numeric() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double as_double() const {
    return kind == Kind::Float ? f : is_unsigned ? static_cast<double>(static_cast<uint64_t>(i)) : static_cast<double>(i);
  }
  bool truthy() const;
  bool operator==(const ConstValue& o) const;
};

// Python repr-like text: `128`, `0.5`, `True`, `'fp32'`, `None`, `tl.float32`.
std::string to_string(const ConstValue& v);
// Type-name for messages: "int", "float", "bool", "str", "NoneType", "dtype".
const char* kind_name(const ConstValue& v);

// Python semantics; returns nullopt when the operation is not defined for the
// operand kinds (the caller reports it). Throws UserError at `loc` for
// division by zero and int64 overflow.
std::optional<ConstValue> const_binary(ast::BinaryOp op, const ConstValue& a, const ConstValue& b,
                                       const SourceLoc& loc);
std::optional<ConstValue> const_unary(ast::UnaryOp op, const ConstValue& a, const SourceLoc& loc);
std::optional<ConstValue> const_compare(ast::CmpOp op, const ConstValue& a, const ConstValue& b);
// Python's int() of a number: a float truncated toward zero. Throws UserError
// (E0603) at `loc` for NaN, an infinity or a value outside int64/uint64.
ConstValue const_to_int(const ConstValue& a, const SourceLoc& loc);
// Python's abs() of a number: abs(-2**63) is 2**63, a uint64 as -(-2**63) is.
ConstValue const_abs(const ConstValue& a, const SourceLoc& loc);

}  // namespace tegula::frontend
