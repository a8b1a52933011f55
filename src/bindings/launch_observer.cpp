#include "bindings/launch_observer.h"

#include <nanobind/stl/array.h>

#include "bindings/bindings.h"


namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {

std::atomic<PyObject*> detail::launch_observer{nullptr};

namespace {

nb::object argument_object(const backends::ArgValue& value, PyObject* source) {
  using Kind = backends::ArgValue::Kind;
  switch (value.kind) {
    case Kind::Pointer: return source ? nb::borrow(source) : nb::object(nb::int_(value.bits));
    case Kind::Int: return nb::int_(static_cast<int64_t>(value.bits));
    case Kind::UInt: return nb::int_(value.bits);
    case Kind::Bool: return nb::bool_(value.bits != 0);
    case Kind::Float: return nb::float_(value.real);
  }
  return nb::none();
}

// Replaces the observer; the GIL serializes writers, launches read it without a lock.
void set_launch_observer(nb::handle observer) {
  PyObject* next = observer.is_none() ? nullptr : observer.inc_ref().ptr();
  PyObject* previous = detail::launch_observer.exchange(next);
  Py_XDECREF(previous);
}

}  // namespace

nb::object observer_enter(PyObject* observer, nb::handle kernel, const std::array<int64_t, 3>& grid,
                          std::span<const backends::ArgValue> args, std::span<PyObject* const> sources,
                          const ObservedCall& call) {
  nb::list values;
  for (size_t i = 0; i < args.size(); ++i)
    values.append(argument_object(args[i], i < sources.size() ? sources[i] : nullptr));
  return nb::handle(observer).attr("enter")(kernel, nb::make_tuple(grid[0], grid[1], grid[2]), nb::tuple(values),
                                            call.fn, call.named);
}

void observer_exit(PyObject* observer, nb::handle token) { nb::handle(observer).attr("exit")(token); }

void bind_launch_observer(nb::module_& m) {
  m.def("set_launch_observer", &set_launch_observer, "observer"_a.none(),
        "Sets the object whose enter(kernel, grid, arguments, fn, named) and exit(token) every launch calls "
        "(tegula.profiling), or None (the default): launches then pay one branch.");
  m.def("launch_observer", [] {
    PyObject* o = launch_observer();
    return o ? nb::borrow(o) : nb::none();
  });
}

}  // namespace tegula::python
