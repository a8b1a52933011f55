"""Row-wise softmax of a 2-D array, ``y[i, :] = exp(x[i, :] - max_i) / sum(exp(x[i, :] - max_i))``.

One program per row; the whole row is one tile of ``BLOCK_N`` (the next power
of two at or above N) elements. Lanes past the end of the row load ``-inf`` so
they neither win the max nor add to the sum (``exp(-inf) = 0``). Subtracting
the row max first keeps ``exp`` from overflowing, as every serious softmax does.

Fused, the kernel reads x once and writes y once; NumPy eager makes several
passes over the array (max, subtract, exp, sum, divide), each through memory.
"""

import numpy as np

import tegula
import tegula.language as tl
from tegula.kernels import _host
from tegula._errors import coded


@tegula.jit
def softmax_kernel(x_ptr, y_ptr, N, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=-float("inf"))
    x = x.to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)


def softmax(x, out=None, num_warps: int = None):
    """Softmax over the last axis of a 2-D array (rows may be strided; columns contiguous).
    NumPy arrays or torch tensors; the output comes from the same library and device."""
    x_strides = _host.strides(x) if x.ndim == 2 else None
    if x.ndim != 2 or x_strides[1] != 1:
        raise coded(ValueError, "E0713", f"softmax takes a 2-D array with contiguous rows, got shape "
                                         f"{tuple(x.shape)} strides {x_strides}")
    M, N = x.shape
    if out is None:
        out = _host.empty_like(x)
    softmax_kernel[(M,)](x, out, N, x_strides[0], _host.strides(out)[0],
                         BLOCK_N=tegula.next_power_of_2(N), **_host.launch_options(num_warps))
    return out


def softmax_reference(x):
    """Eager, computed in float32 (the kernel's precision): NumPy op by op for NumPy
    arrays, ``torch.softmax`` for torch tensors."""
    if _host.is_torch(x):
        import torch
        return torch.softmax(x, dim=1, dtype=torch.float32).to(x.dtype)
    x32 = x.astype(np.float32, copy=False)
    shifted = x32 - x32.max(axis=1, keepdims=True)
    numerator = np.exp(shifted)
    return (numerator / numerator.sum(axis=1, keepdims=True)).astype(x.dtype, copy=False)


def make_inputs(M: int, N: int, dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, N), dtype=np.float32) * 4).astype(dtype)


def bytes_moved(M: int, N: int, itemsize: int) -> int:
    """x read once, y written once."""
    return 2 * M * N * itemsize


def eager_bytes_moved(M: int, N: int, itemsize: int = 4) -> int:
    """What softmax_reference moves for float32 x: max (read), subtract (read,
    write), exp (read, write), sum (read), divide (read, write); 8 passes."""
    return 8 * M * N * itemsize


def flops(M: int, N: int) -> int:
    """max, subtract, exp, sum, divide: about five operations per element."""
    return 5 * M * N
