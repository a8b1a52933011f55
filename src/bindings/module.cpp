// Module `tegula._C` and the translation of C++ errors into Python exceptions.
//
// tegula::Error already carries the fully rendered diagnostic, so the Python
// message is exactly what a compiler would print (file:line:col, the quoted
// line, the caret, the hint). Its kind picks the exception class; a
// CompilationError carries the bare message as its `__cause__`, as Triton's do.
#include <Python.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "bindings/bindings.h"
#include "runtime/compiler.h"
#include "backends/cuda/driver_api.h"
#include "frontend/value_bounds.h"
#include "support/diagnostic.h"
#include "support/interrupt.h"

namespace nb = nanobind;

namespace tegula::python {
namespace {

PyObject* exception_for(ErrorKind kind, PyObject* compilation_error) {
  switch (kind) {
    case ErrorKind::Compile: return compilation_error;
    case ErrorKind::Type: return PyExc_TypeError;
    case ErrorKind::Value: return PyExc_ValueError;
  }
  return compilation_error;
}

// A message as a Python str, whole: user text in it (a static_assert's
// message) may hold NUL bytes, which C strings would end at.
PyObject* text_of(std::string_view text) {
  return PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
}

// `type(text)`, a new reference, or null with an exception set.
PyObject* exception_of(PyObject* type, std::string_view text) {
  PyObject* message = text_of(text);
  if (!message) return nullptr;
  PyObject* error = PyObject_CallOneArg(type, message);
  Py_DECREF(message);
  return error;
}

// Raises `type(message)` with the diagnostic's stable code as its `code`
// attribute ("E0401"), so callers can branch on the kind of mistake.
void raise_with_code(PyObject* type, std::string_view message, Diag code) {
  PyObject* error = exception_of(type, message);
  if (!error) return;  // the failed call left its own exception set
  std::string_view text = code_of(code);
  PyObject* code_text = PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  if (code_text && PyObject_SetAttrString(error, "code", code_text) == 0) PyErr_SetObject(type, error);
  Py_XDECREF(code_text);
  Py_DECREF(error);
}

// `name` of module tegula._C (a new reference), or null with no error set.
PyObject* module_attribute(const char* name) {
  PyObject* module = PyImport_GetModule(nb::str("tegula._C").ptr());
  PyObject* attribute = module ? PyObject_GetAttrString(module, name) : nullptr;
  Py_XDECREF(module);
  if (!attribute) PyErr_Clear();
  return attribute;
}

// `type(text)` with the diagnostic's `code` and `error_message`, caused by
// `cause` (stolen; may be null). Null with an exception set on failure.
PyObject* compilation_error_of(PyObject* type, std::string_view text, PyObject* code, PyObject* message,
                               PyObject* cause) {
  PyObject* error = exception_of(type, text);
  if (!error || PyObject_SetAttrString(error, "code", code) != 0 ||
      PyObject_SetAttrString(error, "error_message", message) != 0) {
    Py_XDECREF(error);
    Py_XDECREF(cause);
    return nullptr;
  }
  if (cause) PyException_SetCause(error, cause);  // steals `cause`
  return error;
}

// Raises CompilationError(rendered) as Triton's front end raises its own.
// Its `__cause__` is the error found underneath, whose text is the bare
// message (a TypeError for a type mistake, E03xx, else a ValueError); an
// error inside called @jit functions chains, in between, a CompilationError
// for each of them, rendered as seen inside it (innermost nearest the bare
// error). A false static assertion (E0604) is a CompileTimeAssertionFailure
// with no cause: nothing failed underneath it. `error_message` holds the
// bare message throughout.
void raise_compilation_error(PyObject* compilation_error, const tegula::Error& e) {
  std::string_view code = code_of(e.code());
  const std::string& message = e.message().empty() ? e.text() : e.message();
  PyObject* code_text = PyUnicode_FromStringAndSize(code.data(), static_cast<Py_ssize_t>(code.size()));
  PyObject* message_text = text_of(message);
  PyObject* type = compilation_error;
  PyObject* assertion_type = e.code() == Diag::AssertionFailsAtCompileTime
                                 ? module_attribute("CompileTimeAssertionFailure") : nullptr;
  if (assertion_type) type = assertion_type;
  // Python syntax kernels do not take (E0110) is an UnsupportedLanguageConstruct, as in Triton.
  PyObject* construct_type = e.code() == Diag::UnsupportedSyntax ? module_attribute("UnsupportedLanguageConstruct")
                                                                 : nullptr;
  if (construct_type) type = construct_type;
  PyObject* cause = nullptr;
  if (code_text && message_text && !assertion_type) {
    PyObject* cause_type = code.substr(0, 3) == "E03" ? PyExc_TypeError : PyExc_ValueError;
    cause = exception_of(cause_type, message);
    if (cause && PyObject_SetAttrString(cause, "code", code_text) != 0) Py_CLEAR(cause);
    for (const std::string& inside : e.inside()) {
      if (!cause) break;
      cause = compilation_error_of(compilation_error, inside, code_text, message_text, cause);
    }
  }
  PyObject* error = code_text && message_text && (cause || assertion_type)
                        ? compilation_error_of(type, e.text(), code_text, message_text, cause)
                        : nullptr;
  if (error) PyErr_SetObject(type, error);
  Py_XDECREF(error);
  Py_XDECREF(assertion_type);
  Py_XDECREF(construct_type);
  Py_XDECREF(message_text);
  Py_XDECREF(code_text);
}

// The poll of native work (support/interrupt.h): runs Python's signal
// handlers, which only the main thread can; one that raised (SIGINT's
// default handler raises KeyboardInterrupt) leaves its exception set, for
// raise_interrupted. Other threads never take the GIL for it (they could
// not run the handlers anyway, and one that waits on the GIL for a poll must
// not wait on a thread that holds it while waiting on this work).
bool python_interrupt_pending() {
  if (::syscall(SYS_gettid) != ::getpid()) return false;  // not the main thread
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return false;
#else
  if (_Py_IsFinalizing()) return false;
#endif
  PyGILState_STATE state = PyGILState_Ensure();
  bool pending = PyErr_Occurred() != nullptr || PyErr_CheckSignals() != 0;
  PyGILState_Release(state);
  return pending;
}

// Interrupted as Python sees it: the exception the signal handler raised, or
// KeyboardInterrupt when the interrupt reached only a child process (Ctrl-C
// in a terminal signals the compiler too, which may notice first).
void raise_interrupted() {
  if (PyErr_Occurred() || PyErr_CheckSignals() != 0) return;
  PyErr_SetNone(PyExc_KeyboardInterrupt);
}

// A rendered diagnostic ends its lines with '\n', which the command line
// prints as it is; a Python exception's text ends without one.
std::string_view without_final_newline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

// `payload` is the CompilationError type object; the module keeps it alive.
void translate_errors(const std::exception_ptr& error, void* payload) {
  auto* compilation_error = static_cast<PyObject*>(payload);
  try {
    std::rethrow_exception(error);
  } catch (const Interrupted&) {
    raise_interrupted();
  } catch (const backends::DeviceFault& e) {
    // A debug kernel went out of bounds or failed an assert: tegula.DeviceError.
    raise_device_error(e);
  } catch (const backends::cuda::DriverError& e) {
    // The driver, the device or a library failed, not the caller's values.
    raise_with_code(PyExc_RuntimeError, e.what(), e.code());
  } catch (const tegula::Error& e) {
    if (e.kind() == ErrorKind::Compile) raise_compilation_error(compilation_error, e);
    else raise_with_code(exception_for(e.kind(), compilation_error), without_final_newline(e.text()), e.code());
  } catch (const UserError& e) {
    // Only reachable if a UserError escapes without its sources (a bug in the
    // API boundary); still report it as the user's error, unlocated.
    raise_with_code(exception_for(e.diagnostic().kind, compilation_error),
                    without_final_newline(render(e.diagnostic(), nullptr)), e.diagnostic().code);
  } catch (const InternalError& e) {
    raise_with_code(PyExc_RuntimeError, e.what(), Diag::InternalCompilerError);
  }
}

PyObject* builtin_exception_type(nb::exception_type type) {
  switch (type) {
    case nb::exception_type::stop_iteration: return PyExc_StopIteration;
    case nb::exception_type::index_error: return PyExc_IndexError;
    case nb::exception_type::key_error: return PyExc_KeyError;
    case nb::exception_type::value_error: return PyExc_ValueError;
    case nb::exception_type::type_error: return PyExc_TypeError;
    case nb::exception_type::buffer_error: return PyExc_BufferError;
    case nb::exception_type::import_error: return PyExc_ImportError;
    case nb::exception_type::attribute_error: return PyExc_AttributeError;
    default: return PyExc_RuntimeError;
  }
}

}  // namespace

void set_python_error(const std::exception_ptr& error) {
  try {
    try {
      std::rethrow_exception(error);
    } catch (nb::python_error& e) {
      e.restore();
      return;
    } catch (const nb::builtin_exception& e) {
      PyErr_SetString(builtin_exception_type(e.type()), e.what());
      return;
    } catch (const std::bad_alloc&) {
      PyErr_NoMemory();
      return;
    } catch (const Interrupted&) {
      raise_interrupted();
      return;
    } catch (...) {
    }
    // The CompilationError type lives on the module (error path only: the lookup may be slow).
    nb::object module = nb::steal(PyImport_GetModule(nb::str("tegula._C").ptr()));
    nb::object compilation_error = module.is_valid() ? nb::getattr(module, "CompilationError", nb::none()) : nb::none();
    PyErr_Clear();
    translate_errors(error, compilation_error.is_none() ? PyExc_RuntimeError : compilation_error.ptr());
  } catch (const std::exception& e) {  // none of ours: what nanobind would say
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "an unknown C++ exception");
  }
}

