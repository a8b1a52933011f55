#include "bindings/launch_arguments.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "bindings/launch_errors.h"
#include "frontend/legacy_descriptor_layout.h"
#include "frontend/value_bounds.h"
#include "runtime/backend_registry.h"

namespace nb = nanobind;

namespace tegula::python {

namespace {

// The leading fields of NumPy's array object (PyArrayObject_fields), which
// NumPy's own inline accessors PyArray_DATA and PyArray_DESCR read, so they
// are part of its ABI. The classifier still checks them against the
// attributes once before trusting them (a free-threaded Python has a larger
// object header, for one).
struct NumpyArrayHead {
  PyObject_HEAD
  char* data;
  int nd;
  Py_intptr_t* dimensions;
  Py_intptr_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};

// Bounds the identity caches: arrays made with unusual dtypes may each bring
// a new dtype object, and a longer list would cost more to search than it saves.
constexpr size_t kMaxCached = 32;

constexpr const char* kSupportedDtypes =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16 (ml_dtypes), float32, "
    "float64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz and float8_e5m2fnuz (torch, ml_dtypes, or "
    "tegula.reinterpret(uint8 array, tl.float8e4nv / tl.float8e5 / tl.float8e4b15 / tl.float8e4b8 / "
    "tl.float8e5b16))";

nb::object attribute(nb::handle value, nb::handle name) {
  PyObject* got = PyObject_GetAttr(value.ptr(), name.ptr());
  if (!got) throw nb::python_error();
  return nb::steal(got);
}

// The attribute, or an invalid object when there is none.
nb::object attribute_or_null(nb::handle value, nb::handle name) {
  PyObject* got = PyObject_GetAttr(value.ptr(), name.ptr());
  if (!got) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw nb::python_error();
    PyErr_Clear();
    return nb::object();
  }
  return nb::steal(got);
}

bool has_attribute(nb::handle value, nb::handle name) { return attribute_or_null(value, name).is_valid(); }

nb::object call_method(nb::handle value, nb::handle name) {
  PyObject* got = PyObject_CallMethodNoArgs(value.ptr(), name.ptr());
  if (!got) throw nb::python_error();
  return nb::steal(got);
}

bool is_instance(nb::handle value, const nb::object& type) {
  int result = PyObject_IsInstance(value.ptr(), type.ptr());
  if (result < 0) throw nb::python_error();
  return result == 1;
}

// The UTF-8 text of a str (IR scalar names are ASCII, so this is a pointer
// into the object itself).
std::string_view utf8(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (!data) throw nb::python_error();
  return {data, static_cast<size_t>(size)};
}

bool as_int64(PyObject* value, int64_t& out) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  out = v;
  return true;
}

ir::Scalar scalar_named(std::string_view name) {
  ir::Scalar scalar;
  bool known = ir::parse_scalar(std::string(name), &scalar);
  TEGULA_ASSERT(known, "the Python side names an unknown scalar type '" + std::string(name) + "'");
  return scalar;
}

// The scalar type of a dtype object, through a short identity cache (dtypes
// hash slowly; identity is enough): `look_up()` gives the Python table's IR
// scalar name, or None for a dtype it does not have.
template <class LookUp>
std::optional<ir::Scalar> cached_scalar(std::vector<std::pair<nb::object, ir::Scalar>>& cache, PyObject* dtype,
                                        LookUp&& look_up) {
  for (const auto& [known, scalar] : cache)
    if (known.ptr() == dtype) return scalar;
  nb::object name = look_up();
  if (name.is_none()) return std::nullopt;
  ir::Scalar scalar = scalar_named(utf8(name.ptr()));
  if (cache.size() < kMaxCached) cache.emplace_back(nb::borrow(dtype), scalar);
  return scalar;
}

// (lowest byte, byte count) of the elements a strided array addresses.
std::pair<uint64_t, uint64_t> span(uint64_t address, const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& strides, int64_t itemsize) {
  for (int64_t n : shape)
    if (n == 0) return {address, 0};
  int64_t low = 0, high = 0;
  for (size_t d = 0; d < shape.size() && d < strides.size(); ++d)
    (strides[d] < 0 ? low : high) += (shape[d] - 1) * strides[d];
  return {address + static_cast<uint64_t>(low), static_cast<uint64_t>(high - low + itemsize)};
}

std::vector<int64_t> int_list(nb::handle sequence) {
  std::vector<int64_t> out;
  for (nb::handle item : nb::iter(sequence)) out.push_back(nb::cast<int64_t>(item));
  return out;
}

// Runs `read`; an exception of one of `types` becomes the launch error
// `raise(str(exception))`, anything else propagates.
template <class Read, class Raise>
auto reading(std::initializer_list<PyObject*> types, Read&& read, Raise&& raise) -> decltype(read()) {
  try {
    return read();
  } catch (nb::python_error& e) {
    for (PyObject* type : types)
      if (e.matches(type)) raise(str_of(e.value()));
    throw;
  }
}

}  // namespace

const ArrayInterface* array_interface(nb::handle array, nb::object& capsule) {
  capsule = nb::steal(PyObject_GetAttrString(array.ptr(), "__array_struct__"));
  if (!capsule.is_valid()) throw nb::python_error();
  auto* info = PyCapsule_CheckExact(capsule.ptr())
                   ? static_cast<const ArrayInterface*>(PyCapsule_GetPointer(capsule.ptr(), nullptr))
                   : nullptr;
  if (!info || info->two != 2) {
    PyErr_Clear();
    throw nb::type_error("__array_struct__ is not an array interface capsule");
  }
  return info;
}

nb::str interned(const char* text) {
  PyObject* name = PyUnicode_InternFromString(text);
  if (!name) throw nb::python_error();
  return nb::steal<nb::str>(name);
}

std::vector<PyObject*> LaunchSupport::references() const {
  return {ndarray.ptr(),        generic.ptr(),        complexfloating.ptr(), flexible.ptr(),
          numpy_scalars.ptr(),  torch_scalars.ptr(),  numpy_dtype.ptr(),     from_dlpack.ptr(),
          reinterpreted.ptr(),  descriptor.ptr(),     constexpr_type.ptr(),  dtype_type.ptr(),
          pointer_type.ptr(),   current_device.ptr(), current_stream.ptr(),  torch_stream.ptr(),
          environment.ptr(),    backend_key.ptr(),    constexpr_function.ptr(), aggregate_fields.ptr()};
}

ArgumentClassifier::ArgumentClassifier(LaunchSupport support)
    : support_(std::move(support)),
      host_(&runtime::host_backend()),
      cuda_(runtime::find_backend("cuda")),
      dtype_name_(interned("dtype")),
      is_cuda_name_(interned("is_cuda")),
      is_cpu_name_(interned("is_cpu")),
      data_ptr_name_(interned("data_ptr")),
      get_device_name_(interned("get_device")),
      device_name_(interned("device")),
      type_name_(interned("type")),
      index_name_(interned("index")),
      value_name_(interned("value")),
      item_name_(interned("item")),
      base_name_(interned("base")),
      shape_name_(interned("shape")),
      strides_name_(interned("strides")),
      block_shape_name_(interned("block_shape")),
      padding_name_(interned("padding")),
      scalar_name_(interned("scalar")),
      canonical_name_(interned("canonical_name")),
      cuda_interface_name_(interned("__cuda_array_interface__")),
      dlpack_name_(interned("__dlpack__")),
      stride_name_(interned("stride")),
      element_size_name_(interned("element_size")),
      torch_name_(interned("torch")),
      tensor_name_(interned("Tensor")),
      aggregate_name_(interned("__tegula_aggregate__")),
      is_neg_name_(interned("is_neg")),
      tma_desc_cpu_ptr_name_(interned("tma_desc_cpu_ptr")) {}

// --- runtime arguments -----------------------------------------------------------------------

