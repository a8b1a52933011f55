"""How one launch argument specializes a kernel.

Every argument becomes a *key part*: a small tuple that holds everything the
compiler needs to know about it (and nothing else), so the tuple of key parts
is the in-memory cache key and, on a miss, converts back into the ArgSpecs of
the compile request. Runtime arguments also yield the value the launcher
receives: an address for pointers, the number itself for scalars.

  ("p", scalar, aligned16)          pointer to `scalar` ("f32", "bf16", ...) in host memory
  ("p", scalar, aligned16, device)  the same in the memory of CUDA device `device`
  ("i", width, is_one, div16)       int: width "i32" | "i64" | "u64"
  ("f",) / ("b",)                   float (f32) / bool (i1)
  ("c", type, value)                constexpr (floats as float.hex(): exact, NaN-safe)
  ("d", pointer part, int parts, block_shape, padding)
                                    a TensorDescriptor: its base's pointer part, the int parts
                                    of its shape then its strides; the launch value is the tuple
                                    (address, *shape, *strides), one kernel parameter each
"""

from __future__ import annotations

import numpy as np

from . import _C, _device
from ._globals import constant_value
from ._reinterpret import ReinterpretedArray
from .tensor_descriptor import is_descriptor
from .language.core import DTYPES, constexpr, dtype, pointer_type
from ._errors import coded

_data_address = _C.data_address

FLOAT = ("f",)
BOOL = ("b",)

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_U64_MAX = (1 << 64) - 1

# NumPy dtype -> IR scalar. Keys are native-byte-order dtypes, so a
# big-endian array misses here and is reported as unsupported.
NUMPY_SCALARS = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
}
try:
    import ml_dtypes

    NUMPY_SCALARS[np.dtype(ml_dtypes.bfloat16)] = "bf16"
    NUMPY_SCALARS[np.dtype(ml_dtypes.float8_e4m3fn)] = "f8e4m3"
    NUMPY_SCALARS[np.dtype(ml_dtypes.float8_e5m2)] = "f8e5m2"
except ImportError:  # bf16 arrays need ml_dtypes; everything else works without it
    pass

TORCH_SCALARS = {
    "torch.bool": "i1",
    "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64",
    "torch.float16": "f16", "torch.bfloat16": "bf16",
    "torch.float32": "f32", "torch.float64": "f64",
    "torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2",
}

_SUPPORTED_DTYPES = ("bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                     "float16, bfloat16 (ml_dtypes), float32, float64, float8_e4m3fn and float8_e5m2 "
                     "(torch, ml_dtypes, or tegula.reinterpret(uint8 array, tl.float8e4nv / tl.float8e5))")


def int_part(kernel: str, param: str, value: int, specialize: bool) -> tuple:
    if _I32_MIN <= value <= _I32_MAX:
        width = "i32"
    elif _I64_MIN <= value <= _I64_MAX:
        width = "i64"
    elif 0 <= value <= _U64_MAX:
        width = "u64"
    else:
        raise coded(ValueError, "E0703", f"argument '{param}' of kernel '{kernel}' is {value}, which does not fit "
                                         f"in 64 bits (kernel integers are i32, i64 or u64)")
    if not specialize:
        return ("i", width, False, False)
    return ("i", width, value == 1, value % 16 == 0)


def _pointer(kernel: str, param: str, scalar, address: int, dtype_name) -> tuple:
    if scalar is None:
        raise coded(TypeError, "E0702", f"argument '{param}' of kernel '{kernel}' has unsupported dtype "
                                        f"{dtype_name}; supported: {_SUPPORTED_DTYPES}")
    return ("p", scalar, address % 16 == 0), address


def array_part(kernel: str, param: str, array: np.ndarray) -> tuple:
    # Non-contiguous arrays are fine: the kernel gets the address of the first
    # element and uses the strides its caller passes.
    return _pointer(kernel, param, NUMPY_SCALARS.get(array.dtype), _data_address(array),
                    array.dtype)


# Tensor types seen before (torch.Tensor and subclasses) -> their part
# function, so the next launch skips the attribute probing of the slow path.
_TENSOR_TYPES: dict = {}
# torch dtype objects -> IR scalar, filled when the first torch tensor is seen.
_TORCH_DTYPES: dict = {}


