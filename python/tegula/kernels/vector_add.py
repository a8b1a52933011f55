"""Vector addition ``out = x + y`` over 1-D arrays: the smallest memory-bound kernel.

Each program handles one block of ``BLOCK`` consecutive elements; the last
block is masked so that sizes need not be multiples of ``BLOCK``. The kernel
reads two arrays and writes one, so its floor is ``3 * n * itemsize`` bytes
over the machine's copy bandwidth.
"""

import numpy as np

import tegula
import tegula.language as tl
from tegula.kernels import _host
from tegula._errors import coded

BLOCK = 1024


@tegula.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    offsets = start + tl.arange(0, BLOCK)
    in_bounds = offsets < n
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, x + y, mask=in_bounds)


def vector_add(x, y, out=None, block: int = BLOCK, num_warps: int = None):
    """``x + y`` by the kernel; x, y (and out) are contiguous 1-D arrays of one dtype,
    NumPy arrays or torch tensors (CUDA tensors run on the GPU)."""
    if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype or x.ndim != 1:
        raise coded(ValueError, "E0713", f"vector_add takes two 1-D arrays of one shape and dtype, got "
                                         f"{tuple(x.shape)} {x.dtype} and {tuple(y.shape)} {y.dtype}")
    if out is None:
        out = _host.empty_like(x)
    n = _host.numel(x)
    vector_add_kernel[(tegula.cdiv(n, block),)](x, y, out, n, BLOCK=block,
                                                **_host.launch_options(num_warps))
    return out


def vector_add_reference(x, y, out=None):
    """Eager: one ``np.add`` for NumPy arrays, one ``torch.add`` for torch tensors."""
    if _host.is_torch(x):
        import torch
        return torch.add(x, y, out=out)
    return np.add(x, y, out=out)


def make_inputs(n: int, dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n, dtype=np.float32).astype(dtype),
            rng.standard_normal(n, dtype=np.float32).astype(dtype))


def bytes_moved(n: int, itemsize: int) -> int:
    """Two reads and one write per element."""
    return 3 * n * itemsize


def eager_bytes_moved(n: int, itemsize: int) -> int:
    """NumPy's np.add moves exactly what the kernel moves."""
    return bytes_moved(n, itemsize)


def flops(n: int) -> int:
    return n
