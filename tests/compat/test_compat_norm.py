"""Layer norm forward and backward (with the spin-lock weight gradient),
RMSNorm forward and backward (atomic weight gradient) and Welford variance,
against NumPy in float64."""

import numpy as np
import pytest

from compat_kernels import norm
from compat_kernels.norm import triton
from compat_util import assert_close, randn


def test_layer_norm_forward_and_backward(rt):
    M, N, eps, group = 41, 300, 1e-5, 8
    x = randn(20, M, N) * 2 + 0.5
    w, b = randn(21, N), randn(22, N)
    dy = randn(23, M, N)
    block = triton.next_power_of_2(N)

    y, mean, rstd = rt.zeros((M, N), "float32"), rt.zeros(M, "float32"), rt.zeros(M, "float32")
    xd, wd = rt.array(x), rt.array(w)
    norm.layer_norm_fwd_kernel[(M,)](xd, y, wd, rt.array(b), mean, rstd, N, N, eps, BLOCK_N=block)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    inv = 1 / np.sqrt(x64.var(axis=1, keepdims=True) + eps)
    xhat = (x64 - mu) * inv
    assert_close(rt.numpy(mean), mu[:, 0], atol=1e-5)
    assert_close(rt.numpy(rstd), inv[:, 0], rtol=1e-4)
    assert_close(rt.numpy(y), xhat * w + b, atol=1e-4, rtol=1e-4)

    dx = rt.zeros((M, N), "float32")
    partial_dw, partial_db = rt.zeros((group, N), "float32"), rt.zeros((group, N), "float32")
    locks = rt.zeros(2 * group, "int32")
    norm.layer_norm_bwd_dx_kernel[(M,)](dx, rt.array(dy), partial_dw, partial_db, xd, wd, mean, rstd, locks,
                                        N, N, GROUP_SIZE=group, BLOCK_N=block)
    dw, db = rt.zeros(N, "float32"), rt.zeros(N, "float32")
    norm.layer_norm_bwd_dwdb_kernel[(triton.cdiv(N, 64),)](partial_dw, partial_db, dw, db, group, N,
                                                           BLOCK_G=4, BLOCK_N=64)
    wdy = w * dy.astype(np.float64)
    dx_ref = (wdy - xhat * (wdy * xhat).mean(axis=1, keepdims=True) - wdy.mean(axis=1, keepdims=True)) * inv
    assert_close(rt.numpy(dx), dx_ref, atol=1e-4, rtol=1e-4)
    assert_close(rt.numpy(dw), (dy * xhat).sum(axis=0), atol=1e-3, rtol=1e-4)
    assert_close(rt.numpy(db), dy.astype(np.float64).sum(axis=0), atol=1e-3, rtol=1e-4)
    # Every row went through the lock exactly once, and every lock was released.
    counts = rt.numpy(locks)
    np.testing.assert_array_equal(counts[:group], 0)
    np.testing.assert_array_equal(counts[group:], [len(range(g, M, group)) for g in range(group)])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rms_norm_forward_and_backward(rt, dtype):
    M, N, eps = 33, 200, 1e-6
    xd = rt.array(randn(24, M, N) * 3, dtype)
    wd = rt.array(randn(25, N), dtype)
    dyd = rt.array(randn(26, M, N), dtype)
    x, w, dy = (rt.numpy(a).astype(np.float64) for a in (xd, wd, dyd))
    block = triton.next_power_of_2(N)

    y, rstd = rt.zeros((M, N), dtype), rt.zeros(M, "float32")
    norm.rms_norm_fwd_kernel[(M,)](xd, y, wd, rstd, N, N, eps, BLOCK_N=block)
    inv = 1 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    tol = 1e-5 if dtype == "float32" else 1e-2
    assert_close(rt.numpy(rstd), inv[:, 0], rtol=1e-5)
    assert_close(rt.numpy(y), x * inv * w, atol=tol, rtol=tol)

    dx, dw = rt.zeros((M, N), dtype), rt.zeros(N, "float32")
    norm.rms_norm_bwd_kernel[(4,)](dyd, xd, wd, rstd, dx, dw, N, M, N, BLOCK_N=block)
    xhat = x * inv
    wdy = w * dy
    dx_ref = inv * (wdy - xhat * (wdy * xhat).mean(axis=1, keepdims=True))
    assert_close(rt.numpy(dx), dx_ref, atol=tol, rtol=tol)
    assert_close(rt.numpy(dw), (dy * xhat).sum(axis=0), atol=1e-3, rtol=1e-4)


def test_welford_mean_and_variance(rt):
    M, N = 9, 1500
    # A large mean over a small spread: the naive sum of squares would lose it in float32.
    x = (1000 + randn(27, M, N) * 0.1).astype(np.float32)
    mean, var = rt.zeros(M, "float32"), rt.zeros(M, "float32")
    norm.welford_kernel[(M,)](rt.array(x), mean, var, N, N, BLOCK=128)
    x64 = x.astype(np.float64)
    assert_close(rt.numpy(mean), x64.mean(axis=1), rtol=1e-6)
    assert_close(rt.numpy(var), x64.var(axis=1), rtol=2e-3)
