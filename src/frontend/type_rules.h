// Triton's typing rules, in one place:
//  * broadcasting of shapes (NumPy-style: ranks aligned on the right by
//    prepending size-1 dims, then size-1 dims stretch);
//  * binary-op type promotion (float64 > float32 > float16 > integers;
//    bfloat16 survives only against bfloat16, else f32; among integers the wider wins, unsigned wins at equal width;
//    a Python literal of the same or a lower kind (bool < int < float) than
//    a tile adopts the tile's type: `x_f16 * 2.0` stays f16, `x_i8 + 1`
//    stays i8, `x_u32 % 3` stays u32; the literal must then fit the type);
//  * how Python constants become typed scalars (int -> i32, u32, i64 or u64,
//    the first that holds it; float -> f32, or f64 when f32 would lose its
//    range; bool -> i1);
//  * `>>`: arithmetic or logical by the left operand's own signedness, not
//    the promoted type's (`int8 >> uint64` promotes to u64 and still shifts
//    in sign bits);
//  * dtype names (`float32`, `fp32`, `bfloat16`, `float8e4nv`...);
//  * fp8: the same fp8 type against itself stays fp8, two different fp8 types
//    meet in f16 (as in Triton), `/` and `%` and an fp8 against an integer tile
//    compute in f32.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/const_value.h"
#include "ir/type.h"

namespace tegula::frontend {

// Operand of a binary op as typing sees it.
struct TypedOperand {
  ir::Scalar scalar;
  bool is_literal;  // a Python constant, not (yet) an IR value
};

// Category rank used by the "literal adopts the tile's type" rule:
// bool < integer (signed or not) < float, Triton's kinds.
int kind_rank(ir::Scalar s);
// Why integer constant `c` cannot become a value of type `to` in a binary
// op (out of range, or negative for an unsigned type, as Triton rejects
// them), or "" when it can.
std::string literal_fit_problem(const ConstValue& c, ir::Scalar to);
// The type a Python constant has as a value, Triton's `to_tensor`: what it
// promotes with in `x + 1`, what `x = 1.0; x.dtype` reads, `acc = 0;
// acc.to(...)` converts from and `tl.store(p, 1e50)` stores. bool -> i1;
// int -> i32, u32 below 2**32, i64, u64 above INT64_MAX; float -> f32 where
// it is 0, inf, NaN or a normal f32 magnitude, else f64 (1e50 and 1e-40
// keep their value).
ir::Scalar literal_type(const ConstValue& c);
// The computation type of `a op b`. `div_or_mod` selects the rule that
// computes f16/bf16 division and modulo in f32. Returns nullopt for an
// invalid combination (the caller reports it).
std::optional<ir::Scalar> promote(TypedOperand a, TypedOperand b, bool div_or_mod);
// Integer promotion only (both integers).
ir::Scalar promote_integers(ir::Scalar a, ir::Scalar b);
// Whether `lhs >> rhs` shifts in sign bits. Triton decides it from the
// signedness of the tile the operator is called on, before promotion: the
// left operand, or the right one when the left is a Python constant
// (`3 >> y` is y.__rrshift__(3)). i1 counts as unsigned.
bool arithmetic_right_shift(TypedOperand lhs, TypedOperand rhs);
// The broadcast shape of a and b, or nullopt with `why` set.
std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b, std::string* why);
// "float32" / "fp32" / "f32" / "bfloat16" / "int1" ... -> scalar.
std::optional<ir::Scalar> dtype_from_name(const std::string& name);
// The Triton-style name of a scalar type: "fp32", "bf16", "int32", "uint8", "int1".
std::string triton_name(ir::Scalar s);

}  // namespace tegula::frontend
