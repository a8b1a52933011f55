// What one launch argument contributes to a launch: its item of the
// specialization key (launch_key.h), the values the kernel receives, and
// for arrays where their memory lives (launch_placement.h). This file is
// the one definition of how Python values become kernel arguments:
//
//   NumPy arrays, torch tensors (and look-alikes with data_ptr(), dtype and
//   device), __cuda_array_interface__ objects, DLPack producers
//        a pointer: its element type and whether the address is 16-byte
//        aligned specialize the kernel (Triton's rule)
//   tegula.reinterpret(array, dtype)   the array's pointer as `dtype`
//   TensorDescriptor (Tegula's or Triton's)   its base pointer, then its
//        shape and strides as ints; element type, alignment, block shape and
//        padding specialize the kernel
//   int  i32 if it fits, else i64, else u64; specialized on being 1 and on
//        divisibility by 16 (Triton's rules) unless do_not_specialize
//   float, bool   f32, i1; NumPy scalars as the Python scalar they hold
//   None          the constant None, as if the parameter were a constexpr
//   tuple         (a named tuple too) each element an argument of its own,
//        by these rules; tl.constexpr, str, tl.dtype and function elements
//        are constexprs inside it
//   constexprs    int, float, bool, str, None, tl.dtype (or tl.constexpr of
//        one, or a NumPy scalar), or a tuple of them: the value itself
//   a parameter of declared scalar type (`s: tl.int64`; DeclaredType)
//        its bool, int or float converted to that type, None as above
//
// Anything else raises the error the Python package has always raised for
// it (launch_errors.h). The common kinds (exact NumPy arrays, torch tensor
// types seen before, ints, floats, bools) are read without any Python call
// beyond the tensor getters; the classifier learns the types and dtypes it
// meets, so a second launch with the same kinds of arguments takes them.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "bindings/dlpack_exchange.h"
#include "bindings/launch_key.h"
#include "bindings/launch_placement.h"
#include "bindings/launch_writes.h"
#include "support/small_vector.h"

namespace tegula::python {

// A launch value as the kernel receives it, before the parameter type is known.
struct HostValue {
  enum class Kind { Address, Int, UInt, Float, Bool } kind = Kind::Int;
  uint64_t bits = 0;  // address, integer bits, 0/1
  double real = 0.0;  // floats
};

constexpr size_t kInlineArguments = 16;

// A host TMA descriptor among the arguments (ArgumentClassifier::host_descriptor): its bytes are read
// once the grid function has run, since autotuned kernels of Triton 3.2/3.3 fill them there.
struct HostDescriptorArgument {
  size_t place = 0;    // its entry of LaunchArguments::places
  uint64_t bytes = 0;  // the host address of its bytes
};

// What the arguments of one launch amount to: the key, one value per kernel
// parameter (a TensorDescriptor gives several), the object behind each value
// (for debug mode's extents) and the places of the arrays.
struct LaunchArguments {
  LaunchKey key;
  SmallVector<HostValue, kInlineArguments> values;
  SmallVector<PyObject*, kInlineArguments> sources;  // borrowed: the argument behind each value
  SmallVector<ArgumentPlace, kInlineArguments> places;
  // Arrays the kernel must not write (launch_writes.h); usually none.
  SmallVector<UnwritableArgument, 4> unwritable;
  SmallVector<HostDescriptorArgument, 2> host_descriptors;  // usually none
};

// The Python side's tables and the few Python functions a launch may need,
// read once from tegula._launch_support.
struct LaunchSupport {
  nanobind::object ndarray, generic, complexfloating, flexible;  // NumPy's types
  nanobind::dict numpy_scalars;   // numpy dtype -> IR scalar name ("f32")
  nanobind::dict torch_scalars;   // str(torch dtype) -> IR scalar name
  nanobind::object numpy_dtype;   // numpy.dtype
  nanobind::object from_dlpack;   // numpy.from_dlpack
  nanobind::object reinterpreted; // tegula.ReinterpretedArray
  nanobind::object descriptor;    // tegula.TensorDescriptor
  nanobind::object constexpr_type, dtype_type, pointer_type;  // tl.constexpr, tl.dtype, tl.pointer_type
  nanobind::object current_device;  // () -> the caller's current CUDA device (torch's, CuPy's, else 0)
  nanobind::object current_stream;  // device -> the caller's current stream handle there
  nanobind::object torch_stream;    // torch module -> a faster current_stream for torch users
  nanobind::object environment;     // the dict under os.environ (None where it has none)
  nanobind::object backend_key;     // TEGULA_BACKEND as a key of `environment`
  nanobind::object constexpr_function;  // callable -> "member:PATH", "jit:REF" or None (a constexpr function)
  nanobind::object aggregate_fields;    // an @aggregate instance -> ("agg:REF", its fields' values)

