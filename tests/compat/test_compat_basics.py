"""Vector add (tutorial 01), autotune and heuristics, libdevice GELU, a
persistent kernel and 3-D tiles, each against NumPy."""

import numpy as np
import pytest

from compat_kernels import basics
from compat_kernels.basics import triton
from compat_util import assert_close, randn


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_vector_add(rt, dtype):
    n = 10007  # prime: the last program is masked
    x, y = randn(1, n).astype(dtype), randn(2, n).astype(dtype)
    out = rt.empty(n, dtype)
    basics.add_kernel[(triton.cdiv(n, 1024),)](rt.array(x), rt.array(y), out, n, BLOCK_SIZE=1024)
    np.testing.assert_array_equal(rt.numpy(out), x + y)


def test_autotuned_axpy(rt):
    n = 3001
    x, y = randn(3, n), randn(4, n)
    out = rt.empty(n, "float32")
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    basics.axpy_kernel[grid](rt.array(x), rt.array(y), out, 1.5, n)
    assert_close(rt.numpy(out), np.float32(1.5) * x + y)
    assert basics.axpy_kernel.best_config.kwargs["BLOCK"] in (128, 512)


@pytest.mark.parametrize("n", [1024, 1000])
def test_heuristics_pick_the_unmasked_path(rt, n):
    x = randn(5, n)
    out = rt.empty(n, "float32")
    basics.scale_shift_kernel[(triton.cdiv(n, 256),)](rt.array(x), out, 2.0, -1.0, n, BLOCK=256)
    assert_close(rt.numpy(out), x * 2 - 1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gelu_tanh_libdevice(rt, dtype):
    n = 777
    x = randn(6, n) * 3
    xd = rt.array(x, dtype)
    out = rt.empty(n, dtype)
    basics.gelu_kernel[(triton.cdiv(n, 256),)](xd, out, n, BLOCK=256)
    xr = rt.numpy(xd).astype(np.float64)  # the inputs as the kernel saw them (rounded to bf16)
    ref = 0.5 * xr * (1 + np.tanh(np.sqrt(2 / np.pi) * (xr + 0.044715 * xr**3)))
    tol = 1e-5 if dtype == "float32" else 1e-2
    assert_close(rt.numpy(out), ref, atol=tol, rtol=tol)


def test_persistent_sum_of_squares(rt):
    n = 50_003
    x = randn(7, n)
    total = rt.zeros(1, "float32")
    basics.sum_of_squares_persistent_kernel[(6,)](rt.array(x), total, n, BLOCK=512)
    assert_close(rt.numpy(total)[0], np.sum(x.astype(np.float64) ** 2), rtol=1e-5)


def test_3d_tiles_transpose_and_sum(rt):
    B, M, N = 5, 6, 12
    x = np.zeros((B, M, N + 3), np.float32)  # padded rows: the kernel gets the strides
    x[:, :, :N] = randn(8, B, M, N)
    xt = rt.zeros((B, N, M), "float32")
    sums = rt.zeros(B, "float32")
    basics.transpose_and_sum_3d_kernel[(triton.cdiv(B, 2),)](
        rt.array(x), xt, sums, B, M, N, M * (N + 3), N + 3, BLOCK_B=2, BLOCK_M=8, BLOCK_N=16)
    np.testing.assert_array_equal(rt.numpy(xt), np.transpose(x[:, :, :N], (0, 2, 1)))
    assert_close(rt.numpy(sums), x[:, :, :N].sum(axis=(1, 2)), atol=1e-5)
