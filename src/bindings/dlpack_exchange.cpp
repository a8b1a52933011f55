#include "bindings/dlpack_exchange.h"

namespace tegula::python::dlpack {

const ExchangeApi* exchange_api(PyTypeObject* type) {
  PyObject* name = PyUnicode_InternFromString("__dlpack_c_exchange_api__");
  if (!name) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* capsule = _PyType_Lookup(type, name);  // borrowed
  Py_DECREF(name);
  if (!capsule || !PyCapsule_IsValid(capsule, "dlpack_exchange_api")) return nullptr;
  auto* api = static_cast<const ExchangeApi*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
  if (!api) {
    PyErr_Clear();
    return nullptr;
  }
  if (api->version.major != 1 || !api->tensor_from_py_object || !api->current_work_stream) return nullptr;
  return api;
}

std::optional<ir::Scalar> scalar_of(DataType dtype) {
  using ir::Scalar;
  if (dtype.lanes != 1) return std::nullopt;
  switch (dtype.code) {
    case 0:  // signed integers
      switch (dtype.bits) {
        case 8: return Scalar::I8;
        case 16: return Scalar::I16;
        case 32: return Scalar::I32;
        case 64: return Scalar::I64;
      }
      break;
    case 1:  // unsigned integers
      switch (dtype.bits) {
        case 8: return Scalar::U8;
        case 16: return Scalar::U16;
        case 32: return Scalar::U32;
        case 64: return Scalar::U64;
      }
      break;
    case 2:  // IEEE floats
      switch (dtype.bits) {
        case 16: return Scalar::F16;
        case 32: return Scalar::F32;
        case 64: return Scalar::F64;
      }
      break;
    case 4:
      if (dtype.bits == 16) return Scalar::BF16;
      break;
    case 6:  // bool, one byte per element
      if (dtype.bits == 8) return Scalar::I1;
      break;
    case 10:  // fp8 e4m3fn
      if (dtype.bits == 8) return Scalar::F8E4M3;
      break;
    case 11:  // fp8 e4m3fnuz
      if (dtype.bits == 8) return Scalar::F8E4B8;
      break;
    case 12:  // fp8 e5m2
      if (dtype.bits == 8) return Scalar::F8E5M2;
      break;
    case 13:  // fp8 e5m2fnuz
      if (dtype.bits == 8) return Scalar::F8E5B16;
      break;
  }
  return std::nullopt;
}

}  // namespace tegula::python::dlpack
