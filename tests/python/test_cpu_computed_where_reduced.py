"""Tiles computed where reduced on the CPU backend (codegen_fusion.cpp).

A tile whose only user is a reduce, computed by a few elementwise ops from
arrays of its own fused loop (layer norm's `centred * centred`), gets no
array: the reduce computes each element as it combines it. Results must
not change: checked exactly against NumPy in the kernel's summation order,
inside a loop whose carried tile is updated in place, and in the source.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl


@pytest.fixture(autouse=True)
def _cpu_only(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")


@tegula.jit
def variance_kernel(x_ptr, y_ptr, sq_ptr, N, KEEP: tl.constexpr, BLOCK: tl.constexpr):
    """y = centred * var, as layer norm: the centred row keeps its array
    for the last loop, and its squares are computed where reduced."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=in_row, other=0.0)
    centred = tl.where(in_row, x - tl.sum(x, axis=0) / N, 0.0)
    squares = centred * centred
    var = tl.sum(squares, axis=0) / N
    tl.store(y_ptr + row * N + cols, centred * var, mask=in_row)
    if KEEP:  # the squares have a second user: they keep their array
        tl.store(sq_ptr + row * N + cols, squares, mask=in_row)


@tegula.jit
def carried_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """acc += x three times, in place in the carried storage; the sum of
    acc * acc each time reads the updated acc."""
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    total = 0.0
    for _ in range(3):
        acc = acc + x
        total += tl.sum(acc * acc, axis=0)
    tl.store(out_ptr, total)


def tl_sum(v):
    """Sum over the last axis of a power-of-two-wide array in the order of
    the CPU reduce: 64 lanes walking the row, then a tree."""
    lanes = min(64, v.shape[-1])
    acc = v[..., :lanes].copy()
    for k in range(lanes, v.shape[-1], lanes):
        acc = acc + v[..., k:k + lanes]
    width = lanes // 2
    while width >= 1:
        acc = acc[..., :width] + acc[..., width:2 * width]
        width //= 2
    return acc[..., 0]


def _padded(x, block):
    out = np.zeros(x.shape[:-1] + (block,), dtype=np.float32)
    out[..., :x.shape[-1]] = x
    return out


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("N", [2048, 1500])
def test_variance_is_exact(N, keep):
    block = tegula.next_power_of_2(N)
    rng = np.random.default_rng(N)
    x = (rng.standard_normal((6, N), dtype=np.float32) * 2 + 1).astype(np.float32)
    y = np.empty_like(x)
    sq = np.zeros_like(x)
    variance_kernel[(6,)](x, y, sq, N, KEEP=keep, BLOCK=block)
    xp = _padded(x, block)
    mean = tl_sum(xp) / np.float32(N)
    centred = np.where(np.arange(block) < N, xp - mean[:, None], np.float32(0))
    squares = centred * centred
    var = tl_sum(squares) / np.float32(N)
    np.testing.assert_array_equal(y, (centred * var[:, None])[:, :N])
    if keep:
        np.testing.assert_array_equal(sq, squares[:, :N])


def test_squares_get_no_array_unless_used_again():
    x = np.zeros((2, 1024), dtype=np.float32)
    alone = variance_kernel.inspect(x, x, x, 1024, KEEP=False, BLOCK=1024).source
    assert "(computed where reduced)" in alone
    kept = variance_kernel.inspect(x, x, x, 1024, KEEP=True, BLOCK=1024).source
    assert "(computed where reduced)" not in kept


@pytest.mark.parametrize("N", [256, 100])
def test_carried_tile_updated_in_place_is_read_after_the_update(N):
    block = tegula.next_power_of_2(N)
    x = np.random.default_rng(1).standard_normal(N, dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    carried_kernel[(1,)](x, out, N, BLOCK=block)
    acc = np.zeros(block, dtype=np.float32)
    total = np.float32(0)
    for _ in range(3):
        acc = acc + _padded(x, block)
        total = np.float32(total + tl_sum(acc * acc))
    np.testing.assert_array_equal(out[0], total)
