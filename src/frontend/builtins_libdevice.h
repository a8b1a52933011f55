// The functions of tl.extra.libdevice beyond the float functions of
// builtins_math.h (builtins_libdevice.cpp): directed roundings, conversions,
// integer bits, reinterpretations, and the libdevice float functions with
// their dtype rules. Each lowers to the ops of ir/ops.def's libdevice block
// or composes existing ops; builtins.cpp's registry names them.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

// add_rd, sub_ru, mul_rz, div_rd, fma_ru, rcp_rn, sqrt_rz... (name_mode).
Symbol lower_rounded(Lowerer& l, const CallArgs& c, const std::string& name);
// double2float_rd, float2int_rn, ll2double_ru, int2double_rn... (src2dst_mode).
Symbol lower_conversion(Lowerer& l, const CallArgs& c, const std::string& name);
// clz, popc, brev, ffs, byte_perm, mulhi, mul24, hadd, rhadd, sad.
Symbol lower_integer_bits(Lowerer& l, const CallArgs& c, const std::string& name);
// float_as_int & co., double2hiint, double2loint, hiloint2double.
Symbol lower_reinterpret(Lowerer& l, const CallArgs& c, const std::string& name);
// llrint, llround, ilogb: a float rounded or its exponent, as an integer.
Symbol lower_float_to_integer(Lowerer& l, const CallArgs& c, const std::string& name);
// ldexp, scalbn (x, n) and jn, yn (n, x): a float and an i32.
Symbol lower_float_and_int(Lowerer& l, const CallArgs& c, const std::string& name);
// The libdevice float functions with a dtype rule beyond builtins_math's:
// fast_* and saturatef, rsqrt_rn take f32, rcp64h f64; fast_dividef.
Symbol lower_libdevice_function(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
