// Launcher: the launch path of `kernel[grid](*args, **kwargs)`, one call into
// C++ per launch.
//
// Per launch it binds the arguments to the kernel's parameters, builds the
// specialization key from them (launch_arguments.h), resolves the grid,
// finds the compiled kernel in its own cache and launches it, with the GIL
// released while the CPU grid runs or the driver queues the CUDA one.
// Python runs only where it decides something:
//   - a cache miss asks JITFunction._entry_for_launch, which specializes,
//     compiles and fills the Python cache exactly as before;
//   - argument kinds without a fast path go through _specialize's functions;
//   - anything else (a binding error, a debug kernel, a grid of another
//     form) is handed whole to JITFunction._launch_python, the reference
//     implementation, which also produces every error message.
// So the fast path never decides differently from the Python path: it is the
// Python path with its common cases done without Python objects.
//
// The entry points are plain CPython vectorcall functions (launch_entry,
// grid_launch_entry: `kernel[grid]` is `launcher.with_grid(grid)`), which get
// the caller's arguments as an array and keyword names, without the tuple
// and dict a nanobind binding with *args/**kwargs would build per call.
#include <nanobind/stl/shared_ptr.h>

#include <array>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bindings/bindings.h"
#include "bindings/launch_arguments.h"
#include "runtime/compiler.h"
#include "runtime/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {
namespace {

using runtime::ArgValue;
using runtime::CompiledKernel;

// Launch options that are not parameters, as JITFunction._pop_launch_options
// accepts them; a value it would reject sends the launch to Python.
struct LaunchOptions {
  PyObject* num_warps = nullptr;  // borrowed from the kwargs
  PyObject* num_stages = nullptr;
  PyObject* fp_fusion = nullptr;  // enable_fp_fusion
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

bool positive_int(PyObject* value) {
  if (!PyLong_CheckExact(value)) return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  return overflow > 0 || v >= 1;
}

int64_t grid_dimension(PyObject* value, int axis) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0)
    tegula::fail(ErrorKind::Value, Diag::InvalidGrid, "grid dimension " + std::to_string(axis) +
                                        " does not fit in 64 bits; each grid dimension must be between 0 and 2^31 - 1");
  return v;
}

// The arguments of a launch as a vectorcall receives them: the positional
// arguments, then the values of the keywords named in `kwnames`.
struct CallArgs {
  PyObject* grid;
  PyObject* const* args;
  size_t count;  // positional
  PyObject* kwnames;

  size_t positional() const { return count; }
  PyObject* argument(size_t i) const { return args[i]; }
  size_t keywords() const { return kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0; }
  PyObject* keyword(size_t k) const { return PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k)); }
  PyObject* keyword_value(size_t k) const { return args[count + k]; }

  // The arguments as Python's *args and **kwargs, for the calls back into Python.
  nb::tuple tuple() const {
    PyObject* out = PyTuple_New(static_cast<Py_ssize_t>(positional()));
    if (!out) throw nb::python_error();
    for (size_t i = 0; i < positional(); ++i) {
      Py_INCREF(argument(i));
      PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), argument(i));
    }
    return nb::steal<nb::tuple>(out);
  }
  nb::dict dict() const {
    nb::dict out;
    for (size_t k = 0; k < keywords(); ++k) out[nb::handle(keyword(k))] = nb::handle(keyword_value(k));
    return out;
  }
};

// A run-time sized array that stays on the stack for the usual parameter counts.
template <class T, size_t N>
class SmallArray {
 public:
  explicit SmallArray(size_t size) : size_(size) {
    if (size > N) heap_.resize(size);
  }
  T* data() { return size_ > N ? heap_.data() : local_.data(); }
  const T* data() const { return size_ > N ? heap_.data() : local_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  size_t size() const { return size_; }

 private:
  std::array<T, N> local_{};
  std::vector<T> heap_;
  size_t size_;
};

constexpr size_t kInlineParams = 16;
using BoundValues = SmallArray<PyObject*, kInlineParams>;  // borrowed
using HostValues = SmallArray<HostValue, kInlineParams>;

struct Bound {
  BoundValues values;  // the caller's arguments and our defaults, by parameter
  LaunchOptions options;
};

class Launcher {
 public:
  Launcher(nb::object jit, LaunchSupport support) : jit_(std::move(jit)), classifier_(std::move(support)) {}

