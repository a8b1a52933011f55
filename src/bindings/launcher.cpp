#include "bindings/launcher.h"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <limits>
#include <utility>

#include "bindings/launch_errors.h"
#include "bindings/launch_observer.h"
#include "runtime/backend_registry.h"
#include "support/spelling.h"

namespace nb = nanobind;

namespace tegula::python {

namespace {

using runtime::ArgValue;
using runtime::CompiledKernel;

// A tuple of one to three ints >= 0 that fit in 64 bits.
bool plain_grid(nb::handle grid, std::array<int64_t, 3>& out) {
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

uint8_t backend_index(const backends::Backend* backend) {
  std::span<const backends::Backend* const> all = runtime::all_backends();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] == backend) return static_cast<uint8_t>(i);
  TEGULA_ASSERT(false, "a place names a backend the registry does not know");
}

// What a launch key asks the compiler for: the request (its sources come
// from the JITFunction) and the compile options.
std::pair<frontend::KernelRequest, runtime::CompileOptions> compile_request(DecodedKey decoded) {
  frontend::KernelRequest request;
  request.args = std::move(decoded.args);
  request.debug = decoded.debug;
  request.num_warps = decoded.num_warps;
  runtime::CompileOptions options;
  options.backend = runtime::all_backends()[decoded.backend]->name();
  options.debug = decoded.debug;
  options.num_warps = decoded.num_warps;
  options.num_stages = decoded.num_stages;
  options.fp_fusion = decoded.fp_fusion;
  options.maxnreg = decoded.maxnreg;
  options.device = std::max(decoded.device, 0);
  return {std::move(request), std::move(options)};
}

Receives receives(const ir::Type& type) {
  if (type.is_pointer()) return Receives::Address;
  if (ir::is_float(type.scalar)) return Receives::Real;
  if (type.scalar == ir::Scalar::I1) return Receives::Truth;
  return Receives::Integer;
}

// The value of a parameter that receives `how` (the key made the two agree).
ArgValue argument(const CompiledKernel& kernel, size_t j, Receives how, const HostValue& value) {
  using Kind = HostValue::Kind;
  ArgValue out;
  bool ok = true;
  switch (how) {
    case Receives::Address:
      out.kind = ArgValue::Kind::Pointer;
      ok = value.kind == Kind::Address;
      out.bits = value.bits;
      break;
    case Receives::Real:
      out.kind = ArgValue::Kind::Float;
      ok = value.kind == Kind::Float;
      out.real = value.real;
      break;
    case Receives::Truth:
      out.kind = ArgValue::Kind::Bool;
      ok = value.kind == Kind::Bool;
      out.bits = value.bits;
      break;
    case Receives::Integer:
      out.kind = value.kind == Kind::UInt ? ArgValue::Kind::UInt : ArgValue::Kind::Int;
      ok = value.kind == Kind::Int || value.kind == Kind::UInt;
      out.bits = value.bits;
      break;
  }
  TEGULA_ASSERT(ok, "argument '" + kernel.params[j].name + "' of kernel '" + kernel.name + "' (" +
                        ir::to_string(kernel.params[j].type) + ") got a value of another kind than its specialization");
  return out;
}

// The kernel parameters argument `arg` of parameter `name` gives: one per
// runtime value, three or more per TensorDescriptor (NAME__base,
// NAME__shape<d>, NAME__stride<d>), those of each element of a tuple
// (NAME__i...), none per constexpr.
void add_expected_params(const std::string& name, const frontend::ArgSpec& arg, frontend::ElementParamNames& element,
                         std::vector<std::string>& out) {
  using Kind = frontend::ArgSpec::Kind;
  switch (arg.kind) {
    case Kind::Constexpr: return;
    case Kind::Tuple:
      for (size_t i = 0; i < arg.parts.size(); ++i) add_expected_params(element(name, i), arg.parts[i], element, out);
      return;
    case Kind::TensorDescriptor: {
      out.push_back(name + "__base");
      size_t rank = arg.block_shape.size();
      for (size_t d = 0; d < rank; ++d) out.push_back(name + "__shape" + std::to_string(d));
      for (size_t d = 0; d < rank; ++d) out.push_back(name + "__stride" + std::to_string(d));
      return;
    }
    default: out.push_back(name);
  }
}

std::vector<std::string> expected_params(const std::vector<std::string>& names,
                                         const std::vector<frontend::ArgSpec>& args) {
  std::vector<std::string> out;
  frontend::ElementParamNames element(names);
  for (size_t i = 0; i < args.size() && i < names.size(); ++i) add_expected_params(names[i], args[i], element, out);
  return out;
}

}  // namespace

