"""Property-based checks (hypothesis): random extents, strides and values
through a few kernels whose specialization does not depend on them, so
hypothesis explores the masks and tails without a compile per example."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tegula
import tegula.language as tl

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@tegula.jit(do_not_specialize=["n"])
def axpb_kernel(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.where(x > y, x * a, y - x), mask=m)


@SETTINGS
@given(n=st.integers(1, 5000), a=st.floats(-4, 4, width=32), seed=st.integers(0, 2**31 - 1))
def test_masked_elementwise_random_extent(backend, n, a, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = backend.full((n + 7,), 123.0, np.float32)  # the tail past n must stay untouched
    axpb_kernel[(tegula.cdiv(n, 256),)](backend.array(x), backend.array(y), out, n, a, BLOCK=256)
    got = backend.numpy(out)
    want = np.where(x > y, x * np.float32(a), y - x)
    np.testing.assert_array_equal(got[:n], want)
    np.testing.assert_array_equal(got[n:], 123.0)


@tegula.jit(do_not_specialize=["M", "N", "stride"])
def row_max_kernel(x_ptr, out_ptr, M, N, stride, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    v = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(v, axis=0))


@SETTINGS
@given(m=st.integers(1, 40), n=st.integers(1, 128), pad=st.integers(0, 9), seed=st.integers(0, 2**31 - 1))
def test_row_max_random_shapes_and_strides(backend, m, n, pad, seed):
    rng = np.random.default_rng(seed)
    buf = rng.integers(-1000, 1000, size=(m, n + pad)).astype(np.float32)
    x = backend.array(buf)
    out = backend.zeros((m,), np.float32)
    row_max_kernel[(m,)](x, out, m, n, backend.strides(x)[0], BN=128)
    np.testing.assert_array_equal(backend.numpy(out), buf[:, :n].max(axis=1))