def runtime_part(kernel: str, param: str, value, specialize: bool) -> tuple:
    """(key part, launch value) of a runtime (non-constexpr) argument."""
    t = type(value)
    if t is np.ndarray:  # the common case, inlined
        scalar = NUMPY_SCALARS.get(value.dtype)
        if scalar is not None:
            address = _data_address(value)
            return ("p", scalar, address % 16 == 0), address
        return array_part(kernel, param, value)
    if t is int:
        return int_part(kernel, param, value, specialize), value
    if t is float:
        return FLOAT, value
    if t is bool:
        return BOOL, value
    tensor_part = _TENSOR_TYPES.get(t)
    if tensor_part is not None:
        return tensor_part(kernel, param, value)
    return _runtime_part_slow(kernel, param, value, specialize)


def _runtime_part_slow(kernel: str, param: str, value, specialize: bool) -> tuple:
    if isinstance(value, ReinterpretedArray):
        part, address = runtime_part(kernel, param, value.base, specialize)
        if part[0] != "p":
            raise coded(TypeError, "E0712",
                        f"argument '{param}' of kernel '{kernel}': tegula.reinterpret needs an array or "
                        f"tensor, got {type(value.base).__name__}")
        return (part[0], value.dtype.scalar) + part[2:], address
    if isinstance(value, np.ndarray):
        return array_part(kernel, param, value)
    if is_descriptor(value):
        _TENSOR_TYPES[type(value)] = descriptor_part
        return descriptor_part(kernel, param, value)
    if isinstance(value, np.generic) and not isinstance(value, (np.complexfloating, np.flexible)):
        return runtime_part(kernel, param, value.item(), specialize)
    if isinstance(value, bool):
        return BOOL, bool(value)
    if isinstance(value, int):
        value = int(value)
        return int_part(kernel, param, value, specialize), value
    if isinstance(value, float):
        return FLOAT, float(value)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype") and hasattr(value, "device"):
        if type(value).__module__.startswith("torch") and _learn_torch_dtypes(value):
            _TENSOR_TYPES[type(value)] = _torch_tensor_part
        return _tensor_part(kernel, param, value)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _cuda_interface_part(kernel, param, interface)
    if hasattr(value, "__dlpack__"):
        try:
            array = np.from_dlpack(value)
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            raise coded(ValueError, "E0702", f"argument '{param}' of kernel '{kernel}': cannot read its DLPack "
                                             f"data on the CPU ({e})") from None
        return array_part(kernel, param, array)
    raise coded(TypeError, "E0702", f"argument '{param}' of kernel '{kernel}' must be an array or a scalar, "
                                    f"got {type(value).__name__}")


def _tensor_part(kernel: str, param: str, tensor) -> tuple:
    """torch.Tensor and look-alikes: anything with data_ptr(), dtype and device."""
    device = tensor.device
    kind = getattr(device, "type", str(device))
    dtype_name = str(tensor.dtype)
    part, address = _pointer(kernel, param, TORCH_SCALARS.get(dtype_name), tensor.data_ptr(), dtype_name)
    if kind == "cpu":
        return part, address
    if kind == "cuda":
        return part + (getattr(device, "index", None) or 0,), address
    raise coded(ValueError, "E0709", f"argument '{param}' of kernel '{kernel}' is on {device}; Tegula kernels run on "
                                     f"the CPU and on CUDA GPUs")


