// Python's text forms of compile-time values: str(), repr() and format(value,
// spec), which f-strings and tl.static_print build from at compile time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "frontend/const_value.h"

namespace tegula::frontend {

// The shortest text that reads back as `x`, as Python's repr of a float (`0.1`, `1e+16`, `inf`).
std::string python_float(double x);

// str(v): `128`, `0.5`, `True`, the text itself, `None`, a dtype by Triton's name (`fp32`).
std::string python_str(const ConstValue& v);

// repr(v): as str(v), but a string quoted and escaped as Python does, a dtype `triton.language.float32`.
std::string python_repr(const ConstValue& v);

// ascii(v): repr(v) with every non-ASCII character escaped.
std::string python_ascii(const ConstValue& v);

// format(v, spec) by Python's format-specification mini-language for int, bool, float and str (other
// kinds take only the empty spec). On a spec the value's type refuses, nullopt and `error` says why
// in Python's words.
std::optional<std::string> python_format(const ConstValue& v, std::string_view spec, std::string* error);

}  // namespace tegula::frontend
