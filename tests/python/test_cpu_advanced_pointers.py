"""Pointer tiles a loop advances by one scalar step (`ptrs += step`), which
the CPU backend keeps as their initial tile plus an offset
(src/backends/cpu/codegen_advanced_pointers.cpp): loads and stores through
them, a loop result used after the loop, negative and runtime steps, and
tiles the loop reads after advancing them (kept as plain arrays). Each
kernel is checked against the same walk in NumPy on random data with a
masked tail."""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import rng_for


@tegula.jit
def walk_kernel(x_ptr, out_ptr, rows, n, step, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # Sums `rows` row blocks of x (row r at r * step) and stores the sum, then
    # the block the advanced pointers reach after the loop (a used result).
    r = tl.arange(0, BLOCK_R)[:, None]
    c = tl.arange(0, BLOCK_C)[None, :]
    keep = c < n
    ptrs = x_ptr + r * n + c
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for _ in range(rows):
        acc += tl.load(ptrs, mask=keep, other=0.0)
        ptrs += step
    tl.store(out_ptr + r * n + c, acc, mask=keep)
    tl.store(out_ptr + BLOCK_R * n + r * n + c, tl.load(ptrs, mask=keep, other=0.0), mask=keep)


@tegula.jit
def reread_kernel(x_ptr, out_ptr, n, steps, BLOCK: tl.constexpr):
    # Reads the tile after advancing it in the same iteration: no offset.
    offs = tl.arange(0, BLOCK)
    keep = offs < n
    ptrs = x_ptr + offs
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(steps):
        ptrs += n
        acc += tl.load(ptrs, mask=keep, other=0.0)
    tl.store(out_ptr + offs, acc, mask=keep)


def walk_reference(x, rows, step, block_r, n):
    flat = x.reshape(-1)
    base = np.arange(block_r)[:, None] * n + np.arange(n)[None, :]
    acc = np.zeros((block_r, n), np.float32)
    for k in range(rows):
        acc += flat[base + k * step]
    return acc, flat[base + rows * step]


@pytest.mark.parametrize("rows,n,forward", [(5, 13, True), (1, 16, True), (4, 7, False), (0, 9, True)])
def test_advanced_pointer_tile_loads_and_result(rows, n, forward):
    block_r, block_c = 4, 16
    step = 3 * n if forward else -3 * n
    total = block_r * n + 3 * n * (rows + 1) + n
    x = rng_for(f"walk{rows}{n}{forward}").standard_normal(total).astype(np.float32)
    start = 0 if forward else total - block_r * n
    out = np.zeros(2 * block_r * n, np.float32)
    view = x[start:]
    walk_kernel[(1,)](view, out, rows, n, step, BLOCK_R=block_r, BLOCK_C=block_c)
    if forward:
        acc, after = walk_reference(x, rows, step, block_r, n)
    else:  # the same walk read backwards from `start`
        flat = x
        base = start + np.arange(block_r)[:, None] * n + np.arange(n)[None, :]
        acc = np.zeros((block_r, n), np.float32)
        for k in range(rows):
            acc += flat[base + k * step]
        after = flat[base + rows * step]
    np.testing.assert_allclose(out[:block_r * n].reshape(block_r, n), acc, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[block_r * n:].reshape(block_r, n), after)


def test_advanced_pointer_tile_is_an_offset_in_the_source():
    x = np.zeros(64, np.float32)
    out = np.zeros(32, np.float32)
    source = walk_kernel.inspect(x, out, 2, 4, 4, BLOCK_R=4, BLOCK_C=4).source
    assert "keeps its initial pointers" in source
    assert "tg_addptr(v" in source


@pytest.mark.parametrize("steps,n", [(3, 10), (1, 16)])
def test_tile_read_after_its_advance(steps, n):
    block = 16
    x = rng_for(f"reread{steps}{n}").standard_normal(n * (steps + 1)).astype(np.float32)
    out = np.zeros(n, np.float32)
    reread_kernel[(1,)](x, out, n, steps, BLOCK=block)
    expected = sum(x[k * n:(k + 1) * n] for k in range(1, steps + 1))
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    source = reread_kernel.inspect(x, out, n, steps, BLOCK=block).source
    assert "keeps its initial pointers" not in source
