// The float library functions beyond the core ones of builtins.cpp
// (builtins_math.cpp): tan, atan2, log1p, rint... (an IR op each), fmod,
// pow, and the classification functions isnan, isinf, isfinite, signbit.
// Kernels reach them as tl.<name>, tl.math.<name> and
// tl.extra.libdevice.<name> alike.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

bool is_math_builtin(const std::string& name);
// The value of the call of math builtin `name` (is_math_builtin(name) holds).
Symbol lower_math_builtin(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
