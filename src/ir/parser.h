// Parses the text produced by ir/printer.h back into a Function, so tests can
// start at any stage. Location comments are read back when present.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// Throws UserError (located in the IR text, file name `<ir>`) on malformed input.
// Its location's file index is 0: to render it, add the text as the first file
// of a SourceManager, named "<ir>" (or the name of the file it came from).
Function parse(const std::string& text);

}  // namespace tegula::ir