void ArgumentClassifier::runtime(const std::string& kernel, const std::string& param, size_t index,
                                 nb::handle value, bool specialize, LaunchArguments& out) {
  PyObject* object = value.ptr();
  PyTypeObject* type = Py_TYPE(object);
  // The kinds launches are made of, without a Python call.
  if (reinterpret_cast<PyObject*>(type) == support_.ndarray.ptr()) {
    add_pointer(*numpy_array(kernel, param, value, /*exact=*/true), index, value, out);
    return;
  }
  if (type == &PyLong_Type) return add_int(kernel, param, value, specialize, out);
  // None specializes the kernel as the constant None (Triton's rule): the
  // kernel gets no parameter for it, and `if X is not None:` folds.
  if (object == Py_None) return out.key.constant_none();
  if (type == &PyFloat_Type) {
    out.key.real();
    out.values.push_back({HostValue::Kind::Float, 0, PyFloat_AS_DOUBLE(object)});
    out.sources.push_back(nullptr);
    return;
  }
  if (type == &PyBool_Type) {
    out.key.boolean();
    out.values.push_back({HostValue::Kind::Bool, object == Py_True ? 1u : 0u, 0.0});
    out.sources.push_back(nullptr);
    return;
  }
  if (PyTuple_Check(object)) return tuple(kernel, param, index, value, specialize, out);
  if (type == exchange_type_ && type->tp_version_tag == exchange_version_) {
    // The tensor type the exchange table read last: no type table to search.
    std::optional<Pointer> tensor;
    if (!negated(exchange_is_neg_, value)) {
      tensor = exchanged_tensor(*torch_exchange_, value);
      if (!tensor) tensor = torch_tensor(value, /*exchange=*/false);
    }
    if (tensor) return add_pointer(*tensor, index, value, out);
  } else if (is_torch_type(type)) {
    if (std::optional<Pointer> tensor = torch_tensor(value)) return add_pointer(*tensor, index, value, out);
  }
  if (is_aggregate(value)) return aggregate(kernel, param, index, value, specialize, out);

  if (std::optional<Pointer> array = array_of(kernel, param, value)) return add_pointer(*array, index, value, out);
  // Not an array: a descriptor or a scalar of another type.
  if (is_descriptor(value)) return descriptor(kernel, param, index, value, out);
  if (is_number_scalar(value)) {
    nb::object item = call_method(value, item_name_);
    return runtime(kernel, param, index, item, specialize, out);
  }
  if (PyBool_Check(object)) {
    int truth = PyObject_IsTrue(object);
    if (truth < 0) throw nb::python_error();
    out.key.boolean();
    out.values.push_back({HostValue::Kind::Bool, truth ? 1u : 0u, 0.0});
    out.sources.push_back(nullptr);
    return;
  }
  if (PyLong_Check(object)) {
    nb::object plain = nb::steal(PyNumber_Long(object));
    if (!plain.is_valid()) throw nb::python_error();
    return add_int(kernel, param, plain, specialize, out);
  }
  double real = PyFloat_AsDouble(object);  // a float subclass: array_of() let nothing else through
  if (real == -1.0 && PyErr_Occurred()) throw nb::python_error();
  out.key.real();
  out.values.push_back({HostValue::Kind::Float, 0, real});
  out.sources.push_back(nullptr);
}

// A tuple (or named tuple) given to a runtime parameter: each element is an
// argument of its own, as Triton takes them. Elements that can only be
// compile-time values (tl.constexpr, str, tl.dtype, functions) are
// constexprs inside the tuple; None is the constant None, as anywhere.
void ArgumentClassifier::tuple(const std::string& kernel, const std::string& param, size_t index,
                               nb::handle value, bool specialize, LaunchArguments& out) {
  // Bounds for hostile arguments: a tuple nested a million deep would exhaust
  // the stack here and in the compiler, one of a million elements would make
  // a kernel of a million parameters (CUDA takes 32 KB of them).
  PyObject* object = value.ptr();
  Py_ssize_t count = PyTuple_GET_SIZE(object);
  check_depth(kernel, param);
  // A named tuple's fields (typing.NamedTuple, collections.namedtuple): the kernel reads them by name.
  std::string fields;
  if (PyTuple_CheckExact(object) == 0) {
    PyObject* names = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(object)), "_fields");
    if (names == nullptr) {
      PyErr_Clear();
    } else {
      nb::object owned = nb::steal(names);
      if (PyTuple_Check(names) && PyTuple_GET_SIZE(names) == count) {
        for (Py_ssize_t i = 0; i < count; ++i) {
          PyObject* name = PyTuple_GET_ITEM(names, i);
          if (!PyUnicode_Check(name)) {
            fields.clear();
            break;
          }
          fields += (i ? "," : "") + std::string(utf8(name));
        }
      }
    }
  }
  out.key.tuple(static_cast<uint32_t>(count), fields);
  if (count > 0) elements(kernel, param, index, &PyTuple_GET_ITEM(object, 0), count, specialize, out);
}

// Bounds for hostile arguments: a tuple (or aggregate) nested a million deep would exhaust the stack here
// and in the compiler; elements() bounds how many values one launch makes (CUDA takes 32 KB of parameters).
void ArgumentClassifier::check_depth(const std::string& kernel, const std::string& param) {
  constexpr int kMaxDepth = 32;
  if (std::count(param.begin(), param.end(), '[') >= kMaxDepth)
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                "argument '" + param + "' of kernel '" + kernel + "' nests tuples or aggregates more than " +
                    std::to_string(kMaxDepth) + " deep; pass fewer levels");
}

bool ArgumentClassifier::is_aggregate(nb::handle value) const {
  // Asked of every constexpr argument at every launch: the kinds launches pass answer without a lookup.
  PyTypeObject* type = Py_TYPE(value.ptr());
  if (type == &PyLong_Type || type == &PyBool_Type || type == &PyFloat_Type || type == &PyUnicode_Type ||
      value.is_none() || type == &PyTuple_Type || type == &PyFunction_Type)
    return false;
  return PyObject_HasAttr(reinterpret_cast<PyObject*>(type), aggregate_name_.ptr()) == 1;
}

void ArgumentClassifier::aggregate(const std::string& kernel, const std::string& param, size_t index,
                                   nb::handle value, bool specialize, LaunchArguments& out) {
  nb::object described = support_.aggregate_fields(value);
  PyObject* d = described.ptr();
  if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(d, 0)) ||
      !PyTuple_Check(PyTuple_GET_ITEM(d, 1)) || !PyTuple_Check(PyTuple_GET_ITEM(d, 2)) ||
      PyTuple_GET_SIZE(PyTuple_GET_ITEM(d, 1)) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(d, 2)))
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                "argument '" + param + "' of kernel '" + kernel + "' is an instance of " + type_name_of(value) +
                    ", whose class is not an @aggregate Tegula can read");
  PyObject* fields = PyTuple_GET_ITEM(d, 1);
  check_depth(kernel, param);
  Py_ssize_t count = PyTuple_GET_SIZE(fields);
  std::vector<std::string> names;  // errors name a field as `param.field`
  for (Py_ssize_t i = 0; i < count; ++i) names.emplace_back(utf8(PyTuple_GET_ITEM(PyTuple_GET_ITEM(d, 2), i)));
  out.key.tuple(static_cast<uint32_t>(count), utf8(PyTuple_GET_ITEM(d, 0)));
  if (count > 0) elements(kernel, param, index, &PyTuple_GET_ITEM(fields, 0), count, specialize, out, &names);
}

void ArgumentClassifier::elements(const std::string& kernel, const std::string& param, size_t index,
                                  PyObject* const* items, Py_ssize_t count, bool specialize, LaunchArguments& out,
                                  const std::vector<std::string>* names) {
  constexpr size_t kMaxValues = 4096;
  if (out.values.size() + static_cast<size_t>(count) > kMaxValues)
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                "argument '" + param + "' of kernel '" + kernel + "' makes the launch more than " +
                    std::to_string(kMaxValues) + " values; pass an array instead of a tuple this long");
  for (Py_ssize_t i = 0; i < count; ++i) {
    nb::handle element(items[i]);
    // An aggregate's field by name; the '[' keeps check_depth counting its nesting.
    std::string name = names ? param + "[" + std::to_string(i) + "]." + (*names)[static_cast<size_t>(i)]
                             : param + "[" + std::to_string(i) + "]";
    bool compile_time = PyUnicode_Check(element.ptr()) || is_instance(element, support_.constexpr_type) ||
                        (is_instance(element, support_.dtype_type) && !is_instance(element, support_.pointer_type)) ||
                        (!PyTuple_Check(element.ptr()) && PyCallable_Check(element.ptr()) &&
                         PyUnicode_Check(support_.constexpr_function(element).ptr()));
    if (compile_time)
      constexpr_value(kernel, name, element, out.key);
    else
      runtime(kernel, name, index, element, specialize, out);
  }
}