// --- the signature ---------------------------------------------------------------------------

void Launcher::prepare() {
  if (!jit_.is_valid()) throw nb::type_error("this kernel launcher was cleared by the garbage collector");
  // (names, is_constexpr, defaults, do_not_specialize, missing sentinel,
  // do_not_specialize_on_alignment, declared scalar types); raises what
  // reading the signature raises.
  nb::tuple plan = nb::cast<nb::tuple>(jit_.attr("_launch_plan")());
  nb::tuple names = nb::cast<nb::tuple>(plan[0]), is_constexpr = nb::cast<nb::tuple>(plan[1]),
            defaults = nb::cast<nb::tuple>(plan[2]), annotated = nb::cast<nb::tuple>(plan[6]);
  nb::handle unspecialized = plan[3], missing = plan[4], unaligned = plan[5];
  kernel_name_ = nb::cast<std::string>(jit_.attr("__name__"));
  if (!compiled_types_.empty() && compiled_types_.size() != nb::len(names))
    throw nb::value_error("internal error: a compiled kernel's launcher got types for another parameter count");
  nb::dict index;
  params_.clear();
  names_.clear();
  for (size_t i = 0; i < nb::len(names); ++i) {
    Param p;
    p.name = nb::cast<nb::str>(names[i]);
    p.text = nb::cast<std::string>(p.name);
    p.is_constexpr = nb::cast<bool>(is_constexpr[i]);
    if (!p.is_constexpr) p.declared = declared_type(i, annotated[i]);
    if (!defaults[i].is(missing)) p.default_value = nb::borrow(defaults[i]);
    index[p.name] = i;
    names_.push_back(p.text);
    params_.push_back(std::move(p));
  }
  // do_not_specialize: parameter names or indices whose ints never specialize;
  // do_not_specialize_on_alignment: those whose alignment (divisibility by 16) does not.
  auto listed_param = [&](nb::handle which, const char* option) {
    PyObject* found = PyLong_Check(which.ptr()) ? nullptr : PyDict_GetItemWithError(index.ptr(), which.ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    size_t i = params_.size();
    if (found) {
      i = PyLong_AsSize_t(found);
    } else if (PyLong_Check(which.ptr())) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(which.ptr(), &overflow);
      if (overflow == 0 && v >= 0 && static_cast<size_t>(v) < params_.size()) i = static_cast<size_t>(v);
    }
    if (i == params_.size()) {
      std::string listed;
      for (const std::string& name : names_) listed += (listed.empty() ? "" : ", ") + name;
      raise_coded(PyExc_ValueError, Diag::InvalidDecorator,
                  std::string(option) + " of kernel '" + kernel_name_ + "' names " + repr_of(which) +
                      ", which is not one of its parameters (" + listed + ")");
    }
    // A constexpr is the kernel's value itself: it always specializes. A
    // CompilationError, as Triton raises it, since the kernel can't be built.
    if (params_[i].is_constexpr)
      fail(ErrorKind::Compile, Diag::InvalidDecorator,
           params_[i].text + " marked as constexpr and listed in " + option + " of kernel '" + kernel_name_ +
               "': a tl.constexpr parameter is compiled into the kernel",
           "drop it from " + std::string(option) + " or its tl.constexpr annotation");
    return i;
  };
  for (nb::handle which : unspecialized) params_[listed_param(which, "do_not_specialize")].specialize = false;
  for (nb::handle which : unaligned) params_[listed_param(which, "do_not_specialize_on_alignment")].align = false;
  index_ = index;
  prepared_ = true;
}