  nb::object launch(const CallArgs& call) {
    if (!prepared_) prepare();
    if (debug_) return python_launch(call);
    Bound bound{BoundValues(params_.size()), {}};
    if (!bind(call, bound)) return python_launch(call);
    LaunchKey key;
    HostValues host(params_.size());
    if (!specialize(bound, key, host)) return python_launch(call);
    std::array<int64_t, 3> grid{};
    resolve_grid(call.grid, bound, grid);
    const Target* target = find_or_compile(key.bytes(), call);
    if (!target || !backend_allows(*target)) return python_launch(call);
    return run(*target, grid, host);
  }

  // The key bytes of a launch with these arguments, or None when the launch
  // would be left to Python (for tests: equal bytes must mean equal keys).
  nb::object specialization(nb::args args, nb::kwargs kwargs) {
    if (!prepared_) prepare();
    std::vector<PyObject*> flat;  // as a vectorcall gets them
    for (nb::handle a : args) flat.push_back(a.ptr());
    nb::list names;
    PyObject* name = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t position = 0;
    while (PyDict_Next(kwargs.ptr(), &position, &name, &value)) {
      names.append(nb::handle(name));
      flat.push_back(value);
    }
    nb::object kwnames = nb::steal(PyList_AsTuple(names.ptr()));
    CallArgs call{Py_None, flat.data(), nb::len(args), kwnames.ptr()};
    Bound bound{BoundValues(params_.size()), {}};
    LaunchKey key;
    HostValues host(params_.size());
    if (debug_ || !bind(call, bound) || !specialize(bound, key, host)) return nb::none();
    return nb::bytes(key.bytes().data(), key.bytes().size());
  }

  // The function `kernel[grid]` returned for the latest grid of one to three
  // ints, when `grid` equals it: launches in a loop make no objects for it.
  // Only such tuples are kept (a callable grid may hold anything alive).
  PyObject* grid_function(PyObject* grid) const {
    if (!grid_function_.is_valid()) return nullptr;
    if (grid == last_grid_.ptr()) return grid_function_.ptr();
    std::array<int64_t, 3> wanted{}, known{};
    if (!plain_grid(grid, wanted) || !plain_grid(last_grid_, known) ||
        PyTuple_GET_SIZE(grid) != PyTuple_GET_SIZE(last_grid_.ptr()) || wanted != known)
      return nullptr;
    return grid_function_.ptr();
  }
  void remember_grid_function(PyObject* grid, PyObject* function) {
    std::array<int64_t, 3> dims{};
    if (!plain_grid(grid, dims)) return;
    last_grid_ = nb::borrow(grid);
    grid_function_ = nb::borrow(function);
  }

  void set_debug(bool debug) { debug_ = debug; }
  size_t size() const { return targets_.size(); }

  // The cycle GC (JITFunction -> Launcher -> JITFunction).
  template <class Visit>
  void references(Visit&& visit) const {
    visit(jit_.ptr());
    visit(missing_.ptr());
    visit(index_.ptr());
    visit(torch_stream_.ptr());
    visit(grid_function_.ptr());  // holds the launcher: a cycle
    visit(last_grid_.ptr());
    for (const Param& p : params_) {
      visit(p.name.ptr());
      visit(p.default_value.ptr());
    }
    for (const auto& [key, target] : targets_) visit(target.kernel_object.ptr());
    for (PyObject* object : classifier_.references()) visit(object);
  }

