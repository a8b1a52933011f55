"""Vector stores on the CUDA backend, without a GPU.

A group of contiguous elements that axis info proves 16-byte (or 8-byte)
aligned is packed into 32-bit words and stored by one `st.global.v4`
(`v2`; the address told aligned to NVVM), predicated when a mask covers the whole group (tg_st16,
tg_st8 and their `_if` forms). A C++ vector assignment left the merging to NVVM, which
split it where the address came from 64-bit integer arithmetic: the attention
epilogue's 16-byte bf16 groups became seven narrow stores each. Checked here:
the PTX of such a store (NVRTC), and the packing of every element width in
the emulator, with masked tails.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import emulate, require_emulator
from test_wgmma_overlap import cli_compile


@tegula.jit
def copy_rows(x_ptr, y_ptr, M, N, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Whole rows (N == BLOCK_N), masked by row: one mask bit per group.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = rows[:, None] < M
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], x * 3 + 1, mask=mask)


@tegula.jit
def copy_block(x_ptr, y_ptr, M, N, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Masked by row and column: a group across the column tail is stored
    # element by element, the others whole.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], x * 3 + 1, mask=mask)


def _ptx_stores(text: str) -> dict:
    ptx = text[text.index("// ===== ptx ====="):]
    counts: dict = {}
    for kind in re.findall(r"\bst\.global(?:\.[a-z0-9]+)+", ptx):
        counts[kind] = counts.get(kind, 0) + 1
    return counts


@pytest.mark.parametrize("dtype,per_group", [("bf16", 8), ("fp16", 8), ("fp32", 4), ("i8", 16)])
def test_row_stores_are_one_vector_instruction_per_group(dtype, per_group, tmp_path):
    # Rows at a runtime stride (divisible by 16): the address goes through
    # 64-bit integer arithmetic, where NVVM did not merge element stores.
    sig = f"*{dtype}:16,*{dtype}:16,i32,i32,i32:16,i32:16,64,128"
    text = cli_compile(copy_rows, sig, 90, 4, 1, "cuda,ptx", tmp_path)
    cuda = text[:text.index("// ===== ptx =====")]
    assert "tg_st16_if(" in cuda, "a masked group is one predicated 16-byte store"
    stores = _ptx_stores(text)
    vector = {k: v for k, v in stores.items() if ".v4" in k}
    assert all(k.startswith("st.global.v4.") for k in vector), f"spelled as Triton's kernels spell it: {stores}"
    narrow = {k: v for k, v in stores.items() if ".v4" not in k}
    # 64x128 elements over 128 threads, one 16-byte group per store.
    assert sum(vector.values()) == 64 * 128 // 128 // per_group, stores
    assert not narrow, f"element stores beside the vector ones: {stores}"


@pytest.mark.parametrize("kernel,N", [(copy_rows, 64), (copy_block, 45)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int16, np.uint8, np.int32])
def test_packed_stores_write_every_element_and_no_other(kernel, N, dtype):
    require_emulator()
    rng = np.random.default_rng(7)
    M = 37  # a masked row tail; N = 45 also leaves partial groups
    stride_x, stride_y = 80, 96
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-20, 20, size=(M, stride_x)).astype(dtype)
    else:
        x = rng.standard_normal((M, stride_x)).astype(dtype)
    y = np.full((M, stride_y), 99, dtype=dtype)
    compiled = emulate(kernel, (3,), x, y, M, N, stride_x, stride_y, BLOCK_M=16, BLOCK_N=64, num_warps=4)
    assert "tg_st16" in compiled.source
    want = np.full_like(y, 99)
    want[:, :N] = (x[:, :N] * dtype(3) + dtype(1)).astype(dtype)
    np.testing.assert_array_equal(y, want)


@tegula.jit
def store_pairs(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Two contiguous elements per thread: 4-byte groups of 16-bit values and
    # 8-byte groups of 32-bit values.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 2, mask=mask)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int16])
def test_short_groups(dtype):
    require_emulator()
    n = 250
    x = np.arange(n + 6).astype(dtype)
    y = np.full(n + 6, 5, dtype=dtype)
    compiled = emulate(store_pairs, (4,), x, y, n, BLOCK=64, num_warps=1)
    want = np.full_like(y, 5)
    want[:n] = x[:n] - dtype(2)
    np.testing.assert_array_equal(y, want)
    assert "tg_st16" in compiled.source or "tg_st8" in compiled.source or "unsigned*>(" in compiled.source


@pytest.mark.parametrize("kernel,N", [(copy_rows, 64), (copy_block, 45)])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_64_bit_pairs_move_as_one_b64_access(kernel, N, dtype):
    # Two 64-bit elements move as one ld/st.global.v2.b64 (tg_ld16_b64,
    # tg_st16_b64), whole or predicated groups, element by element in tails.
    require_emulator()
    rng = np.random.default_rng(11)
    M, stride_x, stride_y = 37, 80, 96
    x = (rng.standard_normal((M, stride_x)) * 1000).astype(dtype)
    y = np.full((M, stride_y), 99, dtype=dtype)
    compiled = emulate(kernel, (3,), x, y, M, N, stride_x, stride_y, BLOCK_M=16, BLOCK_N=64, num_warps=4)
    assert "tg_ld16_b64" in compiled.source and "tg_st16_b64" in compiled.source
    want = np.full_like(y, 99)
    want[:, :N] = (x[:, :N] * dtype(3) + dtype(1)).astype(dtype)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dtype", ["fp64", "i64"])
def test_64_bit_pairs_are_spelled_b64(dtype, tmp_path):
    sig = f"*{dtype}:16,*{dtype}:16,i32,i32,i32:16,i32:16,64,64"
    text = cli_compile(copy_rows, sig, 90, 4, 1, "ptx", tmp_path)
    assert "ld.global.v2.b64" in text and "st.global.v2.b64" in text
