// print and assert: what every dialect shares.
//
// A printed line: how printf shows each element kind, and the prefix and
// values that end every line. What comes before them (program and element
// coordinates) and the call itself (the CPU's per-thread buffer, CUDA's
// device printf) are the dialect's.
//
// An assert: compiled only in debug mode, and a scalar condition is one
// check; finding the failing element of a tile is the dialect's.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/c_family/printer.h"

namespace tegula::backends::c_family {

struct PrintfArgument {
  std::string format;  // "%.9g"
  std::string value;   // "(double)v7[i]"
};

// How printf shows expression `e`, one element of type `t` (halves and fp8
// through float, with as many digits as their precision needs). With `hex`
// (tl.device_print(..., hex=True)), `t` is an unsigned integer holding the
// printed value's bits, shown as 0x and all its hex digits.
PrintfArgument printf_argument(const ir::Type& t, const std::string& e, bool hex = false);

// Appends " prefix v1, v2" to a print line: the prefix as a "%s" argument
// (user text never becomes part of a format, so a '%' in it is printed),
// then each value. `elements[k]` is the expression of the printed element of
// operand k and `types[k]` its element type. `format` gets the conversions,
// `args` the arguments, each after ", ".
void append_printed_values(std::string& format, std::string& args, std::string_view prefix,
                           const std::vector<ir::Type>& types, const std::vector<std::string>& elements,
                           Dialect dialect, bool hex = false);

// The start of assert `op`: outside debug mode only a comment (device
// asserts are a debug feature, as in Triton), and for a scalar condition
// one `if (!cond) <failure("0")>`. `failure(index)` is the dialect's
// statement recording a failure at flat element `index`. Returns whether
// the condition is a tile the dialect still has to check.
bool emit_assert_start(Printer& p, const ir::Op& op, bool debug,
                       const std::function<std::string(const std::string&)>& failure);

}  // namespace tegula::backends::c_family
