// The launch path of one JITFunction, `kernel[grid](*args, **kwargs)`: the
// one definition of how a launch binds its arguments to the kernel's
// parameters, specializes the kernel on them (launch_arguments.h), resolves
// the grid, picks where it runs (launch_placement.h), finds the compiled
// kernel in its cache and launches it. `inspect`, `warmup` and the
// autotuner go through the same steps.
//
// The cache maps the launch key (launch_key.h) to the compiled kernel; a miss
// decodes the key into the compile request and asks the JITFunction only for
// what Python knows: the sources and globals of the kernel and the @jit
// functions it calls (JITFunction._compile, which then compiles). Behind it,
// the compiler's in-process table shares kernels of equal content between
// launchers, and the disk cache keeps them across processes.
//
// Errors about the arguments are raised as the Python package always raised
// them (launch_errors.h), in the same order: launch options, binding, each
// argument in parameter order, the grid, the placement, then compiling and
// launching.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings/launch_arguments.h"
#include "bindings/launch_key.h"
#include "bindings/launch_options.h"
#include "bindings/launch_placement.h"
#include "runtime/compiler.h"

namespace tegula::python {

// The arguments of a launch as a vectorcall receives them: the positional
// arguments, then the values of the keywords named in `kwnames`.
struct CallArgs {
  PyObject* grid;  // may be None (inspect, warmup without a grid)
  PyObject* const* args;
  size_t count;  // positional
  PyObject* kwnames;

  size_t positional() const { return count; }
  PyObject* argument(size_t i) const { return args[i]; }
  size_t keywords() const { return kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0; }
  PyObject* keyword(size_t k) const { return PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k)); }
  PyObject* keyword_value(size_t k) const { return args[count + k]; }
};

// How a kernel parameter receives its launch value, from its type.
enum class Receives : uint8_t { Address, Real, Truth, Integer };

class Launcher {
 public:
  // `compiled_types`: for the launcher of a compiled kernel's `compiled[grid]`, the scalar type it was
  // compiled with per parameter (an IR name, "i64", or nothing), which then declares the parameter's type
  // in place of its annotation; empty for a kernel's own launcher.
  Launcher(nanobind::object jit, LaunchSupport support, std::vector<std::optional<ir::Scalar>> compiled_types = {})
      : jit_(std::move(jit)), classifier_(std::move(support)), compiled_types_(std::move(compiled_types)) {}

  // Launches the kernel and returns its CompiledKernel.
  nanobind::object launch(const CallArgs& call);
  // Compiles (or finds) the kernel for these arguments without launching it;
  // checks the grid when one is given.
  nanobind::object warmup(const CallArgs& call);
  // Compiles the kernel for these arguments keeping every stage, outside the
  // cache: (CompiledKernel, CUDA device or None).
  nanobind::object inspect(const CallArgs& call);
  // What a miss would compile: (KernelRequest without its sources, CompileOptions).
  nanobind::object request(const CallArgs& call);
  // The launch key of these arguments, as bytes.
  nanobind::bytes specialization(const CallArgs& call);
  // The argument specs of every specialization compiled so far.
  nanobind::list specializations() const;
  // For the autotuner's key, among the runtime arguments in `named` (by
  // parameter name; missing ones are skipped): the element type of every
  // array, and (backend name, device or None) of where the first one lives,
  // or of where a launch without arrays runs.
  nanobind::tuple arrays(nanobind::dict named);

  // The function `kernel[grid]` returned for the latest grid of one to three
  // ints, when `grid` equals it: launches in a loop make no objects for it.
  PyObject* grid_function(PyObject* grid) const;
  void remember_grid_function(PyObject* grid, PyObject* function);

  void set_debug(bool debug) { debug_ = debug; }
  size_t size() const { return targets_.size(); }

  // The cycle GC (JITFunction -> Launcher -> JITFunction).
  template <class Visit>
  void references(Visit&& visit) const {
    visit(jit_.ptr());
    visit(index_.ptr());
    visit(grid_function_.ptr());  // holds the launcher: a cycle
    visit(last_grid_.ptr());
    visit(last_kwnames_.ptr());
    for (const Param& p : params_) {
      visit(p.name.ptr());
      visit(p.default_value.ptr());
    }
    for (const auto& [key, target] : targets_) visit(target.kernel_object.ptr());
    for (PyObject* object : classifier_.references()) visit(object);
  }
  void clear();