  void clear() {
    last_target_ = nullptr;
    targets_.clear();
    params_.clear();
    classifier_.clear();
    jit_ = nb::object();
    missing_ = nb::object();
    index_ = nb::object();
    torch_stream_ = nb::object();
    grid_function_ = nb::object();
    last_grid_ = nb::object();
    prepared_ = false;
  }

 private:
  struct Param {
    nb::str name;
    bool is_constexpr = false;
    bool specialize = true;
    nb::object default_value;  // null: required
  };

  struct Target {
    nb::object kernel_object;  // what the launch returns: the same object every time
    std::shared_ptr<const CompiledKernel> kernel;
    std::vector<uint32_t> runtime_indices;  // per kernel parameter, its index among the bound values
    int device = -1;                        // CUDA device; -1: the CPU backend
  };

  void prepare() {
    if (!jit_.is_valid())
      throw nb::type_error("this kernel launcher was cleared by the garbage collector");
    // (names, is_constexpr, specialize, defaults, missing sentinel); raises
    // what loading the signature raises.
    nb::tuple plan = nb::cast<nb::tuple>(jit_.attr("_launch_plan")());
    nb::tuple names = nb::cast<nb::tuple>(plan[0]), is_constexpr = nb::cast<nb::tuple>(plan[1]),
              specialize = nb::cast<nb::tuple>(plan[2]), defaults = nb::cast<nb::tuple>(plan[3]);
    missing_ = plan[4];
    kernel_name_ = jit_.attr("__name__");
    nb::dict index;
    params_.clear();
    for (size_t i = 0; i < nb::len(names); ++i) {
      Param p;
      p.name = nb::cast<nb::str>(names[i]);
      p.is_constexpr = nb::cast<bool>(is_constexpr[i]);
      p.specialize = nb::cast<bool>(specialize[i]);
      if (!defaults[i].is(missing_)) p.default_value = nb::borrow(defaults[i]);
      index[p.name] = i;
      params_.push_back(std::move(p));
    }
    index_ = index;
    prepared_ = true;
  }

  nb::object python_launch(const CallArgs& call) {
    return jit_.attr("_launch_python")(nb::handle(call.grid), call.tuple(), call.dict());
  }

  // Positional arguments, keywords, launch options, defaults: false for
  // anything JITFunction._bind or _pop_launch_options would reject.
  bool bind(const CallArgs& call, Bound& bound) const {
    const size_t count = params_.size();
    const size_t given = call.positional();
    if (given > count) return false;
    for (size_t i = 0; i < given; ++i) bound.values[i] = call.argument(i);
    for (size_t k = 0; k < call.keywords(); ++k) {
      PyObject* name = call.keyword(k);
      PyObject* value = call.keyword_value(k);
      PyObject* found = PyDict_GetItemWithError(index_.ptr(), name);
      if (found) {
        size_t i = PyLong_AsSize_t(found);
        if (i < given || bound.values[i]) return false;
        bound.values[i] = value;
        continue;
      }
      if (PyErr_Occurred()) throw nb::python_error();
      Py_ssize_t size = 0;
      const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &size) : nullptr;
      if (!text) {
        PyErr_Clear();
        return false;
      }
      std::string_view option(text, static_cast<size_t>(size));
      if (option == "num_warps" || option == "num_stages") {
        if (!positive_int(value)) return false;
        (option == "num_warps" ? bound.options.num_warps : bound.options.num_stages) = value;
      } else if (option == "enable_fp_fusion") {
        if (!PyBool_Check(value)) return false;
        bound.options.fp_fusion = value;
      } else {
        return false;
      }
    }
    for (size_t i = given; i < count; ++i) {
      if (bound.values[i]) continue;
      if (!params_[i].default_value.is_valid()) return false;
      bound.values[i] = params_[i].default_value.ptr();
    }
    return true;
  }

