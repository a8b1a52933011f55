#include "bindings/launch_errors.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace tegula::python {

PyObject* argument_overflow_error() {
  // Error path only: the import may be slow. The module keeps the class alive.
  nb::object module = nb::steal(PyImport_ImportModule("tegula._errors"));
  nb::object type = module.is_valid() ? nb::getattr(module, "ArgumentOverflowError", nb::none()) : nb::none();
  PyErr_Clear();
  return type.is_none() ? PyExc_OverflowError : type.ptr();
}

void raise_coded(PyObject* type, Diag code, const std::string& message) {
  std::string_view code_text = code_of(code);
  std::string text = "error[" + std::string(code_text) + "]: " + message;
  nb::object error = nb::steal(PyObject_CallOneArg(type, nb::str(text.data(), text.size()).ptr()));
  if (!error.is_valid()) throw nb::python_error();
  if (PyObject_SetAttrString(error.ptr(), "code", nb::str(code_text.data(), code_text.size()).ptr()) != 0)
    throw nb::python_error();
  PyErr_SetObject(type, error.ptr());
  throw nb::python_error();
}

std::string repr_of(nb::handle value) { return nb::cast<std::string>(nb::repr(value)); }

std::string str_of(nb::handle value) { return nb::cast<std::string>(nb::str(value)); }

std::string type_name_of(nb::handle value) {
  return nb::cast<std::string>(nb::getattr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()))), "__name__"));
}

std::string quoted(std::string_view text) {
  return nb::cast<std::string>(nb::repr(nb::str(text.data(), text.size())));
}

}  // namespace tegula::python