  std::vector<PyObject*> references() const;
};

// The C form of NumPy's array interface (the `__array_struct__` capsule), as
// the protocol documents it. Reading an array's address from it costs about a
// tenth of building the `__array_interface__` dict.
struct ArrayInterface {
  int two;  // always 2: a sanity check
  int nd;
  char typekind;
  int itemsize;
  int flags;
  Py_intptr_t* shape;
  Py_intptr_t* strides;
  void* data;  // the first element
  PyObject* descr;
};

// The array interface of `array` (which `capsule` keeps alive); TypeError
// for an object without one.
const ArrayInterface* array_interface(nanobind::handle array, nanobind::object& capsule);

// An interned str (attribute lookups with it compare by address).
nanobind::str interned(const char* text);

// A runtime parameter's declared scalar type: its annotation (`s: tl.int64`,
// read by jit.py's _Signature as Triton reads it), or the type the kernel a
// `compiled[grid]` launch runs was compiled with. Its arguments are converted
// to that type, as Triton's launcher converts them, instead of being typed by
// their value.
struct DeclaredType {
  ir::Scalar scalar = ir::Scalar::I32;
  bool compiled = false;  // from a compiled kernel's signature, not an annotation: messages say which
};

// Turns arguments into key items, launch values and places. Call with the
// GIL held.
class ArgumentClassifier {
 public:
  explicit ArgumentClassifier(LaunchSupport support);

  // A runtime (non-constexpr) argument of parameter `param` (index `index`).
  void runtime(const std::string& kernel, const std::string& param, size_t index, nanobind::handle value,
               bool specialize, LaunchArguments& out);
  // A runtime argument of a parameter of declared type: None is the constant
  // None, as for any parameter; a Python or NumPy bool, int or float becomes
  // a value of the type (signed integers must be in its range, unsigned ones
  // wrap, floats are rounded to it when packed); anything else is refused.
  // Ints specialize on being 1 and on divisibility by 16 as other ints do
  // (unless `specialize` is false); floats and bools do not, as in Triton.
  void declared(const std::string& kernel, const std::string& param, const DeclaredType& type,
                nanobind::handle value, bool specialize, LaunchArguments& out);
  // Reads the host descriptors among `out`'s arguments, after the grid function that may fill them: each
  // is placed where the memory it describes is. Bytes that no Tegula helper wrote are refused when
  // `launching` (the kernel would read them as addresses) and place nothing otherwise (a warmup, an
  // inspection). `names`: the kernel's parameter names.
  void place_host_descriptors(const std::string& kernel, const std::vector<std::string>& names, bool launching,
                              LaunchArguments& out);
  // Whether `value` is an instance of an @aggregate class: a launch lifts its runtime fields into
  // parameters, also for a tl.constexpr parameter.
  bool is_aggregate(nanobind::handle value) const;
  // A constexpr argument: its value is its key item. A tuple nests at most as deep as a runtime one
  // (check_depth) and holds at most as many values as a tuple the kernel builds
  // (frontend/value_bounds.h), or is a TypeError: it becomes a compile-time value of the kernel.
  void constexpr_value(const std::string& kernel, const std::string& param, nanobind::handle value, LaunchKey& key);