std::optional<DeclaredType> Launcher::declared_type(size_t i, nb::handle annotated) const {
  if (i < compiled_types_.size() && compiled_types_[i]) return DeclaredType{*compiled_types_[i], /*compiled=*/true};
  if (annotated.is_none()) return std::nullopt;
  ir::Scalar scalar;
  if (!ir::parse_scalar(nb::cast<std::string>(annotated), &scalar))
    throw nb::value_error("internal error: a kernel's signature declares an unknown scalar type");
  return DeclaredType{scalar, /*compiled=*/false};
}

// --- binding -----------------------------------------------------------------------------------

// One pass over the keywords (a dict lookup each), then the errors in the
// order Python reports them: launch options (keywords that name no
// parameter: launch_options.h), too many positional
// arguments, the first unknown or repeated keyword, missing arguments.
void Launcher::bind(const CallArgs& call, Bound& bound) {
  if (bind_as_before(call, bound)) return;
  const size_t count = params_.size();
  const size_t given = call.positional();
  for (size_t i = 0; i < count; ++i) bound.values.push_back(nullptr);
  PyObject* stray = nullptr;  // the first keyword that is neither a free parameter nor a launch option
  bool replayable = true;     // every keyword has a slot in keyword_slots (see last_keyword_slots_)
  SmallVector<uint32_t, kInlineArguments> keyword_slots;
  for (size_t k = 0; k < call.keywords(); ++k) {
    PyObject* name = call.keyword(k);
    PyObject* value = call.keyword_value(k);
    PyObject* found = PyDict_GetItemWithError(index_.ptr(), name);
    if (found) {
      size_t i = PyLong_AsSize_t(found);
      if (i < given) {
        if (!stray) stray = name;
      } else {
        bound.values[i] = value;
        keyword_slots.push_back(static_cast<uint32_t>(i));
      }
      continue;
    }
    if (PyErr_Occurred()) throw nb::python_error();
    if (std::optional<LaunchOption> option = LaunchOptions::kept(name)) {
      bound.options.set(*option, value);
      keyword_slots.push_back(static_cast<uint32_t>(count + static_cast<size_t>(*option)));
      continue;
    }
    replayable = false;
    if (!bound.options.take(kernel_name_, name, value) && !stray) stray = name;
  }
  bound.options.check(kernel_name_);

  if (given > count) {
    std::string listed;
    for (const std::string& name : names_) listed += (listed.empty() ? "" : ", ") + name;
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentCount,
                "kernel '" + kernel_name_ + "' takes " + std::to_string(count) + " arguments (" + listed + ") but " +
                    std::to_string(given) + " were given");
  }
  if (stray) {
    PyObject* found = PyDict_GetItemWithError(index_.ptr(), stray);
    if (found)
      raise_coded(PyExc_TypeError, Diag::LaunchArgumentCount,
                  "kernel '" + kernel_name_ + "' got multiple values for argument '" + str_of(stray) + "'");
    // Off the fast path: the names it may misspell are the parameters and the launch options.
    std::vector<std::string> known = names_;
    for (std::string& option : LaunchOptions::all_names()) known.push_back(std::move(option));
    std::optional<std::string> meant = closest_name(str_of(stray), known);
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentCount,
                "kernel '" + kernel_name_ + "' got an unexpected keyword argument '" + str_of(stray) + "'" +
                    (meant ? "; did you mean '" + *meant + "'?" : ""));
  }
  for (size_t i = 0; i < given; ++i) bound.values[i] = call.argument(i);
  SmallVector<size_t, kInlineArguments> missing;
  for (size_t i = given; i < count; ++i) {
    if (bound.values[i]) continue;
    if (params_[i].default_value.is_valid())
      bound.values[i] = params_[i].default_value.ptr();
    else
      missing.push_back(i);
  }
  if (!missing.empty()) {
    std::string listed;
    for (size_t i : missing) listed += (listed.empty() ? "'" : ", '") + params_[i].text + "'";
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentCount,
                "kernel '" + kernel_name_ + "' is missing " + std::to_string(missing.size()) + " required " +
                    (missing.size() == 1 ? "argument: " : "arguments: ") + listed);
  }
  if (replayable && call.kwnames && call.kwnames != last_kwnames_.ptr()) {
    last_kwnames_ = nb::borrow(call.kwnames);
    last_positional_ = given;
    last_keyword_slots_.assign(keyword_slots.begin(), keyword_slots.end());
  }
}

