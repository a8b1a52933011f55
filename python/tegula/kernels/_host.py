"""What the reference kernels' host wrappers need to treat NumPy arrays and
torch tensors alike: allocate outputs with the input's own library (so a CUDA
tensor gets a CUDA output and the launch runs on the GPU), read strides in
elements, and pass launch options through.

The wrappers are also run by Triton (``tegula._triton_twin`` executes the
kernel modules with ``tegula`` bound to ``triton``), so nothing here may
depend on Tegula's compiler: these are plain array helpers.
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


def launch_options(num_warps) -> dict:
    """Keyword arguments of a launch: num_warps only when the caller chose one,
    so the kernel's default stays the default."""
    return {} if num_warps is None else {"num_warps": num_warps}
