// Parses the text produced by ir/printer.h back into a Function, so tests can
// start at any stage. Location comments are read back when present.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// Throws UserError (located in the IR text, file name `<ir>`) on malformed input.
Function parse(const std::string& text);

}  // namespace tegula::ir