void ArgumentClassifier::add_pointer(const Pointer& pointer, size_t index, nb::handle source, LaunchArguments& out) {
  out.key.pointer(pointer.element, pointer.address % 16 == 0, pointer.host_descriptor);
  out.values.push_back({HostValue::Kind::Address, pointer.address, 0.0});
  out.sources.push_back(source.ptr());
  out.places.push_back({index, pointer.place});
  if (pointer.host_descriptor) out.host_descriptors.push_back({out.places.size() - 1, pointer.address});
  if (pointer.write_block != WriteBlock::None)
    out.unwritable.push_back({out.values.size() - 1, pointer.write_block});
}

void ArgumentClassifier::add_int(const std::string& kernel, const std::string& param, nb::handle value,
                                 bool specialize, LaunchArguments& out) {
  HostValue host;
  out.key.integer(classify_int(kernel, param, value, specialize, host));
  out.values.push_back(host);
  out.sources.push_back(nullptr);
}

// Triton's rules: i32 if the value fits, else i64, else u64; specialized on
// being exactly 1 and on divisibility by 16 unless `specialize` is false.
IntClass ArgumentClassifier::classify_int(const std::string& kernel, const std::string& param, nb::handle value,
                                          bool specialize, HostValue& host) {
  PyObject* object = value.ptr();
  IntClass c;
  int64_t v = 0;
  if (as_int64(object, v)) {
    c.width = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max() ? ir::Scalar::I32
                                                                                                   : ir::Scalar::I64;
    c.is_one = specialize && v == 1;
    c.divisible_by_16 = specialize && v % 16 == 0;
    host = {HostValue::Kind::Int, static_cast<uint64_t>(v), 0.0};
  } else {
    unsigned long long u = PyLong_AsUnsignedLongLong(object);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      raise_coded(argument_overflow_error(), Diag::LaunchArgumentRange,
                  "argument '" + param + "' of kernel '" + kernel + "' is " + str_of(value) +
                      ", which does not fit in 64 bits (kernel integers are i32, i64 or u64)");
    }
    c.width = ir::Scalar::U64;
    c.divisible_by_16 = specialize && u % 16 == 0;
    host = {HostValue::Kind::UInt, u, 0.0};
  }
  return c;
}

// --- arguments of parameters of declared type ---------------------------------------------------

namespace {

std::string type_text(ir::Scalar scalar) { return std::string("tl.") + ir::scalar_info(scalar).tl_name; }

// "argument 's' of kernel 'k' is annotated tl.int64": where the type comes from, for messages.
std::string declared_as(const std::string& kernel, const std::string& param, const DeclaredType& type) {
  return "argument '" + param + "' of kernel '" + kernel + "' " +
         (type.compiled ? "was compiled as " : "is annotated ") + type_text(type.scalar);
}

// The way out of a wrong value: another value, or (for an annotation) another annotation.
std::string or_redeclare(const DeclaredType& type, const std::string& what) {
  return type.compiled ? ", or compile the kernel for " + what : ", or annotate the parameter with " + what;
}

// What a parameter of the type takes, for messages.
std::string takes(ir::Scalar scalar) {
  if (scalar == ir::Scalar::I1) return "a bool (or an int: nonzero is True)";
  if (ir::is_float(scalar)) return "a float, int or bool (Python's or NumPy's)";
  return "an int or bool (Python's or NumPy's)";
}

}  // namespace

void ArgumentClassifier::declared(const std::string& kernel, const std::string& param, const DeclaredType& type,
                                  nb::handle value, bool specialize, LaunchArguments& out) {
  // None keeps its meaning (`scale: tl.float32 = None` then `if scale is not None:`).
  if (value.is_none()) return out.key.constant_none();
  nb::object number = plain_number(value);
  if (!number.is_valid()) {
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                declared_as(kernel, param, type) + ", a scalar type, but got an instance of " + type_name_of(value) +
                    "; pass " + takes(type.scalar) +
                    (type.compiled ? std::string() : ", or take the annotation off a parameter that is no scalar"));
  }
  HostValue host;
  if (type.scalar == ir::Scalar::I1) {
    if (PyFloat_Check(number.ptr()))
      raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                  declared_as(kernel, param, type) + " but got the float " + repr_of(number) + "; pass " +
                      takes(type.scalar));
    int truth = PyObject_IsTrue(number.ptr());
    if (truth < 0) throw nb::python_error();
    host = {HostValue::Kind::Bool, truth ? 1u : 0u, 0.0};
    out.key.boolean();  // bools do not specialize (Triton's rule)
  } else if (ir::is_float(type.scalar)) {
    // Kept as a double: packing rounds it to the parameter's type (backends/launch_arguments.h), so an
    // f64 loses nothing and an f16 is rounded once.
    host = {HostValue::Kind::Float, 0, declared_real(kernel, param, type, number)};
    out.key.real(type.scalar);  // floats do not specialize (Triton's rule)
  } else {
    out.key.integer(declared_int(kernel, param, type, number, specialize, host));
  }
  out.values.push_back(host);
  out.sources.push_back(nullptr);
}

nb::object ArgumentClassifier::plain_number(nb::handle value) {
  PyObject* object = value.ptr();
  if (PyLong_Check(object) || PyFloat_Check(object)) return nb::borrow(value);  // bool is an int
  if (PyTuple_Check(object) || reinterpret_cast<PyObject*>(Py_TYPE(object)) == support_.ndarray.ptr() ||
      !is_number_scalar(value))
    return nb::object();
  nb::object item = call_method(value, item_name_);  // np.int64(3) -> 3, np.float16 -> float, np.bool_ -> bool
  PyObject* plain = item.ptr();
  return PyLong_Check(plain) || PyFloat_Check(plain) ? item : nb::object();
}

// Triton's launcher reads an int for an integer parameter as a C long (a
// signed type) or unsigned long (an unsigned one) and keeps the bits the
// parameter holds: 2**40 + 5 is an i32's 5 and 300 a u8's 44, while a value
// no 64-bit integer of that signedness holds (2**63, -1 for a u8) is an
// OverflowError. Libraries rely on the narrowing (a 64-bit random seed for a
// `seed: tl.int32`), so it is kept, with a RuntimeWarning where it changes
// the value: a stride narrowed that way addresses other memory.
IntClass ArgumentClassifier::declared_int(const std::string& kernel, const std::string& param,
                                          const DeclaredType& type, nb::handle number, bool specialize,
                                          HostValue& host) {
  PyObject* object = number.ptr();
  if (PyFloat_Check(object))
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                declared_as(kernel, param, type) + " but got the float " + repr_of(number) + "; pass " +
                    takes(type.scalar) + or_redeclare(type, "a float type such as tl.float32"));
  const int bits = ir::bit_width(type.scalar);
  const bool is_signed = ir::is_signed(type.scalar);
  IntClass c;
  c.width = type.scalar;
  c.typed_one = true;
  uint64_t all = 0;  // the value as a 64-bit integer of the parameter's signedness
  if (is_signed) {
    int64_t v = 0;
    if (!as_int64(object, v))
      raise_coded(argument_overflow_error(), Diag::LaunchArgumentRange,
                  declared_as(kernel, param, type) + " but got " + str_of(number) +
                      ", which no int64 holds; pass a value from -2**63 to 2**63 - 1");
    all = static_cast<uint64_t>(v);
  } else {
    unsigned long long v = PyLong_AsUnsignedLongLong(object);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_OverflowError)) throw nb::python_error();
      PyErr_Clear();
      raise_coded(argument_overflow_error(), Diag::LaunchArgumentRange,
                  declared_as(kernel, param, type) + " but got " + str_of(number) +
                      ", which no uint64 holds; pass a value from 0 to 2**64 - 1" +
                      or_redeclare(type, "a signed type such as tl.int64"));
    }
    all = v;
  }
  // The low `bits` bits, sign-extended for a signed type: the value the kernel receives.
  uint64_t low = all;
  if (bits < 64) {
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    low = all & mask;
    if (is_signed && (low >> (bits - 1)) != 0) low |= ~mask;
  }
  if (low != all) {
    std::string held = is_signed ? std::to_string(static_cast<int64_t>(low)) : std::to_string(low);
    std::string message = declared_as(kernel, param, type) + " and got " + str_of(number) + ", which it holds as " +
                          held + " (its low " + std::to_string(bits) + " bits, as Triton passes it); to keep the " +
                          "value, pass one in the type's range" +
                          or_redeclare(type, std::string("a wider type such as ") + (is_signed ? "tl.int64" : "tl.uint64"));
    nb::module_::import_("tegula._environment").attr("warn_at_caller")(message);
  }
  host = {is_signed ? HostValue::Kind::Int : HostValue::Kind::UInt, low, 0.0};
  // On the value the kernel receives (2**32 + 1 is a u32's 1); the low four bits tell divisibility by 16 in
  // two's complement too.
  c.is_one = specialize && low == 1;
  c.divisible_by_16 = specialize && (low & 15) == 0;
  return c;
}

