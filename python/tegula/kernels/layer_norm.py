"""Layer normalization forward over the rows of a 2-D array.

For each row: ``mean = sum(x) / N``, ``var = sum((x - mean)^2) / N``,
``rstd = 1 / sqrt(var + eps)`` and ``y = (x - mean) * rstd * w + b``. The
kernel also stores ``mean`` and ``rstd`` per row, which a backward pass needs.

One program per row; the row is one tile of ``BLOCK_N`` (next power of two
>= N) lanes. Lanes past N load 0 and are masked out of the centred values so
they do not count in the variance. Statistics are computed in float32 whatever
the input dtype.
"""

import numpy as np

import tegula
import tegula.language as tl
from tegula.kernels import _host
from tegula._errors import coded

EPS = 1e-5


@tegula.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, x_row_stride,
                      y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(in_row, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


def layer_norm(x, weight, bias, eps: float = EPS, out=None, num_warps: int = None):
    """Returns ``(y, mean, rstd)``; y has x's dtype, mean and rstd are float32 of length M.
    NumPy arrays or torch tensors; the outputs come from x's library and device."""
    x_strides = _host.strides(x) if x.ndim == 2 else None
    if x.ndim != 2 or x_strides[1] != 1:
        raise coded(ValueError, "E0713", f"layer_norm takes a 2-D array with contiguous rows, got shape "
                                         f"{tuple(x.shape)} strides {x_strides}")
    M, N = x.shape
    if tuple(weight.shape) != (N,) or tuple(bias.shape) != (N,):
        raise coded(ValueError, "E0713", f"weight and bias must have shape ({N},), got {tuple(weight.shape)} and "
                                         f"{tuple(bias.shape)}")
    if out is None:
        out = _host.empty_like(x)
    mean = _host.empty(M, np.float32, like=x)
    rstd = _host.empty(M, np.float32, like=x)
    layer_norm_kernel[(M,)](x, out, weight, bias, mean, rstd, N, x_strides[0],
                            _host.strides(out)[0], eps,
                            BLOCK_N=tegula.next_power_of_2(N), **_host.launch_options(num_warps))
    return out, mean, rstd


def layer_norm_reference(x, weight, bias, eps: float = EPS):
    """Eager, op by op, in float32, for NumPy arrays or torch tensors. Returns
    ``(y, mean, rstd)`` like the kernel."""
    if _host.is_torch(x):
        return _layer_norm_reference_torch(x, weight, bias, eps)
    x32 = x.astype(np.float32, copy=False)
    mean = x32.mean(axis=1, keepdims=True)
    centred = x32 - mean
    var = (centred * centred).mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + np.float32(eps))
    y = centred * rstd * weight.astype(np.float32) + bias.astype(np.float32)
    return y.astype(x.dtype, copy=False), mean[:, 0], rstd[:, 0]


def _layer_norm_reference_torch(x, weight, bias, eps):
    import torch
    x32 = x.float()
    var, mean = torch.var_mean(x32, dim=1, unbiased=False, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    y = (x32 - mean) * rstd * weight.float() + bias.float()
    return y.to(x.dtype), mean[:, 0], rstd[:, 0]


def make_inputs(M: int, N: int, dtype=np.float32, seed: int = 0):
    """(x, weight, bias); x has a non-zero mean so that centring matters."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((M, N), dtype=np.float32) * 2 + 1).astype(dtype)
    weight = rng.standard_normal(N, dtype=np.float32).astype(dtype)
    bias = rng.standard_normal(N, dtype=np.float32).astype(dtype)
    return x, weight, bias


def bytes_moved(M: int, N: int, itemsize: int) -> int:
    """x read and y written once, w and b read once, mean and rstd (fp32) written."""
    return 2 * M * N * itemsize + 2 * N * itemsize + 2 * M * 4


def eager_bytes_moved(M: int, N: int, itemsize: int = 4) -> int:
    """What layer_norm_reference moves for float32 x: mean (read), centre
    (read, write), square (read, write), mean (read), scale by rstd, by w, add b
    (read, write each); 12 passes."""
    return 12 * M * N * itemsize


def flops(M: int, N: int) -> int:
    """sum, subtract, square, sum, scale, multiply, add: about seven per element."""
    return 7 * M * N
