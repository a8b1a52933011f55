"""What the C++ launcher (src/bindings/launcher.h) takes from Python: data
only, and the few functions that ask Python frameworks about themselves.

The launcher is the one definition of how arguments bind, specialize the
kernel and pick the backend (src/bindings/launch_arguments.h). It needs to
know NumPy's and torch's dtypes by name, the package's own classes (to
recognize tl.constexpr, tl.dtype, tegula.reinterpret and TensorDescriptor
arguments), and, for CUDA launches, the caller's current device and stream,
which only torch or CuPy can say.
"""

from __future__ import annotations

import os
import sys
import types

import numpy as np

from . import _device
from ._globals import aggregate_fields, constexpr_function
from ._reinterpret import ReinterpretedArray
from .language.core import constexpr, dtype, pointer_type
from .tensor_descriptor import TensorDescriptor


class _NumpyScalars(dict):
    """NumPy dtype -> IR scalar. Keys are native-byte-order dtypes, so a
    big-endian array misses here and is reported as unsupported.

    NumPy's bf16 and fp8 arrays come from ml_dtypes, whose import costs more
    than the rest of `import tegula` (0.6 s with ml_dtypes 0.7). Whoever
    holds such an array has imported it, so its dtypes join the table at
    the first miss after that (the launcher looks dtypes up with get())."""

    def get(self, key, default=None):
        found = dict.get(self, key)
        if found is None and not self._ml_dtypes_added and "ml_dtypes" in sys.modules:
            self._add_ml_dtypes(sys.modules["ml_dtypes"])
            found = dict.get(self, key)
        return default if found is None else found

    _ml_dtypes_added = False

    def _add_ml_dtypes(self, ml_dtypes) -> None:
        self._ml_dtypes_added = True
        for name, scalar in (("bfloat16", "bf16"), ("float8_e4m3fn", "f8e4m3"), ("float8_e5m2", "f8e5m2"),
                             ("float8_e4m3fnuz", "f8e4b8"), ("float8_e5m2fnuz", "f8e5b16")):
            kind = getattr(ml_dtypes, name, None)
            if kind is not None:
                self[np.dtype(kind)] = scalar


NUMPY_SCALARS = _NumpyScalars({
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
})

# str(torch dtype) -> IR scalar; read by name, so torch is never imported here.
TORCH_SCALARS = {
    "torch.bool": "i1",
    "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64",
    "torch.float16": "f16", "torch.bfloat16": "bf16",
    "torch.float32": "f32", "torch.float64": "f64",
    "torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2",
    "torch.float8_e4m3fnuz": "f8e4b8", "torch.float8_e5m2fnuz": "f8e5b16",
}


def _environment():
    """The dict under os.environ and TEGULA_BACKEND's key in it, which the
    launcher reads at every launch; (None, None) where os.environ has no such
    dict, and the launcher asks getenv() instead."""
    data, encodekey = getattr(os.environ, "_data", None), getattr(os.environ, "encodekey", None)
    if type(data) is dict and callable(encodekey):
        return data, encodekey("TEGULA_BACKEND")
    return None, None


def support():
    """The tables and functions above, as the launcher reads them once."""
    environment, backend_key = _environment()
    return types.SimpleNamespace(
        environment=environment, backend_key=backend_key, constexpr_function=constexpr_function,
        aggregate_fields=aggregate_fields,
        ndarray=np.ndarray, generic=np.generic, complexfloating=np.complexfloating, flexible=np.flexible,
        numpy_scalars=NUMPY_SCALARS, torch_scalars=TORCH_SCALARS, numpy_dtype=np.dtype,
        from_dlpack=np.from_dlpack, reinterpreted=ReinterpretedArray, descriptor=TensorDescriptor,
        constexpr=constexpr, dtype=dtype, pointer_type=pointer_type, current_device=_device.current_device,
        current_stream=_device.current_stream, torch_stream=_device._torch_stream_getter)