  // One part per parameter, then the launch options that change the code,
  // as JITFunction._specialize orders them.
  bool specialize(const Bound& bound, LaunchKey& key, HostValues& host) {
    for (size_t i = 0; i < params_.size(); ++i) {
      const Param& p = params_[i];
      bool ok = p.is_constexpr ? classifier_.constexpr_value(kernel_name_, p.name, bound.values[i], key)
                               : classifier_.runtime(kernel_name_, p.name, bound.values[i], p.specialize, key,
                                                     host[i]);
      if (!ok) return false;
    }
    auto option = [&](std::string_view name, PyObject* value) {
      key.tuple(2);
      key.text(name);
      return key.part(value, kept_alive_);
    };
    if (bound.options.num_warps && !option("num_warps", bound.options.num_warps)) return false;
    if (bound.options.num_stages && !option("num_stages", bound.options.num_stages)) return false;
    if (bound.options.fp_fusion == Py_False && !option("enable_fp_fusion", Py_False)) return false;
    return true;
  }

  // A tuple of one to three ints >= 0 directly; a callable gets the bound
  // arguments and the launch options by name first; every other form (and
  // every error) is JITFunction._normalize_grid's.
  void resolve_grid(nb::handle grid, const Bound& bound, std::array<int64_t, 3>& out) const {
    nb::object called;
    if (PyCallable_Check(grid.ptr())) {
      nb::dict meta;
      for (size_t i = 0; i < params_.size(); ++i) meta[params_[i].name] = nb::handle(bound.values[i]);
      if (bound.options.num_warps) meta["num_warps"] = nb::handle(bound.options.num_warps);
      if (bound.options.num_stages) meta["num_stages"] = nb::handle(bound.options.num_stages);
      if (bound.options.fp_fusion) meta["enable_fp_fusion"] = nb::handle(bound.options.fp_fusion);
      called = grid(meta);
      grid = called;
    }
    if (plain_grid(grid, out)) return;
    nb::object normalized = jit_.attr("_normalize_grid")(grid);
    if (!PyTuple_CheckExact(normalized.ptr()) || PyTuple_GET_SIZE(normalized.ptr()) != 3)
      throw nb::type_error("internal error: _normalize_grid did not return three dimensions");
    for (int axis = 0; axis < 3; ++axis) out[axis] = grid_dimension(PyTuple_GET_ITEM(normalized.ptr(), axis), axis);
  }

  static bool plain_grid(nb::handle grid, std::array<int64_t, 3>& out) {
    if (!PyTuple_CheckExact(grid.ptr())) return false;
    Py_ssize_t count = PyTuple_GET_SIZE(grid.ptr());
    if (count < 1 || count > 3) return false;
    out = {1, 1, 1};
    for (Py_ssize_t axis = 0; axis < count; ++axis) {
      PyObject* dim = PyTuple_GET_ITEM(grid.ptr(), axis);
      if (!PyLong_CheckExact(dim)) return false;
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(dim, &overflow);
      if (overflow != 0 || v < 0) return false;
      out[static_cast<size_t>(axis)] = v;
    }
    return true;
  }

  // Null when the entry's launch values are not one per parameter
  // (TensorDescriptor arguments): the Python path launches those.
  const Target* find_or_compile(std::string_view key, const CallArgs& call) {
    if (last_target_ && key == last_key_) return last_target_;  // launches in a loop: no hashing
    if (auto it = targets_.find(key); it != targets_.end()) {
      last_key_.assign(key);
      last_target_ = &it->second;
      return last_target_;
    }
    // The Python cache (and behind it the compiler and its disk cache) decides
    // what runs; several byte keys may name one of its entries.
    nb::object entry = jit_.attr("_entry_for_launch")(call.tuple(), call.dict());
    if (nb::getattr(entry, "flatten", nb::bool_(false)).is(Py_True)) return nullptr;
    Target target;
    target.kernel_object = entry.attr("kernel");
    target.kernel = nb::cast<std::shared_ptr<CompiledKernel>>(target.kernel_object);
    for (nb::handle index : entry.attr("runtime_indices")) {
      size_t i = nb::cast<size_t>(index);
      if (i >= params_.size()) throw nb::index_error("internal error: a runtime index past the parameters");
      target.runtime_indices.push_back(static_cast<uint32_t>(i));
    }
    if (target.runtime_indices.size() != target.kernel->params.size())
      throw nb::value_error("internal error: runtime indices and kernel parameters differ");
    nb::object device = entry.attr("device");
    target.device = device.is_none() ? -1 : nb::cast<int>(device);
    return &targets_.try_emplace(std::string(key), std::move(target)).first->second;
  }

