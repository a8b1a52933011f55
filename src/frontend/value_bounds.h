// Bounds on the compile-time values a kernel builds: tuples (and lists),
// aggregate instances and strings.
//
// The front end holds these by value, and Python code grows them freely: a
// static loop doubling a tuple (`t = (t, t)`) or a string (`s = s + s`) 40
// times asks for 2^40 of them, long before any unrolling bound stops it,
// and a tuple nested 100,000 deep (`t = (t,)`) overflows the stack of every
// recursive walk over it. Each value is measured where it is built, and one
// past a bound is error E0612 at the expression that built it.
#pragma once

#include <cstddef>
#include <string_view>

#include "frontend/symbol.h"
#include "support/source.h"

namespace tegula::frontend {

// A value's parts: itself, the parts of every symbol it holds (a tuple's or
// aggregate's elements, a bound method's receiver), and one more per
// kStringCharsPerPart characters of a string, so that a tuple of long
// strings is bounded in bytes too.
inline constexpr size_t kMaxValueParts = 8192;
inline constexpr size_t kMaxValueDepth = 256;  // tuples in tuples
inline constexpr size_t kMaxStringLength = size_t{1} << 20;  // as a format spec's width (python_format.cpp)
inline constexpr size_t kStringCharsPerPart = 256;

struct ValueSize {
  size_t parts = 0;  // counted up to just past kMaxValueParts
  size_t depth = 0;  // counted up to just past kMaxValueDepth
};

ValueSize measure(const Symbol& s);

// Throws E0612 at `loc` when `s` is past a bound.
void check_value_size(const Symbol& s, const SourceLoc& loc);

// Throws E0612 at `loc` when a string `length` characters long is past its bound.
void check_string_length(size_t length, const SourceLoc& loc);

// The size of a tuple (or of a call's arguments) while its elements are
// evaluated one by one, so that `(t, t, ..., t)` stops at the element that
// passes the bound instead of after all of them are copied.
class ValueSizer {
 public:
  ValueSizer(const SourceLoc& loc, std::string_view what) : loc_(loc), what_(what) {}
  void add(const Symbol& element);

 private:
  SourceLoc loc_;
  std::string_view what_;
  size_t parts_ = 1;  // the tuple itself
};

}  // namespace tegula::frontend
