// Structural and type checks of a Function. Run after every pass in debug
// builds and in tests; a failure is a compiler bug (InternalError), reported
// with the offending op printed.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// Returns an empty string when `fn` is well formed, else a description of the
// first problem found.
std::string verify(const Function& fn);

// Throws InternalError naming `stage` if verify() fails.
void verify_or_throw(const Function& fn, const char* stage);

}  // namespace tegula::ir
