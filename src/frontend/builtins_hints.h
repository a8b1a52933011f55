// Facts a kernel promises the compiler (builtins_hints.cpp): tl.multiple_of,
// tl.max_contiguous and tl.max_constancy return their input wrapped in a
// `hint` op that the axis analysis reads (ir/hint.h); tl.assume(cond)
// turns the divisibility conditions it recognizes into such hints.
// builtins.cpp puts them in its handler table.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

// multiple_of, max_contiguous, max_constancy (input, values).
Symbol lower_hint(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_assume(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
