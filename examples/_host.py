"""What the examples' host wrappers need to treat NumPy arrays and torch
tensors alike: allocate outputs with the input's own library (so a CUDA
tensor gets a CUDA output and the launch runs on the GPU), read strides in
elements, and pass launch options through. Not an example itself: the
examples beside it import it (``import _host``).

The wrappers are also run by Triton (the benchmark's Triton twin,
benchmarks/tegula_bench/triton_twin.py, executes an example with ``tegula``
bound to ``triton``), so nothing here may depend on Tegula's compiler: these
are plain array helpers.
"""

from __future__ import annotations

import numpy as np


def is_torch(x) -> bool:
    """Whether `x` is a torch tensor (checked without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def numel(x) -> int:
    return x.numel() if is_torch(x) else x.size


def strides(x) -> tuple:
    """Strides in elements, not bytes."""
    if is_torch(x):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def empty_like(x):
    if is_torch(x):
        import torch
        return torch.empty_like(x)
    return np.empty_like(x)


def empty(shape, dtype, like):
    """A new array of `shape` and `dtype` in the library and on the device of `like`.
    `dtype` is a NumPy dtype (or its name); torch gets the torch dtype of the same name."""
    if is_torch(like):
        import torch
        if not isinstance(dtype, torch.dtype):
            dtype = getattr(torch, np.dtype(dtype).name)
        return torch.empty(shape, dtype=dtype, device=like.device)
    return np.empty(shape, dtype=dtype)


def cuda_usable() -> tuple:
    """(usable, why not): whether a CUDA GPU is there that both torch (which
    allocates the arrays) and Tegula's runtime can use. Asks Tegula only when
    called, so the helpers above stay free of it, and Tegula first: without
    a driver the answer comes without importing torch (seconds)."""
    from tegula import _device

    available, why = _device.driver_status()
    if not available:
        return False, "Tegula's CUDA runtime is not usable: " + " ".join(line.strip() for line in why.splitlines())
    try:
        import torch
    except ImportError:
        return False, "PyTorch is not installed (GPU arrays are torch tensors here)"
    if not torch.cuda.is_available():
        return False, "torch.cuda.is_available() is False"
    return True, ""


def launch_options(num_warps) -> dict:
    """Keyword arguments of a launch: num_warps only when the caller chose one,
    so the kernel's default stays the default."""
    return {} if num_warps is None else {"num_warps": num_warps}
