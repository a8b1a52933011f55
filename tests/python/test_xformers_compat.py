"""Two constructs of xformers' Triton kernels that Triton accepts: tl.constexpr() of a tensor (the split-K
attention's causal diagonal) and tl.device_assert(False) on a path that does not run (the sequence-parallel
matmul's timeout), with NumPy references on random data and masked tails."""

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def causal_kernel(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    rows = offs[:, None] - offs[None, :]
    diag = tl.constexpr(rows + shift)  # a constexpr wrapping a tensor, as Triton allows
    mask = (offs[:, None] < n) & (offs[None, :] < n)
    x = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=mask, other=0.0)
    start = tl.program_id(0) * 0 + shift  # a runtime scalar
    y = tl.where(diag >= start + 1, x, -x)
    tl.store(out_ptr + offs[:, None] * n + offs[None, :], y, mask=mask)


@pytest.mark.parametrize("n", [5, 13, 16])
def test_constexpr_of_a_tensor_is_the_tensor(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n)).astype(np.float32)
    out = np.full((n, n), np.nan, np.float32)
    causal_kernel[(1,)](x, out, n, 3, BLOCK=16)
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(out, np.where(i - j + 3 >= 3 + 1, x, -x))


@tegula.jit(debug=True)
def guarded_kernel(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if limit < 0:
        tl.device_assert(False, "limit must not be negative")
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


def test_a_constant_false_device_assert_fails_only_when_reached():
    rng = np.random.default_rng(0)
    n = 77
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    guarded_kernel[(3,)](x, out, n, 5, BLOCK=32)
    np.testing.assert_array_equal(out, x * 2)
    with pytest.raises(Exception, match="limit must not be negative"):
        guarded_kernel[(3,)](x, out, n, -1, BLOCK=32)
