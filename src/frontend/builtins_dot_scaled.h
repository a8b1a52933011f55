// tl.dot_scaled (builtins_dot_scaled.cpp): microscaled operands decoded,
// scaled and multiplied by tl.dot, as Triton emulates it without native MX
// hardware.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

Symbol lower_dot_scaled(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
