#include "bindings/launch_arguments.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "backends/cuda/driver_api.h"

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
};

// Bounds the dtype cache: arrays made with unusual dtypes may each bring a
// new dtype object, and a longer list would cost more to search than it saves.
constexpr size_t kMaxCachedDtypes = 32;

nb::object attribute(nb::handle value, nb::handle name) {
  PyObject* got = PyObject_GetAttr(value.ptr(), name.ptr());
  if (!got) throw nb::python_error();
  return nb::steal(got);
}

nb::object call_method(nb::handle value, nb::handle name) {
  PyObject* got = PyObject_CallMethodNoArgs(value.ptr(), name.ptr());
  if (!got) throw nb::python_error();
  return nb::steal(got);
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

void keep(std::vector<nb::object>& objects, PyObject* object) {
  for (const nb::object& known : objects)
    if (known.ptr() == object) return;
  objects.push_back(nb::borrow(object));
}

}  // namespace

// --- LaunchKey -------------------------------------------------------------------------------

void LaunchKey::spill(const void* data, size_t size) {
  if (spilled_.empty()) spilled_.assign(local_.data(), size_);
  spilled_.append(static_cast<const char*>(data), size);
}

void LaunchKey::tuple(size_t count) {
  append('(');
  auto n = static_cast<uint32_t>(count);
  append(&n, sizeof n);
}

void LaunchKey::text(std::string_view value) {
  append('s');
  auto n = static_cast<uint32_t>(value.size());
  append(&n, sizeof n);
  append(value.data(), value.size());
}

void LaunchKey::integer(int64_t value) {
  append('i');
  append(&value, sizeof value);
}

void LaunchKey::boolean(bool value) { append(value ? 'T' : 'F'); }

void LaunchKey::none() { append('N'); }

void LaunchKey::real_bits(double value) {
  append('d');
  auto bits = std::bit_cast<uint64_t>(value);
  append(&bits, sizeof bits);
}

void LaunchKey::identity(PyObject* object) {
  append('o');
  auto address = reinterpret_cast<uintptr_t>(object);
  append(&address, sizeof address);
}

bool LaunchKey::part(nb::handle value, std::vector<nb::object>& kept_alive) {
  PyObject* object = value.ptr();
  if (PyTuple_CheckExact(object)) {
    Py_ssize_t count = PyTuple_GET_SIZE(object);
    tuple(static_cast<size_t>(count));
    for (Py_ssize_t i = 0; i < count; ++i)
      if (!part(PyTuple_GET_ITEM(object, i), kept_alive)) return false;
    return true;
  }
  if (PyUnicode_CheckExact(object)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(object, &size);
    if (!data) {  // a lone surrogate: no UTF-8 form
      PyErr_Clear();
      return false;
    }
    text({data, static_cast<size_t>(size)});
    return true;
  }
  if (PyBool_Check(object)) {
    boolean(object == Py_True);
    return true;
  }
  if (PyLong_CheckExact(object)) {
    int64_t v = 0;
    if (!as_int64(object, v)) return false;
    integer(v);
    return true;
  }
  if (object == Py_None) {
    none();
    return true;
  }
  if (PyFloat_CheckExact(object)) {
    real_bits(PyFloat_AS_DOUBLE(object));
    return true;
  }
  if (PyType_Check(object)) {
    keep(kept_alive, object);  // its address must not be reused while a key holds it
    identity(object);
    return true;
  }
  return false;
}

// --- LaunchSupport ---------------------------------------------------------------------------

std::vector<PyObject*> LaunchSupport::references() const {
  return {ndarray_type.ptr(), numpy_scalars.ptr(),  tensor_types.ptr(), torch_tensor_part.ptr(),
          torch_scalars.ptr(), runtime_part.ptr(),   constexpr_part.ptr(), data_address.ptr(),
          current_stream.ptr(), torch_stream.ptr()};
}

// --- ArgumentClassifier ----------------------------------------------------------------------

