// Function forms of operators and elementwise helpers (builtins_operators.cpp):
// tl.add/sub/mul, x.logical_and/x.logical_or, tl.to_tensor, tl.expect_zero,
// tl.map_elementwise. builtins.cpp's registry names them; each takes the
// call's arguments and the name it was called by.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

Symbol lower_operator_function(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_logical(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_to_tensor(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_expect_zero(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_inline_asm(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_map_elementwise(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
