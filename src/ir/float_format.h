// The bit formats of the float types, on the host: the encoder and decoder
// that constant folding and code generation use for float constants. A
// format is two columns of scalar_types.def: the explicit mantissa bits (the
// exponent takes the rest of the width) and whether the top exponent holds
// infinities and NaNs (IEEE f16, bf16, f32, f64 and f8e5m2) or only the NaN
// S.1111.111 (f8e4m3, the "fn" format: no infinities).
//
// Encoding rounds to nearest, ties to even. Out of range, the IEEE types give
// +-inf; the fp8 types saturate to the largest finite value (infinity
// included), the rule of the `cvt.rn.satfinite` instructions the CUDA
// backend uses for them (docs/ir.md). NaN encodes as the all-ones pattern
// without sign (0x7f for fp8), a NaN in every format; decoding keeps no
// payload.
#pragma once

#include <cstdint>

#include "ir/type.h"

namespace tegula::ir {

// `s` must be a float type.
uint64_t encode_float(double x, Scalar s);
double decode_float(uint64_t bits, Scalar s);
// x rounded to the nearest value of float type `s` (encode, then decode).
double round_to_float(double x, Scalar s);

}  // namespace tegula::ir