def _learn_torch_dtypes(tensor) -> bool:
    """Fills _TORCH_DTYPES from the torch module a tensor comes from; False if
    that module does not look like torch."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not isinstance(tensor, getattr(torch, "Tensor", ())):
        return False
    for name, scalar in TORCH_SCALARS.items():
        dtype = getattr(torch, name.removeprefix("torch."), None)  # uint16/32/64 are recent
        if dtype is not None:
            _TORCH_DTYPES[dtype] = scalar
    return True


def _torch_tensor_part(kernel: str, param: str, tensor) -> tuple:
    """_tensor_part for real torch tensors, on the launch hot path: dtype objects
    and the is_cuda/get_device() accessors instead of strings and torch.device."""
    scalar = _TORCH_DTYPES.get(tensor.dtype)
    if scalar is not None:
        if tensor.is_cuda:
            address = tensor.data_ptr()
            return ("p", scalar, address % 16 == 0, tensor.get_device()), address
        if tensor.is_cpu:
            address = tensor.data_ptr()
            return ("p", scalar, address % 16 == 0), address
    return _tensor_part(kernel, param, tensor)  # the errors


def _cuda_interface_part(kernel: str, param: str, interface: dict) -> tuple:
    """Objects with ``__cuda_array_interface__`` (CuPy, Numba): device memory."""
    try:
        dtype = np.dtype(interface["typestr"])
        address = int(interface["data"][0])
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise coded(TypeError, "E0711", f"argument '{param}' of kernel '{kernel}' has a malformed "
                                        f"__cuda_array_interface__ ({e})") from None
    part, address = _pointer(kernel, param, NUMPY_SCALARS.get(dtype), address, dtype)
    # An empty array may have address 0, which belongs to no device: use the current one.
    device = _device.pointer_device(address) if address else _device.current_device()
    return part + (device,), address


def descriptor_part(kernel: str, param: str, desc) -> tuple:
    """(key part, launch values) of a TensorDescriptor argument."""
    base, address = runtime_part(kernel, param, desc.base, True)
    if base[0] != "p":
        raise coded(TypeError, "E0711",
                    f"the base of TensorDescriptor argument '{param}' of kernel '{kernel}' must be an "
                    f"array or tensor, got {type(desc.base).__name__}")
    extents = [int(v) for v in (*desc.shape, *desc.strides)]
    ints = tuple(int_part(kernel, param, v, True) for v in extents)
    padding = getattr(desc, "padding", "zero")
    return ("d", base, ints, tuple(int(b) for b in desc.block_shape), padding), (address, *extents)


def launch_support():
    """What the C++ launcher (src/bindings/launch_arguments.h) takes from this
    side: the tables and functions above, which it follows and falls back to."""
    import types

    return types.SimpleNamespace(
        ndarray=np.ndarray, numpy_scalars=NUMPY_SCALARS, tensor_types=_TENSOR_TYPES,
        torch_scalars=_TORCH_DTYPES, torch_tensor_part=_torch_tensor_part, runtime_part=runtime_part,
        constexpr_part=constexpr_part, data_address=_data_address, current_stream=_device.current_stream,
        torch_stream=_device._torch_stream_getter)


def place(part: tuple):
    """Where a pointer (or descriptor) key part's memory is: None for the host, else the CUDA device."""
    if part[0] == "d":
        part = part[1]
    return part[3] if len(part) > 3 else None


def constexpr_part(kernel: str, param: str, value) -> tuple:
    """Key part of a constexpr argument; it carries the value itself."""
    if isinstance(value, constexpr):
        value = value.value
    t = type(value)
    if t is int or t is bool or t is str or value is None:
        if t is int and not _I64_MIN <= value <= _I64_MAX:
            raise coded(ValueError, "E0703", f"constexpr argument '{param}' of kernel '{kernel}' is {value}, "
                                             f"which does not fit in 64 bits")
        return ("c", t, value)
    if t is float:
        return ("c", float, value.hex())
    if isinstance(value, dtype) and not isinstance(value, pointer_type):
        return ("c", dtype, value.canonical_name)
    if isinstance(value, np.generic) and not isinstance(value, (np.complexfloating, np.flexible)):
        return constexpr_part(kernel, param, value.item())
    raise coded(TypeError, "E0702", f"constexpr argument '{param}' of kernel '{kernel}' must be an int, float, "
                                    f"bool, str, None or tl.dtype, got {type(value).__name__}")


def arg_spec(part: tuple):
    """The compile request's ArgSpec for one key part."""
    Kind = _C.ArgSpec.Kind
    tag = part[0]
    if tag == "p":  # where the memory is does not change the code: the backend choice covers it
        return _C.ArgSpec(Kind.Pointer, dtype=part[1], divisibility=16 if part[2] else 1)
    if tag == "i":
        return _C.ArgSpec(Kind.Int, dtype=part[1], divisibility=16 if part[3] else 1,
                          is_one=part[2])
    if tag == "f":
        return _C.ArgSpec(Kind.Float, dtype="f32")
    if tag == "b":
        return _C.ArgSpec(Kind.Bool, dtype="i1")
    if tag == "d":
        _, base, ints, block_shape, padding = part
        spec = _C.ArgSpec(Kind.TensorDescriptor, dtype=base[1], divisibility=16 if base[2] else 1,
                          value=constant_value(padding))
        spec.parts = [arg_spec(p) for p in ints]
        spec.block_shape = list(block_shape)
        return spec
    kind, value = part[1], part[2]
    if kind is float:
        value = float.fromhex(value)
    elif kind is dtype:
        value = DTYPES[value]
    return _C.ArgSpec(Kind.Constexpr, value=constant_value(value))