nb::str interned(const char* text) {
  PyObject* name = PyUnicode_InternFromString(text);
  if (!name) throw nb::python_error();
  return nb::steal<nb::str>(name);
}

ArgumentClassifier::ArgumentClassifier(LaunchSupport support)
    : support_(std::move(support)),
      dtype_name_(interned("dtype")),
      is_cuda_name_(interned("is_cuda")),
      is_cpu_name_(interned("is_cpu")),
      data_ptr_name_(interned("data_ptr")),
      get_device_name_(interned("get_device")) {}

bool ArgumentClassifier::runtime(nb::handle kernel, nb::handle param, nb::handle value, bool specialize,
                                 LaunchKey& key, HostValue& out) {
  PyObject* object = value.ptr();
  PyTypeObject* type = Py_TYPE(object);
  if (reinterpret_cast<PyObject*>(type) == support_.ndarray_type.ptr()) {
    if (numpy_array(value, key, out)) return true;
  } else if (type == &PyLong_Type) {
    int64_t v = 0;
    if (as_int64(object, v)) {
      // ("i", width, is_one, div16), as _specialize.int_part makes it.
      bool fits_i32 = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
      key.tuple(4);
      key.text("i");
      key.text(fits_i32 ? "i32" : "i64");
      key.boolean(specialize && v == 1);
      key.boolean(specialize && v % 16 == 0);
      out = {HostValue::Kind::Int, static_cast<uint64_t>(v), 0.0};
      return true;
    }
  } else if (type == &PyFloat_Type) {
    key.tuple(1);
    key.text("f");
    out = {HostValue::Kind::Float, 0, PyFloat_AS_DOUBLE(object)};
    return true;
  } else if (type == &PyBool_Type) {
    key.tuple(1);
    key.text("b");
    out = {HostValue::Kind::Bool, object == Py_True ? 1u : 0u, 0.0};
    return true;
  } else if (is_torch_type(type)) {
    if (torch_tensor(value, key, out)) return true;
  }
  return from_python(kernel, param, value, specialize, key, out);
}

bool ArgumentClassifier::constexpr_value(nb::handle kernel, nb::handle param, nb::handle value, LaunchKey& key) {
  // ("c", type, value), as _specialize.constexpr_part makes it; a float by
  // its bits rather than float.hex() (finer, which the key may be).
  PyObject* object = value.ptr();
  PyTypeObject* type = Py_TYPE(object);
  auto head = [&] {
    key.tuple(3);
    key.text("c");
    key.identity(reinterpret_cast<PyObject*>(type));
  };
  if (type == &PyLong_Type) {
    int64_t v = 0;
    if (as_int64(object, v)) {
      head();
      key.integer(v);
      return true;
    }
  } else if (type == &PyBool_Type) {
    head();
    key.boolean(object == Py_True);
    return true;
  } else if (object == Py_None) {
    head();
    key.none();
    return true;
  } else if (type == &PyUnicode_Type) {
    Py_ssize_t size = 0;
    if (const char* data = PyUnicode_AsUTF8AndSize(object, &size)) {
      head();
      key.text({data, static_cast<size_t>(size)});
      return true;
    }
    PyErr_Clear();
  } else if (type == &PyFloat_Type) {
    head();
    key.real_bits(PyFloat_AS_DOUBLE(object));
    return true;
  }
  // tl.constexpr wrappers, tl.dtypes, NumPy scalars, and the errors.
  nb::object part = support_.constexpr_part(kernel, param, value);
  return key.part(part, kept_alive_);
}

