// `_C.Launcher`: the Python face of the launcher (launcher.h), one per
// JITFunction. `kernel[grid](*args, **kwargs)` is one call into C++:
// `kernel[grid]` is `launcher.with_grid(grid)`, a plain CPython vectorcall
// function bound to the launcher and the grid, which gets the caller's
// arguments as an array and keyword names, without the tuple and dict a
// nanobind binding with *args/**kwargs would build per call.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <vector>

#include "bindings/bindings.h"
#include "bindings/launcher.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {
namespace {

LaunchSupport support_from(nb::handle s) {
  LaunchSupport out;
  out.ndarray = s.attr("ndarray");
  out.generic = s.attr("generic");
  out.complexfloating = s.attr("complexfloating");
  out.flexible = s.attr("flexible");
  out.numpy_scalars = nb::cast<nb::dict>(s.attr("numpy_scalars"));
  out.torch_scalars = nb::cast<nb::dict>(s.attr("torch_scalars"));
  out.numpy_dtype = s.attr("numpy_dtype");
  out.from_dlpack = s.attr("from_dlpack");
  out.reinterpreted = s.attr("reinterpreted");
  out.descriptor = s.attr("descriptor");
  out.constexpr_type = s.attr("constexpr");
  out.dtype_type = s.attr("dtype");
  out.pointer_type = s.attr("pointer_type");
  out.current_device = s.attr("current_device");
  out.current_stream = s.attr("current_stream");
  out.torch_stream = s.attr("torch_stream");
  out.environment = s.attr("environment");
  out.backend_key = s.attr("backend_key");
  out.constexpr_function = s.attr("constexpr_function");
  out.aggregate_fields = s.attr("aggregate_fields");
  return out;
}

// *args and **kwargs as a vectorcall passes them, for the entry points
// nanobind binds (none of them is on the hot path).
struct FlatCall {
  std::vector<PyObject*> flat;
  nb::object kwnames;

  FlatCall(nb::args args, nb::kwargs kwargs) {
    for (nb::handle a : args) flat.push_back(a.ptr());
    nb::list names;
    PyObject* name = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t position = 0;
    while (PyDict_Next(kwargs.ptr(), &position, &name, &value)) {
      names.append(nb::handle(name));
      flat.push_back(value);
    }
    kwnames = nb::steal(PyList_AsTuple(names.ptr()));
    positional = nb::len(args);
  }
  CallArgs call() const { return CallArgs{Py_None, flat.data(), positional, kwnames.ptr()}; }

  size_t positional = 0;
};

// `launcher.launch(grid, *args, **kwargs)`: a vectorcall function, so a
// launch's arguments reach the launcher as CPython holds them. Its errors
// are the module's usual exceptions.
PyObject* launch_entry(PyObject* self, PyObject* const* args, Py_ssize_t count, PyObject* kwnames) {
  try {
    if (count < 1) throw nb::type_error("launch() takes the grid, then the kernel's arguments");
    CallArgs call{args[0], args + 1, static_cast<size_t>(count - 1), kwnames};
    return nb::inst_ptr<Launcher>(self)->launch(call).release().ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

// `launcher.with_grid(grid)(*args, **kwargs)`: what `kernel[grid]` returns.
// Its `self` is the pair (launcher, grid).
PyObject* grid_launch_entry(PyObject* pair, PyObject* const* args, Py_ssize_t count, PyObject* kwnames) {
  try {
    CallArgs call{PyTuple_GET_ITEM(pair, 1), args, static_cast<size_t>(count), kwnames};
    return nb::inst_ptr<Launcher>(PyTuple_GET_ITEM(pair, 0))->launch(call).release().ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

// `launcher.warmup(grid, *args, **kwargs)`: grid may be None.
PyObject* warmup_entry(PyObject* self, PyObject* const* args, Py_ssize_t count, PyObject* kwnames) {
  try {
    if (count < 1) throw nb::type_error("warmup() takes the grid (or None), then the kernel's arguments");
    CallArgs call{args[0], args + 1, static_cast<size_t>(count - 1), kwnames};
    return nb::inst_ptr<Launcher>(self)->warmup(call).release().ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

PyObject* with_grid_entry(PyObject* self, PyObject* grid);

// Static because every function object made from them points at them; never
// written after initialization.
PyMethodDef launch_method = {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_entry)),
                             METH_FASTCALL | METH_KEYWORDS,
                             "launch(grid, *args, **kwargs): launches the kernel; returns its CompiledKernel."};
PyMethodDef grid_launch_method = {
    "launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(grid_launch_entry)),
    METH_FASTCALL | METH_KEYWORDS, "(*args, **kwargs): launches the kernel on the grid it was made for."};
PyMethodDef warmup_method = {
    "warmup", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(warmup_entry)), METH_FASTCALL | METH_KEYWORDS,
    "warmup(grid, *args, **kwargs): compiles (or finds) the kernel for these arguments without launching it; "
    "the grid (None: none) is checked."};
PyMethodDef with_grid_method = {"with_grid", with_grid_entry, METH_O,
                                "with_grid(grid): the launch function of `kernel[grid]`."};

PyObject* with_grid_entry(PyObject* self, PyObject* grid) {
  Launcher* launcher = nb::inst_ptr<Launcher>(self);
  if (PyObject* known = launcher->grid_function(grid)) return Py_NewRef(known);
  PyObject* pair = PyTuple_Pack(2, self, grid);
  if (!pair) return nullptr;
  PyObject* function = PyCFunction_New(&grid_launch_method, pair);
  Py_DECREF(pair);
  if (function) launcher->remember_grid_function(grid, function);
  return function;
}

int launcher_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const Launcher* launcher = nb::inst_ptr<Launcher>(self);
  int status = 0;
  launcher->references([&](PyObject* object) {
    if (status == 0 && object) status = visit(object, arg);
  });
  return status;
}

int launcher_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<Launcher>(self)->clear();
  return 0;
}

PyType_Slot launcher_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(launcher_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(launcher_clear)},
    {0, nullptr},
};

nb::object function_of(nb::handle self, PyMethodDef* method) {
  PyObject* function = PyCFunction_New(method, self.ptr());
  if (!function) throw nb::python_error();
  return nb::steal(function);
}

}  // namespace

