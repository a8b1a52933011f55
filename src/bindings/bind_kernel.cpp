// CompiledKernel: what a launch runs. The launch path is the hot path of every
// `kernel[grid](...)` call, so it converts the (already validated) Python
// values straight into ArgValues by the parameter types and releases the GIL
// while the grid runs (CPU) or while the driver queues it (CUDA: launch_cuda,
// on the caller's stream handle and device).
#include <nanobind/stl/array.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/bindings.h"
#include "runtime/compiler.h"
#include "backends/cuda/module.h"
#include "runtime/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {
namespace {

using runtime::ArgValue;
using runtime::CompiledKernel;

[[noreturn]] void argument_error(const CompiledKernel& kernel, const ir::Param& param,
                                 const char* expected, nb::handle got) {
  std::string message = "argument '" + param.name + "' of kernel '" + kernel.name + "' (" +
                        ir::to_string(param.type) + ") expects " + expected + ", got " +
                        nb::type_name(got.type()).c_str();
  tegula::fail(ErrorKind::Type, Diag::LaunchArgumentType, std::move(message));
}

// The Python side has already chosen the parameter's kind from the value, so
// a mismatch here is a caller bug; it still surfaces as a TypeError.
ArgValue convert(const CompiledKernel& kernel, const ir::Param& param, nb::handle value) {
  ArgValue out;
  const ir::Type& type = param.type;
  if (type.is_pointer()) {
    out.kind = ArgValue::Kind::Pointer;
    if (!nb::try_cast<uint64_t>(value, out.bits))
      argument_error(kernel, param, "an address (int)", value);
  } else if (ir::is_float(type.scalar)) {
    out.kind = ArgValue::Kind::Float;
    if (!nb::try_cast<double>(value, out.real)) argument_error(kernel, param, "a float", value);
  } else if (type.scalar == ir::Scalar::I1) {
    out.kind = ArgValue::Kind::Bool;
    bool b = false;
    if (!nb::try_cast<bool>(value, b)) argument_error(kernel, param, "a bool", value);
    out.bits = b ? 1 : 0;
  } else if (ir::is_signed(type.scalar)) {
    out.kind = ArgValue::Kind::Int;
    int64_t v = 0;
    if (!nb::try_cast<int64_t>(value, v)) argument_error(kernel, param, "an int", value);
    out.bits = static_cast<uint64_t>(v);
  } else {
    out.kind = ArgValue::Kind::UInt;
    if (!nb::try_cast<uint64_t>(value, out.bits))
      argument_error(kernel, param, "a non-negative int", value);
  }
  return out;
}

std::vector<ArgValue> convert_all(const CompiledKernel& kernel, const std::array<int64_t, 3>& grid, nb::list args) {
  const size_t count = nb::len(args);
  if (count != kernel.params.size()) {
    tegula::fail(ErrorKind::Value, Diag::LaunchArgumentCount,
                  "kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) +
                      " runtime arguments, got " + std::to_string(count));
  }
  std::vector<ArgValue> values;
  values.reserve(count);
  for (size_t i = 0; i < count; ++i) values.push_back(convert(kernel, kernel.params[i], args[i]));
  for (int64_t g : grid)
    if (g < 0) tegula::fail(ErrorKind::Value, Diag::InvalidGrid, "grid dimensions must be >= 0");
  return values;
}

// Debug kernels: each array argument's (first byte, byte count), None for
// the other arguments (runtime/debug_record.h).
void set_extents(const CompiledKernel& kernel, std::vector<ArgValue>& values, nb::handle extents) {
  if (extents.is_none()) return;
  nb::list list = nb::cast<nb::list>(extents);
  if (nb::len(list) != values.size())
    tegula::fail(ErrorKind::Value, Diag::LaunchArgumentCount,
                  "kernel '" + kernel.name + "': " + std::to_string(nb::len(list)) + " array extents for " +
                      std::to_string(values.size()) + " arguments");
  for (size_t i = 0; i < values.size(); ++i) {
    if (list[i].is_none()) continue;
    auto [base, bytes] = nb::cast<std::tuple<uint64_t, uint64_t>>(list[i]);
    values[i].extent_base = base;
    values[i].extent_bytes = bytes;
  }
}

void launch(const CompiledKernel& kernel, const std::array<int64_t, 3>& grid, nb::list args, nb::handle extents) {
  std::vector<ArgValue> values = convert_all(kernel, grid, args);
  set_extents(kernel, values, extents);
  nb::gil_scoped_release released;
  kernel.launch(grid.data(), values);
}

void launch_cuda(const CompiledKernel& kernel, const std::array<int64_t, 3>& grid, nb::list args, uint64_t stream,
                 int device, nb::handle extents) {
  std::vector<ArgValue> values = convert_all(kernel, grid, args);
  set_extents(kernel, values, extents);
  nb::gil_scoped_release released;
  kernel.launch(grid.data(), values, stream, device);
}

// What the kernel uses on `device` (CUDA kernels; loads it there if needed).
nb::dict resources(const CompiledKernel& kernel, int device) {
  if (!kernel.cuda_module)
    tegula::fail(ErrorKind::Value, Diag::WrongLaunchTarget,
                  "kernel '" + kernel.name + "' runs on the CPU; it has no GPU resources");
  backends::cuda::Resources used;
  {
    nb::gil_scoped_release released;
    used = kernel.cuda_module->resources(device);
  }
  nb::dict d;
  d["registers"] = used.registers;
  d["static_shared_bytes"] = used.static_shared_bytes;
  d["dynamic_shared_bytes"] = used.dynamic_shared_bytes;
  d["local_bytes"] = used.local_bytes;
  d["max_threads"] = used.max_threads;
  d["threads"] = kernel.cuda_module->num_threads();
  return d;
}

// The C form of NumPy's array interface (the `__array_struct__` capsule), as
// the protocol documents it. Reading the address from it costs about a tenth
// of building the `__array_interface__` dict, and every pointer argument of
// every launch pays it.
struct ArrayInterface {
  int two;  // always 2: a sanity check
  int nd;
  char typekind;
  int itemsize;
  int flags;
  Py_intptr_t* shape;
  Py_intptr_t* strides;
  void* data;  // the first element
  PyObject* descr;
};

uint64_t data_address(nb::handle array) {
  nb::object capsule = nb::getattr(array, "__array_struct__");
  auto* info = PyCapsule_CheckExact(capsule.ptr())
                   ? static_cast<const ArrayInterface*>(PyCapsule_GetPointer(capsule.ptr(), nullptr))
                   : nullptr;
  if (!info || info->two != 2) {
    PyErr_Clear();
    throw nb::type_error("__array_struct__ is not an array interface capsule");
  }
  return reinterpret_cast<uintptr_t>(info->data);
}

nb::dict stage_dict(const CompiledKernel& kernel) {
  nb::dict d;  // insertion order is pipeline order
  for (const auto& dump : kernel.stages.ir) d[dump.stage.c_str()] = dump.ir;
  return d;
}

// (name, type, divisibility) per runtime parameter, e.g. ("x", "ptr<f32>", 16).
std::vector<std::tuple<std::string, std::string, int64_t>> param_tuples(const CompiledKernel& k) {
  std::vector<std::tuple<std::string, std::string, int64_t>> out;
  out.reserve(k.params.size());
  for (const auto& p : k.params) out.emplace_back(p.name, ir::to_string(p.type), p.divisibility);
  return out;
}

}  // namespace

