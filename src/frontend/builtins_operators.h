// Operators by name and the function forms of operators and elementwise
// helpers (builtins_operators.cpp): Triton's tensor operator methods
// (`x.__add__(y)` is `x + y`, `x.__radd__(y)` is `y + x`, `x.__neg__()` is
// `-x`, `x.logical_and(y)` / `x.logical_or(y)` combine truth values),
// tl.add/sub/mul, tl.to_tensor, tl.expect_zero, tl.map_elementwise and
// tl.inline_asm_elementwise. builtins.cpp's registry names them; each takes
// the call's arguments and the name it was called by.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

Symbol lower_operator_method(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_operator_function(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_to_tensor(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_expect_zero(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_inline_asm(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_map_elementwise(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