bool Launcher::bind_as_before(const CallArgs& call, Bound& bound) const {
  if (!call.kwnames || call.kwnames != last_kwnames_.ptr() || call.positional() != last_positional_) return false;
  const size_t count = params_.size();
  const size_t given = call.positional();
  for (size_t i = 0; i < count; ++i) bound.values.push_back(nullptr);
  for (size_t i = 0; i < given; ++i) bound.values[i] = call.argument(i);
  for (size_t k = 0; k < last_keyword_slots_.size(); ++k) {
    size_t slot = last_keyword_slots_[k];
    if (slot < count)
      bound.values[slot] = call.keyword_value(k);
    else
      bound.options.set(static_cast<LaunchOption>(slot - count), call.keyword_value(k));
  }
  bound.options.check(kernel_name_);  // the values are new
  // The same parameters are unbound as in the binding remembered, which found a default for each.
  for (size_t i = given; i < count; ++i)
    if (!bound.values[i]) bound.values[i] = params_[i].default_value.ptr();
  return true;
}

// Binding and every argument's part of the key: all a launch needs before
// its grid.
void Launcher::specialize(const CallArgs& call, Specialized& out) {
  if (!prepared_) prepare();
  bind(call, out.bound);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    nb::handle value(out.bound.values[i]);
    if (p.is_constexpr && !classifier_.is_aggregate(value)) {  // an aggregate's runtime fields are parameters
      classifier_.constexpr_value(kernel_name_, p.text, value, out.arguments.key);
    } else {
      size_t item = out.arguments.key.size();
      if (p.declared)
        classifier_.declared(kernel_name_, p.text, *p.declared, value, p.specialize, out.arguments);
      else
        classifier_.runtime(kernel_name_, p.text, i, value, p.specialize, out.arguments);
      if (!p.align) out.arguments.key.drop_alignment(item);
    }
  }
}

// --- the grid ------------------------------------------------------------------------------------

// A callable gets every bound argument and the given launch options by name.
std::array<int64_t, 3> Launcher::resolve_grid(nb::handle grid, const Bound& bound) const {
  nb::object called;
  if (PyCallable_Check(grid.ptr())) {
    nb::dict meta;
    for (size_t i = 0; i < params_.size(); ++i) meta[params_[i].name] = nb::handle(bound.values[i]);
    bound.options.each([&](const char* name, PyObject* value) { meta[name] = nb::handle(value); });
    try {
      called = grid(meta);
    } catch (nb::python_error& e) {
      if (e.matches(PyExc_KeyError)) note_missing_meta(e.value(), meta);
      throw;
    }
    grid = called;
  }
  std::array<int64_t, 3> out{};
  if (plain_grid(grid, out)) return out;
  return normalize_grid(grid);
}

