"""Row-wise softmax of a 2-D array, ``y[i, :] = exp(x[i, :] - max_i) / sum(exp(x[i, :] - max_i))``.

One program per row; the whole row is one tile of ``BLOCK_N`` (the next power
of two at or above N) elements. Lanes past the end of the row load ``-inf`` so
they neither win the max nor add to the sum (``exp(-inf) = 0``). Subtracting
the row max first keeps ``exp`` from overflowing, as every serious softmax does.

Fused, the kernel reads x once and writes y once; NumPy eager makes several
passes over the array (max, subtract, exp, sum, divide), each through memory.

Run it: `python examples/softmax.py [--shapes 4x7 100x1000 ...] [--dtypes float32 float16]`.
Rows of any length work (the tile is the next power of two, the tail masked
with -inf); the script prints each shape it checked and OK when all agree.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)


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


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1", "4x7", "33x1000", "128x1024", "300x3000"]
TOLERANCES = {"float32": (1e-6, 1e-5), "float16": (1e-3, 1e-2)}


def parse_shape(text: str):
    rows, cols = (int(v) for v in text.lower().split("x"))
    return rows, cols


def check(M: int, N: int, dtype: str = "float32", seed: int = 0) -> None:
    """Raises AssertionError unless the kernel matches NumPy on random rows of shape [M, N]."""
    x = make_inputs(M, N, dtype, seed)
    y = softmax(x)
    atol, rtol = TOLERANCES[dtype]
    assert_close(y, softmax_reference(x), atol=atol, rtol=rtol)
    assert_close(y.astype(np.float32).sum(axis=1), np.ones(M, dtype=np.float32), atol=atol * N, rtol=0)


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
            print(f"softmax {M}x{N} {dtype:<8} matches NumPy (rows sum to 1)")
    print("OK")


if __name__ == "__main__":
    main()
