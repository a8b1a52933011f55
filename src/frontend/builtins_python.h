// The Python builtins a kernel evaluates at compile time, as Triton's code
// generator does (its builtin namespace): getattr, hasattr, isinstance and
// list here; len, min, max, int, float, bool, abs, print and range in
// builtins.cpp. Every other Python builtin is refused where it is used, with
// what to write instead. builtins.cpp puts the handlers in its table.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "frontend/lowering.h"

namespace tegula::frontend {

// getattr(obj, name[, default]) and hasattr(obj, name): `name` a constexpr
// string; the attribute is what `obj.<name>` means in a kernel.
Symbol py_getattr(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol py_hasattr(Lowerer& l, const CallArgs& c, const std::string& name);
// isinstance(obj, cls): cls one of int, float, bool, str, tuple, tl.tensor,
// tl.constexpr, tl.dtype, or a tuple of them.
Symbol py_isinstance(Lowerer& l, const CallArgs& c, const std::string& name);
// list(tuple): the tuple (kernels have no mutable lists).
Symbol py_list(Lowerer& l, const CallArgs& c, const std::string& name);

// For a Python builtin that kernels cannot use (`zip`, `sum`, `type`...):
// the error's message and its hint. nullopt for other names.
std::optional<std::pair<std::string, std::string>> refused_python_builtin(const std::string& name);

}  // namespace tegula::frontend
