// The DLPack C exchange interface (DLPack 1.3): an array library publishes,
// as the capsule `__dlpack_c_exchange_api__` on its tensor type, C functions
// that describe one of its tensors without a Python call and that return its
// current work stream. torch does (2.10 and later). Through it, a tensor
// argument costs one C call instead of three attribute getters, and the
// stream query none of the Python machinery: that difference is most of a
// small launch's host time beyond the driver's.
//
// The structs below are the protocol's ABI, declared here from its
// specification (dlpack.h), field for field; only what a launch reads is
// named, the rest are opaque pointers of the same size.
#pragma once

#include <Python.h>

#include <cstdint>
#include <optional>

#include "ir/type.h"

namespace tegula::python::dlpack {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2 };

struct Device {
  int32_t type;
  int32_t id;
};

struct DataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 10 float8_e4m3fn, 12 float8_e5m2, ...
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};

struct Version {
  uint32_t major;
  uint32_t minor;
};

struct ExchangeApi {
  Version version;
  const void* previous;  // an older table, for consumers of an older major version
  const void* managed_tensor_allocator;
  const void* managed_tensor_from_py_object;
  const void* managed_tensor_to_py_object;
  // 0 on success; -1 with a Python exception set. The DLTensor borrows the
  // tensor's metadata: valid only until control returns to Python.
  int (*tensor_from_py_object)(void* py_object, Tensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};

// The exchange table `type` publishes, when its major version is the one
// declared here and it has both functions a launch uses; else null.
// Python errors while looking are cleared: no table is the answer.
const ExchangeApi* exchange_api(PyTypeObject* type);

// The element type of a tensor described in the protocol's terms, for the
// types Tegula has; nothing for vectors (lanes != 1) and for the others
// (complex, the other float8 variants, sub-byte floats).
std::optional<ir::Scalar> scalar_of(DataType dtype);

}  // namespace tegula::python::dlpack
