// tl.target_info.* (builtins_target_info.cpp): is_cuda(),
// cuda_capability_geq(major, minor=0), is_hip() and its variants, as
// compile-time constants of the target the kernel is compiled for.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

Symbol lower_target_info(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
