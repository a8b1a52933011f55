"""reshape, permute, split and join of a tensor-core accumulator on the CUDA backend, through the host emulator:
the halves of a row taken apart and put back together stay in the threads that hold them (layout_linear.cpp),
as rotary embedding's gradient rotated back in an attention epilogue does, and the values are NumPy's. The
same kernels on the CPU backend run in every test of the shape ops; here only the CUDA layouts change."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import emulate, require_emulator


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


@tegula.jit
def rotate_halves_kernel(A, B, COS, SIN, OUT, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # OUT = the rows of A @ B with their halves rotated: x1 c + x2 s, x2 c - x1 s.
    rows, cols, ks = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    g = tl.dot(tl.load(A + rows[:, None] * K + ks[None, :]), tl.load(B + ks[:, None] * N + cols[None, :]))
    HALF: tl.constexpr = N // 2
    g1, g2 = tl.split(tl.permute(tl.reshape(g, [M, 2, HALF]), [0, 2, 1]))
    half = tl.arange(0, HALF)
    table = rows[:, None] * HALF + half[None, :]
    c, s = tl.load(COS + table), tl.load(SIN + table)
    tl.store(OUT + rows[:, None] * N + half[None, :], g1 * c + g2 * s)
    tl.store(OUT + rows[:, None] * N + HALF + half[None, :], g2 * c - g1 * s)


@tegula.jit
def interleave_halves_kernel(A, B, OUT, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # OUT's columns alternate between the product's two halves, the second negated: split, then join.
    rows, cols, ks = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    g = tl.dot(tl.load(A + rows[:, None] * K + ks[None, :]), tl.load(B + ks[:, None] * N + cols[None, :]))
    g1, g2 = tl.split(tl.permute(tl.reshape(g, [M, 2, N // 2]), [0, 2, 1]))
    tl.store(OUT + rows[:, None] * N + cols[None, :], tl.reshape(tl.join(g1, -g2), [M, N]))


def operands(M, N, K, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def through(source: str, first: str, last: str) -> str:
    """The generated code from the op whose comment has `first` through the one whose comment has `last`."""
    start = source.index(first)
    end = source.index(last, start)
    following = source.find("// v", end)
    return source[start:following if following >= 0 else len(source)]


@pytest.mark.parametrize("arch,warps,M,N", [(90, 4, 64, 64), (90, 8, 128, 64), (80, 4, 64, 32)])
def test_rotated_halves_stay_in_their_threads(arch, warps, M, N):
    K = 32
    a, b, product = operands(M, N, K, seed=M + N + arch)
    rng = np.random.default_rng(1)
    angles = rng.uniform(0, 2 * np.pi, (M, N // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    out = np.full((M, N), np.nan, np.float32)
    compiled = emulate(rotate_halves_kernel, (1,), a, b, cos, sin, out, M=M, N=N, K=K, num_warps=warps, arch=arch)
    x1, x2 = product[:, : N // 2], product[:, N // 2:]
    want = np.concatenate([x1 * cos + x2 * sin, x2 * cos - x1 * sin], axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    # The halves are linear layouts of the accumulator, and taking them apart writes no shared memory.
    halves = re.findall(r"tile<%dx%dxf32>: (\S+)" % (M, N // 2), compiled.layouts)
    assert halves and all(h.startswith("linear{") for h in halves), compiled.layouts
    assert "tg_smem" not in through(compiled.source, "= reshape(", "= split("), compiled.source


@pytest.mark.parametrize("arch,warps", [(90, 4), (80, 4)])
def test_split_then_join_stays_in_registers(arch, warps):
    M, N, K = 64, 64, 16
    a, b, product = operands(M, N, K, seed=5)
    out = np.full((M, N), np.nan, np.float32)
    compiled = emulate(interleave_halves_kernel, (1,), a, b, out, M=M, N=N, K=K, num_warps=warps, arch=arch)
    want = np.stack([product[:, : N // 2], -product[:, N // 2:]], axis=-1).reshape(M, N)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    # join puts the halves back in the threads they came from, and reshape keeps them there: only the
    # store's conversion may move them.
    assert "tg_smem" not in through(compiled.source, "= reshape(", "= join("), compiled.source
    joined = through(compiled.source, "= join(", "= reshape(")
    assert "tg_smem" not in joined, joined


def test_a_split_across_lanes_still_moves_elements():
    # A loaded tile (blocked, its last dim of 2 across lanes) is split the old way, through shared memory.
    @tegula.jit
    def split_loaded_kernel(X, Y, Z, M: tl.constexpr):
        rows = tl.arange(0, M)
        x = tl.load(X + rows)
        lo, hi = tl.split(tl.reshape(x, [M // 2, 2]))
        half = tl.arange(0, M // 2)
        tl.store(Y + half, lo)
        tl.store(Z + half, hi)

    x = np.random.default_rng(3).standard_normal(256).astype(np.float32)
    y, z = np.zeros(128, np.float32), np.zeros(128, np.float32)
    emulate(split_loaded_kernel, (1,), x, y, z, M=256, num_warps=4, arch=90)
    np.testing.assert_array_equal(y, x[0::2])
    np.testing.assert_array_equal(z, x[1::2])
