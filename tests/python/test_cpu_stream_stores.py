"""Streamed stores on the CPU backend (src/backends/cpu/prelude_stream.h).

A store of a whole contiguous tile is computed into a staging array and
written with non-temporal stores when the launch moves more than the
last-level cache. Results must not change: checked here with streaming forced
($TEGULA_STREAM_STORES=1, read once per kernel object, so in a fresh process)
on full tiles, masked tails, outputs not aligned to a cache line, several
dtypes and row kernels, exactly against NumPy; and which stores stream, in
the generated source.
"""

import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import run_isolated


@tegula.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


def cpu_source(kernel, *args, **constexprs):
    return kernel.inspect(*args, **constexprs).source


def test_whole_tile_stores_may_stream_and_small_ones_do_not(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")
    x = np.zeros(4096, dtype=np.float32)
    big = cpu_source(scale_kernel, x, x, 4096, BLOCK=1024)
    assert "tg_stream_store(" in big and "tg_streams(grid, tg_program_bytes)" in big
    assert "static constexpr int64_t tg_program_bytes = 8192;" in big  # 4 KiB loaded, 4 KiB stored
    assert "const tg_stream_fence fence;" in big
    small = cpu_source(scale_kernel, x, x, 4096, BLOCK=128)  # 512 bytes: not worth staging
    assert "tg_stream" not in small


STREAMED = textwrap.dedent("""
    import os
    os.environ["TEGULA_STREAM_STORES"] = "1"
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @tegula.jit
    def unmasked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)

    @tegula.jit
    def softmax_kernel(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)

    rng = np.random.default_rng(22)
    for dtype in ("float32", "float16", "int8", "float64"):
        for n, block, shift in ((4096, 1024, 0), (5000, 1024, 0), (70001, 2048, 1), (1000, 1024, 3)):
            x = (rng.standard_normal(n) * 40).round().clip(-60, 60).astype(dtype)
            y = (rng.standard_normal(n) * 40).round().clip(-60, 60).astype(dtype)
            # `shift` elements into a buffer: the output does not start on a cache line.
            buffer = np.full(n + shift + 64, 7, dtype=dtype)
            out = buffer[shift:shift + n]
            add_kernel[(tegula.cdiv(n, block),)](x, y, out, n, BLOCK=block)
            np.testing.assert_array_equal(out, x + y, err_msg=f"{dtype} n={n} shift={shift}")
            assert (buffer[:shift] == 7).all() and (buffer[shift + n:] == 7).all(), f"{dtype} n={n}: wrote outside"

    # Every offset from a cache line a float32 output can have: the lines of the staged
    # tile are then read across two of its lines each and merged (tg_stream_lines).
    for shift in range(16):
        n = 4099
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        buffer = np.full(n + 16 + 64, 7, dtype=np.float32)
        start = (-buffer.ctypes.data % 64) // 4 + shift  # `shift` floats past a line
        out = buffer[start:start + n]
        add_kernel[(tegula.cdiv(n, 2048),)](x, y, out, n, BLOCK=2048)
        np.testing.assert_array_equal(out, x + y, err_msg=f"{shift} floats past a line")
        assert (buffer[:start] == 7).all() and (buffer[start + n:] == 7).all(), f"shift {shift}: wrote outside"

    x = rng.standard_normal(8 * 512).astype(np.float32)
    out = np.zeros_like(x)
    unmasked_kernel[(8,)](x, out, BLOCK=512)
    np.testing.assert_array_equal(out, x * 2)

    for M, N in ((33, 1000), (7, 1024), (5, 3000), (17, 4100)):
        x = rng.standard_normal((M, N)).astype(np.float32) * 4
        got = np.zeros_like(x)
        softmax_kernel[(M,)](x, got, N, N, BLOCK_N=tegula.next_power_of_2(N))
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    print("ok")
""")


def test_streamed_stores_give_the_same_results(backend, tmp_path):
    if backend.name != "cpu":
        pytest.skip("streamed stores are the CPU backend's")
    run_isolated(tmp_path, STREAMED, backend)
