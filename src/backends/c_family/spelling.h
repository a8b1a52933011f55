// How the C-family printer spells types, conversions and literals, with a
// column per dialect where the two differ.
//
// The CPU dialect names scalars by their <cstdint> names and keeps f16/bf16
// and fp8 as their bits (uint16_t, uint8_t); the CUDA dialect, compiled
// without includes, uses the builtin names and the bit-holding wrapper types
// of its prelude (tg_f16, ...). In both, halves and fp8 are computed in float:
// to_compute/from_compute convert through the preludes' tg_* helpers.
#pragma once

#include <cstdint>
#include <string>

#include "backends/c_family/dialect.h"
#include "ir/type.h"

namespace tegula::backends::c_family {

// The type of one element of kind `s` in locals and registers.
std::string scalar_type(ir::Scalar s, Dialect d);
// What memory holds for `s`: as scalar_type, but bytes for i1 (memory holds
// 0/1 bytes, not C++ bools).
std::string memory_type(ir::Scalar s, Dialect d);
// One element of `t`: scalar_type, or memory_type* for pointers.
std::string element_type(const ir::Type& t, Dialect d);
// A read-only local's type: "const float", "float* const".
std::string const_type(const ir::Type& t, Dialect d);

// f16, bf16 or fp8: stored as bits, computed in float.
bool is_half(ir::Scalar s);
// The type arithmetic on `s` is done in: float for halves, else scalar_type.
std::string compute_type(ir::Scalar s, Dialect d);
// `expr` (an element of kind `s`) as the compute type, and back.
std::string to_compute(ir::Scalar s, const std::string& expr);
std::string from_compute(ir::Scalar s, const std::string& expr);

// An integer literal of kind `s` that is valid C++ for every value: true/false
// for i1, a `u`/`ull` suffix for unsigned kinds (the value masked to their
// width), `LL` for 64-bit signed ones, INT32_MIN and INT64_MIN as
// expressions. Its C++ type is int, unsigned, long long or unsigned long long;
// a dialect that wants the exact type adds a cast.
std::string int_literal(int64_t value, ir::Scalar s);
// The shortest decimal of at most `max_digits` significant digits that reads
// back to `value` (as a float for max_digits 9, else as a double), with ".0"
// added when it would read as an integer. Finite values only.
std::string shortest_decimal(double value, int max_digits);

}  // namespace tegula::backends::c_family
