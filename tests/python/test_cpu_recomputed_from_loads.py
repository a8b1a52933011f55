"""Tiles computed again from loads on the CPU backend
(src/backends/cpu/codegen_fusion.cpp): a cheap value of a loaded tile, such
as layer norm's `centred = where(in_row, x - mean, 0)`, gets no array; the
reduce and the loop that use it compute it again from the row, which stays
read in place even through the loop that stores the output, because that
loop first checks that its store does not overlap the row (and reads a copy
of the row when it does).

None of it may change a result: layer norm against its arithmetic in NumPy
(float32 operations in the kernel's order), bit for bit, over whole rows,
masked tails, outputs over the input (in place, a few elements before or
after it) and with the stores streamed; and the generated source.
"""

import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tegula
import tegula.language as tl

from ops_util import run_isolated

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import layer_norm  # noqa: E402  (the example's kernel, as the benchmark runs it)

EPS = np.float32(1e-5)


@pytest.fixture(autouse=True)
def _cpu_only(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")


def _kernel_sum(v, block):
    """tl.sum over rows of `v` as the CPU backend adds: 64 lanes (fewer for
    short rows) walk the row padded with zeros to `block`, then a tree."""
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


def layer_norm_bits(x, w, b):
    """examples/layer_norm.py's kernel in NumPy float32, operation by operation."""
    N = x.shape[1]
    block = 1 << (N - 1).bit_length()
    mean = _kernel_sum(x, block) / np.float32(N)
    centred = x - mean
    var = _kernel_sum(centred * centred, block) / np.float32(N)
    rstd = np.float32(1.0) / np.sqrt(var + EPS)
    return centred * rstd * w + b, mean[:, 0], rstd[:, 0]


def launch(x_buffer, x_at, y_buffer, y_at, M, N, stride, w, b):
    """The example's kernel over M rows of N floats `stride` apart, x from
    x_buffer[x_at:], y to y_buffer[y_at:] (which may overlap x); returns
    mean and rstd."""
    mean = np.empty(M, dtype=np.float32)
    rstd = np.empty(M, dtype=np.float32)
    block = 1 << (N - 1).bit_length()
    layer_norm.layer_norm_kernel[(M,)](x_buffer[x_at:], y_buffer[y_at:], w, b, mean, rstd, N, stride, stride, EPS,
                                       BLOCK_N=block)
    return mean, rstd


def rows_of(buffer, at, M, N, stride):
    return np.lib.stride_tricks.as_strided(buffer[at:], (M, N), (4 * stride, 4))


def check_layer_norm(M, N, shift, seed):
    """y `shift` floats past x (None: in an array of its own), each row of y
    overlapping at most its own row of x: y, mean and rstd equal
    layer_norm_bits bit for bit, and nothing else is written."""
    rng = np.random.default_rng(seed)
    stride, x_at = N + 64, 128
    w = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    buffer = (rng.standard_normal(M * stride + 256) * 2 + 1).astype(np.float32)
    want_y, want_mean, want_rstd = layer_norm_bits(rows_of(buffer, x_at, M, N, stride).copy(), w, b)
    out = buffer if shift is not None else np.full_like(buffer, 7)
    y_at = x_at + (shift or 0)
    before = out.copy()
    mean, rstd = launch(buffer, x_at, out, y_at, M, N, stride, w, b)
    np.testing.assert_array_equal(rows_of(out, y_at, M, N, stride), want_y, err_msg=f"y, shift {shift}")
    np.testing.assert_array_equal(mean, want_mean)
    np.testing.assert_array_equal(rstd, want_rstd)
    written = np.zeros(out.size, dtype=bool)
    for r in range(M):
        written[y_at + r * stride:y_at + r * stride + N] = True
    np.testing.assert_array_equal(out[~written], before[~written], err_msg=f"wrote outside y, shift {shift}")


CASES = [(M, N, shift) for M, N in ((9, 4096), (7, 3000), (5, 1000)) for shift in (None, 0, 3, -5, 40)]


@pytest.mark.parametrize("M, N, shift", CASES)
def test_layer_norm_is_its_float32_arithmetic_bit_for_bit(M, N, shift):
    check_layer_norm(M, N, shift, seed=M * N + (shift or 0))


STREAMED = textwrap.dedent("""
    import os
    os.environ["TEGULA_STREAM_STORES"] = "1"
    import test_cpu_recomputed_from_loads as t
    for M, N, shift in t.CASES + [(300, 4096, None), (300, 4096, 0), (300, 4096, 7)]:
        t.check_layer_norm(M, N, shift, seed=M + N)
    print("ok")
""")


def test_streamed_stores_and_next_rows_change_nothing(backend, tmp_path):
    run_isolated(tmp_path, STREAMED, backend, timeout=300.0)


def test_layer_norm_computes_centred_where_used():
    x = np.zeros((2, 4096), dtype=np.float32)
    w, stats = np.zeros(4096, np.float32), np.zeros(2, np.float32)
    source = layer_norm.layer_norm_kernel.inspect(x, x, w, w, stats, stats, 4096, 4096, 4096, 1e-5,
                                                  BLOCK_N=4096).source
    selects = [line for line in source.splitlines() if "= select(" in line]
    assert len(selects) == 1 and selects[0].endswith("(recomputed where used)")
    # The row stays read in place through the store's loop, which checks the overlap first.
    assert "is read where it lies when whole" in source
    assert re.search(r"const float\* const src\d+ = tg_overlaps\(", source)
    # Its next row in three shares, to the sum, the variance and the output loop.
    fetched = [re.sub(r"\bk\d+", "k", f) for f in re.findall(r"tg_prefetch\(next\d+, ([^;]*)\);", source)]
    assert fetched == ["0, 128", "k * 2, 128", "8192, 64", "8192 + k, 64", "12288 + block, 64",
                       "12288 + block, 64"]


@tegula.jit
def _const_minus_sum_beside_a_scan(out_ptr, x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + pid * n + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + pid)
    diff = 0.75 - (x + s)  # recomputed where used: must keep its parentheses
    running = tl.cumsum(tl.where(mask, cols, 0), axis=0)
    tl.store(out_ptr + pid * n + cols, tl.where(running == diff, running, diff), mask=mask)


def test_recomputed_float_operand_keeps_its_parentheses():
    rng = np.random.default_rng(0)
    rows, n = 3, 37
    x = rng.standard_normal((rows, n)).astype(np.float32)
    s = rng.standard_normal(rows).astype(np.float32)
    out = np.zeros((rows, n), np.float32)
    _const_minus_sum_beside_a_scan[(rows,)](out, x, s, n, BLOCK=64)
    diff = np.float32(0.75) - (x + s[:, None])
    running = np.cumsum(np.arange(n)).astype(np.float32)
    np.testing.assert_array_equal(out, np.where(running == diff, running, diff))