void bind_launch(nb::module_& m) {
  nb::class_<Launcher>(m, "Launcher", nb::type_slots(launcher_slots),
                       "The launch path of one JITFunction: binds the arguments, specializes the kernel on "
                       "them, finds or compiles it and launches it, in one call.")
      .def(
          "__init__",
          [](Launcher* self, nb::object jit, nb::handle support, std::vector<std::optional<std::string>> compiled) {
            std::vector<std::optional<ir::Scalar>> types;
            for (const std::optional<std::string>& name : compiled) {
              ir::Scalar scalar;
              if (name && !ir::parse_scalar(*name, &scalar))
                throw nb::value_error(("unknown scalar type '" + *name + "'").c_str());
              types.push_back(name ? std::optional(scalar) : std::nullopt);
            }
            new (self) Launcher(std::move(jit), support_from(support), std::move(types));
          },
          "jit"_a, "support"_a, "compiled_types"_a = std::vector<std::optional<std::string>>{},
          "compiled_types: for a compiled kernel's `compiled[grid]`, per parameter the scalar type it was "
          "compiled with (\"i64\") or None; its arguments are converted to those types.")
      .def_prop_ro(
          "launch", [](nb::handle self) { return function_of(self, &launch_method); },
          "launch(grid, *args, **kwargs): launches the kernel and returns its CompiledKernel (a new "
          "function object per access: keep one).")
      .def_prop_ro(
          "with_grid", [](nb::handle self) { return function_of(self, &with_grid_method); },
          "with_grid(grid) -> the launch function `kernel[grid]` returns (a new function object per access: "
          "keep one).")
      .def_prop_ro(
          "warmup", [](nb::handle self) { return function_of(self, &warmup_method); },
          "warmup(grid, *args, **kwargs): compiles (or finds) the kernel without launching it (a new function "
          "object per access).")
      .def(
          "inspect",
          [](Launcher& self, nb::args args, nb::kwargs kwargs) {
            FlatCall flat(std::move(args), std::move(kwargs));
            return self.inspect(flat.call());
          },
          "inspect(*args, **kwargs) -> (CompiledKernel with every stage, CUDA device or None).")
      .def(
          "request",
          [](Launcher& self, nb::args args, nb::kwargs kwargs) {
            FlatCall flat(std::move(args), std::move(kwargs));
            return self.request(flat.call());
          },
          "request(*args, **kwargs) -> (KernelRequest without its sources, CompileOptions): what a launch "
          "with these arguments compiles.")
      .def(
          "specialization",
          [](Launcher& self, nb::args args, nb::kwargs kwargs) {
            FlatCall flat(std::move(args), std::move(kwargs));
            return self.specialization(flat.call());
          },
          "The launch key of these arguments (bytes): equal keys run the same compiled kernel.")
      .def("arrays", &Launcher::arrays, "named"_a,
           "For the autotuner's key: ([element type of each array argument in `named`], backend name, CUDA "
           "device or None) of where the first array lives, or where a launch without arrays runs.")
      .def("specializations", &Launcher::specializations,
           "The argument specs (ArgSpec lists) of every specialization compiled so far.")
      .def("set_debug", &Launcher::set_debug, "debug"_a,
           "Debug mode: part of the key; debug launches pass every array's extent.")
      .def("__len__", &Launcher::size, "The number of specializations the launcher knows.");
}

}  // namespace tegula::python
