"""Pointer tiles a loop advances by one scalar step (`ptrs += step`), which
the CPU backend keeps as their initial tile plus an offset
(src/backends/cpu/codegen_advanced_pointers.cpp): loads and stores through
them, a loop result used after the loop, negative and runtime steps, and
tiles the loop reads after advancing them (kept as plain arrays), and the
check before the loop of whether each row of such a tile holds consecutive
addresses (rows of `(start + arange) % n`: contiguous unless they wrap; any
stride). Each kernel is checked against the same walk in NumPy on random
data with a masked tail or wrapped columns."""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import np_dtype, rng_for


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


@tegula.jit
def wrapped_columns_kernel(x_ptr, out_ptr, n, stride_r, stride_c, steps, step, BLOCK_R: tl.constexpr,
                           BLOCK_C: tl.constexpr):
    # A matmul's B tile: columns (pid * BLOCK_C + arange) % n, so a program
    # whose columns pass n reads the first ones again. Sums `steps` tiles
    # `step` elements apart and stores the sum as the program's block.
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK_R)[:, None]
    c = tl.arange(0, BLOCK_C)[None, :]
    cols = (pid * BLOCK_C + tl.arange(0, BLOCK_C)) % n
    ptrs = x_ptr + r * stride_r + cols[None, :] * stride_c
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for _ in range(steps):
        acc += tl.load(ptrs).to(tl.float32)
        ptrs += step
    tl.store(out_ptr + pid * BLOCK_R * BLOCK_C + r * BLOCK_C + c, acc)


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


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("n,stride_c", [(40, 1), (48, 1), (40, 2), (40, 3)])
def test_wrapped_columns_are_checked_for_contiguity(dtype, n, stride_c):
    # n = 40 with 16-column blocks: programs 0 and 1 read contiguous rows, 2
    # wraps at 40; n = 48: none wraps, which axis info knows (n is specialized
    # as a multiple of 16), so no check; stride_c 2, 3: no row is contiguous.
    block_r, block_c, steps = 4, 16, 3
    stride_r = n * stride_c + 5
    step = block_r * stride_r
    programs = tegula.cdiv(n, block_c)
    x32 = rng_for(f"wrapped{n}{stride_c}{dtype}").standard_normal(steps * step + stride_r).astype(np.float32)
    x = x32.astype(np_dtype(dtype))
    out = np.zeros(programs * block_r * block_c, np.float32)
    wrapped_columns_kernel[(programs,)](x, out, n, stride_r, stride_c, steps, step, BLOCK_R=block_r,
                                        BLOCK_C=block_c)
    wide = x.astype(np.float64)
    want = np.zeros((programs, block_r, block_c))
    for pid in range(programs):
        cols = (pid * block_c + np.arange(block_c)) % n
        base = np.arange(block_r)[:, None] * stride_r + cols[None, :] * stride_c
        for k in range(steps):
            want[pid] += wide[base + k * step]
    np.testing.assert_allclose(out.reshape(programs, block_r, block_c), want, rtol=1e-6, atol=1e-6)
    source = wrapped_columns_kernel.inspect(x, out, n, stride_r, stride_c, steps, step, BLOCK_R=block_r,
                                            BLOCK_C=block_c).source
    assert ("holds consecutive addresses" in source) == (n % block_c != 0 or stride_c != 1)
