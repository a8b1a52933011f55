#include "bindings/launch_options.h"

#include <limits>
#include <string_view>

#include "bindings/launch_errors.h"

namespace tegula::python {

namespace {

constexpr const char* kNames[] = {
    "num_warps", "num_stages", "enable_fp_fusion", "debug", "maxnreg", "num_ctas", "launch_cooperative_grid",
    "launch_pdl", "sanitize_overflow", "enable_reflect_ftz", "num_cpu_threads", "enable_fast_math",
};
static_assert(std::size(kNames) == static_cast<size_t>(LaunchOption::Count));

// An int, or an integer of another type (a NumPy int from a shape or a sweep), never a bool.
bool is_int(PyObject* value) {
  if (PyLong_Check(value)) return !PyBool_Check(value);
  if (!PyIndex_Check(value) || std::string_view(Py_TYPE(value)->tp_name).find("bool") != std::string_view::npos)
    return false;
  PyObject* index = PyNumber_Index(value);
  if (index == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(index);
  return true;
}

// The int's value, clamped to int (a compile rejects what no backend can use).
int clamped(PyObject* value) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow > 0 || v > std::numeric_limits<int>::max()) return std::numeric_limits<int>::max();
  if (overflow < 0 || v < std::numeric_limits<int>::min()) return std::numeric_limits<int>::min();
  return static_cast<int>(v);
}

bool named(PyObject* name, const char* text) { return PyUnicode_CompareWithASCIIString(name, text) == 0; }

bool is_none(PyObject* value) { return value == Py_None; }
bool is_zero(PyObject* value) { return is_none(value) || (is_int(value) && clamped(value) == 0); }
bool is_false(PyObject* value) { return is_none(value) || value == Py_False; }
bool is_empty_text(PyObject* value) {
  return is_none(value) || (PyUnicode_Check(value) && PyUnicode_GetLength(value) == 0);
}
// Libraries Tegula links already: None, an empty mapping or sequence
// (`extern_libs={}`), or a mapping that names only "libdevice" (Triton's
// tutorial passes the path of NVIDIA's bitcode): tl.extra.libdevice's
// functions are built into both backends, so the path is not read.
bool is_builtin_libraries(PyObject* value) {
  if (is_none(value)) return true;
  if (!PyDict_Check(value)) return (PyTuple_Check(value) || PyList_Check(value)) && PyObject_Length(value) == 0;
  PyObject* name = nullptr;
  PyObject* path = nullptr;
  for (Py_ssize_t at = 0; PyDict_Next(value, &at, &name, &path);)
    if (!PyUnicode_Check(name) || !named(name, "libdevice") ||
        !(PyUnicode_Check(path) || PyBytes_Check(path) || PyObject_HasAttrString(path, "__fspath__")))
      return false;
  return true;
}
bool is_32(PyObject* value) { return is_int(value) && clamped(value) == 32; }
bool is_one(PyObject* value) { return is_none(value) || (is_int(value) && clamped(value) == 1); }
bool is_unit_cluster(PyObject* value) {
  if (is_none(value)) return true;
  if (!PyTuple_Check(value) && !PyList_Check(value)) return false;
  PyObject* items = PySequence_Fast(value, "");
  if (!items) {
    PyErr_Clear();
    return false;
  }
  bool unit = true;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); ++i) {
    PyObject* dim = PySequence_Fast_GET_ITEM(items, i);
    unit = unit && is_int(dim) && clamped(dim) == 1;
  }
  Py_DECREF(items);
  return unit;
}

// Options of Triton's backends that ask for something Tegula does not do:
// accepted at their default (what Triton does without them), refused otherwise.
struct FixedOption {
  const char* name;
  const char* accepted;  // for the message
  bool (*accepts)(PyObject*);
};
constexpr FixedOption kFixed[] = {
    {"ptx_version", "None", is_none},
    {"ptx_options", "None", is_none},
    {"ir_override", "None", is_none},
    {"extern_libs", "None, {} or {'libdevice': path}, whose functions Tegula builds in", is_builtin_libraries},
    {"arch", "None", is_none},
    {"instrumentation_mode", "'' or None", is_empty_text},
    {"cluster_dims", "(1, 1, 1) or None", is_unit_cluster},
    {"warp_size", "32", is_32},
    {"num_buffers_warp_spec", "0", is_zero},
    {"num_consumer_groups", "0", is_zero},
    {"reg_dec_producer", "0", is_zero},
    {"reg_inc_consumer", "0", is_zero},
    {"max_num_imprecise_acc_default", "0 or None", is_zero},
    {"assume_in_bounds", "False", is_false},
    {"ukernels", "None", is_none},
    // Triton's AMD backend (HIPOptions): occupancy and MFMA hints. Libraries tuned for both vendors keep them in
    // their autotune configs, which Triton takes without a look until a config launches.
    {"waves_per_eu", "0", is_zero},
    {"matrix_instr_nonkdim", "0", is_zero},
    {"kpack", "1", is_one},
    {"schedule_hint", "'' or None", is_empty_text},
};

