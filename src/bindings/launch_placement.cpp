#include "bindings/launch_placement.h"

#include <cctype>
#include <cstdlib>

#include "bindings/launch_errors.h"
#include "runtime/backend_registry.h"

namespace nb = nanobind;

namespace tegula::python {

namespace {

bool on_device(const Place& place) { return place.backend->kind() == backends::BackendKind::Device; }

// "in host memory", "on cuda:0": where an argument is, in messages.
std::string location(const Place& place) {
  return on_device(place) ? "on " + describe(place) : "in host memory";
}

}  // namespace

std::string describe(const Place& place) {
  if (!on_device(place)) return std::string(place.backend->description());
  return std::string(place.backend->name()) + ":" + std::to_string(place.device);
}

const backends::Backend* forced_backend(PyObject* environment, PyObject* key) {
  std::string value;
  if (environment && PyDict_CheckExact(environment)) {
    PyObject* set = PyDict_GetItemWithError(environment, key);  // borrowed
    if (!set) {
      if (PyErr_Occurred()) throw nb::python_error();
      return nullptr;
    }
    if (PyBytes_Check(set)) {
      value.assign(PyBytes_AS_STRING(set), static_cast<size_t>(PyBytes_GET_SIZE(set)));
    } else {
      value = str_of(set);
    }
  } else {
    const char* set = std::getenv("TEGULA_BACKEND");
    if (!set) return nullptr;
    value = set;
  }
  if (value.empty()) return nullptr;
  value.erase(0, value.find_first_not_of(" \t\n\r\f\v"));
  value.erase(value.find_last_not_of(" \t\n\r\f\v") + 1);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value.empty()) return nullptr;
  if (const backends::Backend* backend = runtime::find_backend(value)) return backend;
  raise_coded(PyExc_ValueError, Diag::InvalidCompileOption,
              "TEGULA_BACKEND must be " + runtime::backend_names() + ", got " + python::quoted(value));
}

Place choose_place(const std::string& kernel, const std::vector<std::string>& names,
                   std::span<const ArgumentPlace> arrays, const backends::Backend* forced) {
  for (const ArgumentPlace& array : arrays) {
    if (array.place == arrays.front().place) continue;
    // Every place with its arguments, in the order the places first appear.
    std::vector<std::pair<Place, std::string>> groups;
    for (const ArgumentPlace& a : arrays) {
      auto group = groups.begin();
      while (group != groups.end() && !(group->first == a.place)) ++group;
      if (group == groups.end()) group = groups.insert(groups.end(), {a.place, ""});
      group->second += (group->second.empty() ? "'" : ", '") + names[a.param] + "'";
    }
    std::string listed;
    for (const auto& [place, args] : groups) listed += (listed.empty() ? "" : "; ") + args + " on " + describe(place);
    raise_coded(PyExc_ValueError, Diag::ArgumentOnWrongDevice,
                "kernel '" + kernel + "' got arguments on different devices (" + listed + "): move them to one device");
  }
  if (arrays.empty()) {
    const backends::Backend& backend = forced ? *forced : runtime::host_backend();
    bool device = backend.kind() == backends::BackendKind::Device;
    return Place{&backend, device ? kCurrentDevice : -1};
  }
  const ArgumentPlace& first = arrays.front();
  if (forced && forced != first.place.backend) {
    std::string hint(forced->arrays_hint());
    raise_coded(PyExc_ValueError, Diag::ArgumentOnWrongDevice,
                "TEGULA_BACKEND=" + std::string(forced->name()) + ", but argument '" + names[first.param] +
                    "' of kernel '" + kernel + "' is " + location(first.place) +
                    (hint.empty() ? "" : "; pass " + hint + " or unset TEGULA_BACKEND"));
  }
  return first.place;
}

}  // namespace tegula::python