double ArgumentClassifier::declared_real(const std::string& kernel, const std::string& param,
                                         const DeclaredType& type, nb::handle number) {
  double real = PyFloat_AsDouble(number.ptr());  // an int exactly where a double holds it, else rounded
  if (real == -1.0 && PyErr_Occurred()) {
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) throw nb::python_error();
    PyErr_Clear();
    raise_coded(argument_overflow_error(), Diag::LaunchArgumentRange,
                declared_as(kernel, param, type) + " but got " + str_of(number) +
                    ", an int too large for any float; pass a value a float64 holds");
  }
  return real;
}

// Mirrors the order in which the kinds were always told apart: a value that
// is no array is a descriptor or a scalar, which runtime() takes; anything
// else is refused here.
std::optional<ArgumentClassifier::Pointer> ArgumentClassifier::array_of(const std::string& kernel,
                                                                         const std::string& param,
                                                                         nb::handle value) {
  PyObject* object = value.ptr();
  PyTypeObject* type = Py_TYPE(object);
  if (reinterpret_cast<PyObject*>(type) == support_.ndarray.ptr()) return numpy_array(kernel, param, value, true);
  if (is_torch_type(type))
    if (std::optional<Pointer> tensor = torch_tensor(value)) return tensor;
  if (is_instance(value, support_.reinterpreted)) {
    nb::object base = attribute(value, base_name_);
    std::optional<Pointer> array = array_of(kernel, param, base);
    if (!array)
      raise_coded(PyExc_TypeError, Diag::InvalidReinterpret,
                  "argument '" + param + "' of kernel '" + kernel + "': tegula.reinterpret needs an array or "
                      "tensor, got " + type_name_of(base));
    // A tl dtype's scalar is the IR's name for it; a ReinterpretedArray built without tegula.reinterpret
    // (a wrapper class of Triton-ported code) may hold anything else, which is refused here.
    nb::object dtype = attribute(value, dtype_name_);
    nb::object as = is_instance(dtype, support_.dtype_type) && !is_instance(dtype, support_.pointer_type)
                        ? attribute_or_null(dtype, scalar_name_)
                        : nb::object();
    ir::Scalar element;
    if (!as.is_valid() || !PyUnicode_Check(as.ptr()) || !ir::parse_scalar(std::string(utf8(as.ptr())), &element))
      raise_coded(PyExc_TypeError, Diag::InvalidReinterpret,
                  "argument '" + param + "' of kernel '" + kernel + "' is reinterpreted as " + str_of(dtype) +
                      ", which Tegula has no type for: reinterpret an array as a scalar tl dtype such as "
                      "tl.float8e4nv");
    array->element = element;
    if (array->host_descriptor) {  // reinterpreted, the bytes are a host array like any other
      array->host_descriptor = false;
      array->place = Place{host_, -1};
    }
    return array;
  }
  if (is_instance(value, support_.ndarray)) {
    // TmaDescKernelParam is a NumPy array; other subclasses are arrays.
    if (has_attribute(value, tma_desc_cpu_ptr_name_)) return host_descriptor(kernel, param, value);
    return numpy_array(kernel, param, value, /*exact=*/false);
  }
  if (is_descriptor(value) || is_number_scalar(value) || PyLong_Check(object) || PyFloat_Check(object))
    return std::nullopt;
  if (has_attribute(value, data_ptr_name_) && has_attribute(value, dtype_name_) && has_attribute(value, device_name_))
    return tensor_like(kernel, param, value);
  // A wrapper of a host TMA descriptor; after the tensors, so that they never pay for the lookup.
  if (has_attribute(value, tma_desc_cpu_ptr_name_)) return host_descriptor(kernel, param, value);
  nb::object interface = attribute_or_null(value, cuda_interface_name_);
  if (interface.is_valid() && !interface.is_none()) return cuda_interface(kernel, param, interface);
  if (has_attribute(value, dlpack_name_)) {
    nb::object array = reading(
        {PyExc_BufferError, PyExc_TypeError, PyExc_ValueError, PyExc_RuntimeError},
        [&] { return support_.from_dlpack(value); },
        [&](const std::string& why) {
          raise_coded(PyExc_ValueError, Diag::LaunchArgumentType,
                      "argument '" + param + "' of kernel '" + kernel + "': cannot read its DLPack data on the CPU (" +
                          why + ")");
        });
    return numpy_array(kernel, param, array, is_instance(array, support_.ndarray));
  }
  raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
              "argument '" + param + "' of kernel '" + kernel + "' must be an array or a scalar, got " +
                  type_name_of(value));
}

ArgumentClassifier::Pointer ArgumentClassifier::host_descriptor(const std::string& kernel, const std::string& param,
                                                                 nb::handle value) {
  // The bytes at tma_desc_cpu_ptr() as a uint8 array; place_host_descriptors reads them.
  nb::object bytes = nb::module_::import_("tegula.experimental_descriptor")
                         .attr("kernel_param_bytes")(value, nb::str(kernel.c_str()), nb::str(param.c_str()));
  Pointer pointer = *numpy_array(kernel, param, bytes, /*exact=*/false);
  pointer.host_descriptor = true;
  pointer.write_block = WriteBlock::None;  // the kernel reads its copy of the bytes
  return pointer;  // placed by place_host_descriptors
}

void ArgumentClassifier::place_host_descriptors(const std::string& kernel, const std::vector<std::string>& names,
                                                bool launching, LaunchArguments& out) {
  namespace layout = frontend::legacy_descriptor;
  bool unwritten = false;
  for (const HostDescriptorArgument& d : out.host_descriptors) {
    int64_t words[layout::kBaseWord + 1];
    std::memcpy(words, reinterpret_cast<const void*>(static_cast<uintptr_t>(d.bytes)), sizeof words);
    ArgumentPlace& at = out.places.data()[d.place];
    if (words[layout::kMagicWord] != layout::kMagic) {
      if (!launching) {
        unwritten = true;
        at.place = Place{};  // dropped below
        continue;
      }
      raise_coded(PyExc_ValueError, Diag::InvalidTensorDescriptor,
                  "argument '" + names[at.param] + "' of kernel '" + kernel + "' is a host TMA descriptor whose " +
                      std::to_string(layout::kBytes) +
                      " bytes no Tegula helper wrote: fill them with tegula.experimental_descriptor's "
                      "create_1d/2d_tma_descriptor or fill_1d/2d_tma_descriptor (the driver's utils.fill_*) "
                      "before the launch or in its grid function; Tegula's kernels read its own layout, not a "
                      "CUtensorMap another library encoded");
    }
    auto base = static_cast<uint64_t>(words[layout::kBaseWord]);
    for (const backends::Backend* backend : runtime::all_backends()) {
      if (backend->kind() != backends::BackendKind::Device) continue;
      if (std::optional<int> device = backend->device_owning(base)) {
        at.place = Place{backend, *device};
        break;
      }
    }
  }
  if (!unwritten) return;
  SmallVector<ArgumentPlace, kInlineArguments> placed;
  for (size_t i = 0; i < out.places.size(); ++i)
    if (out.places.data()[i].place.backend) placed.push_back(out.places.data()[i]);
  out.places.clear();
  for (size_t i = 0; i < placed.size(); ++i) out.places.push_back(placed.data()[i]);
}