// `grid = lambda META: (cdiv(n, META["BLOCK_SIZE"]),)` for a kernel whose
// parameter is BLOCK: the KeyError keeps its type and text (callers may
// catch it), and gains a note naming the kernel, what META holds and the
// nearest name. A key that META holds came from elsewhere in the function.
void Launcher::note_missing_meta(nb::handle error, const nb::dict& meta) const {
  nb::object args = nb::steal(PyObject_GetAttrString(error.ptr(), "args"));
  if (!args.is_valid() || !PyTuple_Check(args.ptr()) || PyTuple_GET_SIZE(args.ptr()) != 1) {
    PyErr_Clear();
    return;
  }
  PyObject* key = PyTuple_GET_ITEM(args.ptr(), 0);
  if (!PyUnicode_Check(key) || PyDict_Contains(meta.ptr(), key) != 0) {
    PyErr_Clear();
    return;
  }
  std::vector<std::string> held;
  for (auto [name, value] : meta) held.push_back(str_of(name));
  std::string listed;
  for (const std::string& name : held) listed += (listed.empty() ? "" : ", ") + name;
  std::string wanted = str_of(nb::handle(key));
  std::optional<std::string> meant = closest_name(wanted, held);
  // BLOCK for BLOCK_SIZE and the reverse: a name the edit distance finds too far.
  for (size_t i = 0; !meant && i < held.size(); ++i)
    if (held[i].size() > 1 && (wanted.starts_with(held[i]) || held[i].starts_with(wanted))) meant = held[i];
  std::string note = "the grid function of kernel '" + kernel_name_ + "' looked up " + repr_of(nb::handle(key)) +
                     " in its META, which holds the launch's arguments and options by name (" + listed + ")" +
                     (meant ? "; did you mean '" + *meant + "'?" : "");
  nb::object add_note = nb::steal(PyObject_GetAttrString(error.ptr(), "add_note"));  // Python 3.11 and later
  nb::object added = add_note.is_valid() ? nb::steal(PyObject_CallOneArg(add_note.ptr(), nb::str(note.c_str()).ptr()))
                                         : nb::object();
  if (!added.is_valid()) PyErr_Clear();
}

// Every other form of grid: a bare int, a list, ints of other types.
std::array<int64_t, 3> Launcher::normalize_grid(nb::handle grid) const {
  auto refuse = [&](const std::string& what) {
    raise_coded(PyExc_ValueError, Diag::InvalidGrid, "the grid of kernel '" + kernel_name_ + "' must " + what);
  };
  nb::object dims = nb::borrow(grid);
  if (PyLong_Check(grid.ptr()) && !PyBool_Check(grid.ptr())) dims = nb::make_tuple(grid);
  Py_ssize_t count = PyTuple_Check(dims.ptr()) || PyList_Check(dims.ptr()) ? PySequence_Size(dims.ptr()) : -1;
  if (count < 1 || count > 3)
    refuse("be a tuple of 1 to 3 ints (or a callable returning one), got " + repr_of(dims));
  nb::tuple as_tuple = nb::steal<nb::tuple>(PySequence_Tuple(dims.ptr()));
  std::array<int64_t, 3> out{1, 1, 1};
  for (Py_ssize_t axis = 0; axis < count; ++axis) {
    nb::handle dim = as_tuple[axis];
    nb::object index = nb::steal(PyNumber_Index(dim.ptr()));
    if (!index.is_valid()) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
      PyErr_Clear();
      refuse("hold ints, got " + type_name_of(dim) + " in " + repr_of(as_tuple));
    }
    if (PyObject_RichCompareBool(index.ptr(), nb::int_(0).ptr(), Py_LT) == 1)
      refuse("hold ints >= 0, got " + repr_of(as_tuple));
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0)
      raise_coded(PyExc_ValueError, Diag::InvalidGrid,
                  "grid dimension " + std::to_string(axis) +
                      " does not fit in 64 bits; each grid dimension must be between 0 and 2^31 - 1");
    out[static_cast<size_t>(axis)] = v;
  }
  return out;
}

PyObject* Launcher::grid_function(PyObject* grid) const {
  if (!grid_function_.is_valid()) return nullptr;
  if (grid == last_grid_.ptr()) return grid_function_.ptr();
  std::array<int64_t, 3> wanted{}, known{};
  if (!plain_grid(grid, wanted) || !plain_grid(last_grid_, known) ||
      PyTuple_GET_SIZE(grid) != PyTuple_GET_SIZE(last_grid_.ptr()) || wanted != known)
    return nullptr;
  return grid_function_.ptr();
}

// Only tuples of ints are kept: a callable grid may hold anything alive.
void Launcher::remember_grid_function(PyObject* grid, PyObject* function) {
  std::array<int64_t, 3> dims{};
  if (!plain_grid(grid, dims)) return;
  last_grid_ = nb::borrow(grid);
  grid_function_ = nb::borrow(function);
}

