// The bit formats of the float types, on the host: the encoder and decoder
// that constant folding and code generation use for float constants. A
// format is four columns of scalar_types.def: the explicit mantissa bits (the
// exponent takes the rest of the width), the exponent bias, what the top
// exponent holds (infinities and NaNs: IEEE f16, bf16, f32, f64 and f8e5m2;
// only the NaN S.1111.111: f8e4m3, the "fn" format; nothing special:
// f8e4b15, and the "fnuz" formats f8e4b8 and f8e5b16, whose one NaN is the
// code of -0, 1.000...) and how a tie rounds.
//
// Encoding rounds to nearest, ties to even (away from zero for f8e4b15). Out
// of range, the IEEE types give +-inf; the fp8 types saturate to the largest
// finite value (infinity included), the rule of the `cvt.rn.satfinite`
// instructions the CUDA backend uses for them (docs/ir.md); f8e4b15
// saturates to 1.75, one code below its largest value, as Triton does; the
// fnuz types saturate finite values, but make an infinity their NaN, as
// Triton's AMD conversions do. NaN encodes as the all-ones pattern without
// sign (0x7f for fp8), a NaN in every format that has one; f8e4b15 encodes
// it as +1.75, as Triton's code does, the fnuz types as 0x80. -0 encodes as
// +0 in the fnuz types (and so does a negative value that rounds to zero).
// Decoding keeps no payload.
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