void bind_kernel(nb::module_& m) {
  m.def("data_address", &data_address, "array"_a,
        "Address of the first element of an object with `__array_struct__` (NumPy arrays).");
  nb::class_<CompiledKernel>(m, "CompiledKernel", "A compiled, loaded kernel, ready to launch.")
      .def_ro("name", &CompiledKernel::name)
      .def_ro("key", &CompiledKernel::key)
      .def_ro("from_disk_cache", &CompiledKernel::from_disk_cache)
      .def_ro("backend", &CompiledKernel::backend, "'cpu' or 'cuda': which launch method applies.")
      .def_prop_ro("params", &param_tuples,
                   "The launch ABI: (name, type, divisibility) per runtime parameter, in order.")
      .def_prop_ro("stages", &stage_dict,
                   "IR text after each stage, in pipeline order (empty unless keep_stages).")
      .def_prop_ro("source", [](const CompiledKernel& k) { return k.stages.source; },
                   "The generated C++ or CUDA source (empty unless keep_stages).")
      .def_prop_ro("layouts", [](const CompiledKernel& k) { return k.stages.layouts; },
                   "CUDA: the layout of every tile value (empty unless keep_stages).")
      .def_prop_ro("ptx", [](const CompiledKernel& k) { return k.stages.ptx; },
                   "CUDA: the PTX NVRTC made (empty unless keep_stages).")
      .def_prop_ro("compile_log", [](const CompiledKernel& k) { return k.stages.compile_log; },
                   "CUDA: NVRTC's log with ptxas's register and shared memory report (keep_stages).")
      .def_prop_ro(
          "num_threads", [](const CompiledKernel& k) { return k.cuda_module ? k.cuda_module->num_threads() : 0; },
          "CUDA: threads per block (32 * num_warps); 0 for CPU kernels.")
      .def_prop_ro(
          "shared_bytes", [](const CompiledKernel& k) { return k.cuda_module ? k.cuda_module->shared_bytes() : 0; },
          "CUDA: dynamic shared memory per block in bytes.")
      .def("resources", &resources, "device"_a = 0,
           "CUDA: registers, shared and local memory the kernel uses on `device` (a dict).")
      .def_ro("debug", &CompiledKernel::debug,
              "Compiled in debug mode: accesses are bounds-checked and launches raise tegula.DeviceError.")
      .def("launch", &launch, "grid"_a, "args"_a, "extents"_a = nb::none(),
           "Runs the grid; `args` holds one int/float/bool per runtime parameter. Debug kernels also "
           "take `extents`: per argument (first byte, bytes) of its array, or None.")
      .def("launch_cuda", &launch_cuda, "grid"_a, "args"_a, "stream"_a, "device"_a, "extents"_a = nb::none(),
           "Queues the grid on CUDA stream handle `stream` (0: the default stream) of `device`; "
           "pointer arguments are device addresses. `extents` as for launch.")
      .def("__repr__", [](const CompiledKernel& k) {
        return "<tegula CompiledKernel '" + k.name + "' " + k.key.substr(0, 12) + ">";
      });
}

}  // namespace tegula::python
