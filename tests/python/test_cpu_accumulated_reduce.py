"""Reductions accumulated where computed (src/backends/cpu/codegen_fusion.cpp):
a reduce of a whole tile, along its one wide axis in lanes of 64, over a tile
that a fused loop computes anyway for other users (softmax's exponentials),
is accumulated by that loop in the reduce's own lanes and order, leaving the
reduce only its tree over the lanes.

The order is the point: the results must be the reduce's, bit for bit. Sums
of exactly representable values are checked against that order emulated in
NumPy; sums of exponentials against the same kernel reducing a reloaded copy
(which the reduce's own loop sums); both against plain NumPy references, on
masked tails and rows of several blocks, and which kernels accumulate, in the
generated source.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl

ACCUMULATED = "(accumulated by the loop below, in its lanes and order)"


@tegula.jit
def softmax_kernel(x_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=cols < N)


@tegula.jit
def softmax_reloaded_kernel(x_ptr, y_ptr, tmp_ptr, N, BLOCK_N: tl.constexpr):
    # The same exponentials, summed from a copy read back: the reduce's own loop.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(tmp_ptr + row * BLOCK_N + cols, e)
    total = tl.sum(tl.load(tmp_ptr + row * BLOCK_N + cols), axis=0)
    tl.store(y_ptr + row * N + cols, e / total, mask=cols < N)


@tegula.jit
def centre_half_kernel(x_ptr, y_ptr, mean_ptr, N, BLOCK_N: tl.constexpr):
    # fp16 widened to fp32 (exact): the sum is of exact values, its order decides the bits.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    xf = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(xf, axis=0) / N
    tl.store(mean_ptr + row, mean)
    tl.store(y_ptr + row * N + cols, xf - mean, mask=cols < N)


@tegula.jit
def argmax_of_exp_kernel(x_ptr, y_ptr, index_ptr, N, BLOCK_N: tl.constexpr):
    # A reduce of two tiles (values and their indices, arange: computed in place).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    e = tl.exp(x)
    tl.store(index_ptr + row, tl.argmax(e, axis=0))
    tl.store(y_ptr + row * N + cols, e, mask=cols < N)


@tegula.jit
def chunked_max_kernel(x_ptr, total_ptr, max_ptr, N, BLOCK: tl.constexpr):
    # In a loop of the program: each chunk's widened values feed the running
    # tile sum and the chunk's max, which the loop accumulates.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    best = -float("inf")
    for start in range(0, N, BLOCK):
        xf = tl.load(x_ptr + row * N + start + cols, mask=start + cols < N, other=-65504.0).to(tl.float32)
        best = tl.maximum(best, tl.max(xf, axis=0))
        total += xf
    tl.store(total_ptr + row * BLOCK + cols, total)
    tl.store(max_ptr + row, best)


@tegula.jit
def sum_only_kernel(x_ptr, s_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(s_ptr + row, tl.sum(tl.exp(x), axis=0))


def lanes_sum(values: np.ndarray) -> np.float32:
    """The CPU reduce's order over a row of float32: 64 lanes walk it in
    blocks, then combine as a tree (x with x + width, width 32 down to 1)."""
    lane = values[:64].astype(np.float32).copy()
    for k in range(64, values.size, 64):
        lane = lane + values[k:k + 64]
    width = 32
    while width >= 1:
        lane[:width] = lane[:width] + lane[width:2 * width]
        width //= 2
    return lane[0]


def cpu_source(kernel, *args, **constexprs):
    return kernel.inspect(*args, **constexprs).source


@pytest.mark.parametrize("N", [4096, 3000, 200, 130])
def test_softmax_sum_accumulated_is_the_reduce_bit_for_bit(backend, N):
    rng = np.random.default_rng(N)
    M, block = 7, tegula.next_power_of_2(N)
    x = (rng.standard_normal((M, N)) * 4).astype(np.float32)
    got = backend.empty((M, N), np.float32)
    softmax_kernel[(M,)](backend.array(x), got, N, BLOCK_N=block)
    got = backend.numpy(got)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)
    reloaded = backend.empty((M, N), np.float32)
    softmax_reloaded_kernel[(M,)](backend.array(x), reloaded, backend.empty((M, block), np.float32), N, BLOCK_N=block)
    if backend.name == "cpu":
        np.testing.assert_array_equal(got, backend.numpy(reloaded))
    else:
        np.testing.assert_allclose(got, backend.numpy(reloaded), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("N", [1024, 1000, 129])
def test_widened_sum_accumulated_in_the_reduce_order(backend, N):
    rng = np.random.default_rng(N + 1)
    M, block = 5, tegula.next_power_of_2(N)
    x = (rng.standard_normal((M, N)) * 100).astype(np.float16)
    y, mean = backend.empty((M, N), np.float32), backend.empty((M,), np.float32)
    centre_half_kernel[(M,)](backend.array(x), y, mean, N, BLOCK_N=block)
    y, mean = backend.numpy(y), backend.numpy(mean)
    padded = np.zeros((M, block), np.float32)
    padded[:, :N] = x
    want_mean = np.array([lanes_sum(r) for r in padded], np.float32) / np.float32(N)
    if backend.name == "cpu":
        np.testing.assert_array_equal(mean, want_mean)
        np.testing.assert_array_equal(y, x.astype(np.float32) - want_mean[:, None])
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis=1), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(y, x.astype(np.float32) - mean[:, None], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("N", [2048, 1500])
def test_argmax_of_two_tiles_accumulated(backend, N):
    rng = np.random.default_rng(N + 2)
    M, block = 6, tegula.next_power_of_2(N)
    x = rng.standard_normal((M, N)).astype(np.float32)
    x[1, N - 1] = 9.0   # the maximum in the last block (partial when N is not a block multiple)
    x[2, 3] = 9.0       # and in the first
    y, index = backend.empty((M, N), np.float32), backend.empty((M,), np.int32)
    argmax_of_exp_kernel[(M,)](backend.array(x), y, index, N, BLOCK_N=block)
    y = backend.numpy(y)
    np.testing.assert_allclose(y, np.exp(x), rtol=2e-6)
    np.testing.assert_array_equal(backend.numpy(index), np.argmax(y, axis=1))


@pytest.mark.parametrize("N", [1024, 900])
def test_chunk_max_accumulated_inside_a_loop(backend, N):
    rng = np.random.default_rng(N + 3)
    M, block = 4, 256
    x = (rng.standard_normal((M, N)) * 50).astype(np.float16)
    total, best = backend.empty((M, block), np.float32), backend.empty((M,), np.float32)
    chunked_max_kernel[(M,)](backend.array(x), total, best, N, BLOCK=block)
    padded = np.full((M, -(-N // block) * block), -65504.0, np.float32)
    padded[:, :N] = x
    want_total = np.zeros((M, block), np.float32)
    for start in range(0, padded.shape[1], block):
        want_total = want_total + padded[:, start:start + block]
    np.testing.assert_array_equal(backend.numpy(best), x.astype(np.float32).max(axis=1))
    np.testing.assert_array_equal(backend.numpy(total), want_total)


def test_which_reductions_are_accumulated(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")
    x = np.zeros((2, 4096), np.float32)
    # The exponentials are computed for the division anyway: their sum is accumulated by that loop, which
    # keeps no loop of its own; the max of the loaded row is not (nothing computes it, it is read in place).
    source = cpu_source(softmax_kernel, x, x, 4096, BLOCK_N=4096)
    assert source.count(ACCUMULATED) == 1 and "reduce(" in source.split(ACCUMULATED)[0].splitlines()[-1]
    assert "if (block == 0) {" in source
    # Rows of one block (64 elements) have no later block to accumulate.
    assert ACCUMULATED not in cpu_source(softmax_kernel, x, x, 64, BLOCK_N=64)
    # float64 lanes are 32 to a block of the loop's 64: the reduce keeps its loop.
    x64 = np.zeros((2, 4096), np.float64)
    assert ACCUMULATED not in cpu_source(softmax_kernel, x64, x64, 4096, BLOCK_N=4096)
    # Used by the reduce alone, the operand is computed where reduced: no loop computes it to accumulate in.
    assert ACCUMULATED not in cpu_source(sum_only_kernel, x, np.zeros(2, np.float32), 4096, BLOCK_N=4096)
    # Two tiles reduced together, one of them index arithmetic.
    source = cpu_source(argmax_of_exp_kernel, x, x, np.zeros(2, np.int32), 4096, BLOCK_N=4096)
    assert source.count(ACCUMULATED) == 1
    half = np.zeros((2, 1024), np.float16)
    source = cpu_source(chunked_max_kernel, half, np.zeros((2, 256), np.float32), np.zeros(2, np.float32), 1024,
                        BLOCK=256)
    assert source.count(ACCUMULATED) == 1
