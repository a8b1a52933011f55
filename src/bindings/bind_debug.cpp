// Debug mode's error as Python sees it: a backends::DeviceFault (a debug
// kernel went out of bounds or failed a device assert) becomes
// tegula.DeviceError (python/tegula/_debug.py), a RuntimeError subclass
// whose attributes carry the report's fields.
#include <Python.h>

#include <nanobind/stl/string.h>

#include "bindings/bindings.h"

namespace nb = nanobind;

namespace tegula::python {

namespace {

nb::object optional_int(const std::optional<int64_t>& value) {
  if (!value) return nb::none();
  return nb::int_(*value);
}

nb::object optional_text(const std::string& value) {
  if (value.empty()) return nb::none();
  return nb::str(value.c_str());
}

nb::object make_device_error(const backends::DeviceFault& fault) {
  const backends::DeviceFault::Details& d = fault.details();
  nb::object type = nb::module_::import_("tegula._debug").attr("DeviceError");
  nb::tuple program_id = nb::make_tuple(d.program_id[0], d.program_id[1], d.program_id[2]);
  nb::object index = nb::none();
  if (d.kind == "assert") {
    nb::list position;
    for (int64_t i : d.index) position.append(i);
    index = nb::tuple(position);
  }
  nb::dict fields;
  fields["kernel"] = d.kernel;
  fields["kind"] = d.kind;
  fields["file"] = optional_text(d.file);
  fields["line"] = optional_int(d.line > 0 ? std::optional<int64_t>(d.line) : std::nullopt);
  fields["col"] = optional_int(d.col > 0 ? std::optional<int64_t>(d.col) : std::nullopt);
  fields["program_id"] = program_id;
  fields["offset"] = optional_int(d.offset);
  fields["size"] = optional_int(d.size);
  fields["arg"] = optional_text(d.arg);
  fields["dtype"] = optional_text(d.dtype);
  fields["message"] = optional_text(d.message);
  fields["index"] = index;
  nb::object error = type(fault.what(), **fields);
  std::string_view code = code_of(fault.code());  // E0907, like every other error's `code`
  error.attr("code") = nb::str(code.data(), code.size());
  return error;
}

}  // namespace

void raise_device_error(const backends::DeviceFault& fault) {
  try {
    nb::object error = make_device_error(fault);
    PyErr_SetObject(error.type().ptr(), error.ptr());
  } catch (const nb::python_error&) {
    // tegula._debug could not be imported: still report the error itself.
    PyErr_SetString(PyExc_RuntimeError, fault.what());
  }
}

}  // namespace tegula::python
