// The float functions of the language (builtins_math.cpp): the elementwise
// float ops of ir/ops.def (exp, sin, tan, atan2, log1p, rint... each called
// by its op's name, and sqrt_rn and nearbyint by another), fmod, pow, and
// the classification functions isnan, isinf, isfinite, signbit. Kernels reach
// them as tl.<name>, tl.math.<name> and tl.extra.libdevice.<name> alike;
// builtins.cpp's registry names them.
#pragma once

#include <string>
#include <vector>

#include "frontend/lowering.h"

namespace tegula::frontend {

// The arguments x, y, z, w of a function of `arity` operands (1 to 4),
// promoted and broadcast to one type and shape like the operands of `+`.
std::vector<ir::ValueId> operands_of(Lowerer& l, const CallArgs& c, const std::string& name, int arity);
// An op of ir/ops.def with type rule Floats, called by its name. tl.exp is
// `approx` (ex2 of x * log2(e) on CUDA, as Triton); "libdevice.exp" is exact.
Symbol lower_math_function(Lowerer& l, const CallArgs& c, const std::string& name);
// The IR's `approx` attribute (docs/ir.md): an exp or a float quotient that
// CUDA may compute approximately (tl.exp, tl.fdiv, tl.sigmoid, tl.softmax).
ir::NamedAttr approx_attr();
// The `ieee_rounding` argument of tl.fdiv and tl.softmax: False unless
// given, and then a constant bool (E0601 naming `fn` otherwise).
bool ieee_rounding(const BoundArgs& a, const std::string& fn);
Symbol lower_fmod(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_pow(Lowerer& l, const CallArgs& c, const std::string& name);
// isnan, isinf, isfinite (and libdevice's finitef, isfinited), signbit.
Symbol lower_classification(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