// --- finding, compiling and running ----------------------------------------------------------------

bool Launcher::globals_changed(const Target& target) {
  for (const GlobalWatch& w : target.globals) {
    nb::object owned;  // what a mappingproxy's __getitem__ or getattr returned
    PyObject* now = nullptr;
    PyObject* holder = w.holder.ptr();
    switch (w.via) {
      case WatchVia::Item:
        if (PyDict_Check(holder)) {
          now = PyDict_GetItemWithError(holder, w.name.ptr());  // borrowed
        } else {
          now = PyObject_GetItem(holder, w.name.ptr());
          owned = nb::steal(now);
          if (now == nullptr && PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
        }
        break;
      case WatchVia::Cell:
        now = PyCell_GET(holder);  // borrowed; null when emptied (`del` of the variable)
        break;
      case WatchVia::Attribute:
        now = PyObject_GetAttr(holder, w.name.ptr());
        owned = nb::steal(now);
        if (now == nullptr && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
        break;
    }
    if (now == w.value.ptr()) continue;
    if (now == nullptr) {
      if (PyErr_Occurred()) throw nb::python_error();
      return true;  // deleted
    }
    int same = PyObject_RichCompareBool(now, w.value.ptr(), Py_EQ);
    if (same < 0) PyErr_Clear();  // a value that cannot say: counts as changed
    if (same != 1) return true;
  }
  return false;
}

const Launcher::Target* Launcher::find_or_compile(std::string_view key, size_t values) {
  if (last_target_ && key == last_key_ && !globals_changed(*last_target_))
    return last_target_;  // launches in a loop: no hashing
  auto it = targets_.find(key);
  if (it != targets_.end() && globals_changed(it->second)) {
    // A global it read was rebound (a constant changed, a helper redefined): compiled again, as if new.
    if (last_target_ == &it->second) last_target_ = nullptr;
    targets_.erase(it);
    it = targets_.end();
  }
  if (it == targets_.end()) {
    std::vector<GlobalWatch> globals;
    nb::object kernel_object = compile(key, values, /*keep_stages=*/false, &globals);
    if (kernel_object.is_none()) return nullptr;  // nothing kept: the next launch asks the hook again
    Target target{kernel_object, nb::cast<std::shared_ptr<CompiledKernel>>(kernel_object), {}};
    target.globals = std::move(globals);
    DecodedKey decoded = decode(key);
    target.place = Place{runtime::all_backends()[decoded.backend], decoded.device};
    for (const ir::Param& param : target.kernel->params) target.receives.push_back(receives(param.type));
    // Another thread may have compiled the same key while this one did (the
    // compile releases the GIL): the first entry stays.
    it = targets_.try_emplace(std::string(key), std::move(target)).first;
  }
  last_key_.assign(key);
  last_target_ = &it->second;
  return last_target_;
}

// The request the key describes, its sources from the JITFunction, compiled
// there (JITFunction._compile: the hook the compile profile and the golden
// corpus use).
nb::object Launcher::compile(std::string_view key, size_t values, bool keep_stages, std::vector<GlobalWatch>* globals) {
  auto [request, options] = compile_request(decode(key));
  options.keep_stages = keep_stages;
  std::vector<std::string> expected = expected_params(names_, request.args);
  nb::object kernel_object = jit_.attr("_compile")(nb::cast(std::move(request)), nb::cast(std::move(options)));
  // The globals it read, kept by _compile until taken (taken here also when not wanted, so none is left).
  for (nb::handle watch : jit_.attr("_take_global_watches")(kernel_object)) {
    if (!globals) continue;
    auto via = nb::cast<int>(watch[3]);
    if (via < 0 || via > static_cast<int>(WatchVia::Attribute) ||
        (via == static_cast<int>(WatchVia::Cell) && !PyCell_Check(watch[0].ptr())))
      throw nb::value_error("internal error: a kernel's watch of a host value has an unknown form");
    globals->push_back(GlobalWatch{nb::borrow(watch[0]), nb::borrow(watch[1]), nb::borrow(watch[2]),
                                   static_cast<WatchVia>(via)});
  }
  if (kernel_object.is_none()) return kernel_object;  // a jit_cache_hook declined the compile
  auto kernel = nb::cast<std::shared_ptr<CompiledKernel>>(kernel_object);
  bool matches = expected.size() == kernel->params.size() && expected.size() == values;
  for (size_t j = 0; matches && j < expected.size(); ++j) matches = expected[j] == kernel->params[j].name;
  if (!matches)
    throw nb::value_error(("internal error: compiled kernel '" + kernel_name_ +
                           "' has other parameters than its signature and arguments give")
                              .c_str());
  return kernel_object;
}

nb::object Launcher::run(const Target& target, const std::array<int64_t, 3>& grid, const Specialized& launch) {
  // `result` holds the Python CompiledKernel, which owns the kernel, for the
  // whole launch (the GIL is released while it runs: another thread may
  // clear this launcher meanwhile).
  nb::object result = target.kernel_object;
  const CompiledKernel* kernel = target.kernel.get();
  const LaunchArguments& arguments = launch.arguments;
  SmallVector<ArgValue, kInlineArguments> values;
  for (size_t j = 0; j < target.receives.size(); ++j)
    values.push_back(argument(*kernel, j, target.receives[j], arguments.values[j]));
  if (kernel->debug) {
    for (size_t j = 0; j < values.size(); ++j) {
      if (!kernel->params[j].type.is_pointer() || !arguments.sources[j]) continue;
      if (auto extent = classifier_.extent(nb::handle(arguments.sources[j]))) {
        values[j].extent_base = extent->first;
        values[j].extent_bytes = extent->second;
      }
    }
  }
  std::span<const ArgValue> args(values.data(), values.size());
  if (!arguments.unwritable.empty()) check_writes(*kernel, {arguments.unwritable.begin(), arguments.unwritable.end()});
  if (PyObject* observer = launch_observer()) [[unlikely]] {
    nb::dict named;
    for (size_t i = 0; i < params_.size(); ++i) named[params_[i].name] = nb::handle(launch.bound.values[i]);
    observe_launch(observer, result, grid, args, {arguments.sources.begin(), arguments.sources.end()},
                   ObservedCall{jit_, named}, [&] { launch_now(target, grid, args); });
    return result;
  }
  launch_now(target, grid, args);
  return result;
}

void Launcher::launch_now(const Target& target, const std::array<int64_t, 3>& grid,
                          std::span<const ArgValue> args) {
  const CompiledKernel* kernel = target.kernel.get();
  if (target.place.backend->kind() == backends::BackendKind::Device) {
    backends::Stream stream{classifier_.current_stream(target.place.device), target.place.device};
    nb::gil_scoped_release released;
    kernel->launch(grid.data(), args, stream);
  } else {
    nb::gil_scoped_release released;
    kernel->launch(grid.data(), args);
  }
}

const backends::Backend* Launcher::forced_backend() const {
  const LaunchSupport& support = classifier_.support();
  return python::forced_backend(support.environment.ptr(), support.backend_key.ptr());
}

// --- the entry points -------------------------------------------------------------------------------

void Launcher::work_out(const CallArgs& call, Specialized& out, std::array<int64_t, 3>* grid) {
  specialize(call, out);
  if (grid) *grid = resolve_grid(call.grid, out.bound);
  // After the grid function, which may fill them (Triton's order: the launch reads them last).
  if (!out.arguments.host_descriptors.empty())
    classifier_.place_host_descriptors(kernel_name_, names_, grid != nullptr, out.arguments);
  out.place = choose_place(kernel_name_, names_, {out.arguments.places.begin(), out.arguments.places.end()},
                           forced_backend());
  if (out.place.device == kCurrentDevice) out.place.device = classifier_.current_device();
  const LaunchOptions& options = out.bound.options;
  out.arguments.key.trailer(options.num_warps(), options.num_stages(), options.fp_fusion(), options.debug(debug_),
                            options.maxnreg(), backend_index(out.place.backend), out.place.device);
}

nb::object Launcher::launch(const CallArgs& call) {
  Specialized launch;
  std::array<int64_t, 3> grid{};
  work_out(call, launch, &grid);
  const Target* target = find_or_compile(launch.arguments.key.bytes(), launch.arguments.values.size());
  return target ? run(*target, grid, launch) : nb::none();
}

nb::object Launcher::warmup(const CallArgs& call) {
  Specialized launch;
  std::array<int64_t, 3> grid{};
  work_out(call, launch, call.grid == Py_None ? nullptr : &grid);
  const Target* target = find_or_compile(launch.arguments.key.bytes(), launch.arguments.values.size());
  return target ? target->kernel_object : nb::none();
}

nb::object Launcher::inspect(const CallArgs& call) {
  Specialized launch;
  work_out(call, launch, nullptr);
  nb::object kernel = compile(launch.arguments.key.bytes(), launch.arguments.values.size(), /*keep_stages=*/true);
  bool device = launch.place.backend->kind() == backends::BackendKind::Device;
  return nb::make_tuple(kernel, device ? nb::cast(launch.place.device) : nb::none());
}

nb::object Launcher::request(const CallArgs& call) {
  Specialized launch;
  work_out(call, launch, nullptr);
  auto [request, options] = compile_request(decode(launch.arguments.key.bytes()));
  return nb::make_tuple(nb::cast(std::move(request)), nb::cast(std::move(options)));
}

nb::bytes Launcher::specialization(const CallArgs& call) {
  Specialized launch;
  work_out(call, launch, nullptr);
  std::string_view key = launch.arguments.key.bytes();
  return nb::bytes(key.data(), key.size());
}

nb::list Launcher::specializations() const {
  nb::list out;
  for (const auto& [key, target] : targets_) out.append(nb::cast(decode(key).args));
  return out;
}

nb::tuple Launcher::arrays(nb::dict named) {
  if (!prepared_) prepare();
  nb::list dtypes;
  std::optional<Place> first;
  for (size_t i = 0; i < params_.size(); ++i) {
    // A parameter of declared scalar type holds no array.
    if (params_[i].is_constexpr || params_[i].declared || !named.contains(params_[i].name)) continue;
    LaunchArguments one;
    classifier_.runtime(kernel_name_, params_[i].text, i, named[params_[i].name], true, one);
    // A host descriptor places the launch if it is written already (else its grid function fills it).
    if (!one.host_descriptors.empty()) classifier_.place_host_descriptors(kernel_name_, names_, false, one);
    std::vector<frontend::ArgSpec> specs = decode_arguments(one.key.bytes());
    // The arrays of a tuple or an aggregate count as the parameter's own do.
    auto add = [&](auto& self, const frontend::ArgSpec& spec) -> void {
      if (spec.kind == frontend::ArgSpec::Kind::Pointer) dtypes.append(ir::to_string(spec.dtype));
      if (spec.kind == frontend::ArgSpec::Kind::Tuple)
        for (const frontend::ArgSpec& part : spec.parts) self(self, part);
    };
    add(add, specs.front());
    if (!first && !one.places.empty()) first = one.places[0].place;
  }
  Place place = first ? *first : choose_place(kernel_name_, names_, {}, forced_backend());
  if (place.device == kCurrentDevice) place.device = classifier_.current_device();
  bool device = place.backend->kind() == backends::BackendKind::Device;
  return nb::make_tuple(dtypes, std::string(place.backend->name()), device ? nb::cast(place.device) : nb::none());
}

void Launcher::clear() {
  last_target_ = nullptr;
  targets_.clear();
  params_.clear();
  classifier_.clear();
  jit_ = nb::object();
  index_ = nb::object();
  grid_function_ = nb::object();
  last_grid_ = nb::object();
  last_kwnames_ = nb::object();
  last_keyword_slots_.clear();
  prepared_ = false;
}

}  // namespace tegula::python
