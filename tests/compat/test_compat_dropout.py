"""Seeded dropout (tutorial 04) against a NumPy Philox-4x32-10: the keep mask
is bit-exact, and the backward pass recomputes the same mask."""

import numpy as np
import pytest

from compat_kernels import dropout
from compat_kernels.dropout import triton
from compat_util import assert_close, randn

_ROUND_A, _ROUND_B = np.uint32(0xD2511F53), np.uint32(0xCD9E8D57)
_KEY_A, _KEY_B = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)


def _mul_hi_lo(a, b):
    product = a.astype(np.uint64) * b.astype(np.uint64)
    return (product >> np.uint64(32)).astype(np.uint32), product.astype(np.uint32)


def philox_first_word(seed: int, counters: np.ndarray) -> np.ndarray:
    """Word 0 of Philox-4x32 with 10 rounds on counters (c, 0, 0, 0), keyed by the 64-bit seed."""
    c0 = counters.astype(np.uint32)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    with np.errstate(over="ignore"):
        for _ in range(10):
            hi_b, lo_b = _mul_hi_lo(np.full_like(c2, _ROUND_B), c2)
            hi_a, lo_a = _mul_hi_lo(np.full_like(c0, _ROUND_A), c0)
            c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
            k0, k1 = k0 + _KEY_A, k1 + _KEY_B
    return c0


def uniform(words: np.ndarray) -> np.ndarray:
    """Word -> float32 in [0, 1): read as signed, fold negatives, scale by just under 2^-31."""
    signed = words.view(np.int32).astype(np.int64)
    magnitude = np.where(signed < 0, -signed - 1, signed)
    return magnitude.astype(np.float32) * np.float32(4.6566127342e-10)


@pytest.mark.parametrize("seed", [1234, 2**40 + 7])
def test_seeded_dropout(rt, seed):
    n, p = 5003, 0.3
    x = randn(40, n)
    out = rt.zeros(n, "float32")
    grid = (triton.cdiv(n, 1024),)
    dropout.seeded_dropout_kernel[grid](rt.array(x), out, n, p, seed, BLOCK=1024)
    keep = uniform(philox_first_word(seed, np.arange(n))) > np.float32(p)
    scale = np.float32(1) - np.float32(p)
    result = rt.numpy(out)
    np.testing.assert_array_equal(result != 0, keep)
    assert_close(result, np.where(keep, x / scale, 0), atol=0, rtol=1e-6)
    assert abs(keep.mean() - (1 - p)) < 0.03

    dy = randn(41, n)
    dx = rt.zeros(n, "float32")
    dropout.dropout_backward_kernel[grid](rt.array(dy), dx, n, p, seed, BLOCK=1024)
    np.testing.assert_array_equal(rt.numpy(dx) != 0, keep)