  nb::object run(const Target& target, const std::array<int64_t, 3>& grid, const HostValues& host) {
    std::shared_ptr<const CompiledKernel> kernel = target.kernel;
    std::vector<ArgValue> values(kernel->params.size());
    for (size_t j = 0; j < values.size(); ++j)
      values[j] = argument(*kernel, kernel->params[j], host[target.runtime_indices[j]]);
    if (target.device < 0) {
      nb::gil_scoped_release released;
      kernel->launch(grid.data(), values);
    } else {
      backends::Stream stream{current_stream(target.device), target.device};
      nb::gil_scoped_release released;
      kernel->launch(grid.data(), values, stream);
    }
    return target.kernel_object;
  }

  // Whether TEGULA_BACKEND, read at every launch as the Python path reads
  // it, lets this target run: unset, or naming the target's backend exactly.
  // Anything else goes to the Python path, which normalizes the value and
  // reports conflicts (a cached target must not outlive a changed setting).
  static bool backend_allows(const Target& target) {
    const char* forced = std::getenv("TEGULA_BACKEND");
    if (!forced || !*forced) return true;
    return std::string_view(forced) == target.kernel->backend->name();
  }

  // The launcher's value for a parameter of this type (the key made the two agree).
  static ArgValue argument(const CompiledKernel& kernel, const ir::Param& param, const HostValue& value) {
    using Kind = HostValue::Kind;
    ArgValue out;
    const ir::Type& type = param.type;
    bool ok = true;
    if (type.is_pointer()) {
      out.kind = ArgValue::Kind::Pointer;
      ok = value.kind == Kind::Address;
      out.bits = value.bits;
    } else if (ir::is_float(type.scalar)) {
      out.kind = ArgValue::Kind::Float;
      ok = value.kind == Kind::Float;
      out.real = value.real;
    } else if (type.scalar == ir::Scalar::I1) {
      out.kind = ArgValue::Kind::Bool;
      ok = value.kind == Kind::Bool;
      out.bits = value.bits;
    } else {
      out.kind = value.kind == Kind::UInt ? ArgValue::Kind::UInt : ArgValue::Kind::Int;
      ok = value.kind == Kind::Int || value.kind == Kind::UInt;
      out.bits = value.bits;
    }
    if (!ok)
      tegula::fail(ErrorKind::Type, Diag::InternalCompilerError,
                    "internal error: argument '" + param.name + "' of kernel '" + kernel.name +
                                         "' (" + ir::to_string(param.type) +
                                         ") got a value of another kind than its specialization");
    return out;
  }

  // The caller's current stream on `device`: torch's raw stream getter once
  // torch is imported, else the Python side's lookup (CuPy, or 0).
  uint64_t current_stream(int device) {
    const LaunchSupport& support = classifier_.support();
    if (!torch_stream_.is_valid()) {
      PyObject* torch = PyImport_GetModule(torch_module_name_.ptr());
      if (torch) {
        torch_stream_ = support.torch_stream(nb::steal(torch));
      } else if (PyErr_Occurred()) {
        throw nb::python_error();
      }
    }
    nb::object handle = torch_stream_.is_valid() ? torch_stream_(device) : support.current_stream(device);
    return nb::cast<uint64_t>(handle);
  }

