"""Histogram, cumulative sums, a linear recurrence by associative_scan,
argmax and top-k by sorting, against NumPy."""

import numpy as np
import pytest

from compat_kernels import scan
from compat_kernels.scan import triton
from compat_util import assert_close, randn, rng


def test_histogram(rt):
    n, bins = 10_001, 64
    x = rng(70).integers(0, bins, n).astype(np.int32)
    hist = rt.zeros(bins, "int32")
    scan.histogram_kernel[(triton.cdiv(n, 1024),)](rt.array(x), hist, n, NUM_BINS=bins, BLOCK=1024)
    np.testing.assert_array_equal(rt.numpy(hist), np.bincount(x, minlength=bins))


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_chunked_cumsum(rt, dtype):
    rows, cols = 6, 700
    x = rng(71).integers(-50, 50, (rows, cols)).astype(dtype)
    out = rt.zeros((rows, cols), dtype)
    scan.cumsum_rows_kernel[(rows,)](rt.array(x), out, cols, cols, BLOCK=256)
    # Small integers: every partial sum is exact in float32 too.
    np.testing.assert_array_equal(rt.numpy(out), np.cumsum(x, axis=1, dtype=dtype))


def test_reverse_cumsum(rt):
    n = 100
    x = randn(72, n)
    out = rt.zeros(n, "float32")
    scan.reverse_cumsum_kernel[(1,)](rt.array(x), out, n, BLOCK=128)
    assert_close(rt.numpy(out), np.cumsum(x[::-1].astype(np.float64))[::-1], atol=1e-5)


def test_linear_recurrence_associative_scan(rt):
    rows, seq = 4, 300
    a = rng(73).uniform(0.5, 1.0, (rows, seq)).astype(np.float32)
    b = randn(74, rows, seq)
    h = rt.zeros((rows, seq), "float32")
    scan.linear_recurrence_kernel[(rows,)](rt.array(a), rt.array(b), h, seq, seq, BLOCK=512)
    ref = np.zeros((rows, seq))
    state = np.zeros(rows)
    for t in range(seq):
        state = a[:, t] * state + b[:, t]
        ref[:, t] = state
    assert_close(rt.numpy(h), ref, atol=1e-4, rtol=1e-4)


def test_argmax_rows(rt):
    rows, cols = 12, 1000
    x = randn(75, rows, cols)
    index, value = rt.zeros(rows, "int32"), rt.zeros(rows, "float32")
    scan.argmax_rows_kernel[(rows,)](rt.array(x), index, value, cols, cols, BLOCK=1024)
    np.testing.assert_array_equal(rt.numpy(index), x.argmax(axis=1))
    np.testing.assert_array_equal(rt.numpy(value), x.max(axis=1))


def test_topk_by_sort(rt):
    rows, cols, k = 9, 200, 8
    x = randn(76, rows, cols)
    x[2, 10:20] = 3.5  # ties: the smaller columns win
    x[5] = -np.abs(x[5])  # all negative
    values, indices = rt.zeros((rows, k), "float32"), rt.zeros((rows, k), "int32")
    scan.topk_rows_kernel[(rows,)](rt.array(x), values, indices, cols, cols, K=k, BLOCK=256)
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(rt.numpy(indices), order)
    np.testing.assert_array_equal(rt.numpy(values), np.take_along_axis(x, order, axis=1))
