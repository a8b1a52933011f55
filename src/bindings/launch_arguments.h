// What one launch argument contributes to a launch: its part of the
// specialization key and the value the launcher passes to the kernel.
//
// The Python package describes every argument with a *key part*, a small
// tuple (python/tegula/_specialize.py): ("p", "f32", True) for a 16-byte
// aligned float32 array, ("i", "i32", False, True) for an int divisible by
// 16, ("c", int, 128) for a constexpr... The launch fast path (bind_launch.cpp)
// writes the same tuples as bytes (LaunchKey) without building them, for the
// argument kinds launches are made of: NumPy arrays, torch tensors, ints,
// floats, bools, None and strs. Everything else goes through the Python
// functions that define the parts, and their tuple is encoded the same way.
//
// The one rule the encoding keeps: equal bytes mean equal key tuples (it may
// be finer, e.g. a float constexpr by its bits), so the bytes can index a
// cache whose entries were built from the tuples.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tegula::python {

// A launch value as the kernel receives it, before the parameter type is known.
struct HostValue {
  enum class Kind { Address, Int, UInt, Float, Bool } kind = Kind::Int;
  uint64_t bits = 0;  // address, integer bits, 0/1
  double real = 0.0;  // floats
};

// The byte form of key parts: every item says what it is and how long it
// is, so a concatenation of parts decodes one way only. Short keys (all but
// kernels with dozens of parameters) stay in the object, off the heap.
class LaunchKey {
 public:
  void tuple(size_t count);
  void text(std::string_view value);
  void integer(int64_t value);
  void boolean(bool value);
  void none();
  void real_bits(double value);    // a float by its bit pattern
  void identity(PyObject* object);  // a type object, by address (the caller keeps it alive)

  // Encodes a key part built by Python. False (and the key is unusable) for
  // an object the encoding has no exact form for.
  bool part(nanobind::handle value, std::vector<nanobind::object>& kept_alive);

  std::string_view bytes() const {
    return spilled_.empty() ? std::string_view(local_.data(), size_) : std::string_view(spilled_);
  }

 private:
  void append(const void* data, size_t size) {
    if (spilled_.empty() && size_ + size <= local_.size()) {
      std::memcpy(local_.data() + size_, data, size);
      size_ += size;
      return;
    }
    spill(data, size);
  }
  void append(char tag) { append(&tag, 1); }
  void spill(const void* data, size_t size);

  std::array<char, 256> local_;
  size_t size_ = 0;
  std::string spilled_;  // the whole key, once it outgrew local_
};

// The Python side's definitions and tables, read once from the package.
struct LaunchSupport {
  nanobind::object ndarray_type;    // numpy.ndarray
  nanobind::dict numpy_scalars;     // numpy dtype -> IR scalar name ("f32")
  nanobind::dict tensor_types;      // type -> part function, for types the Python side has learned
  nanobind::object torch_tensor_part;  // the part function of torch tensors in tensor_types
  nanobind::dict torch_scalars;     // torch dtype -> IR scalar name
  nanobind::object runtime_part;    // (kernel, param, value, specialize) -> (part, launch value)
  nanobind::object constexpr_part;  // (kernel, param, value) -> part
  nanobind::object data_address;    // address of an object with __array_struct__
  nanobind::object current_stream;  // CUDA device -> the caller's current stream handle
  nanobind::object torch_stream;    // torch module -> a faster current_stream for torch users

  // Everything above, plus the objects the classifier caches, for the cycle GC.
  std::vector<PyObject*> references() const;
};

// An interned str (attribute lookups with it compare by address).
nanobind::str interned(const char* text);

// Turns arguments into key parts and host values. Learns the types and
// dtypes it meets, so the second launch with the same kinds of arguments
// takes the fast paths. Call with the GIL held.
class ArgumentClassifier {
 public:
  explicit ArgumentClassifier(LaunchSupport support);

  // A runtime (non-constexpr) argument. Raises the Python side's error for a
  // value it does not accept; returns false when the part has no exact
  // encoding (the launch then takes the Python path).
  bool runtime(nanobind::handle kernel, nanobind::handle param, nanobind::handle value, bool specialize,
               LaunchKey& key, HostValue& out);
  // A constexpr argument (its value is part of the key).
  bool constexpr_value(nanobind::handle kernel, nanobind::handle param, nanobind::handle value, LaunchKey& key);

  const LaunchSupport& support() const { return support_; }
  std::vector<PyObject*> references() const;
  void clear();

 private:
  // Whether NumPy's array fields may be read directly (checked on the first array).
  enum class NumpyLayout { Unknown, Direct, Attributes };

  bool numpy_array(nanobind::handle value, LaunchKey& key, HostValue& out);
  bool torch_tensor(nanobind::handle value, LaunchKey& key, HostValue& out);
  bool from_python(nanobind::handle kernel, nanobind::handle param, nanobind::handle value, bool specialize,
                   LaunchKey& key, HostValue& out);
  PyObject* numpy_scalar(PyObject* dtype);
  bool is_torch_type(PyTypeObject* type) const;
  bool single_cuda_device();  // whether the driver sees exactly one device (asked once)

  // The attribute getters of one torch tensor type, looked up in its MRO
  // once (again after the type changes). Calling the descriptors directly
  // skips the attribute lookups that were most of a tensor argument's cost.
  // Only C getters qualify: data descriptors for the attributes (an instance
  // dict cannot shadow them) and C method descriptors for the methods.
  struct TorchAccessors {
    PyTypeObject* type = nullptr;
    unsigned int version = 0;  // the type's tp_version_tag at lookup; 0: stale
    bool usable = false;
    nanobind::object dtype, is_cuda, is_cpu, data_ptr, get_device;
  };
  const TorchAccessors* torch_accessors(PyTypeObject* type);

  LaunchSupport support_;
  NumpyLayout numpy_layout_ = NumpyLayout::Unknown;
  int cuda_devices_ = -1;  // the driver's device count; -1: not asked yet
  // Attribute names, made once (a str per lookup would cost as much as the lookup).
  nanobind::str dtype_name_, is_cuda_name_, is_cpu_name_, data_ptr_name_, get_device_name_;
  // dtype object -> scalar name: NumPy dtypes hash slowly, identity is enough.
  std::vector<std::pair<nanobind::object, nanobind::object>> numpy_dtypes_;
  std::vector<nanobind::object> torch_types_;
  std::vector<TorchAccessors> torch_accessors_;
  std::vector<nanobind::object> kept_alive_;  // type objects whose address is in some key
};

}  // namespace tegula::python