  nb::object jit_;  // the JITFunction
  ArgumentClassifier classifier_;
  bool prepared_ = false;
  bool debug_ = false;
  std::vector<Param> params_;
  nb::object index_;    // parameter name -> index (a dict)
  nb::object missing_;  // the "no default" sentinel of the signature
  nb::object kernel_name_;
  nb::object torch_stream_;  // torch's current-stream getter, once torch is imported
  nb::str torch_module_name_ = interned("torch");
  std::vector<nb::object> kept_alive_;  // type objects of option values (none so far: ints and bools)
  std::unordered_map<std::string, Target, StringHash, std::equal_to<>> targets_;
  nb::object last_grid_;      // a tuple of ints (see grid_function)
  nb::object grid_function_;  // what `kernel[last_grid_]` returned
  std::string last_key_;             // the key of the latest hit
  const Target* last_target_ = nullptr;  // its entry (map nodes never move)
};

LaunchSupport support_from(nb::handle s) {
  LaunchSupport out;
  out.ndarray_type = s.attr("ndarray");
  out.numpy_scalars = nb::cast<nb::dict>(s.attr("numpy_scalars"));
  out.tensor_types = nb::cast<nb::dict>(s.attr("tensor_types"));
  out.torch_tensor_part = s.attr("torch_tensor_part");
  out.torch_scalars = nb::cast<nb::dict>(s.attr("torch_scalars"));
  out.runtime_part = s.attr("runtime_part");
  out.constexpr_part = s.attr("constexpr_part");
  out.data_address = s.attr("data_address");
  out.current_stream = s.attr("current_stream");
  out.torch_stream = s.attr("torch_stream");
  return out;
}

// `launcher.launch`: a vectorcall function, so a launch's arguments reach
// the launcher as CPython holds them (no tuple, no dict). Its errors are the
// module's usual exceptions.
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

PyObject* with_grid_entry(PyObject* self, PyObject* grid);

// Static because every function object made from them points at them; never
// written after initialization.
PyMethodDef launch_method = {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_entry)),
                             METH_FASTCALL | METH_KEYWORDS,
                             "launch(grid, *args, **kwargs): launches the kernel; returns its CompiledKernel."};
PyMethodDef grid_launch_method = {
    "launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(grid_launch_entry)),
    METH_FASTCALL | METH_KEYWORDS, "(*args, **kwargs): launches the kernel on the grid it was made for."};
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

}  // namespace

void bind_launch(nb::module_& m) {
  nb::class_<Launcher>(m, "Launcher", nb::type_slots(launcher_slots),
                       "The launch path of one JITFunction: `launch(grid, *args, **kwargs)` binds, "
                       "specializes, finds or compiles, and launches in one call.")
      .def("__init__",
           [](Launcher* self, nb::object jit, nb::handle support) {
             new (self) Launcher(std::move(jit), support_from(support));
           },
           "jit"_a, "support"_a)
      .def_prop_ro(
          "launch",
          [](nb::handle self) {
            PyObject* function = PyCFunction_New(&launch_method, self.ptr());
            if (!function) throw nb::python_error();
            return nb::steal(function);
          },
          "launch(grid, *args, **kwargs): launches the kernel and returns its CompiledKernel (a new "
          "function object per access: keep one).")
      .def_prop_ro(
          "with_grid",
          [](nb::handle self) {
            PyObject* function = PyCFunction_New(&with_grid_method, self.ptr());
            if (!function) throw nb::python_error();
            return nb::steal(function);
          },
          "with_grid(grid) -> the launch function `kernel[grid]` returns (a new function object per access: "
          "keep one).")
      .def("specialization", &Launcher::specialization,
           "The specialization key of these arguments as bytes, or None when a launch with them takes the "
           "Python path.")
      .def("set_debug", &Launcher::set_debug, "debug"_a,
           "Debug kernels launch through the Python path (it passes the array extents).")
      .def("__len__", &Launcher::size, "The number of specializations the launcher knows.");
}

}  // namespace tegula::python
