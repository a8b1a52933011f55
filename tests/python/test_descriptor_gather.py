"""desc.gather and desc.scatter (Triton's TMA gather/scatter of rows) on
2-D descriptors of one-row blocks: rows chosen by a tile of indices, columns
from an offset, rows and columns outside the tensor padded (gather) or left
alone (scatter)."""

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def _gather(out_ptr, in_ptr, idx_ptr, y, X, Y, BX: tl.constexpr, BY: tl.constexpr, NAN: tl.constexpr):
    idx = tl.load(idx_ptr + tl.arange(0, BX))
    desc = tl.make_tensor_descriptor(in_ptr, [X, Y], [Y, 1], [1, BY], padding_option="nan" if NAN else "zero")
    rows = desc.gather(idx, y)
    tl.store(out_ptr + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :], rows)


@tegula.jit
def _scatter(out_ptr, in_ptr, idx_ptr, y, X, Y, BX: tl.constexpr, BY: tl.constexpr):
    idx = tl.load(idx_ptr + tl.arange(0, BX))
    data = tl.load(in_ptr + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :])
    desc = tl.make_tensor_descriptor(out_ptr, [X, Y], [Y, 1], [1, BY])
    desc.scatter(data, idx, y)


def _reference_gather(a, idx, y, by, fill):
    X, Y = a.shape
    return np.array([[a[i, j] if 0 <= i < X and j < Y else fill for j in range(y, y + by)] for i in idx], a.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.parametrize("X, Y, BX, BY, y", [(40, 64, 16, 32, 40), (37, 50, 8, 16, 0), (128, 128, 32, 32, 48)])
def test_gather_rows_with_ragged_edges(dtype, X, Y, BX, BY, y):
    rng = np.random.default_rng(X + BY)
    a = (rng.standard_normal((X, Y)) * 20).astype(dtype)
    idx = rng.integers(-3, X + 3, BX).astype(np.int32)  # some rows outside the tensor
    out = np.full((BX, BY), 7, dtype)
    _gather[(1,)](out, a, idx, y, X, Y, BX, BY, NAN=False)
    np.testing.assert_array_equal(out, _reference_gather(a, idx, y, BY, 0))


def test_gather_pads_with_nan_when_the_descriptor_says_so():
    a = np.arange(12 * 16, dtype=np.float32).reshape(12, 16)
    idx = np.array([0, 11, 12, -1], np.int32)
    out = np.zeros((4, 8), np.float32)
    _gather[(1,)](out, a, idx, 12, 12, 16, 4, 8, NAN=True)
    np.testing.assert_array_equal(out, _reference_gather(a, idx, 12, 8, np.nan))


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int16])
def test_scatter_rows_writes_only_inside_the_tensor(idx_dtype):
    X, Y, BX, BY, y = 40, 64, 16, 32, 40
    rng = np.random.default_rng(3)
    idx = rng.permutation(X + 8)[:BX].astype(idx_dtype)  # rows past X are dropped
    data = rng.standard_normal((BX, BY)).astype(np.float32)
    out = np.zeros((X, Y), np.float32)
    _scatter[(1,)](out, data, idx, y, X, Y, BX, BY)
    want = np.zeros((X, Y), np.float32)
    for i, r in enumerate(idx):
        if r < X:
            want[r, y:Y] = data[i, :Y - y]  # columns past Y are dropped
    np.testing.assert_array_equal(out, want)


def test_gather_needs_one_row_blocks():
    @tegula.jit
    def wide_blocks(out_ptr, in_ptr):
        desc = tl.make_tensor_descriptor(in_ptr, [8, 8], [8, 1], [2, 8])
        tl.store(out_ptr + tl.arange(0, 2)[:, None] * 8 + tl.arange(0, 8)[None, :], desc.gather(tl.arange(0, 2), 0))

    with pytest.raises(tegula.CompilationError, match=r"blocks are one row \(\[1, BLOCK_Y\]\)"):
        wide_blocks[(1,)](np.zeros(16, np.float32), np.zeros(64, np.float32))
