"""Loops that may run without limit poll for a stop in chunks of 256
iterations (backends/kernel_abi.h, "Stopping"; docs/backend-cpu.md): their
results are those of the same loops without polls, for trip counts below,
at and across chunk boundaries, on one program and on the pool, compared
against NumPy on random data. test_interrupts.py checks that they stop."""

from __future__ import annotations

import numpy as np
import pytest

import tegula
import tegula.language as tl

TRIPS = [0, 1, 255, 256, 257, 511, 512, 1000]


@tegula.jit
def column_sums(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for r in range(rows):
        acc += tl.load(x_ptr + r * cols + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, acc, mask=m)


@tegula.jit
def affine_steps(a_ptr, b_ptr, steps_ptr, out_ptr, BLOCK: tl.constexpr):
    # acc = acc * a + b, steps[pid] times: a while loop carrying a tile.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    steps = tl.load(steps_ptr + pid)
    acc = tl.zeros((BLOCK,), tl.float32)
    i = 0
    while i < steps:
        acc = acc * a + b
        i += 1
    tl.store(out_ptr + offs, acc)


@tegula.jit
def nested_counts(steps_ptr, out_ptr, inner):
    # A while inside a runtime for: sum over j < steps of (j * inner + k for k < inner).
    pid = tl.program_id(0)
    steps = tl.load(steps_ptr + pid)
    total = tl.zeros((1,), tl.int64).sum()
    for j in range(steps):
        k = 0
        while k < inner:
            total += j * inner + k
            k += 1
    tl.store(out_ptr + pid, total)


@pytest.mark.parametrize("rows", TRIPS)
def test_a_runtime_for_sums_as_numpy_does(rows):
    rng = np.random.default_rng(rows)
    cols = 300
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    for block in (512, 64):  # one program, and several on the pool
        out = np.full(cols, np.nan, np.float32)
        column_sums[(tegula.cdiv(cols, block),)](x, out, rows, cols, BLOCK=block)
        expected = np.zeros(cols, np.float32)
        for r in range(rows):
            expected += x[r]
        np.testing.assert_array_equal(out, expected)


def test_a_while_carrying_a_tile_computes_as_numpy_does():
    rng = np.random.default_rng(7)
    block = 16
    steps = np.array(TRIPS + [300, 2], np.int32)
    programs = len(steps)
    a = rng.uniform(0.5, 1.0, programs * block).astype(np.float32)
    b = rng.standard_normal(programs * block).astype(np.float32)
    out = np.full(programs * block, np.nan, np.float32)
    affine_steps[(programs,)](a, b, steps, out, BLOCK=block)
    expected = np.zeros(programs * block, np.float32)
    for p, n in enumerate(steps):
        part = slice(p * block, (p + 1) * block)
        for _ in range(n):
            expected[part] = expected[part] * a[part] + b[part]
    np.testing.assert_array_equal(out, expected)
    one = np.full(block, np.nan, np.float32)
    first = (programs - 3) * block  # 1000 steps, on the calling thread
    affine_steps[(1,)](a[first:], b[first:], steps[-3:], one, BLOCK=block)
    np.testing.assert_array_equal(one, expected[first:first + block])


def test_nested_polled_loops_count_as_numpy_does():
    rng = np.random.default_rng(3)
    steps = rng.integers(0, 700, 12).astype(np.int32)
    for inner in (0, 3, 300):
        out = np.zeros(len(steps), np.int64)
        nested_counts[(len(steps),)](steps, out, inner)
        j = [np.arange(n, dtype=np.int64) for n in steps]
        k = np.arange(inner, dtype=np.int64)
        expected = np.array([(jj[:, None] * inner + k[None, :]).sum() for jj in j], np.int64)
        np.testing.assert_array_equal(out, expected)
