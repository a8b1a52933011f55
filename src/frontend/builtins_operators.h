// The operator methods of Triton's tensor: `x.__add__(y)` is `x + y`,
// `x.__radd__(y)` is `y + x`, `x.__lt__(y)` is `x < y`, `x.__neg__()` is
// `-x`, and `x.logical_and(y)` / `x.logical_or(y)` combine truth values.
// Kernels (and helpers written against Triton's tensor class) call them by
// name; they mean exactly what the operators do. builtins.cpp puts the
// handler in its table.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

Symbol lower_operator_method(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
