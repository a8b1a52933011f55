// Where a launch runs: the backend and device its array arguments ask for
// (docs/runtime-cuda.md, "Which backend, device and stream"). Arrays in host
// memory run on the host backend, arrays in a device's memory on that
// device's backend; arguments in different places are an error, and
// TEGULA_BACKEND (read at every launch) picks the backend of launches
// without arrays and makes a conflicting launch an error. Which name means
// which backend is the registry's (runtime/backend_registry.h).
#pragma once

#include <Python.h>

#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace tegula::python {

// Where an array lives: a backend's memory, on one of its devices (-1 for
// host memory).
struct Place {
  const backends::Backend* backend = nullptr;
  int device = -1;

  bool operator==(const Place&) const = default;
};

// An array argument and where it lives.
struct ArgumentPlace {
  size_t param = 0;  // index into the kernel's parameter names
  Place place;
};

// The backend TEGULA_BACKEND names, or null when it is unset or empty,
// read from `environment` (the dict under os.environ, whose keys and values
// are bytes on POSIX) at `key`: os.environ is where Python programs and
// their tests set variables, and a dict lookup costs a tenth of getenv()'s
// scan of the process environment, on every launch. Without that dict
// (`environment` not a dict), getenv(). Raises ValueError (E0705) for a
// name the registry does not know.
const backends::Backend* forced_backend(PyObject* environment, PyObject* key);

// A place's device when the launch runs on a device backend without arrays:
// the caller's current device there, which only Python can tell.
constexpr int kCurrentDevice = -2;

// The place of a launch whose array arguments are `arrays` (in parameter
// order). Raises ValueError (E0709) naming the arguments for arrays in
// different places and for a conflict with `forced`.
Place choose_place(const std::string& kernel, const std::vector<std::string>& names,
                   std::span<const ArgumentPlace> arrays, const backends::Backend* forced);

// "the CPU", "cuda:0": a place in messages.
std::string describe(const Place& place);

}  // namespace tegula::python
