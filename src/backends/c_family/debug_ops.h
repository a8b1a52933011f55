// print and assert: what every dialect shares.
//
// A printed line: how printf shows each element kind, and the prefix and
// value that end every line, as Triton prints them. What comes before them
// (program and element coordinates) and the call itself (the CPU's
// per-thread buffer, CUDA's device printf) are the dialect's.
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
  std::string format;  // "%f"
  std::string value;   // "(double)v7[i]"
};

// How printf shows expression `e`, one element of type `t`: floats as %f
// (halves and fp8 through float), integers in decimal, pointers as %p. With
// `hex` (tl.device_print(..., hex=True)), `t` is an unsigned integer holding
// the printed value's bits, shown as 0x and all its hex digits.
PrintfArgument printf_argument(const ir::Type& t, const std::string& e, bool hex = false);

// Appends "<prefix>(operand k) v" to a print line: the prefix (the front
// end's, already in Triton's form, " x: ") as a "%s" argument, so user text
// never becomes part of a format and a '%' in it is printed; "(operand k) "
// only when `operand` >= 0 (a print of several values: one line each); then
// `element`, of element type `type`. `format` gets the conversions, `args`
// the arguments, each after ", ".
void append_printed_value(std::string& format, std::string& args, std::string_view prefix, int operand,
                          const ir::Type& type, const std::string& element, Dialect dialect, bool hex = false);

// The digits of the largest index of a dimension of `size` elements, at
// least 1: Triton pads each printed index to them (`idx (  7)` of 128).
int index_width(int64_t size);

// The start of assert `op`: outside debug mode only a comment (device
// asserts are a debug feature, as in Triton), and for a scalar condition
// one `if (!cond) <failure("0")>`. `failure(index)` is the dialect's
// statement recording a failure at flat element `index`. Returns whether
// the condition is a tile the dialect still has to check.
bool emit_assert_start(Printer& p, const ir::Op& op, bool debug,
                       const std::function<std::string(const std::string&)>& failure);

}  // namespace tegula::backends::c_family