std::optional<ArgumentClassifier::Pointer> ArgumentClassifier::numpy_array(const std::string& kernel,
                                                                            const std::string& param,
                                                                            nb::handle value, bool exact) {
  auto* head = reinterpret_cast<NumpyArrayHead*>(value.ptr());
  nb::object dtype_holder;
  PyObject* dtype = nullptr;
  uint64_t address = 0;
  int flags = 0, nd = 0;
  const Py_intptr_t *shape = nullptr, *strides = nullptr;
  nb::object capsule;  // owns the interface that `shape` and `strides` point into
  if (exact && numpy_layout_ == NumpyLayout::Direct) {
    dtype = head->descr;
    address = reinterpret_cast<uintptr_t>(head->data);
    flags = head->flags;
    nd = head->nd;
    shape = head->dimensions;
    strides = head->strides;
  } else {
    dtype_holder = attribute(value, dtype_name_);
    dtype = dtype_holder.ptr();
    const ArrayInterface* interface = array_interface(value, capsule);
    address = reinterpret_cast<uintptr_t>(interface->data);
    flags = interface->flags;
    nd = interface->nd;
    shape = interface->shape;
    strides = interface->strides;
    if (exact && numpy_layout_ == NumpyLayout::Unknown)
      numpy_layout_ = head->descr == dtype && reinterpret_cast<uintptr_t>(head->data) == address
                          ? NumpyLayout::Direct
                          : NumpyLayout::Attributes;
  }
  std::optional<ir::Scalar> scalar = numpy_scalar(dtype);
  if (!scalar)
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                "argument '" + param + "' of kernel '" + kernel + "' has unsupported dtype " +
                    str_of(nb::handle(dtype)) + "; supported: " + kSupportedDtypes);
  return Pointer{*scalar, address, Place{host_, -1},
                 numpy_write_block(flags, nd, shape, strides, ir::byte_size(*scalar))};
}

std::optional<ir::Scalar> ArgumentClassifier::numpy_scalar(PyObject* dtype) {
  return cached_scalar(numpy_dtypes_, dtype, [&] { return support_.numpy_scalars.attr("get")(nb::handle(dtype)); });
}

// --- torch tensors -----------------------------------------------------------------------------

bool ArgumentClassifier::is_torch_type(PyTypeObject* type) const {
  for (const nb::object& known : torch_types_)
    if (known.ptr() == reinterpret_cast<PyObject*>(type)) return true;
  return false;
}

// A tensor of torch itself (not a look-alike) teaches the fast path its type.
bool ArgumentClassifier::learn_torch_type(nb::handle value) {
  PyTypeObject* type = Py_TYPE(value.ptr());
  nb::object module = attribute_or_null(nb::handle(reinterpret_cast<PyObject*>(type)), interned("__module__"));
  if (!module.is_valid() || !PyUnicode_Check(module.ptr()) || !utf8(module.ptr()).starts_with("torch")) return false;
  nb::object torch = nb::steal(PyImport_GetModule(torch_name_.ptr()));
  if (!torch.is_valid()) {
    PyErr_Clear();
    return false;
  }
  nb::object tensor = attribute_or_null(torch, tensor_name_);
  if (!tensor.is_valid() || !is_instance(value, tensor)) return false;
  if (torch_types_.size() < kMaxCached) torch_types_.push_back(nb::borrow(reinterpret_cast<PyObject*>(type)));
  return true;
}

// torch dtypes are looked up by name ("torch.float32"): torch is never imported.
std::optional<ir::Scalar> ArgumentClassifier::torch_scalar(PyObject* dtype) {
  return cached_scalar(torch_dtypes_, dtype,
                       [&] { return support_.torch_scalars.attr("get")(nb::str(nb::handle(dtype))); });
}

const ArgumentClassifier::TorchAccessors* ArgumentClassifier::torch_accessors(PyTypeObject* type) {
  for (TorchAccessors& known : torch_accessors_)
    if (known.type == type) {
      if (known.version != 0 && known.version == type->tp_version_tag) return &known;
      known = TorchAccessors{};  // the class changed: look again
      known.type = type;
    }
  auto found = std::find_if(torch_accessors_.begin(), torch_accessors_.end(),
                            [&](const TorchAccessors& a) { return a.type == type; });
  if (found == torch_accessors_.end()) {
    if (torch_accessors_.size() >= kMaxCached) return nullptr;
    torch_accessors_.push_back(TorchAccessors{});
    found = std::prev(torch_accessors_.end());
    found->type = type;
  }
  TorchAccessors& a = *found;
  auto lookup = [&](const nb::str& name) -> nb::object {
    PyObject* descr = _PyType_Lookup(type, name.ptr());  // borrowed; assigns the version tag
    return descr ? nb::borrow(descr) : nb::object();
  };
  auto data_descriptor = [](const nb::object& d) {
    return d.is_valid() && Py_TYPE(d.ptr())->tp_descr_get && Py_TYPE(d.ptr())->tp_descr_set;
  };
  auto c_method = [](const nb::object& d) { return d.is_valid() && Py_IS_TYPE(d.ptr(), &PyMethodDescr_Type); };
  a.dtype = lookup(dtype_name_);
  a.is_cuda = lookup(is_cuda_name_);
  a.is_cpu = lookup(is_cpu_name_);
  a.data_ptr = lookup(data_ptr_name_);
  a.get_device = lookup(get_device_name_);
  a.is_neg = lookup(is_neg_name_);
  a.usable = data_descriptor(a.dtype) && data_descriptor(a.is_cuda) && data_descriptor(a.is_cpu) &&
             c_method(a.data_ptr) && c_method(a.get_device) && c_method(a.is_neg);
  a.exchange = exchange_plain_type(type) ? dlpack::exchange_api(type) : nullptr;
  a.version = type->tp_version_tag;
  if (a.exchange) torch_exchange_ = a.exchange;
  if (a.exchange && a.usable && a.version != 0) {
    exchange_type_ = type;
    exchange_version_ = a.version;
    exchange_is_neg_ = a.is_neg;
  }
  return a.version != 0 ? &a : nullptr;
}

namespace {

nb::object get_through(const nb::object& descriptor, nb::handle value) {
  PyObject* got = Py_TYPE(descriptor.ptr())->tp_descr_get(descriptor.ptr(), value.ptr(),
                                                          reinterpret_cast<PyObject*>(Py_TYPE(value.ptr())));
  if (!got) throw nb::python_error();
  return nb::steal(got);
}

nb::object call_through(const nb::object& method, nb::handle value) {
  PyObject* self = value.ptr();
  PyObject* got = PyObject_Vectorcall(method.ptr(), &self, 1, nullptr);
  if (!got) throw nb::python_error();
  return nb::steal(got);
}

// A tracer's tensor (torch.compile, torch.export, FakeTensorMode): a shape
// without memory, whose data_ptr() warns or raises. It most often reaches a
// launch from a custom op's fake implementation that calls the real one.
// Its type's name, or null for any other value (a C string compare, so the
// launch path may ask).
const char* traced_tensor(nb::handle value) {
  const char* name = Py_TYPE(value.ptr())->tp_name;
  for (const char* traced : {"FakeTensor", "FunctionalTensor"})
    if (std::strcmp(name, traced) == 0) return traced;
  return nullptr;
}

// data_ptr()'s answer when it is a non-negative int below 2^64.
std::optional<uint64_t> plain_address(nb::handle answer) {
  if (!PyLong_Check(answer.ptr())) return std::nullopt;
  unsigned long long address = PyLong_AsUnsignedLongLong(answer.ptr());
  if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return address;
}

}  // namespace

bool ArgumentClassifier::single_cuda_device() {
  if (cuda_devices_ < 0) {
    // torch and the driver count the same devices (both honour
    // CUDA_VISIBLE_DEVICES); a driver we cannot ask means "ask torch".
    try {
      cuda_devices_ = cuda_ ? cuda_->device_count() : 0;
    } catch (const std::exception&) {
      cuda_devices_ = 0;
    }
  }
  return cuda_devices_ == 1;
}

