"""Layer normalization forward over the rows of a 2-D array.

For each row: ``mean = sum(x) / N``, ``var = sum((x - mean)^2) / N``,
``rstd = 1 / sqrt(var + eps)`` and ``y = (x - mean) * rstd * w + b``. The
kernel also stores ``mean`` and ``rstd`` per row, which a backward pass needs.

One program per row; the row is one tile of ``BLOCK_N`` (next power of two
>= N) lanes. Lanes past N load 0 and are masked out of the centred values so
they do not count in the variance. Statistics are computed in float32 whatever
the input dtype.

Run it: `python examples/layer_norm.py [--shapes 4x7 100x1000 ...] [--dtypes float32 float16]`.
Checks y, and the per-row mean and rstd the kernel stores for a backward pass;
prints each shape it checked and OK when all agree.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

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


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1", "4x7", "33x1000", "128x1024", "300x3000"]
TOLERANCES = {"float32": (1e-5, 1e-4), "float16": (1e-2, 1e-2)}


def parse_shape(text: str):
    rows, cols = (int(v) for v in text.lower().split("x"))
    return rows, cols


def check(M: int, N: int, dtype: str = "float32", seed: int = 0) -> None:
    """Raises AssertionError unless y, mean and rstd match NumPy for random x of shape [M, N]."""
    x, weight, bias = make_inputs(M, N, dtype, seed)
    y, mean, rstd = layer_norm(x, weight, bias)
    want_y, want_mean, want_rstd = layer_norm_reference(x, weight, bias)
    atol, rtol = TOLERANCES[dtype]
    assert_close(y, want_y, atol=atol, rtol=rtol)
    assert_close(mean, want_mean, atol=1e-5, rtol=1e-4)
    # A one-element row has zero variance, so rstd = 1/sqrt(eps) is large: compare relatively.
    assert_close(rstd, want_rstd, atol=1e-5, rtol=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxN, e.g. 33x1000",
                        type=_cli.shape("MxN"))
    parser.add_argument("--dtypes", nargs="+", default=list(TOLERANCES), choices=list(TOLERANCES))
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N = parse_shape(shape)
            check(M, N, dtype)
            print(f"layer_norm {M}x{N} {dtype:<8} y, mean and rstd match NumPy")
    print("OK")


if __name__ == "__main__":
    main()
