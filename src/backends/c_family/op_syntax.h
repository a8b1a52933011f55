// The elementwise ops in the C-family dialects: the op-to-syntax table
// (op_syntax.def, a column per dialect) and what the CPU and CUDA printers
// spell alike around it. Each backend's codegen_elementwise.cpp adds what
// its dialect spells its own way: casts from floats, bitcasts, addptr, and
// (CUDA) contracted products and approximate division.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/c_family/dialect.h"
#include "ir/ir.h"

namespace tegula::backends::c_family {

// The form of op `kind` for results of element type `result` in `dialect`
// (op_syntax.def), or nullptr when the table has none.
const char* op_form(Dialect dialect, ir::OpKind kind, ir::Scalar result);

// The element of elementwise op `op` of `fn` in `dialect`, for every op but
// cast, bitcast and addptr. `operands` holds an expression per operand: its
// element, in its storage type; the result is in the result's storage type.
// A non-null `form` (placeholders as in op_syntax.def) replaces the table's.
std::string elementwise_expr(Dialect dialect, const ir::Function& fn, const ir::Op& op,
                             const std::vector<std::string>& operands, const char* form = nullptr);

// `x` converted from `from` to `to` where both dialects spell it alike:
// pointers to and from pointers and integers (through the address), any
// value to i1, and integers to numbers. Nothing for a float source, which
// each dialect converts its own way (docs/backend-*.md, Numerics).
std::optional<std::string> common_cast(Dialect dialect, const ir::Type& from, const ir::Type& to,
                                       const std::string& x);

// Whether `cast` rounds float narrowing toward zero (attribute rounding =
// "rtz", from tl.cast(..., fp_downcast_rounding="rtz")); the default is to
// nearest even.
bool rounds_toward_zero(const ir::Op& cast);

// The directed rounding ("rz", "rd", "ru") of a `cast` from an integer to
// f32/f64 or from f64 to f32 (libdevice's int2float_rd, double2float_ru...),
// or "" when it rounds to nearest even, is exact, or is float narrowing
// toward zero (rounds_toward_zero's).
std::string directed_conversion(const ir::Op& cast, const ir::Type& from, const ir::Type& to);

// Whether `fn` has a libdevice op (ops.def's LIB rows) or a cast in a
// directed rounding: its unit then carries the libdevice prelude.
bool uses_libdevice(const ir::Function& fn);

// The value of integer `constant` op (a float attribute is truncated).
int64_t integer_constant(const ir::Op& constant);

}  // namespace tegula::backends::c_family