bool ArgumentClassifier::numpy_array(nb::handle value, LaunchKey& key, HostValue& out) {
  auto* head = reinterpret_cast<NumpyArrayHead*>(value.ptr());
  nb::object dtype_holder;
  PyObject* dtype = nullptr;
  uint64_t address = 0;
  if (numpy_layout_ == NumpyLayout::Direct) {
    dtype = head->descr;
    address = reinterpret_cast<uintptr_t>(head->data);
  } else {
    dtype_holder = attribute(value, dtype_name_);
    dtype = dtype_holder.ptr();
    address = nb::cast<uint64_t>(support_.data_address(value));
    if (numpy_layout_ == NumpyLayout::Unknown)
      numpy_layout_ = head->descr == dtype && reinterpret_cast<uintptr_t>(head->data) == address
                          ? NumpyLayout::Direct
                          : NumpyLayout::Attributes;
  }
  PyObject* scalar = numpy_scalar(dtype);
  if (!scalar) return false;  // the Python side reports (or handles) other dtypes
  key.tuple(3);
  key.text("p");
  key.text(utf8(scalar));
  key.boolean(address % 16 == 0);
  out = {HostValue::Kind::Address, address, 0.0};
  return true;
}

PyObject* ArgumentClassifier::numpy_scalar(PyObject* dtype) {
  for (const auto& [known, scalar] : numpy_dtypes_)
    if (known.ptr() == dtype) return scalar.ptr();
  PyObject* scalar = PyDict_GetItemWithError(support_.numpy_scalars.ptr(), dtype);  // borrowed
  if (!scalar) {
    if (PyErr_Occurred()) throw nb::python_error();
    return nullptr;
  }
  if (numpy_dtypes_.size() < kMaxCachedDtypes) numpy_dtypes_.emplace_back(nb::borrow(dtype), nb::borrow(scalar));
  return scalar;
}

bool ArgumentClassifier::is_torch_type(PyTypeObject* type) const {
  for (const nb::object& known : torch_types_)
    if (known.ptr() == reinterpret_cast<PyObject*>(type)) return true;
  return false;
}

