"""Element loops over f16 and bf16 tiles compute the right elements on the CPU
backend, bit for bit against NumPy doing the same f32 arithmetic.

g++ 12 at -O3 on AVX-512 miscompiled such loops when they carried the
`GCC ivdep` hint (every element of a 128-lane f16 tile wrong, differently
from run to run), though they carry no dependence; clang and debug mode were
right. Units that use 16-bit (or 8-bit) floats now leave the hint out on
g++ (backends/cpu/codegen.cpp). These kernels are the smallest that showed
it: several programs, each with its own offset, a masked tail and a scalar
loaded per program. They take NumPy arrays, so they run on the CPU whatever
backend the suite runs.
"""

import ml_dtypes
import numpy as np
import pytest

import tegula
import tegula.language as tl

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


@tegula.jit
def scaled_difference(o_ptr, a_ptr, b_ptr, d_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + pid * n + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + pid * n + offs, mask=mask, other=0.0)
    d = tl.load(d_ptr + pid)
    tl.store(o_ptr + pid * n + offs, a * (b - d), mask=mask)


@tegula.jit
def softmax_backward(dx_ptr, y_ptr, dy_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=0)
    tl.store(dx_ptr + row * n + offs, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)


def rounded(x, dtype):
    return np.asarray(x, np.float32).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [128, 256, 512])
def test_elementwise_f16_loops_are_exact(dtype, block):
    dt = DTYPES[dtype]
    rng = np.random.default_rng(block)
    rows = 3
    for n in sorted({1, 5, 33, 100, block - 3, block}):
        a = rng.standard_normal(rows * n).astype(dt)
        b = rng.standard_normal(rows * n).astype(dt)
        d = rng.standard_normal(rows).astype(dt)
        expected = rounded(a.reshape(rows, n).astype(np.float32) *
                           rounded(b.reshape(rows, n).astype(np.float32) - d[:, None].astype(np.float32), dt)
                           .astype(np.float32), dt).reshape(-1)
        for _ in range(3):  # the miscompiled loops gave different garbage each run
            out = np.full(rows * n, 7.0, dt)
            scaled_difference[(rows,)](out, a, b, d, n, BLOCK=block)
            np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16), err_msg=f"n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [200, 256, 1000])
def test_f16_softmax_backward_matches_numpy(dtype, n):
    dt = DTYPES[dtype]
    rng = np.random.default_rng(n)
    rows = 4
    logits = rng.standard_normal((rows, n))
    y = (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(dt)
    dy = rng.standard_normal((rows, n)).astype(dt)
    dx = np.zeros((rows, n), dt)
    softmax_backward[(rows,)](dx, y, dy, n, BLOCK=triton_next_pow2(n))
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    expected = y64 * (dy64 - (y64 * dy64).sum(1, keepdims=True))
    tolerance = 1e-2 if dtype == "float16" else 6e-2
    np.testing.assert_allclose(dx.astype(np.float64), expected, rtol=tolerance, atol=tolerance * np.abs(expected).max())


def triton_next_pow2(n):
    return 1 << (n - 1).bit_length()
