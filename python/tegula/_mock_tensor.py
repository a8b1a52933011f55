"""Stand-ins for arrays in ``kernel.warmup``: Triton's ``MockTensor``.

``kernel.warmup(torch.float32, torch.float32, 1024, grid=(1,))`` compiles the
kernel for arrays of those dtypes without allocating any: warmup wraps each
torch dtype among the arguments in a MockTensor, which the launcher reads as
it reads a tensor (``dtype``, ``device``, ``data_ptr()``), and never
launches. Its address is 0, which counts as aligned to 16 bytes, as Triton
assumes of its stand-ins.
"""

from __future__ import annotations

import os
import sys

from . import _device


def default_device():
    """Where a stand-in's memory would be: TEGULA_BACKEND's choice when set, else the caller's current CUDA
    device where Tegula can use one (Triton compiles warmups for the GPU), else the CPU."""
    forced = os.environ.get("TEGULA_BACKEND", "").strip().lower()
    on_gpu = forced == "cuda" or (forced != "cpu" and _device.is_available())
    torch = sys.modules.get("torch")
    if torch is None:
        return "cuda" if on_gpu else "cpu"
    return torch.device("cuda", _device.current_device()) if on_gpu else torch.device("cpu")


class MockTensor:
    """An array of `dtype` (a torch or NumPy dtype) and `shape` on `device` (default_device() when None) with
    no memory: for ``kernel.warmup`` only; a launch with one is refused where it reads memory."""

    def __init__(self, dtype, shape=None, device=None):
        self.dtype = dtype
        self.shape = list(shape) if shape is not None else [1]
        self.device = device if device is not None else default_device()

    def stride(self) -> tuple:
        strides = [1]
        for size in reversed(self.shape[1:]):
            strides.append(strides[-1] * size)
        return tuple(reversed(strides))

    @staticmethod
    def data_ptr() -> int:
        return 0

    @staticmethod
    def ptr_range() -> int:
        return 0

    @staticmethod
    def wrap_dtype(arg):
        """`arg` as warmup takes it: a torch dtype becomes a MockTensor of it; anything else is itself."""
        if type(arg).__name__ == "dtype" and type(arg).__module__ == "torch":
            return MockTensor(arg)
        return arg

    def __repr__(self) -> str:
        return f"MockTensor({self.dtype}, shape={self.shape}, device={self.device})"