  // Debug mode: the memory an array argument may be accessed in, as (first
  // byte, byte count) from its shape and strides, or nothing for scalars and
  // objects whose extent is unknown (their accesses go unchecked).
  std::optional<std::pair<uint64_t, uint64_t>> extent(nanobind::handle value);

  // The caller's current device (for a device backend without array
  // arguments) and stream on a device.
  int current_device();
  uint64_t current_stream(int device);

  const LaunchSupport& support() const { return support_; }
  std::vector<PyObject*> references() const;
  void clear();

 private:
  // A pointer argument, once classified.
  struct Pointer {
    ir::Scalar element = ir::Scalar::F32;
    uint64_t address = 0;
    Place place;
    WriteBlock write_block = WriteBlock::None;
    bool host_descriptor = false;  // a host TMA descriptor's bytes, passed by value (host_descriptor())
  };
  // Triton 3.2/3.3's host TMA descriptor (TmaDescKernelParam, or a wrapper with tma_desc_cpu_ptr() such
  // as FBGEMM's KernelParamWrapper): its bytes in host memory, which the launch passes by value. It runs
  // where the memory the descriptor describes is.
  Pointer host_descriptor(const std::string& kernel, const std::string& param, nanobind::handle value);
  // Whether NumPy's array fields may be read directly (checked on the first array).
  enum class NumpyLayout { Unknown, Direct, Attributes };

  void add_pointer(const Pointer& pointer, size_t index, nanobind::handle source, LaunchArguments& out);
  void add_int(const std::string& kernel, const std::string& param, nanobind::handle value, bool specialize,
               LaunchArguments& out);
  IntClass classify_int(const std::string& kernel, const std::string& param, nanobind::handle value,
                        bool specialize, HostValue& host);
  // The Python bool, int or float `value` holds (a NumPy scalar's item()), or an invalid object for
  // any other value.
  nanobind::object plain_number(nanobind::handle value);
  // `number` (a Python bool, int or float) as a value of the declared type.
  IntClass declared_int(const std::string& kernel, const std::string& param, const DeclaredType& type,
                        nanobind::handle number, bool specialize, HostValue& host);
  double declared_real(const std::string& kernel, const std::string& param, const DeclaredType& type,
                       nanobind::handle number);
  // The argument as an array's pointer, or nothing for the other kinds a
  // runtime argument may be (scalars, descriptors); raises for values of no
  // kind and for arrays it refuses.
  std::optional<Pointer> array_of(const std::string& kernel, const std::string& param, nanobind::handle value);
  std::optional<Pointer> numpy_array(const std::string& kernel, const std::string& param, nanobind::handle value,
                                     bool exact);
  // `exchange`: may read the tensor through torch's exchange table (false:
  // it was just asked and could not describe it).
  std::optional<Pointer> torch_tensor(nanobind::handle value, bool exchange = true);
  Pointer tensor_like(const std::string& kernel, const std::string& param, nanobind::handle value);
  uint64_t tensor_address(const std::string& kernel, const std::string& param, nanobind::handle value);
  Pointer cuda_interface(const std::string& kernel, const std::string& param, nanobind::handle interface);
  void descriptor(const std::string& kernel, const std::string& param, size_t index, nanobind::handle value,
                  LaunchArguments& out);
  void tuple(const std::string& kernel, const std::string& param, size_t index, nanobind::handle value,
             bool specialize, LaunchArguments& out);
  // An @aggregate instance built on the host: its fields as a tuple's elements, under its class's reference.
  void aggregate(const std::string& kernel, const std::string& param, size_t index, nanobind::handle value,
                 bool specialize, LaunchArguments& out);
  void check_depth(const std::string& kernel, const std::string& param);
  // constexpr_value of a value `depth` tuples deep, `parts` the values of the argument so far.
  void constexpr_part(const std::string& kernel, const std::string& param, nanobind::handle value, LaunchKey& key,
                      int depth, size_t& parts);
  // The elements of a tuple or an aggregate (`count` items of `items`), each runtime or constexpr.
  void elements(const std::string& kernel, const std::string& param, size_t index, PyObject* const* items,
                Py_ssize_t count, bool specialize, LaunchArguments& out,
                const std::vector<std::string>* names = nullptr);
  bool is_descriptor(nanobind::handle value) const;
  bool is_number_scalar(nanobind::handle value) const;  // a NumPy scalar that is neither complex nor flexible
  std::optional<ir::Scalar> numpy_scalar(PyObject* dtype);
  std::optional<ir::Scalar> torch_scalar(PyObject* dtype);
  bool is_torch_type(PyTypeObject* type) const;
  bool learn_torch_type(nanobind::handle value);
  bool single_cuda_device();  // whether the driver sees exactly one device (asked once)

