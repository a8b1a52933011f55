// The C++ spellings of the tile IR's scalar types in each dialect, from the
// columns of ir/scalar_types.def.
//
// f16, bf16 and fp8 (ir::is_narrow_float) are storage types in both
// dialects: a value is converted to float to compute (tg_<ir>_to_f32, a
// prelude helper of both backends) and rounded back (tg_f32_to_<ir>).
#pragma once

#include <string>

#include "backends/c_family/dialect.h"
#include "ir/type.h"

namespace tegula::backends::c_family {

// The type a scalar is stored in: "int32_t" (CPU) or "int" (CUDA), "float".
const char* c_scalar(Dialect dialect, ir::Scalar s);
// A pointer to `pointee` in memory: "float*"; i1 is a byte there, not a bool.
std::string c_pointer(Dialect dialect, ir::Scalar pointee);
// The unsigned integer type that holds an address: "uintptr_t" (CPU),
// "unsigned long long" (CUDA).
const char* c_address(Dialect dialect);
// The type arithmetic on `s` is done in: float for the narrow floats, else c_scalar.
std::string c_compute(Dialect dialect, ir::Scalar s);
// `expr` (stored as `s`) in the compute type, and back.
std::string to_compute(ir::Scalar s, const std::string& expr);
std::string from_compute(ir::Scalar s, const std::string& expr);

}  // namespace tegula::backends::c_family
