"""Whole tiles on the CPU backend (src/backends/cpu/codegen_fusion.cpp).

A select whose condition is an in-bounds mask (`where(offs < n, x, 0)`) is
just x on a whole tile; a tile loaded whole is read where it lies when
nothing writes memory before its last use. Neither may change a result:
checked exactly against NumPy on whole tiles, masked tails and in-place
launches (the output is the input), and in the generated source.
"""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl


@pytest.fixture(autouse=True)
def _cpu_only(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")


@tegula.jit
def centre_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    """y = where(in_row, x - mean, 0) ** 2 + x: a select on the row mask
    between two reduces, and x used again after them."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=in_row, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(in_row, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0)
    tl.store(y_ptr + row * N + cols, centred * var + x, mask=in_row)


@tegula.jit
def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=in_row, other=-float("inf"))
    numerator = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * N + cols, numerator / tl.sum(numerator, axis=0), mask=in_row)


@tegula.jit
def overwrite_then_read_kernel(x_ptr, N, BLOCK: tl.constexpr):
    """Stores over its own input, then uses the tile it loaded before: the
    tile must keep the values it was loaded with."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=in_row, other=0.0)
    tl.store(x_ptr + row * N + cols, x * 0.0 - 1.0, mask=in_row)
    total = tl.sum(x, axis=0)
    tl.store(x_ptr + row * N + cols, x + total, mask=in_row)


@tegula.jit
def store_in_same_loop_kernel(x_ptr, N, BLOCK: tl.constexpr):
    """The loaded tile's last use shares its loop with a store over it: the
    tile keeps an array of its own (not checked here: results only)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    in_row = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=in_row, other=0.0)
    m = tl.max(x, axis=0)
    tl.store(x_ptr + row * N + cols, x - m, mask=in_row)


def _rows(M, N, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, N), dtype=np.float32) * 3 + 1).astype(np.float32)


def _centre_reference(x, N, block):
    """The kernel's arithmetic in float32 and in its order (lanes of 64, then a tree)."""
    def tl_sum(v):
        padded = np.zeros((v.shape[0], block), dtype=np.float32)
        padded[:, :v.shape[1]] = v
        lanes = min(64, block)
        acc = padded[:, :lanes].copy()
        for k in range(lanes, block, lanes):
            acc = acc + padded[:, k:k + lanes]
        width = lanes // 2
        while width >= 1:
            acc = acc[:, :width] + acc[:, width:2 * width]
            width //= 2
        return acc[:, 0:1]
    mean = tl_sum(x) / np.float32(N)
    centred = x - mean
    var = tl_sum(centred * centred)
    return centred * var + x


@pytest.mark.parametrize("N", [1024, 1000, 37])
def test_select_on_the_row_mask(N):
    block = tegula.next_power_of_2(N)
    x = _rows(5, N, N)
    y = np.empty_like(x)
    centre_kernel[(5,)](x, y, N, BLOCK=block)
    np.testing.assert_array_equal(y, _centre_reference(x, N, block))


def test_select_on_a_whole_tile_reads_no_mask():
    x = np.zeros((2, 1024), dtype=np.float32)
    lines = centre_kernel.inspect(x, x, 1024, BLOCK=1024).source.splitlines()
    # `centred` is computed again where used, from x read in place: the
    # store's loop for a whole tile reads x - mean, the one for a partial
    # tile the select.
    assert any("= select(" in line and "(recomputed where used)" in line for line in lines)
    stored = [line for line in lines if re.search(r"= \(?(tg_select\(.*, )?\(src\d+\[i\] - v\d+\)", line)]
    assert len(stored) == 2, stored  # the loop for a whole tile, then the one for a partial tile
    assert "tg_select" not in stored[0] and "tg_select(" in stored[1]


@pytest.mark.parametrize("N", [4096, 3000])
def test_softmax_in_place_matches_out_of_place(N):
    block = tegula.next_power_of_2(N)
    x = _rows(7, N, 1)
    y = np.empty_like(x)
    softmax_kernel[(7,)](x, y, N, BLOCK=block)
    inplace = x.copy()
    softmax_kernel[(7,)](inplace, inplace, N, BLOCK=block)
    np.testing.assert_array_equal(inplace, y)


def test_whole_load_is_read_in_place_when_nothing_writes_before_its_last_use():
    x = np.zeros((2, 4096), dtype=np.float32)
    source = softmax_kernel.inspect(x, x, 4096, BLOCK=4096).source
    assert "is read where it lies when whole" in source
    assert "? row" in source  # the pointer: the row when whole, the masked copy otherwise


@pytest.mark.parametrize("N", [256, 200])
def test_tile_used_after_a_store_over_it_keeps_its_values(N):
    block = tegula.next_power_of_2(N)
    x = _rows(3, N, 2)
    want = x + x.sum(axis=1, keepdims=True, dtype=np.float32)  # compared with a tolerance: sum order
    got = x.copy()
    overwrite_then_read_kernel[(3,)](got, N, BLOCK=block)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    source = overwrite_then_read_kernel.inspect(got, N, BLOCK=block).source
    assert "is read where it lies" not in source


@pytest.mark.parametrize("N", [512, 500])
def test_store_over_the_tile_after_its_reduce(N):
    block = tegula.next_power_of_2(N)
    x = _rows(4, N, 3)
    got = x.copy()
    store_in_same_loop_kernel[(4,)](got, N, BLOCK=block)
    np.testing.assert_array_equal(got, x - x.max(axis=1, keepdims=True))