bool ArgumentClassifier::negated(const nb::object& is_neg, nb::handle value) {
  if (is_neg.is_valid()) return call_through(is_neg, value).ptr() == Py_True;
  // A look-alike or a subclass that overrides the getters: asked the slow way,
  // and one whose is_neg is no method is no negated view.
  nb::object method = attribute_or_null(value, is_neg_name_);
  if (!method.is_valid() || !PyCallable_Check(method.ptr())) return false;
  nb::object answer = nb::steal(PyObject_CallNoArgs(method.ptr()));
  if (!answer.is_valid()) PyErr_Clear();
  return answer.is_valid() && answer.ptr() == Py_True;
}

// A tensor of a torch type: dtype object, is_cuda / is_cpu, data_ptr() and
// get_device() through the type's own getters; anything unusual (another
// dtype, another device type) goes to tensor_like(), which reports it.
std::optional<ArgumentClassifier::Pointer> ArgumentClassifier::torch_tensor(nb::handle value, bool exchange) {
  const TorchAccessors* known = torch_accessors(Py_TYPE(value.ptr()));
  // tensor_address() reports a negated view.
  if (negated(known && known->usable ? known->is_neg : nb::object(), value)) return std::nullopt;
  if (exchange && known && known->exchange)
    if (std::optional<Pointer> exchanged = exchanged_tensor(*known->exchange, value)) return exchanged;
  const TorchAccessors* fast = known && known->usable ? known : nullptr;
  auto get = [&](const nb::object TorchAccessors::*field, const nb::str& name) {
    return fast ? get_through(fast->*field, value) : attribute(value, name);
  };
  auto call = [&](const nb::object TorchAccessors::*field, const nb::str& name) {
    return fast ? call_through(fast->*field, value) : call_method(value, name);
  };
  nb::object dtype = get(&TorchAccessors::dtype, dtype_name_);
  std::optional<ir::Scalar> scalar = torch_scalar(dtype.ptr());
  if (!scalar) return std::nullopt;
  bool on_device = get(&TorchAccessors::is_cuda, is_cuda_name_).ptr() == Py_True;
  if (on_device ? !cuda_ : get(&TorchAccessors::is_cpu, is_cpu_name_).ptr() != Py_True) return std::nullopt;
  // A tensor without storage (sparse) raises here, a nested one answers 0:
  // tensor_like() says what is wrong with either, and with a tracer's tensor.
  if (traced_tensor(value)) return std::nullopt;
  std::optional<uint64_t> address;
  try {
    address = plain_address(call(&TorchAccessors::data_ptr, data_ptr_name_));
  } catch (nb::python_error&) {
  }
  if (!address || *address == 0) return std::nullopt;
  if (!on_device) return Pointer{*scalar, *address, Place{host_, -1}};
  // With one CUDA device in the process, every CUDA tensor is on device 0:
  // a torch call per tensor saved.
  int device = single_cuda_device() ? 0 : nb::cast<int>(call(&TorchAccessors::get_device, get_device_name_));
  return Pointer{*scalar, *address, Place{cuda_, device}};
}


bool ArgumentClassifier::exchange_plain_type(PyTypeObject* type) {
  nb::object torch = nb::steal(PyImport_GetModule(torch_name_.ptr()));
  if (!torch.is_valid()) {
    PyErr_Clear();
    return false;
  }
  auto is = [&](nb::handle module, const char* name) {
    nb::object found = attribute_or_null(module, interned(name));
    return found.is_valid() && found.ptr() == reinterpret_cast<PyObject*>(type);
  };
  if (is(torch, "Tensor")) return true;
  nb::object nn = attribute_or_null(torch, interned("nn"));
  return nn.is_valid() && is(nn, "Parameter");
}

// One C call describes the tensor; what the table cannot say in Tegula's
// terms (another device type, an element type Tegula lacks) goes the
// getters' way, which reports it. A failing call (a tensor without storage)
// does too: its error is the getters' to raise.
std::optional<ArgumentClassifier::Pointer> ArgumentClassifier::exchanged_tensor(const dlpack::ExchangeApi& api,
                                                                                nb::handle value) {
  dlpack::Tensor tensor{};
  if (api.tensor_from_py_object(value.ptr(), &tensor) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  std::optional<ir::Scalar> scalar = dlpack::scalar_of(tensor.dtype);
  if (!scalar) return std::nullopt;
  Place place;
  if (tensor.device.type == dlpack::kCPU)
    place = Place{host_, -1};
  else if (tensor.device.type == dlpack::kCUDA && cuda_)
    place = Place{cuda_, tensor.device.id};
  else
    return std::nullopt;
  return Pointer{*scalar, reinterpret_cast<uintptr_t>(tensor.data) + tensor.byte_offset, place,
                 dlpack_write_block(tensor.ndim, tensor.shape, tensor.strides)};
}

// torch.Tensor and look-alikes: anything with data_ptr(), dtype and device.
// The device's type names the backend whose memory it is (torch's "cpu" and
// "cuda" are the registry's names).
ArgumentClassifier::Pointer ArgumentClassifier::tensor_like(const std::string& kernel, const std::string& param,
                                                           nb::handle value) {
  learn_torch_type(value);
  nb::object device = attribute(value, device_name_);
  nb::object kind = attribute_or_null(device, type_name_);
  std::string device_type = kind.is_valid() ? str_of(kind) : str_of(device);
  nb::object dtype_object = attribute(value, dtype_name_);
  std::string dtype = str_of(dtype_object);
  uint64_t address = tensor_address(kernel, param, value);
  PyObject* scalar = PyDict_GetItemWithError(support_.torch_scalars.ptr(), nb::str(dtype.c_str()).ptr());
  if (!scalar) {
    if (PyErr_Occurred()) throw nb::python_error();
    // A look-alike whose dtype is a name ("float32") would read as a supported one below.
    std::string shown = PyUnicode_Check(dtype_object.ptr()) ? "dtype '" + dtype + "' given as a str, not as a torch dtype"
                                                            : "unsupported dtype " + dtype;
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                "argument '" + param + "' of kernel '" + kernel + "' has " + shown + "; supported: " +
                    kSupportedDtypes);
  }
  const backends::Backend* backend = runtime::find_backend(device_type);
  if (!backend) {
    std::string where;
    for (const backends::Backend* b : runtime::all_backends())
      where += (where.empty() ? "" : " and on ") + std::string(b->description());
    // CUDA memory where no CUDA device is usable (no GPU, no driver): the backend exists but not here.
    if (device_type == "cuda" || device_type.rfind("cuda:", 0) == 0)
      raise_coded(PyExc_ValueError, Diag::ArgumentOnWrongDevice,
                  "argument '" + param + "' of kernel '" + kernel + "' is on " + str_of(device) +
                      ", but no CUDA device is usable in this process; pass host memory (the CPU backend) "
                      "or run where a GPU and its driver are");
    raise_coded(PyExc_ValueError, Diag::ArgumentOnWrongDevice,
                "argument '" + param + "' of kernel '" + kernel + "' is on " + str_of(device) +
                    "; Tegula kernels run on " + where);
  }
  int ordinal = -1;
  if (backend->kind() == backends::BackendKind::Device) {
    nb::object index = attribute_or_null(device, index_name_);
    ordinal = index.is_valid() && !index.is_none() ? nb::cast<int>(index) : 0;
  }
  return Pointer{scalar_named(utf8(scalar)), address, Place{backend, ordinal}};
}