  // The attribute getters of one torch tensor type, looked up in its MRO
  // once (again after the type changes). Calling the descriptors directly
  // skips the attribute lookups that were most of a tensor argument's cost.
  // Only C getters qualify: data descriptors for the attributes (an instance
  // dict cannot shadow them) and C method descriptors for the methods.
  // torch.Tensor and torch.nn.Parameter themselves (not subclasses, whose
  // __torch_function__ the exchange would bypass) are read through torch's
  // DLPack exchange table instead, where torch has one.
  struct TorchAccessors {
    PyTypeObject* type = nullptr;
    unsigned int version = 0;  // the type's tp_version_tag at lookup; 0: stale
    bool usable = false;
    nanobind::object dtype, is_cuda, is_cpu, data_ptr, get_device, is_neg;
    const dlpack::ExchangeApi* exchange = nullptr;
  };
  const TorchAccessors* torch_accessors(PyTypeObject* type);

  LaunchSupport support_;
  const backends::Backend* host_ = nullptr;  // the backend of host memory
  const backends::Backend* cuda_ = nullptr;  // the backend of CUDA memory, when built
  NumpyLayout numpy_layout_ = NumpyLayout::Unknown;
  int cuda_devices_ = -1;  // the driver's device count; -1: not asked yet
  nanobind::object torch_stream_;  // torch's current-stream getter, once torch is imported
  const dlpack::ExchangeApi* torch_exchange_ = nullptr;  // torch's DLPack exchange table, where it has one
  // The latest tensor type found to go through the exchange table, and its
  // tp_version_tag then: a launch of such tensors skips the type tables.
  PyTypeObject* exchange_type_ = nullptr;
  unsigned int exchange_version_ = 0;
  nanobind::object exchange_is_neg_;  // that type's is_neg() method
  // Whether the tensor is a negated view (is_neg(): `x.conj().imag`), whose
  // memory holds its values with the other sign. torch's DLPack export and
  // data_ptr() both hand out that memory as it is, so every tensor is asked.
  bool negated(const nanobind::object& is_neg, nanobind::handle value);
  bool exchange_plain_type(PyTypeObject* type);  // torch.Tensor or torch.nn.Parameter exactly
  std::optional<Pointer> exchanged_tensor(const dlpack::ExchangeApi& api, nanobind::handle value);
  // Attribute names, made once (a str per lookup would cost as much as the lookup).
  nanobind::str dtype_name_, is_cuda_name_, is_cpu_name_, data_ptr_name_, get_device_name_, device_name_,
      type_name_, index_name_, value_name_, item_name_, base_name_, shape_name_, strides_name_,
      block_shape_name_, padding_name_, scalar_name_, canonical_name_, cuda_interface_name_, dlpack_name_,
      stride_name_, element_size_name_, torch_name_, tensor_name_, aggregate_name_, is_neg_name_,
      tma_desc_cpu_ptr_name_;
  // dtype object -> its scalar type: NumPy dtypes hash slowly, identity is enough.
  std::vector<std::pair<nanobind::object, ir::Scalar>> numpy_dtypes_;
  std::vector<std::pair<nanobind::object, ir::Scalar>> torch_dtypes_;
  std::vector<nanobind::object> torch_types_;
  std::vector<TorchAccessors> torch_accessors_;
};

}  // namespace tegula::python
