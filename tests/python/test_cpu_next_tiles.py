"""Next tiles on the CPU backend (src/backends/cpu/codegen_fusion.cpp,
prelude_stream.h): a program that reads a whole row of at least 4 KB in place
has its later loops prefetch the row the next program of its thread reads,
at an address predicted from the last two programs, when the launch streams.

A prefetch never changes a value, and a wrong guess (the first program of a
chunk, rows in any order, the row past the last) must not fault: checked here
with streaming forced ($TEGULA_STREAM_STORES=1, in a fresh process) against
the same kernels with streaming off, bit for bit, over masked tails, strided
and reversed rows; and which kernels prefetch, in the generated source.
"""

import json
import re
import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import run_isolated


@tegula.jit
def softmax_kernel(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)


@tegula.jit
def centred_kernel(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
    e = x - tl.max(x, axis=0)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)


@tegula.jit
def row_loop_kernel(x_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    total = tl.zeros((BLOCK_N,), tl.float32)
    for k in range(0, 2):
        x = tl.load(x_ptr + (row * 2 + k) * N + cols, mask=cols < N, other=0.0)
        total += x - tl.max(x, axis=0)
    tl.store(y_ptr + row * N + cols, total, mask=cols < N)


def cpu_source(kernel, *args, **constexprs):
    return kernel.inspect(*args, **constexprs).source


def test_rows_of_a_page_or_more_fetch_the_next_programs_row(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")
    x = np.zeros((2, 4096), dtype=np.float32)
    source = cpu_source(softmax_kernel, x, x, 4096, 4096, BLOCK_N=4096)
    assert "tg_next_tile(tile_history[0], " in source
    assert "const char* tile_history[1] = {};" in source
    # The loop that calls exp fetches the whole 16 KB row, four lines per block of 64 elements: the max, sum
    # and division loops after it keep the memory busy with their own accesses.
    fetched = re.findall(r"tg_prefetch\(next\d+, ([^;]*)\);", source)
    assert fetched == ["block * 4, 256"]
    # Without a math function, a share to each of the three loops after the load, in whole lines per block:
    # the max (its first block, then each block; two lines), the subtraction, which accumulates the sum (one),
    # and the division loops (whole and partial tile; one).
    plain = cpu_source(centred_kernel, x, x, 4096, 4096, BLOCK_N=4096)
    fetched = re.findall(r"tg_prefetch\(next\d+, ([^;]*)\);", plain)
    assert [re.sub(r"\bk\d+", "k", f) for f in fetched] == [
        "0, 128", "k * 2, 128", "8192 + block, 64", "12288 + block, 64", "12288 + block, 64"]
    small = cpu_source(softmax_kernel, x, x, 256, 256, BLOCK_N=256)  # 1 KB rows: the hardware's job
    assert "tile_history" not in small
    looped = cpu_source(row_loop_kernel, x, x, 4096, BLOCK_N=4096)  # rows read in a loop of the program
    assert "tile_history" not in looped


NEXT_TILES = textwrap.dedent("""
    import json, os, sys
    os.environ["TEGULA_STREAM_STORES"] = sys.argv[1] if len(sys.argv) > 1 else STREAM
    sys.path.insert(0, EXAMPLES)
    import numpy as np
    import tegula
    import tegula.language as tl
    import layer_norm
    import softmax

    @tegula.jit
    def reversed_softmax(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr):
        row = tl.num_programs(0) - 1 - tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)

    rng = np.random.default_rng(2212)
    digests = []
    for M, N, pad in ((37, 1024, 0), (41, 3000, 0), (16, 4096, 0), (9, 5000, 0), (23, 4096, 100)):
        x = (rng.standard_normal((M, N + pad)) * 3).astype(np.float32)[:, :N]
        got = softmax.softmax(x)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
        w = rng.standard_normal(N).astype(np.float32)
        b = rng.standard_normal(N).astype(np.float32)
        y, mean, rstd = layer_norm.layer_norm(x, w, b)
        ref, _, _ = layer_norm.layer_norm_reference(x, w, b)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
        flipped = np.empty((M, N + pad), dtype=np.float32)
        reversed_softmax[(M,)](np.ascontiguousarray(np.pad(x, ((0, 0), (0, pad)))), flipped, N, N + pad,
                               BLOCK_N=tegula.next_power_of_2(N))
        np.testing.assert_array_equal(flipped[:, :N], got)
        digests += [got.tobytes().hex(), y.tobytes().hex(), mean.tobytes().hex(), rstd.tobytes().hex()]
    print(json.dumps(digests))
    print("ok")
""")


def test_next_tiles_change_no_result(backend, tmp_path):
    if backend.name != "cpu":
        pytest.skip("next tiles are the CPU backend's")
    import pathlib
    examples = str(pathlib.Path(__file__).resolve().parents[2] / "examples")
    outputs = []
    for stream in ("1", "0"):
        source = f"EXAMPLES = {examples!r}\nSTREAM = {stream!r}\n" + NEXT_TILES
        folder = tmp_path / f"stream{stream}"
        folder.mkdir()
        outputs.append(json.loads(run_isolated(folder, source, backend).splitlines()[0]))
    assert outputs[0] == outputs[1], "results differ with and without streaming (and the prefetch of next tiles)"


HELD_LINES = textwrap.dedent("""
    import os
    os.environ["TEGULA_STREAM_STORES"] = "1"
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def scale_then_touch(x_ptr, y_ptr, last_ptr, N, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols)
        tl.store(y_ptr + row * N + cols, x * 2)
        # After the streamed row: a scalar load and store inside the row's
        # last (partial, held) line must see and keep program order.
        tl.store(last_ptr + row, tl.load(y_ptr + row * N + N - 1))
        tl.store(y_ptr + row * N + N - 2, -1.0)

    rng = np.random.default_rng(7)
    M, N = 37, 1024
    for shift in (0, 1, 3, 5):
        x = rng.standard_normal((M, N)).astype(np.float32)
        buffer = np.full(M * N + shift + 64, 7, dtype=np.float32)
        y = buffer[shift:shift + M * N]
        last = np.zeros(M, dtype=np.float32)
        scale_then_touch[(M,)](x, y, last, N, BLOCK=N)
        want = (x * 2).reshape(-1).copy()
        want.reshape(M, N)[:, N - 2] = -1.0
        np.testing.assert_array_equal(y, want, err_msg=f"shift {shift}")
        np.testing.assert_array_equal(last, x[:, N - 1] * 2, err_msg=f"shift {shift}")
        assert (buffer[:shift] == 7).all() and (buffer[shift + M * N:] == 7).all(), f"shift {shift}: wrote outside"
    print("ok")
""")


@tegula.jit
def scale_then_touch(x_ptr, y_ptr, last_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols)
    tl.store(y_ptr + row * N + cols, x * 2)
    tl.store(last_ptr + row, tl.load(y_ptr + row * N + N - 1))
    tl.store(y_ptr + row * N + N - 2, -1.0)


def test_scalar_accesses_after_a_held_line_keep_program_order(backend, tmp_path):
    if backend.name != "cpu":
        pytest.skip("held lines are the CPU backend's")
    x = np.zeros((2, 1024), dtype=np.float32)
    source = cpu_source(scale_then_touch, x, x, np.zeros(2, np.float32), 1024, BLOCK=1024)
    assert "&line_carry[0]);" in source and "line_carry[0].flush_if_holds(" in source
    run_isolated(tmp_path, HELD_LINES, backend)