// data_ptr() of a tensor or look-alike, which must be the address of its
// elements: a nested tensor (several buffers), one without storage (sparse)
// or an answer that is no address is the argument's error, not a launch.
uint64_t ArgumentClassifier::tensor_address(const std::string& kernel, const std::string& param,
                                            nb::handle value) {
  const std::string what = "argument '" + param + "' of kernel '" + kernel + "'";
  nb::object nested = attribute_or_null(value, interned("is_nested"));
  if (nested.is_valid() && nested.ptr() == Py_True)
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                what + " is a nested tensor (torch.nested), whose rows are no single array; pass its values() "
                       "with the offsets, or a padded tensor");
  if (negated(nb::object(), value))
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                what + " is a negated view (its is_neg() is true, as for x.conj().imag): its memory holds the "
                       "values with the other sign, which a kernel would read and write as they are; pass "
                       "x.resolve_neg() (a copy) to read it, and write into a tensor that is no such view");
  if (const char* type = traced_tensor(value))
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                what + " is a " + type + ", a tracer's tensor with a shape and no memory (torch.compile, "
                       "torch.export, FakeTensorMode): kernels run on real tensors only. A custom op's fake "
                       "implementation allocates its outputs (x.new_empty(...)) and launches nothing; a launch in "
                       "a traced region goes in a custom op (tegula.torch.custom_op, docs/torch.md)");
  PyObject* answer = PyObject_CallMethodNoArgs(value.ptr(), data_ptr_name_.ptr());
  if (answer == nullptr) {
    nb::python_error cause;
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                what + " has no data pointer (" + std::string(cause.what()).substr(0, 300) +
                    "); pass a dense tensor (to_dense(), contiguous())");
  }
  nb::object owned = nb::steal(answer);
  unsigned long long address = PyLong_Check(answer) ? PyLong_AsUnsignedLongLong(answer) : 0;
  bool plain = PyLong_Check(answer) && !(address == static_cast<unsigned long long>(-1) && PyErr_Occurred());
  if (!plain) {
    PyErr_Clear();
    std::string shown = str_of(owned);
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                what + ": data_ptr() returned " + (shown.size() > 60 ? shown.substr(0, 60) + "..." : shown) +
                    " (" + type_name_of(owned) + "), not an address from 0 to 2**64 - 1");
  }
  if (address == 0) {
    nb::object count = attribute_or_null(value, interned("numel"));
    nb::object n = count.is_valid() && PyCallable_Check(count.ptr()) ? nb::steal(PyObject_CallNoArgs(count.ptr()))
                                                                       : nb::object();
    if (!n.is_valid()) PyErr_Clear();
    long long elements = n.is_valid() && PyLong_Check(n.ptr()) ? PyLong_AsLongLong(n.ptr()) : 0;
    if (elements == -1 && PyErr_Occurred()) PyErr_Clear();
    if (elements > 0)
      raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                  what + " has " + std::to_string(elements) + " elements but data_ptr() is 0 (no memory); "
                         "pass a tensor that owns its storage");
  }
  return address;
}

// Objects with __cuda_array_interface__ (CuPy, Numba): CUDA device memory.
ArgumentClassifier::Pointer ArgumentClassifier::cuda_interface(const std::string& kernel, const std::string& param,
                                                              nb::handle interface) {
  auto malformed = [&](const std::string& why) {
    raise_coded(PyExc_TypeError, Diag::InvalidTensorDescriptor,
                "argument '" + param + "' of kernel '" + kernel + "' has a malformed __cuda_array_interface__ (" +
                    why + ")");
  };
  std::initializer_list<PyObject*> malformations = {PyExc_KeyError, PyExc_TypeError, PyExc_ValueError,
                                                    PyExc_IndexError};
  nb::object dtype = reading(malformations, [&] { return support_.numpy_dtype(interface["typestr"]); }, malformed);
  uint64_t address = reading(
      malformations, [&] { return nb::cast<uint64_t>(nb::int_(interface["data"][0])); }, malformed);
  std::optional<ir::Scalar> scalar = numpy_scalar(dtype.ptr());
  if (!scalar)
    raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                "argument '" + param + "' of kernel '" + kernel + "' has unsupported dtype " + str_of(dtype) +
                    "; supported: " + kSupportedDtypes);
  const backends::Backend& cuda = cuda_ ? *cuda_ : runtime::backend_named("cuda");
  // An empty array may have address 0, which belongs to no device: use the current one.
  int device = address ? cuda.device_of(address) : current_device();
  return Pointer{*scalar, address, Place{&cuda, device}};
}

// --- descriptors and scalars ------------------------------------------------------------------

bool ArgumentClassifier::is_descriptor(nb::handle value) const {
  if (is_instance(value, support_.descriptor)) return true;
  nb::handle type(reinterpret_cast<PyObject*>(Py_TYPE(value.ptr())));
  if (nb::cast<std::string>(nb::getattr(type, "__name__")) != "TensorDescriptor") return false;
  for (const nb::str* name : {&base_name_, &shape_name_, &strides_name_, &block_shape_name_})
    if (!has_attribute(value, *name)) return false;
  return true;
}

bool ArgumentClassifier::is_number_scalar(nb::handle value) const {
  return is_instance(value, support_.generic) && !is_instance(value, support_.complexfloating) &&
         !is_instance(value, support_.flexible);
}

// A TensorDescriptor: its base pointer, then one int per shape and stride
// entry (specialized like int arguments); its element type, alignment,
// block shape and padding specialize the kernel.
void ArgumentClassifier::descriptor(const std::string& kernel, const std::string& param, size_t index,
                                    nb::handle value, LaunchArguments& out) {
  nb::object base = attribute(value, base_name_);
  std::optional<Pointer> array = array_of(kernel, param, base);
  if (!array)
    raise_coded(PyExc_TypeError, Diag::InvalidTensorDescriptor,
                "the base of TensorDescriptor argument '" + param + "' of kernel '" + kernel +
                    "' must be an array or tensor, got " + type_name_of(base));
  std::vector<nb::object> extents;
  for (const nb::str* name : {&shape_name_, &strides_name_})
    for (nb::handle v : nb::iter(attribute(value, *name))) {
      PyObject* plain = PyNumber_Long(v.ptr());
      if (!plain) throw nb::python_error();
      extents.push_back(nb::steal(plain));
    }
  std::vector<std::pair<IntClass, HostValue>> ints;
  for (const nb::object& v : extents) {
    HostValue host;
    IntClass c = classify_int(kernel, param, v, /*specialize=*/true, host);
    ints.emplace_back(c, host);
  }
  nb::object padding = attribute_or_null(value, padding_name_);
  std::string padding_text = padding.is_valid() ? std::string(PyUnicode_Check(padding.ptr()) ? utf8(padding.ptr()) : "")
                                                : std::string("zero");
  if (padding.is_valid() && !PyUnicode_Check(padding.ptr()))
    raise_coded(PyExc_TypeError, Diag::InvalidTensorDescriptor,
                "the padding of TensorDescriptor argument '" + param + "' of kernel '" + kernel +
                    "' must be a str, got " + type_name_of(padding));
  std::vector<int64_t> block_shape;
  for (nb::handle b : nb::iter(attribute(value, block_shape_name_))) {
    nb::object plain = nb::steal(PyNumber_Long(b.ptr()));
    if (!plain.is_valid()) throw nb::python_error();
    block_shape.push_back(nb::cast<int64_t>(plain));
  }

  // The descriptor holds its base, so the borrowed source stays valid for the launch.
  out.key.descriptor(array->element, array->address % 16 == 0, block_shape, padding_text);
  out.values.push_back({HostValue::Kind::Address, array->address, 0.0});
  out.sources.push_back(base.ptr());
  if (array->write_block != WriteBlock::None)
    out.unwritable.push_back({out.values.size() - 1, array->write_block, /*descriptor_base=*/true});
  for (const auto& [c, host] : ints) {
    out.key.integer(c);
    out.values.push_back(host);
    out.sources.push_back(nullptr);
  }
  out.places.push_back({index, array->place});
}

// --- constexprs --------------------------------------------------------------------------------

void ArgumentClassifier::constexpr_value(const std::string& kernel, const std::string& param, nb::handle value,
                                         LaunchKey& key) {
  size_t parts = 0;
  constexpr_part(kernel, param, value, key, 0, parts);
}

