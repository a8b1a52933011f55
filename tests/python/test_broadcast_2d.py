"""The masked 2-D example: [:, None] broadcasting, non-power-of-two extents, strides."""

import numpy as np
import pytest

import tegula
from broadcast_2d import scale_bias, scale_bias_kernel


@pytest.mark.parametrize("shape", [(37, 101), (1, 1), (16, 32), (100, 3), (129, 65)])
@pytest.mark.parametrize("blocks", [(16, 32), (8, 128)])
def test_matches_numpy(shape, blocks):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    M, N = shape
    x = rng.standard_normal((M, N)).astype(np.float32)
    scale = rng.standard_normal(N).astype(np.float32)
    bias = rng.standard_normal(M).astype(np.float32)
    out = scale_bias(x, scale, bias, *blocks)
    tegula.testing.assert_close(out, x * scale[None, :] + bias[:, None])


def test_non_contiguous_input_uses_strides():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((74, 202)).astype(np.float32)
    x = base[::2, 1::2]  # 37 x 101 view with strides (404, 2) elements
    assert not x.flags.c_contiguous
    scale = rng.standard_normal(101).astype(np.float32)
    bias = rng.standard_normal(37).astype(np.float32)
    tegula.testing.assert_close(scale_bias(x, scale, bias), x * scale[None, :] + bias[:, None])


def test_transposed_output_through_strides():
    rng = np.random.default_rng(8)
    M, N = 37, 101
    x = rng.standard_normal((M, N)).astype(np.float32)
    scale = np.ones(N, dtype=np.float32)
    bias = np.zeros(M, dtype=np.float32)
    out_t = np.zeros((N, M), dtype=np.float32)  # write out[i, j] to out_t[j, i]
    grid = (tegula.cdiv(M, 16), tegula.cdiv(N, 32))
    scale_bias_kernel[grid](x, scale, bias, out_t, M, N, N, 1, 1, M, BLOCK_M=16, BLOCK_N=32)
    np.testing.assert_array_equal(out_t, x.T)
