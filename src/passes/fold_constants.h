// Compile-time evaluation of elementwise ops on scalar constants, shared by the
// canonicalizer's folding rules. The folder is exact: it returns no value
// rather than guess whenever the target would be free to differ (division by
// zero, shifts by >= the bit width, out-of-range float->int conversions,
// transcendental functions in f16/bf16...).
//
// Integer constants are kept normalized to their type: signed types
// sign-extended from their bit width, unsigned types (and i1) zero-extended;
// a u64 above INT64_MAX is stored as its bit pattern. Float constants hold a
// double that is exactly representable in their type.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

struct ConstantValue {
  ir::Scalar type = ir::Scalar::I32;
  int64_t int_value = 0;    // integers and i1 (normalized)
  double float_value = 0.0; // floats

  bool is_float() const { return ir::is_float(type); }
  ir::Attr to_attr() const;
};

// Truncates `bits` to the width of integer type `type` and re-extends it
// (sign-extension for signed types).
int64_t normalize_int(int64_t bits, ir::Scalar type);

// Rounds `x` to the nearest value of float type `type` (ties to even).
double round_to_float_type(double x, ir::Scalar type);

// The scalar value of `v` when it is the result of a `constant` op (scalar or
// tile: a constant tile has all elements equal). Pointers are never constant.
std::optional<ConstantValue> constant_value(const ir::Function& fn, ir::ValueId v);

// Evaluates elementwise op `op` on constant operands by its fold columns in
// ir/ops.def, producing a value of element type `result`; nothing when the
// op is not folded on operands of that kind or the result is target-defined.
std::optional<ConstantValue> fold_elementwise(const ir::Op& op, const std::vector<ConstantValue>& operands,
                                              ir::Scalar result);

// Comparison predicates of the `cmp` op (attribute `pred`).
enum class Predicate { Eq, Ne, Lt, Le, Gt, Ge };
std::optional<Predicate> predicate_of(const ir::Op& op);

}  // namespace tegula::passes
