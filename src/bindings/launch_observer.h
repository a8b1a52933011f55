// The launch observer: NVTX ranges, the per-kernel timing of TEGULA_PROFILE
// and the launch hooks of tegula.knobs (tegula/profiling.py holds the
// observer; docs/profiling.md says what it does). None by default: a launch
// then reads one atomic and takes one predictable branch. When set, every launch of every kernel calls
//   token = observer.enter(kernel, grid, arguments, fn, named)
// before it runs and observer.exit(token) once it is launched (queued, on a
// device), `kernel` the CompiledKernel, `grid` a 3-tuple, `arguments` one
// value per kernel parameter (the array for a pointer, else the number), `fn`
// the JITFunction launched and `named` every argument of its signature by
// name as the launch bound it (constexprs and defaults included).
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <span>

#include "backends/launch_arguments.h"

namespace tegula::python {

namespace detail {
extern std::atomic<PyObject*> launch_observer;  // strong reference, owned by set_launch_observer
}

// The observer, borrowed; null when launches are not observed.
inline PyObject* launch_observer() { return detail::launch_observer.load(std::memory_order_relaxed); }

// Runs `launch` between the observer's enter and exit. `sources[i]` is the
// Python object behind argument i (null where there is none).
// What the launch is, beyond the kernel's own arguments: the JITFunction and its bound arguments by name.
struct ObservedCall {
  nanobind::handle fn;
  nanobind::handle named;
};

template <class Launch>
void observe_launch(PyObject* observer, nanobind::handle kernel, const std::array<int64_t, 3>& grid,
                    std::span<const backends::ArgValue> args, std::span<PyObject* const> sources,
                    const ObservedCall& call, Launch&& launch);

nanobind::object observer_enter(PyObject* observer, nanobind::handle kernel, const std::array<int64_t, 3>& grid,
                                std::span<const backends::ArgValue> args, std::span<PyObject* const> sources,
                                const ObservedCall& call);
void observer_exit(PyObject* observer, nanobind::handle token);

template <class Launch>
void observe_launch(PyObject* observer, nanobind::handle kernel, const std::array<int64_t, 3>& grid,
                    std::span<const backends::ArgValue> args, std::span<PyObject* const> sources,
                    const ObservedCall& call, Launch&& launch) {
  nanobind::object keep(nanobind::borrow(observer));  // set_launch_observer may replace it meanwhile
  nanobind::object token = observer_enter(observer, kernel, grid, args, sources, call);
  launch();
  observer_exit(observer, token);
}

}  // namespace tegula::python