[[noreturn]] void wrong_kind(const std::string& kernel, LaunchOption option, const char* wanted, PyObject* value) {
  raise_coded(PyExc_ValueError, Diag::InvalidCompileOption,
              std::string(LaunchOptions::name_of(option)) + " of kernel '" + kernel + "' must be " + wanted +
                  ", got " + repr_of(value));
}

}  // namespace

const char* LaunchOptions::name_of(LaunchOption option) { return kNames[static_cast<size_t>(option)]; }

std::optional<LaunchOption> LaunchOptions::kept(PyObject* name) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (named(name, kNames[i])) return static_cast<LaunchOption>(i);
  return std::nullopt;
}

std::vector<std::string> LaunchOptions::all_names() {
  std::vector<std::string> names(std::begin(kNames), std::end(kNames));
  for (const FixedOption& fixed : kFixed) names.emplace_back(fixed.name);
  return names;
}

bool LaunchOptions::take(const std::string& kernel, PyObject* name, PyObject* value) {
  if (std::optional<LaunchOption> option = kept(name)) {
    set(*option, value);
    return true;
  }
  for (const FixedOption& fixed : kFixed) {
    if (!named(name, fixed.name)) continue;
    if (!fixed.accepts(value))
      raise_coded(PyExc_ValueError, Diag::InvalidCompileOption,
                  std::string(fixed.name) + "=" + repr_of(value) + " of kernel '" + kernel +
                      "' is not supported by Tegula (it accepts " + fixed.accepted +
                      ", what Triton does without the option; docs/python-api.md, \"Launch options\")");
    return true;
  }
  return false;
}

void LaunchOptions::check(const std::string& kernel) const {
  using enum LaunchOption;
  if (!any_given_) return;
  for (LaunchOption option : {NumWarps, NumStages, NumCtas}) {
    PyObject* value = get(option);
    if (value && (!is_int(value) || clamped(value) < 1)) wrong_kind(kernel, option, "a positive int", value);
  }
  // A program's warps on the GPU; on the CPU only tl.extra.cuda.num_warps() reads it. Triton's rule on
  // every backend, a power of two; the CUDA backend also refuses more warps than a block holds (32), as a
  // GPU does, while the CPU takes them as Triton's CPU backend does (its tests launch 128).
  if (PyObject* value = get(NumWarps); value && (clamped(value) & (clamped(value) - 1)) != 0)
    wrong_kind(kernel, NumWarps, "a power of two", value);
  if (PyObject* value = get(MaxNReg); value && !is_none(value) && (!is_int(value) || clamped(value) < 1))
    wrong_kind(kernel, MaxNReg, "a positive int or None", value);
  if (PyObject* value = get(NumCpuThreads); value && (!is_int(value) || clamped(value) < 0))
    wrong_kind(kernel, NumCpuThreads, "an int >= 0", value);
  for (LaunchOption option : {FpFusion, CooperativeGrid, Pdl, SanitizeOverflow, ReflectFtz, FastMath}) {
    PyObject* value = get(option);
    if (value && !PyBool_Check(value)) wrong_kind(kernel, option, "a bool", value);
  }
  if (PyObject* value = get(Debug); value && !is_none(value) && !PyBool_Check(value))
    wrong_kind(kernel, Debug, "a bool or None", value);

  // Values that ask for what no Tegula launch does.
  if (PyObject* value = get(NumCtas); value && clamped(value) != 1)
    raise_coded(PyExc_ValueError, Diag::InvalidCompileOption,
                "num_ctas=" + repr_of(value) + " of kernel '" + kernel + "' asks for a cluster of " +
                    repr_of(value) +
                    " thread blocks per program; Tegula's backends run each program as one block (the CPU "
                    "backend as one task) and have no clusters: use num_ctas=1");
  if (get(CooperativeGrid) == Py_True)
    raise_coded(PyExc_ValueError, Diag::InvalidCompileOption,
                "launch_cooperative_grid=True of kernel '" + kernel +
                    "' asks that every program of the grid be resident at once; Tegula's launches do not "
                    "guarantee it (the CPU backend runs programs on a pool of threads, the CUDA backend "
                    "launches without cooperative groups)");
}

int LaunchOptions::num_warps() const { return get(LaunchOption::NumWarps) ? clamped(get(LaunchOption::NumWarps)) : 4; }

int LaunchOptions::num_stages() const {
  return get(LaunchOption::NumStages) ? clamped(get(LaunchOption::NumStages)) : 3;
}

bool LaunchOptions::fp_fusion() const { return get(LaunchOption::FpFusion) != Py_False; }

bool LaunchOptions::debug(bool fallback) const {
  PyObject* value = get(LaunchOption::Debug);
  return value && value != Py_None ? value == Py_True : fallback;
}

int LaunchOptions::maxnreg() const {
  PyObject* value = get(LaunchOption::MaxNReg);
  return value && value != Py_None ? clamped(value) : 0;
}

}  // namespace tegula::python
