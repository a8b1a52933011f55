// The errors a launch reports about its Python arguments (binding, argument
// kinds and values, the grid, where the launch runs), raised as the Python
// package always raised them: the built-in type (TypeError for a value of
// the wrong kind, ValueError for one out of range, ArgumentOverflowError for
// an integer argument past 64 bits), the text
// "error[CODE]: message" and the stable code as `.code` (docs/diagnostics.md).
// Errors the compiler or a backend finds keep their rendered form
// (module.cpp).
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <string_view>

#include "support/diagnostic.h"

namespace tegula::python {

// tegula.ArgumentOverflowError (python/tegula/_errors.py): an integer
// argument past 64 bits. Both an OverflowError (what Triton raises) and a
// ValueError (what Tegula raised).
PyObject* argument_overflow_error();

// Raises `type("error[CODE]: message")` with `.code`; never returns (throws
// nanobind::python_error, which the launch entry points restore).
[[noreturn]] void raise_coded(PyObject* type, Diag code, const std::string& message);

// repr(value) and type(value).__name__, for messages.
std::string repr_of(nanobind::handle value);
std::string type_name_of(nanobind::handle value);
// str(value).
std::string str_of(nanobind::handle value);
// Python's repr() of a str: 'text' (or "text" when it holds a single quote).
std::string quoted(std::string_view text);

}  // namespace tegula::python
