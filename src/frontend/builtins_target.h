// tl.extra.cuda (builtins_target.cpp): what a program knows of the machine
// it runs on, and programmatic dependent launch. builtins.cpp's registry
// names them.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

// num_warps, num_threads (constants of the launch), globaltimer, smid
// (target queries), gdc_wait, gdc_launch_dependents (orderings).
Symbol lower_target_query(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