 private:
  struct Param {
    nanobind::str name;
    std::string text;  // the name, for messages
    bool is_constexpr = false;
    bool specialize = true;
    bool align = true;  // false: do_not_specialize_on_alignment
    std::optional<DeclaredType> declared;  // a runtime scalar's type, when declared
    nanobind::object default_value;  // null: required
  };

  struct Bound {
    SmallVector<PyObject*, kInlineArguments> values;  // borrowed: the caller's arguments and our defaults
    LaunchOptions options;
  };

  // Everything a launch has worked out before it finds its kernel.
  struct Specialized {
    Bound bound;
    LaunchArguments arguments;
    Place place;
  };

  // A host value the kernel was compiled with (_globals.collect_sources' watches): changed since, the
  // kernel is compiled again.
  enum class WatchVia : uint8_t {
    Item,       // holder[name]: a module's dict, or an @aggregate class's namespace (a mappingproxy)
    Cell,       // the closure cell holder's contents
    Attribute,  // holder.name: a tl.constexpr's value, changed in place
  };
  struct GlobalWatch {
    nanobind::object holder;
    nanobind::object name;
    nanobind::object value;
    WatchVia via = WatchVia::Item;
  };
  struct Target {
    nanobind::object kernel_object;  // what the launch returns: the same object every time
    std::shared_ptr<const runtime::CompiledKernel> kernel;
    Place place;
    std::vector<Receives> receives;  // per kernel parameter, worked out once from its type
    std::vector<GlobalWatch> globals;
  };
  // Whether a global `target` was compiled with is now another value.
  static bool globals_changed(const Target& target);

  void prepare();
  // Parameter `i`'s declared type: the compiled kernel's, for a compiled kernel's launcher, else its
  // annotation's (`annotated`: jit.py's IR scalar name, or None).
  std::optional<DeclaredType> declared_type(size_t i, nanobind::handle annotated) const;
  // Launches `target` (on the caller's current stream, for a device).
  void launch_now(const Target& target, const std::array<int64_t, 3>& grid, std::span<const runtime::ArgValue> args);
  void bind(const CallArgs& call, Bound& bound);
  // bind() for a call whose keywords are the same tuple as the latest clean
  // binding's; false when it is not.
  bool bind_as_before(const CallArgs& call, Bound& bound) const;
  void specialize(const CallArgs& call, Specialized& out);
  // Binding, the key, the grid (when `grid` is not null) and the place:
  // everything before the cache, in the order errors are reported.
  void work_out(const CallArgs& call, Specialized& out, std::array<int64_t, 3>* grid);
  // The backend TEGULA_BACKEND names (launch_placement.h), read through os.environ.
  const backends::Backend* forced_backend() const;
  std::array<int64_t, 3> resolve_grid(nanobind::handle grid, const Bound& bound) const;
  std::array<int64_t, 3> normalize_grid(nanobind::handle grid) const;
  void note_missing_meta(nanobind::handle error, const nanobind::dict& meta) const;
  // Null when a jit_cache_hook of tegula.knobs asked for no compile: the launch is skipped.
  const Target* find_or_compile(std::string_view key, size_t values);
  nanobind::object compile(std::string_view key, size_t values, bool keep_stages,
                           std::vector<GlobalWatch>* globals = nullptr);
  nanobind::object run(const Target& target, const std::array<int64_t, 3>& grid, const Specialized& launch);

  nanobind::object jit_;  // the JITFunction
  ArgumentClassifier classifier_;
  std::vector<std::optional<ir::Scalar>> compiled_types_;  // see the constructor
  bool prepared_ = false;
  bool debug_ = false;
  std::string kernel_name_;
  std::vector<Param> params_;
  std::vector<std::string> names_;  // params_[i].text, for placement messages
  nanobind::object index_;          // parameter name -> index (a dict)
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_map<std::string, Target, StringHash, std::equal_to<>> targets_;
  std::string last_key_;                 // the key of the latest hit
  const Target* last_target_ = nullptr;  // its entry (map nodes never move)
  // The keywords of the latest launch whose keywords each named a
  // parameter after the positional ones or a launch option that the launch
  // keeps (launch_options.h), and what each named: a parameter index, or
  // the parameter count plus the option. A call site passes the same
  // kwnames tuple every time, so its next launch binds by index, without a
  // dict lookup or a name comparison per keyword.
  nanobind::object last_kwnames_;
  size_t last_positional_ = 0;
  std::vector<uint32_t> last_keyword_slots_;
  nanobind::object last_grid_;           // a tuple of ints (see grid_function)
  nanobind::object grid_function_;       // what `kernel[last_grid_]` returned
};

}  // namespace tegula::python
