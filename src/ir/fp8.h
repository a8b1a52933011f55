// The five fp8 formats of the tile IR. On the host, ir/float_format.h
// encodes and decodes them like every float type (constant folding and code
// generation use it for fp8 constants); the generated code carries its own
// copies (the prelude_fp8.h of each backend, c_family's kSoftFp8,
// kSoftFp8E4b15 and kSoftFp8Fnuz); tests check all of them against one
// NumPy reference (torch's conversions for the fnuz formats).
//
//   f8e4m3 (tl.float8e4nv, "e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa
//     bits; no infinities; S.1111.111 is NaN; the largest finite value is 448.
//   f8e5m2 (tl.float8e5): 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE
//     style: exponent 11111 is inf (mantissa 0) or NaN; the largest finite
//     value is 57344.
//   f8e4b15 (tl.float8e4b15): 1 sign, 4 exponent (bias 15), 3 mantissa bits;
//     no infinities, no NaN: the top exponent is an ordinary binade, so the
//     values run from 2^-17 (subnormal) to 1.875, every one an f16 value.
//   f8e4b8 (tl.float8e4b8, AMD's "e4m3fnuz"): 1 sign, 4 exponent (bias 8), 3
//     mantissa bits; no infinities and no -0: 0x80 is the one NaN, every
//     other code a number, from 2^-10 (subnormal) to 240.
//   f8e5b16 (tl.float8e5b16, "e5m2fnuz"): 1 sign, 5 exponent (bias 16), 2
//     mantissa bits; like f8e4b8, 0x80 the one NaN; 2^-17 to 57344.
//
// Conversion to f8e4m3 and f8e5m2 rounds to nearest even and saturates: a
// magnitude above the largest finite value (infinity included) becomes that
// value with its sign, and NaN becomes 0x7f. These are the rules of the
// `cvt.rn.satfinite` instructions of sm_89+, which the CUDA backend uses
// there. Conversion to f8e4b15 follows Triton's (software) conversion: round
// to nearest with ties away from zero, and saturate at 1.75 (not 1.875, so
// the codes 0x7f and 0xff come only from memory or bitcasts); NaN becomes
// +1.75 whatever its sign (Triton's f32 -> f16 step drops it). Conversion to
// the fnuz types follows Triton's on AMD GPUs: round to nearest even,
// saturate finite magnitudes at the largest value, and make NaN and the
// infinities (which the formats lack) 0x80; -0, and a negative value that
// rounds to zero, become +0. (PyTorch's conversions agree but for finite
// values beyond the largest, which it makes NaN.) No GPU Tegula targets
// converts them natively: both backends run the same software conversions.
#pragma once

#include <cstdint>

#include "ir/float_format.h"
#include "ir/ir.h"
#include "ir/type.h"

namespace tegula::ir {

// The code of `x` in fp8 type `s` (float_format.h's encoding).
inline uint8_t encode_fp8(double x, Scalar s) { return static_cast<uint8_t>(encode_float(x, s)); }
// Whether any value of `fn` (or a pointer's pointee) is fp8: its generated code then needs the fp8 prelude.
bool uses_fp8(const Function& fn);
// Whether any value of `fn` is of scalar type `s` (or points to it).
bool uses_scalar(const Function& fn, Scalar s);

}  // namespace tegula::ir