// A new exception class `tegula.<name>` deriving from `base`, set on the module, which owns it; the
// pointer is borrowed for the life of the process (extension modules are never unloaded), as the
// error translator and the classes deriving from it need.
PyObject* add_exception(nb::module_& m, const char* name, const char* doc, PyObject* base) {
  std::string qualified = std::string("tegula.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::steal(type);
  return type;
}

}  // namespace tegula::python

NB_MODULE(_C, m) {
  m.doc() = "Tegula's compiler and runtime (C++), as used by the tegula package.";
  m.attr("__version__") = TEGULA_VERSION;
  // The bounds of the compile-time values a kernel holds, for the values Python hands the compiler.
  m.attr("MAX_COMPILE_TIME_VALUES") = tegula::frontend::kMaxValueParts;
  m.attr("MAX_COMPILE_TIME_DEPTH") = tegula::frontend::kMaxValueDepth;

  // Triton's base of the errors it raises for a kernel (triton.TritonError): host code catches it.
  PyObject* triton_error = tegula::python::add_exception(
      m, "TritonError",
      "The base of CompilationError, OutOfResources, AutotuneError and DeviceError, as Triton's TritonError is "
      "of its own: `except tegula.TritonError` catches what a kernel's compile, tuning or debug checks raise.",
      PyExc_Exception);
  PyObject* compilation_error = tegula::python::add_exception(
      m, "CompilationError",
      "A kernel failed to compile. The message is the rendered diagnostic: "
      "file:line:col, error[CODE], the source line with a caret, and a hint; "
      "`code` is the stable error code (`tegula explain CODE`, docs/diagnostics.md).",
      triton_error);
  tegula::python::add_exception(
      m, "CompileTimeAssertionFailure",
      "A CompilationError for an assertion found false at compile time (tl.static_assert, E0604), as Triton's "
      "CompileTimeAssertionFailure: it has no `__cause__`.",
      compilation_error);
  tegula::python::add_exception(
      m, "UnsupportedLanguageConstruct",
      "A CompilationError for Python syntax that kernels do not take (E0110: a nested `def`, `try`, a lambda that "
      "captures a run-time value...), as Triton's UnsupportedLanguageConstruct.",
      compilation_error);
  nb::register_exception_translator(tegula::python::translate_errors, compilation_error);
  tegula::set_interrupt_poll(tegula::python::python_interrupt_pending);

  // nanobind reports instances still alive when the module is torn down. A
  // process that exits with other threads running (pytest-xdist's workers,
  // daemon threads) never clears the modules that hold kernels, so that report
  // names live kernels, not lost references: Launcher cycles are collectable
  // (tp_traverse/tp_clear). TEGULA_LEAK_WARNINGS=1 turns the report back on.
  const char* leak_warnings = std::getenv("TEGULA_LEAK_WARNINGS");
  nb::set_leak_warnings(leak_warnings && std::string_view(leak_warnings) == "1");

  tegula::python::bind_compiler(m);
  tegula::python::bind_kernel(m);
  tegula::python::bind_cuda(m);
  tegula::python::bind_launch(m);
  tegula::python::bind_launch_observer(m);
}