void ArgumentClassifier::constexpr_part(const std::string& kernel, const std::string& param, nb::handle value,
                                        LaunchKey& key, int depth, size_t& parts) {
  PyObject* object = value.ptr();
  PyTypeObject* type = Py_TYPE(object);
  // int, float and str include their subclasses (an IntEnum member, as vLLM passes a mode): their plain
  // values, as Triton compares them in a kernel (MODE == 0). bool, an int subclass itself, first.
  if (type == &PyBool_Type) return key.constant_bool(object == Py_True);
  if (PyLong_Check(object)) {
    int64_t v = 0;
    if (!as_int64(object, v))
      raise_coded(PyExc_ValueError, Diag::LaunchArgumentRange,
                  "constexpr argument '" + param + "' of kernel '" + kernel + "' is " + str_of(value) +
                      ", which does not fit in 64 bits");
    return key.constant_int(v);
  }
  if (object == Py_None) return key.constant_none();
  if (PyUnicode_Check(object)) {
    try {
      return key.constant_str(utf8(object));
    } catch (nb::python_error&) {  // taken and cleared: the coded error below replaces it
      // A lone surrogate (os.fsdecode of a path's non-UTF-8 bytes, say): no text the kernel could print.
      raise_coded(PyExc_ValueError, Diag::LaunchArgumentType,
                  "constexpr argument '" + param + "' of kernel '" + kernel + "' is a str that is not valid "
                      "Unicode text (it holds a lone surrogate code point, as os.fsdecode makes of bytes that "
                      "are not UTF-8); pass s.encode('utf-8', 'backslashreplace').decode()");
    }
  }
  if (PyFloat_Check(object)) return key.constant_float(PyFloat_AsDouble(object));
  if (PyTuple_Check(object)) {  // a shape, say: each element is a constexpr of its own
    // Unbounded, a tuple nested 100,000 deep overflowed the stack here, and one of 10 million values
    // took a minute to compile into a kernel that never used it.
    constexpr int kMaxDepth = 32;
    if (depth >= kMaxDepth)
      raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                  "constexpr argument '" + param + "' of kernel '" + kernel + "' nests tuples more than " +
                      std::to_string(kMaxDepth) + " deep; pass fewer levels");
    parts += static_cast<size_t>(PyTuple_GET_SIZE(object)) + 1;
    if (parts > frontend::kMaxValueParts)
      raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
                  "constexpr argument '" + param + "' of kernel '" + kernel + "' holds more than " +
                      std::to_string(frontend::kMaxValueParts) +
                      " values (counting those of the tuples inside it); pass an array instead of a tuple this "
                      "long");
    key.constant_tuple(static_cast<uint32_t>(PyTuple_GET_SIZE(object)));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(object); ++i)
      constexpr_part(kernel, param, nb::handle(PyTuple_GET_ITEM(object, i)), key, depth + 1, parts);
    return;
  }
  if (is_instance(value, support_.constexpr_type))
    return constexpr_part(kernel, param, attribute(value, value_name_), key, depth, parts);
  if (is_instance(value, support_.dtype_type) && !is_instance(value, support_.pointer_type))
    return key.constant_dtype(utf8(attribute(value, canonical_name_).ptr()));
  if (is_number_scalar(value)) return constexpr_part(kernel, param, call_method(value, item_name_), key, depth, parts);
  if (PyCallable_Check(object)) {  // a function the kernel calls: tl.extra.cuda.smid, a @jit helper
    nb::object described = support_.constexpr_function(value);
    if (PyUnicode_Check(described.ptr())) {
      std::string text(utf8(described.ptr()));
      if (text.starts_with("member:")) return key.constant_language_member(std::string_view(text).substr(7));
      if (text.starts_with("jit:")) return key.constant_jit_function(std::string_view(text).substr(4));
    }
  }
  // Any other hashable, immutable-looking object (a uuid.UUID that forces a fresh compile, a config object)
  // is a constant the kernel may hold but not use, as Triton takes it: its repr keys the compile. Callables,
  // unhashable values and arrays stay errors here, where the fix is plain.
  if (!PyCallable_Check(object) && !has_attribute(value, data_ptr_name_) && !has_attribute(value, dlpack_name_) &&
      !is_instance(value, support_.ndarray)) {
    if (PyObject_Hash(object) != -1) {
      std::string text = str_of(nb::steal(PyObject_Repr(object)));
      if (text.size() > 200) text = text.substr(0, 200) + "...";
      return key.constant_opaque(text);
    }
    PyErr_Clear();
  }
  raise_coded(PyExc_TypeError, Diag::LaunchArgumentType,
              "constexpr argument '" + param + "' of kernel '" + kernel +
                  "' must be an int, float, bool, str, None, tl.dtype, a function of the tile language, a @jit "
                  "function, a tuple of them or another hashable value the kernel does not use, got " +
                  type_name_of(value));
}

// --- debug extents, devices and streams --------------------------------------------------------

std::optional<std::pair<uint64_t, uint64_t>> ArgumentClassifier::extent(nb::handle value) {
  PyObject* object = value.ptr();
  if (is_instance(value, support_.ndarray)) {
    nb::object capsule;
    const ArrayInterface* info = array_interface(value, capsule);
    std::vector<int64_t> shape(info->shape, info->shape + info->nd);
    std::vector<int64_t> strides(info->nd);
    for (int d = 0; d < info->nd; ++d) strides[d] = info->strides ? info->strides[d] : 0;
    if (!info->strides) {  // C-contiguous
      int64_t step = info->itemsize;
      for (int d = info->nd; d-- > 0;) strides[d] = step, step *= shape[d];
    }
    return span(reinterpret_cast<uintptr_t>(info->data), shape, strides, info->itemsize);
  }
  if (has_attribute(value, data_ptr_name_) && has_attribute(value, stride_name_) &&
      has_attribute(value, element_size_name_)) {
    int64_t size = nb::cast<int64_t>(call_method(value, element_size_name_));
    std::vector<int64_t> strides = int_list(call_method(value, stride_name_));
    for (int64_t& s : strides) s *= size;
    return span(nb::cast<uint64_t>(call_method(value, data_ptr_name_)), int_list(attribute(value, shape_name_)),
                strides, size);
  }
  nb::object interface = attribute_or_null(value, cuda_interface_name_);
  if (interface.is_valid() && !interface.is_none()) {
    int64_t itemsize = nb::cast<int64_t>(support_.numpy_dtype(interface["typestr"]).attr("itemsize"));
    std::vector<int64_t> shape = int_list(interface["shape"]);
    nb::object given = nb::steal(PyObject_CallMethod(interface.ptr(), "get", "s", "strides"));
    if (!given.is_valid()) throw nb::python_error();
    std::vector<int64_t> strides(shape.size());
    if (given.is_none()) {  // C-contiguous
      int64_t step = itemsize;
      for (size_t d = shape.size(); d-- > 0;) strides[d] = step, step *= shape[d];
    } else {
      strides = int_list(given);
    }
    return span(nb::cast<uint64_t>(nb::int_(interface["data"][0])), shape, strides, itemsize);
  }
  if (has_attribute(value, dlpack_name_) && !PyLong_Check(object) && !PyFloat_Check(object)) {
    try {
      return extent(support_.from_dlpack(value));
    } catch (nb::python_error& e) {
      for (PyObject* type : {PyExc_BufferError, PyExc_TypeError, PyExc_ValueError, PyExc_RuntimeError})
        if (e.matches(type)) return std::nullopt;
      throw;
    }
  }
  return std::nullopt;
}

int ArgumentClassifier::current_device() { return nb::cast<int>(support_.current_device()); }

// torch's raw stream getter once torch is imported, else the Python side's
// lookup (CuPy, or 0).
uint64_t ArgumentClassifier::current_stream(int device) {
  if (torch_exchange_) {
    void* stream = nullptr;
    if (torch_exchange_->current_work_stream(dlpack::kCUDA, device, &stream) != 0) throw nb::python_error();
    return reinterpret_cast<uintptr_t>(stream);
  }
  if (!torch_stream_.is_valid()) {
    PyObject* torch = PyImport_GetModule(torch_name_.ptr());
    if (torch) {
      torch_stream_ = support_.torch_stream(nb::steal(torch));
    } else if (PyErr_Occurred()) {
      throw nb::python_error();
    }
  }
  nb::object handle = torch_stream_.is_valid() ? torch_stream_(device) : support_.current_stream(device);
  return nb::cast<uint64_t>(handle);
}

std::vector<PyObject*> ArgumentClassifier::references() const {
  std::vector<PyObject*> out = support_.references();
  for (const auto& [dtype, scalar] : numpy_dtypes_) out.push_back(dtype.ptr());
  for (const auto& [dtype, scalar] : torch_dtypes_) out.push_back(dtype.ptr());
  for (const nb::object& type : torch_types_) out.push_back(type.ptr());
  out.push_back(torch_stream_.ptr());
  return out;
}

void ArgumentClassifier::clear() {
  numpy_dtypes_.clear();
  torch_dtypes_.clear();
  torch_types_.clear();
  torch_accessors_.clear();
  torch_exchange_ = nullptr;
  exchange_type_ = nullptr;
  exchange_version_ = 0;
  torch_stream_ = nb::object();
  support_ = LaunchSupport{};
}

}  // namespace tegula::python