const ArgumentClassifier::TorchAccessors* ArgumentClassifier::torch_accessors(PyTypeObject* type) {
  for (TorchAccessors& known : torch_accessors_)
    if (known.type == type) {
      if (known.version != 0 && known.version == type->tp_version_tag) return known.usable ? &known : nullptr;
      known = TorchAccessors{};  // the class changed: look again
      known.type = type;
    }
  auto found = std::find_if(torch_accessors_.begin(), torch_accessors_.end(),
                            [&](const TorchAccessors& a) { return a.type == type; });
  if (found == torch_accessors_.end()) {
    if (torch_accessors_.size() >= kMaxCachedDtypes) return nullptr;
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
  a.usable = data_descriptor(a.dtype) && data_descriptor(a.is_cuda) && data_descriptor(a.is_cpu) &&
             c_method(a.data_ptr) && c_method(a.get_device);
  a.version = type->tp_version_tag;
  return a.usable && a.version != 0 ? &a : nullptr;
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

}  // namespace

bool ArgumentClassifier::single_cuda_device() {
  if (cuda_devices_ < 0) {
    // torch and the driver count the same devices (both honour
    // CUDA_VISIBLE_DEVICES); a driver we cannot ask means "ask torch".
    try {
      cuda_devices_ = backends::cuda::device_count();
    } catch (const std::exception&) {
      cuda_devices_ = 0;
    }
  }
  return cuda_devices_ == 1;
}

// The fast part of _specialize._torch_tensor_part: dtype object, is_cuda /
// is_cpu, data_ptr() and get_device(); anything unusual goes to Python.
bool ArgumentClassifier::torch_tensor(nb::handle value, LaunchKey& key, HostValue& out) {
  const TorchAccessors* fast = torch_accessors(Py_TYPE(value.ptr()));
  auto get = [&](const nb::object TorchAccessors::*field, const nb::str& name) {
    return fast ? get_through(fast->*field, value) : attribute(value, name);
  };
  auto call = [&](const nb::object TorchAccessors::*field, const nb::str& name) {
    return fast ? call_through(fast->*field, value) : call_method(value, name);
  };
  nb::object dtype = get(&TorchAccessors::dtype, dtype_name_);
  PyObject* scalar = PyDict_GetItemWithError(support_.torch_scalars.ptr(), dtype.ptr());
  if (!scalar) {
    if (PyErr_Occurred()) throw nb::python_error();
    return false;
  }
  nb::object is_cuda = get(&TorchAccessors::is_cuda, is_cuda_name_);
  bool on_device = is_cuda.ptr() == Py_True;
  if (!on_device && get(&TorchAccessors::is_cpu, is_cpu_name_).ptr() != Py_True) return false;
  uint64_t address = nb::cast<uint64_t>(call(&TorchAccessors::data_ptr, data_ptr_name_));
  // With one CUDA device in the process, every CUDA tensor is on device 0:
  // a torch call per tensor saved.
  int64_t device = 0;
  if (on_device && !single_cuda_device())
    device = nb::cast<int64_t>(call(&TorchAccessors::get_device, get_device_name_));
  key.tuple(on_device ? 4 : 3);
  key.text("p");
  key.text(utf8(scalar));
  key.boolean(address % 16 == 0);
  if (on_device) key.integer(device);
  out = {HostValue::Kind::Address, address, 0.0};
  return true;
}

bool ArgumentClassifier::from_python(nb::handle kernel, nb::handle param, nb::handle value, bool specialize,
                                     LaunchKey& key, HostValue& out) {
  nb::object result = support_.runtime_part(kernel, param, value, specialize);
  if (!PyTuple_CheckExact(result.ptr()) || PyTuple_GET_SIZE(result.ptr()) != 2) return false;
  PyObject* part = PyTuple_GET_ITEM(result.ptr(), 0);
  PyObject* launch_value = PyTuple_GET_ITEM(result.ptr(), 1);
  // The Python side learns torch tensor types on their first launch; so do we.
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
  if (!is_torch_type(Py_TYPE(value.ptr())) &&
      PyDict_GetItemWithError(support_.tensor_types.ptr(), type) == support_.torch_tensor_part.ptr())
    torch_types_.push_back(nb::borrow(type));
  PyErr_Clear();  // a type key cannot fail to hash; be sure anyway

  if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(part, 0)))
    return false;
  std::string_view tag = utf8(PyTuple_GET_ITEM(part, 0));
  if (tag == "p" && PyLong_Check(launch_value)) {
    unsigned long long address = PyLong_AsUnsignedLongLong(launch_value);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out = {HostValue::Kind::Address, address, 0.0};
  } else if (tag == "i" && PyLong_Check(launch_value)) {
    int64_t v = 0;
    if (as_int64(launch_value, v)) {
      out = {HostValue::Kind::Int, static_cast<uint64_t>(v), 0.0};
    } else {
      unsigned long long u = PyLong_AsUnsignedLongLong(launch_value);
      if (PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      out = {HostValue::Kind::UInt, u, 0.0};
    }
  } else if (tag == "f" && PyFloat_Check(launch_value)) {
    out = {HostValue::Kind::Float, 0, PyFloat_AS_DOUBLE(launch_value)};
  } else if (tag == "b" && PyBool_Check(launch_value)) {
    out = {HostValue::Kind::Bool, launch_value == Py_True ? 1u : 0u, 0.0};
  } else {
    return false;
  }
  return key.part(part, kept_alive_);
}

std::vector<PyObject*> ArgumentClassifier::references() const {
  std::vector<PyObject*> out = support_.references();
  for (const auto& [dtype, scalar] : numpy_dtypes_) {
    out.push_back(dtype.ptr());
    out.push_back(scalar.ptr());
  }
  for (const nb::object& type : torch_types_) out.push_back(type.ptr());
  for (const nb::object& object : kept_alive_) out.push_back(object.ptr());
  return out;
}

void ArgumentClassifier::clear() {
  numpy_dtypes_.clear();
  torch_types_.clear();
  torch_accessors_.clear();
  kept_alive_.clear();
  support_ = LaunchSupport{};
}

}  // namespace tegula::python
