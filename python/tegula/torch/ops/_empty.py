"""The ops' outputs and buffers, allocated without torch.empty's argument parsing.

``torch.empty(shape, dtype=..., device=...)`` parses its arguments through torch's Python binding at
every call, which costs more host time than the caching allocator's own work, and a compiled training
step allocates about a hundred outputs. Inductor's generated code allocates through
``torch._C._dynamo.guards._empty_strided_<device>(sizes, strides, dtype)``, which takes its arguments
positionally and allocates on the current device; ``empty`` uses it when it exists and the tensor's
device is the current one, and ``torch.empty`` otherwise (another device, another torch).
"""

from __future__ import annotations

import torch

try:
    from torch._C._dynamo.guards import _empty_strided_cpu, _empty_strided_cuda
except ImportError:  # a torch without them: the general path only
    _empty_strided_cpu = _empty_strided_cuda = None

_current_cuda_device = getattr(torch._C, "_cuda_getDevice", None)
FAST = True  # False: torch.empty always (to compare)

# (sizes, contiguous strides) by shape, both plain tuples (the fast functions take no torch.Size): a
# step allocates the same few shapes again and again. Bounded as _layouts.Layouts is.
_SIZES_STRIDES: dict = {}
_LIMIT = 256


def sizes_and_strides(shape) -> tuple:
    """(shape as a tuple, its contiguous strides); `shape` a tuple of ints or a torch.Size."""
    found = _SIZES_STRIDES.get(shape)
    if found is None:
        if len(_SIZES_STRIDES) >= _LIMIT:
            _SIZES_STRIDES.clear()
        stride, strides = 1, []
        for size in reversed(shape):
            strides.append(stride)
            stride *= max(size, 1)
        found = _SIZES_STRIDES[shape] = (tuple(shape), tuple(reversed(strides)))
    return found


def empty(shape, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A new contiguous tensor of `shape` (a tuple of ints or a torch.Size), like
    ``torch.empty(shape, dtype=dtype, device=device)``."""
    return allocator(device)(*sizes_and_strides(shape), dtype)


def allocator(device: torch.device):
    """``alloc(sizes, strides, dtype)``, a new tensor on `device` of these sizes and strides (tuples of ints, as
    ``sizes_and_strides`` gives them): for an op that allocates several tensors whose sizes its layout keeps,
    one device check per call instead of one per tensor."""
    kind = device.type if FAST else None
    if kind == "cuda":
        if _empty_strided_cuda is not None and device.index == _current_cuda_device():
            return _empty_strided_cuda
    elif kind == "cpu" and _empty_strided_cpu is not None:
        return _empty_strided_cpu
    return lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype, device=device)
