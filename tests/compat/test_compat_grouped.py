"""A grouped GEMM over tables of addresses and an fp8 quantization round trip, against NumPy."""

import numpy as np
import pytest

from compat_kernels import grouped
from compat_kernels.grouped import tl, triton
from compat_util import assert_close, randn


def address(x) -> int:
    return x.data_ptr() if hasattr(x, "data_ptr") else x.ctypes.data


def test_grouped_matmul_with_pointer_arrays(rt):
    sizes = [(40, 24, 32), (17, 33, 20), (64, 16, 48)]
    a = [randn(50 + i, m, k).astype(np.float16) for i, (m, n, k) in enumerate(sizes)]
    b = [randn(60 + i, k, n).astype(np.float16) for i, (m, n, k) in enumerate(sizes)]
    da, db = [rt.array(x) for x in a], [rt.array(x) for x in b]
    dc = [rt.zeros((m, n), "float16") for m, n, k in sizes]
    table = lambda xs: rt.array(np.array([address(x) for x in xs], np.int64))  # noqa: E731
    gemm_sizes = rt.array(np.array(sizes, np.int32).ravel())
    lds = rt.array(np.array([(k, n, n) for m, n, k in sizes], np.int32).ravel())
    num_sm = 4
    grouped.grouped_matmul_kernel[(num_sm,)](table(da), table(db), table(dc), gemm_sizes, lds, len(sizes),
                                             NUM_SM=num_sm, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    for x, y, c in zip(a, b, dc):
        assert_close(rt.numpy(c), x.astype(np.float64) @ y.astype(np.float64), atol=3e-2, rtol=1e-2)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_quantize_round_trip(rt, fmt):
    dtype, fp8_max = (tl.float8e4nv, 448.0) if fmt == "e4m3" else (tl.float8e5, 57344.0)
    rows, cols = 5, 100
    x = randn(70, rows, cols)
    q = rt.zeros((rows, cols), "uint8")
    scale = rt.zeros((rows,), "float32")
    y = rt.zeros((rows, cols), "float32")
    grouped.fp8_quantize_kernel[(rows,)](rt.array(x), triton.reinterpret(q, dtype), scale, cols, BLOCK=128,
                                         FP8_MAX=fp8_max)
    grouped.fp8_dequantize_kernel[(rows,)](triton.reinterpret(q, dtype), scale, y, cols, BLOCK=128)
    want_scale = np.abs(x).max(axis=1) / fp8_max
    assert_close(rt.numpy(scale), want_scale, rtol=1e-6, what="scale")
    # e4m3 keeps 3 mantissa bits (relative error <= 2^-4), e5m2 2 bits (<= 2^-3).
    rel = 2.0 ** -4 if fmt == "e4m3" else 2.0 ** -3
    tiny = want_scale[:, None] * (2.0 ** -9 if fmt == "e4m3" else 2.0 ** -16)
    assert (np.abs(rt.numpy(y) - x) <= rel * np.abs(x) + tiny).all()
