"""Debug mode (docs/debug-mode.md): every load, store and atomic of a kernel
compiled with ``debug=True`` is checked against the array its pointer came
from, and a violation (or a failing ``tl.device_assert``) stops the launch
with a ``tegula.DeviceError`` naming the kernel, the source line and column,
the program, the element offset and the array's size.

Each wrong kernel marks its faulty line with a ``# BUG`` comment; the tests
find that line in this file, so the expected line and column are never
written by hand. On the CPU the faulty accesses are skipped, not performed,
so these kernels never touch memory they do not own.
"""

import collections
import inspect
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tegula
import tegula.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())


def bug_site(kernel, call: str = "tl.", marker: str = "# BUG"):
    """(line, col) of the `call` on the line of `kernel` marked `marker`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    for k, text in enumerate(lines):
        if marker in text:
            return first + k, text.index(call) + 1
    raise AssertionError(f"no {marker!r} line in {kernel.__name__}")


def expect_fault(launch, kernel, *, program, offset, size, arg, kind="load", dtype="float32",
                 call="tl.", marker="# BUG"):
    """Runs `launch` and checks the DeviceError it raises against the marked line."""
    with pytest.raises(tegula.DeviceError) as info:
        launch()
    e = info.value
    line, col = bug_site(kernel, call, marker)
    assert (e.kernel, e.kind, e.file, e.line, e.col) == (kernel.__name__, kind, THIS_FILE, line, col), str(e)
    assert (e.program_id, e.offset, e.size, e.arg, e.dtype) == (program, offset, size, arg, dtype), str(e)
    where = "before the start" if offset < 0 else "past the end"
    assert str(e) == (
        f"kernel `{kernel.__name__}` at {THIS_FILE}:{line}:{col}: {kind} out of bounds in program "
        f"({program[0]}, {program[1]}, {program[2]}): element offset {offset} of `{arg}` "
        f"({size} element{'' if size == 1 else 's'}, {dtype})"
        + ("" if "may also come from" not in str(e) else str(e)[str(e).index(";"):str(e).index("\n")])
        + f"\nhint: a mask missing? the offsets reach {where} of the array")
    assert isinstance(e, RuntimeError)
    return e


def data(backend, n, dtype=np.float32, seed=0):
    values = np.random.default_rng(seed).uniform(1, 2, n).astype(dtype)
    return values, backend.array(values)


# --- wrong kernels -------------------------------------------------------------------------------


@tegula.jit(debug=True)
def no_tail_mask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # BUG
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_missing_mask_on_the_tail(backend):
    _, x = data(backend, 1000)
    out = backend.zeros(1000, np.float32)
    expect_fault(lambda: no_tail_mask[(8,)](x, out, 1000, BLOCK=128), no_tail_mask,
                 program=(7, 0, 0), offset=1000, size=1000, arg="x_ptr")


@tegula.jit(debug=True)
def off_by_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs <= n)  # BUG
    tl.store(out_ptr + offs, x, mask=offs < n)


@pytest.mark.parametrize("n,block", [(1000, 128), (37, 64), (2048, 1024)])
def test_off_by_one_mask(backend, n, block):
    _, x = data(backend, n)
    out = backend.zeros(n, np.float32)
    programs = tegula.cdiv(n, block) + (n % block == 0)  # an exact fit needs one more program to show it
    expect_fault(lambda: off_by_one[(programs,)](x, out, n, BLOCK=block), off_by_one,
                 program=(n // block, 0, 0), offset=n, size=n, arg="x_ptr")


@tegula.jit(debug=True)
def wrong_row_stride(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask)  # BUG
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], x, mask=mask)


def test_wrong_row_stride_in_2d(backend):
    M, N = 8, 48
    _, x = data(backend, M * N)
    out = backend.zeros(M * N, np.float32)
    # stride N + 1: row 7 starts at 343 and reaches 343 + 47 = 390 > 383; the first
    # element past the end is (7, 41), offset 384.
    expect_fault(lambda: wrong_row_stride[(1,)](x, out, M, N, N + 1, BM=8, BN=64), wrong_row_stride,
                 program=(0, 0, 0), offset=M * N, size=M * N, arg="x_ptr")


@tegula.jit(debug=True)
def shifted_left(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs - 3, mask=mask)  # BUG
    tl.store(out_ptr + offs, x, mask=mask)


def test_negative_offsets(backend):
    _, x = data(backend, 500)
    out = backend.zeros(500, np.float32)
    e = expect_fault(lambda: shifted_left[(4,)](x, out, 500, BLOCK=128), shifted_left,
                     program=(0, 0, 0), offset=-3, size=500, arg="x_ptr")
    assert "before the start of the array" in str(e)


@tegula.jit(debug=True)
def copy_as_int64(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)  # BUG
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_wrong_dtype_pointer(backend):
    # An int64 view of 1000 float32 holds 500 elements; the kernel is told 1000.
    values = np.random.default_rng(1).uniform(1, 2, 1000).astype(np.float32)
    x = backend.array(values.view(np.int64))
    out = backend.zeros(1000, np.int64)
    expect_fault(lambda: copy_as_int64[(8,)](x, out, 1000, BLOCK=128), copy_as_int64,
                 program=(3, 0, 0), offset=500, size=500, arg="x_ptr", dtype="int64")


@tegula.jit(debug=True)
def store_one_further(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs + 1, x, mask=offs < n)  # BUG


def test_out_of_range_store(backend):
    values, x = data(backend, 300)
    out = backend.full(300, -1.0, np.float32)
    expect_fault(lambda: store_one_further[(3,)](x, out, 300, BLOCK=128), store_one_further,
                 program=(2, 0, 0), offset=300, size=300, arg="out_ptr", kind="store", call="tl.store")
    # Programs 0 and 1 stored everything; the in-bounds elements of program 2 may be
    # stored or not (the program stops at its first error), the array's end is intact.
    result = backend.numpy(out)
    np.testing.assert_array_equal(result[1:257], values[:256])


@tegula.jit(debug=True)
def histogram_no_mask(idx_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(counts_ptr + idx, 1, mask=offs < n)  # BUG


def test_out_of_range_atomic(backend):
    idx = np.arange(200, dtype=np.int32) % 10
    idx[150] = 10  # one bin too far
    counts = backend.zeros(10, np.int32)
    expect_fault(lambda: histogram_no_mask[(2,)](backend.array(idx), counts, 200, BLOCK=128), histogram_no_mask,
                 program=(1, 0, 0), offset=10, size=10, arg="counts_ptr", kind="atomic", dtype="int32",
                 call="tl.atomic_add")


@tegula.jit(debug=True)
def offset_by(x_ptr, out_ptr, i):
    tl.store(out_ptr, tl.load(x_ptr + i))  # BUG


@pytest.mark.parametrize("i", [2**62 + 1, -2**63 + 3, 2**61])
def test_an_offset_whose_bytes_wrap_is_out_of_bounds(backend, i):
    """x + i with i * 4 beyond 64 bits wraps, in plain pointer arithmetic, back into x (2**62 + 1 reads
    x[1]); debug mode reports the access instead of reading what the wrap lands on."""
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(1, np.float32)
    with pytest.raises(tegula.DeviceError) as info:
        offset_by[(1,)](x, out, i)
    e = info.value
    line, col = bug_site(offset_by, "tl.load", "# BUG")
    assert (e.kind, e.line, e.col, e.arg) == ("load", line, col, "x_ptr"), str(e)
    assert e.offset >= 10, str(e)
    offset_by[(1,)](x, out, 7)  # an offset in range still reads
    assert out[0] == 7


@tegula.jit(debug=True)
def scalar_past_end(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    last = tl.load(x_ptr + n)  # BUG
    tl.store(out_ptr + offs, last, mask=offs < n)


def test_scalar_load_past_the_end(backend):
    _, x = data(backend, 100)
    out = backend.zeros(100, np.float32)
    # Every program reads x[n]: the smallest program id is the one reported.
    expect_fault(lambda: scalar_past_end[(4,)](x, out, 100, BLOCK=32), scalar_past_end,
                 program=(0, 0, 0), offset=100, size=100, arg="x_ptr")


@tegula.jit(debug=True)
def row_sums_carried(x_ptr, out_ptr, n_cols, steps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    ptrs = x_ptr + row * n_cols + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(steps):
        acc += tl.load(ptrs)  # BUG
        ptrs += BLOCK
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def test_pointer_carried_through_a_loop(backend):
    rows, cols = 3, 256
    _, x = data(backend, rows * cols)
    out = backend.zeros(rows, np.float32)
    # One step too many: a row reads 384 elements, and the last row's third step
    # starts at element 768, the end of the array (the other rows read their neighbour's).
    expect_fault(lambda: row_sums_carried[(rows,)](x, out, cols, 3, BLOCK=128), row_sums_carried,
                 program=(2, 0, 0), offset=768, size=768, arg="x_ptr")


@tegula.jit(debug=True)
def pick_by_program(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    from_x = tl.full([BLOCK], pid, tl.int32) == 0
    ptrs = tl.where(from_x, x_ptr + offs, y_ptr + offs)
    v = tl.load(ptrs)  # BUG
    tl.store(out_ptr + pid * BLOCK + offs, v)


def test_pointer_through_where(backend):
    # x and y are neighbouring views of one buffer, so what lies past y's end is
    # deterministically outside both of them.
    buffer = backend.array(np.ones(1000, np.float32))
    x, y = buffer[:128], buffer[128:228]
    out = backend.zeros(256, np.float32)
    e = expect_fault(lambda: pick_by_program[(2,)](x, y, out, BLOCK=128), pick_by_program,
                     program=(1, 0, 0), offset=100, size=100, arg="y_ptr")
    # The pointer may come from either array: the report names the nearest, and the other.
    assert "the pointer may also come from `x_ptr`, and is outside that array too" in str(e)


def test_pointer_through_where_inside_the_other_array_passes(backend):
    # A selected pointer is valid when it lies in any array it may come from:
    # program 1 reads y[100:128], past y's end but inside x (docs/debug-mode.md).
    buffer = backend.array(np.arange(512, dtype=np.float32))
    x, y = buffer[100:356], buffer[:100]
    out = backend.zeros(256, np.float32)
    pick_by_program[(2,)](x, y, out, BLOCK=128)
    np.testing.assert_array_equal(backend.numpy(out), np.concatenate([np.arange(100, 228), np.arange(128)]))


@tegula.jit(debug=True)
def tile_2d_missing_col_mask(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    row_ok = tl.expand_dims(rows < M, 1)
    offs = tl.expand_dims(rows, 1) * N + tl.expand_dims(cols, 0)
    x = tl.load(x_ptr + offs, mask=row_ok)  # BUG
    tl.store(out_ptr + offs, x, mask=row_ok & (tl.expand_dims(cols, 0) < N))


def test_2d_tile_expand_dims_broadcast(backend):
    M, N = 10, 40
    _, x = data(backend, M * N)
    out = backend.zeros(M * N, np.float32)
    # Rows 8..9 are program 1's; row 9 column 40 is element 400, the first one past the end.
    expect_fault(lambda: tile_2d_missing_col_mask[(2,)](x, out, M, N, BM=8, BN=64), tile_2d_missing_col_mask,
                 program=(1, 0, 0), offset=400, size=400, arg="x_ptr")


@tegula.jit(debug=True)
def gather_rows(idx_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    v = tl.load(x_ptr + idx, mask=mask)  # BUG
    tl.store(out_ptr + offs, v, mask=mask)


def test_offsets_from_loaded_indices(backend):
    idx = np.random.default_rng(2).integers(0, 50, 100).astype(np.int32)
    idx[77] = 51
    idx[90] = -2
    _, x = data(backend, 50)
    out = backend.zeros(100, np.float32)
    expect_fault(lambda: gather_rows[(2,)](backend.array(idx), x, out, 100, BLOCK=64), gather_rows,
                 program=(1, 0, 0), offset=51, size=50, arg="x_ptr")
    idx[77] = 3
    expect_fault(lambda: gather_rows[(2,)](backend.array(idx), x, out, 100, BLOCK=64), gather_rows,
                 program=(1, 0, 0), offset=-2, size=50, arg="x_ptr")


@tegula.jit(debug=True)
def last_program_only(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2, mask=offs < n + 5)  # BUG


def test_violation_only_in_the_last_program(backend):
    values, x = data(backend, 1000)
    out = backend.zeros(1000, np.float32)
    expect_fault(lambda: last_program_only[(16,)](x, out, 1000, BLOCK=64), last_program_only,
                 program=(15, 0, 0), offset=1000, size=1000, arg="out_ptr", kind="store", call="tl.store")
    # Every other program ran to completion.
    np.testing.assert_array_equal(backend.numpy(out)[:960], values[:960] * 2)


@tegula.jit(debug=True)
def stride_two(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + 2 * offs, mask=offs < n)  # BUG
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_several_programs_violating_report_the_smallest_id(backend):
    _, x = data(backend, 1000)
    out = backend.zeros(1000, np.float32)
    # Programs 3..7 all read past the end (2 * offs >= 1000 from offs 500 on); the
    # report is always program 3's first element, whatever order programs ran in.
    for _ in range(3):
        expect_fault(lambda: stride_two[(8,)](x, out, 1000, BLOCK=128), stride_two,
                     program=(3, 0, 0), offset=1000, size=1000, arg="x_ptr")


@tegula.jit(debug=True)
def grid_2d(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    r = tl.program_id(1)
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r * cols + c, mask=c < cols + 1)  # BUG
    tl.store(out_ptr + r * cols + c, x, mask=c < cols)


def test_program_id_of_a_2d_grid(backend):
    _, x = data(backend, 6 * 100)
    out = backend.zeros(6 * 100, np.float32)
    # Only the last row's column 100 leaves the array: program (1, 5, 0).
    expect_fault(lambda: grid_2d[(2, 6)](x, out, 6, 100, BLOCK=64), grid_2d,
                 program=(1, 5, 0), offset=600, size=600, arg="x_ptr")


def test_view_is_checked_against_its_own_extent(backend):
    # A view into a larger buffer: reaching past the view is reported even
    # though the memory belongs to the buffer (docs/debug-mode.md).
    buffer = backend.array(np.ones(2000, np.float32))
    view = buffer[500:1500]
    out = backend.zeros(1024, np.float32)
    expect_fault(lambda: no_tail_mask[(8,)](view, out, 1000, BLOCK=128), no_tail_mask,
                 program=(7, 0, 0), offset=1000, size=1000, arg="x_ptr")


def test_torch_tensor_view():
    torch = pytest.importorskip("torch")
    buffer = torch.ones(2000, dtype=torch.float32)
    view = buffer[100:1100]
    out = torch.zeros(1000, dtype=torch.float32)
    expect_fault(lambda: no_tail_mask[(8,)](view, out, 1000, BLOCK=128), no_tail_mask,
                 program=(7, 0, 0), offset=1000, size=1000, arg="x_ptr")


@tegula.jit(debug=True)
def broadcast_row_start(x_ptr, out_ptr, row_length, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    first = tl.load(x_ptr + pid * row_length)  # BUG
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.full([BLOCK], first, tl.float32))


def test_a_program_stops_after_its_first_error(backend):
    # Program 1's first access fails, so it stores nothing; program 0 is unaffected.
    values, x = data(backend, 100)
    out = backend.full(256, -1.0, np.float32)
    expect_fault(lambda: broadcast_row_start[(2,)](x, out, 100, BLOCK=128), broadcast_row_start,
                 program=(1, 0, 0), offset=100, size=100, arg="x_ptr")
    result = backend.numpy(out)
    np.testing.assert_array_equal(result[:128], values[0])
    np.testing.assert_array_equal(result[128:], -1.0)


@tegula.jit(debug=True)
def row_max(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))  # BUG
    tl.store(out_ptr + row, tl.max(x, axis=0))


def test_grid_one_program_too_large(backend):
    rows, cols = 5, 100
    _, x = data(backend, rows * cols)
    out = backend.zeros(rows + 1, np.float32)
    expect_fault(lambda: row_max[(rows + 1,)](x, out, cols, BLOCK=128), row_max,
                 program=(5, 0, 0), offset=500, size=500, arg="x_ptr")


@tegula.jit(debug=True)
def sum_until_zero(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    total = tl.zeros([BLOCK], dtype=tl.float32)
    chunk = tl.load(ptrs)
    while tl.sum(chunk, axis=0) != 0:
        total += chunk
        ptrs += BLOCK
        chunk = tl.load(ptrs)  # BUG
    tl.store(out_ptr + offs, total)


def test_pointer_carried_through_a_while_loop(backend):
    # No zero chunk: the loop walks off the end of the array.
    _, x = data(backend, 256)
    out = backend.zeros(64, np.float32)
    expect_fault(lambda: sum_until_zero[(1,)](x, out, BLOCK=64), sum_until_zero,
                 program=(0, 0, 0), offset=256, size=256, arg="x_ptr", marker="# BUG")


@tegula.jit(debug=True)
def second_half(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = x_ptr
    if pid > 0:
        base = x_ptr + n // 2
    v = tl.load(base + pid * BLOCK + offs, mask=offs < n)  # BUG
    tl.store(out_ptr + pid * BLOCK + offs, v, mask=offs < n)


def test_pointer_chosen_by_a_runtime_if(backend):
    _, x = data(backend, 256)
    out = backend.zeros(256, np.float32)
    # Program 1 starts at 128 + 128: the whole block is past the end.
    expect_fault(lambda: second_half[(2,)](x, out, 256, BLOCK=128), second_half,
                 program=(1, 0, 0), offset=256, size=256, arg="x_ptr")


@tegula.jit(debug=True)
def to_half(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(tl.float16), mask=offs <= n)  # BUG


def test_half_precision_store_past_the_end(backend):
    x = backend.array(np.ones(100, np.float32))
    out = backend.zeros(100, np.float16)
    expect_fault(lambda: to_half[(2,)](x, out, 100, BLOCK=64), to_half,
                 program=(1, 0, 0), offset=100, size=100, arg="out_ptr", kind="store", dtype="float16",
                 call="tl.store")


@tegula.jit(debug=True)
def count_true(flags_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    flags = tl.load(flags_ptr + offs)  # BUG
    total = tl.sum(flags.to(tl.int32), axis=0)
    tl.store(out_ptr + n, total)  # STORE


def test_bool_load_and_scalar_store_past_the_end(backend):
    flags = backend.array(np.ones(100, np.bool_))
    out = backend.zeros(1, np.int32)
    expect_fault(lambda: count_true[(1,)](flags, out, 1, BLOCK=128), count_true,
                 program=(0, 0, 0), offset=100, size=100, arg="flags_ptr", dtype="bool")
    flags = backend.array(np.ones(128, np.bool_))
    expect_fault(lambda: count_true[(1,)](flags, out, 1, BLOCK=128), count_true,
                 program=(0, 0, 0), offset=1, size=1, arg="out_ptr", kind="store", dtype="int32",
                 call="tl.store", marker="# STORE")


# --- correct kernels: no report ---------------------------------------------------------------------


@tegula.jit(debug=True)
def masked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@tegula.jit(debug=True)
def exact_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


@pytest.mark.parametrize("n", [1, 37, 1000, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64])
def test_correct_masked_kernels_do_not_report(backend, n, dtype):
    values, x = data(backend, n, dtype)
    out = backend.zeros(n, dtype)
    masked_copy[(tegula.cdiv(n, 128),)](x, out, n, BLOCK=128)
    np.testing.assert_array_equal(backend.numpy(out), values + dtype(1))


def test_exact_fit_does_not_report(backend):
    values, x = data(backend, 1024)
    out = backend.zeros(1024, np.float32)
    exact_copy[(8,)](x, out, BLOCK=128)
    np.testing.assert_array_equal(backend.numpy(out), values + 1)


@tegula.jit(debug=True)
def masked_lanes_point_anywhere(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    far = tl.where(offs < n, offs, offs + 100000000)  # masked-off lanes point far away
    tl.store(out_ptr + offs, tl.load(x_ptr + far, mask=offs < n, other=-1.0), mask=offs < n)


def test_masked_off_lanes_are_not_checked(backend):
    values, x = data(backend, 10)
    out = backend.zeros(10, np.float32)
    masked_lanes_point_anywhere[(1,)](x, out, 10, BLOCK=64)
    np.testing.assert_array_equal(backend.numpy(out), values)


def test_correct_2d_and_loop_kernels_do_not_report(backend):
    M, N = 8, 48
    values, x = data(backend, M * N)
    out = backend.zeros(M * N, np.float32)
    wrong_row_stride[(1,)](x, out, M, N, N, BM=8, BN=64)  # the right stride
    np.testing.assert_array_equal(backend.numpy(out), values)
    values, x = data(backend, 3 * 256)
    sums = backend.zeros(3, np.float32)
    row_sums_carried[(3,)](x, sums, 256, 2, BLOCK=128)  # the right number of steps
    np.testing.assert_allclose(backend.numpy(sums), values.reshape(3, 256).sum(axis=1), rtol=1e-5)


# --- device_assert ----------------------------------------------------------------------------------


@tegula.jit(debug=True)
def check_non_negative(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")  # BUG
    tl.device_assert(n > 0, "n must be positive")  # SCALAR


def test_device_assert_failing(backend):
    values = np.ones(300, np.float32)
    values[[150, 170, 290]] = -1.0
    with pytest.raises(tegula.DeviceError) as info:
        check_non_negative[(3,)](backend.array(values), 300, BLOCK=128)
    e = info.value
    line, col = bug_site(check_non_negative)
    assert (e.kind, e.line, e.col, e.program_id, e.index, e.message) == (
        "assert", line, col, (1, 0, 0), (22,), "x must be non-negative")
    assert (e.offset, e.size, e.arg) == (None, None, None)
    assert str(e) == (f"kernel `check_non_negative` at {THIS_FILE}:{line}:{col}: device assertion failed in "
                      f"program (1, 0, 0) at idx (22): x must be non-negative")


def test_device_assert_failing_on_a_scalar(backend):
    with pytest.raises(tegula.DeviceError) as info:
        check_non_negative[(2,)](backend.zeros(4, np.float32), 0, BLOCK=128)
    e = info.value
    line, col = bug_site(check_non_negative, marker="# SCALAR")
    assert (e.line, e.col, e.program_id, e.index, e.message) == (line, col, (0, 0, 0), (), "n must be positive")


def test_device_assert_passing(backend):
    check_non_negative[(3,)](backend.array(np.ones(300, np.float32)), 300, BLOCK=128)


@tegula.jit(debug=True)
def python_assert_on_an_integer(x_ptr, n):
    assert n, "n must not be zero"
    tl.store(x_ptr, n)


def test_python_assert_on_an_integer_tests_it_against_zero(backend):
    # `assert n` of an integer is Python's truth (n != 0); it used to reach the IR as an i32 condition.
    x = backend.zeros(1, np.int32)
    python_assert_on_an_integer[(1,)](x, 7)
    assert backend.numpy(x)[0] == 7
    with pytest.raises(tegula.DeviceError, match="n must not be zero"):
        python_assert_on_an_integer[(1,)](x, 0)


def _strided_sum(x_ptr, out_ptr, start, n, step):
    acc = 0.0
    for i in range(start, n, step):  # STEP
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


strided_sum = tegula.jit(_strided_sum)
strided_sum_checked = tegula.jit(_strided_sum, debug=True)


def test_a_runtime_range_step_of_zero_is_a_device_error_in_debug_mode(backend):
    # Python refuses range(a, b, 0); a kernel cannot raise, so debug mode checks the step where it
    # is only known at launch. Without debug mode the loop runs no iteration.
    values = np.random.default_rng(5).standard_normal(37).astype(np.float32)
    x, out = backend.array(values), backend.zeros(1, np.float32)
    for step in (3, -2):
        start, end = (1, 37) if step > 0 else (36, 0)
        strided_sum_checked[(1,)](x, out, start, end, step)
        np.testing.assert_allclose(backend.numpy(out)[0], values[start:end:step].sum(), rtol=1e-5)
    with pytest.raises(tegula.DeviceError) as info:
        strided_sum_checked[(1,)](x, out, 1, 37, 0)
    line, _ = bug_site(strided_sum_checked, call="range", marker="# STEP")
    assert (info.value.kind, info.value.line, info.value.message) == ("assert", line,
                                                                      "range() step must not be zero")
    strided_sum[(1,)](x, out, 1, 37, 0)
    assert backend.numpy(out)[0] == 0.0


def test_python_assert_on_a_float_asks_for_a_comparison():
    @tegula.jit(debug=True)
    def float_assert(x_ptr, scale):
        assert scale
        tl.store(x_ptr, scale)

    with pytest.raises(tegula.CompilationError, match="the assertion must be boolean"):
        float_assert[(1,)](np.zeros(1, np.float32), 0.5)


@tegula.jit
def check_non_negative_unless_debug(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")


def test_device_assert_is_not_checked_without_debug(backend):
    check_non_negative_unless_debug[(1,)](backend.array(-np.ones(10, np.float32)), 10, BLOCK=16)


# --- the switch, the generated code and the caches --------------------------------------------------


def test_tegula_debug_environment_variable(backend, tmp_path):
    # The variable is read when a kernel is defined: run it in a fresh process.
    script = tmp_path / "env_debug.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})\n"
        "from conftest import Backend\n"
        "import numpy as np, tegula\n"
        "import test_debug_mode as t\n"
        f"backend = Backend({backend.name!r})\n"
        "assert t.check_non_negative_unless_debug.debug\n"
        "try:\n"
        "    t.check_non_negative_unless_debug[(1,)](backend.array(-np.ones(10, np.float32)), 10, BLOCK=16)\n"
        "except tegula.DeviceError as e:\n"
        "    print('raised', e.kind, e.message)\n")
    env = dict(os.environ, TEGULA_DEBUG="1")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "raised assert x must be non-negative"


def test_debug_off_generates_no_check_code():
    x, out = np.ones(100, np.float32), np.zeros(100, np.float32)
    plain = tegula.jit(no_tail_mask.fn).inspect(x, out, 100, BLOCK=128).source
    checked = no_tail_mask.inspect(x, out, 100, BLOCK=128).source
    for text in ("tg_access", "TgDebug", "tg_debug", "tg_extents", "tg_record"):
        assert text not in plain
        assert text in checked


def test_debug_is_part_of_the_cache_key(backend):
    values, x = data(backend, 100)
    out = backend.zeros(100, np.float32)
    plain = tegula.jit(masked_copy.fn)
    plain_kernel = plain[(1,)](x, out, 100, BLOCK=128)
    debug_kernel = masked_copy[(1,)](x, out, 100, BLOCK=128)
    assert not plain_kernel.debug and debug_kernel.debug
    assert plain_kernel.key != debug_kernel.key
    # Turning debug on for a kernel that already ran compiles a debug build.
    plain.debug = True
    assert plain[(1,)](x, out, 100, BLOCK=128).key == debug_kernel.key
    plain.debug = False
    assert plain[(1,)](x, out, 100, BLOCK=128) is plain_kernel
    np.testing.assert_array_equal(backend.numpy(out), values + 1)


# --- device_print -----------------------------------------------------------------------------------


@tegula.jit
def print_values(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_print("x", tl.load(x_ptr + offs))


def test_device_print_lines_of_a_program_come_out_together(backend, capfd):
    print_values[(4,)](backend.array(np.arange(32, dtype=np.int32)), BLOCK=8)
    backend.synchronize()
    lines = capfd.readouterr().out.splitlines()
    if backend.is_cuda:  # Triton's GPU lines, one per element; device printf promises no order
        assert set(lines) == {f"pid ({p}, 0, 0) idx ({i}) x: {8 * p + i}" for p in range(4) for i in range(8)}
        return
    # Triton-CPU's: a program's tile as one line, its numbers aligned to the widest
    width = {p: len(str(8 * p + 7)) for p in range(4)}
    assert sorted(lines) == [f"({p}, 0, 0) x: [" + ", ".join(f"{8 * p + i:{width[p]}}" for i in range(8)) + "]"
                             for p in range(4)]


@tegula.jit
def print_hex(i16_ptr, i64_ptr, f32_ptr, f16_ptr, u8_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i16 = tl.load(i16_ptr + offs)
    tl.device_print("i16: ", i16, hex=True)
    tl.device_print("rest", tl.load(i64_ptr + offs), tl.load(f32_ptr + offs), tl.load(f16_ptr + offs),
                    tl.load(u8_ptr + offs), i16 < 0, hex=True)
    tl.device_print("plain", i16, hex=False)


def test_device_print_hex_shows_every_digit_of_each_value(backend, capfd):
    """hex=True, as Triton prints it: 0x and the value's bits zero-padded to its width (floats' bits; a bool
    as one byte); several values print one after the other (CPU) or a line each, `(operand k)` (CUDA)."""
    i16 = np.array([0, 1, -1, 255], np.int16)
    i64 = np.array([7, -2, 2**40 + 3, 0], np.int64)
    f32 = np.array([1.0, -2.0, 0.5, 0.0], np.float32)
    f16 = np.array([1.0, -2.0, 0.5, 65504.0], np.float16)
    u8 = np.array([0, 9, 200, 255], np.uint8)
    print_hex[(1,)](*(backend.array(a) for a in (i16, i64, f32, f16, u8)), BLOCK=4)
    backend.synchronize()
    out = capfd.readouterr().out
    unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

    def bits(a, i):
        return f"0x{int(a.view(unsigned[a.itemsize])[i]):0{2 * a.itemsize}x}"

    operands = [i64, f32, f16, u8, (i16 < 0).astype(np.uint8)]
    if backend.is_cuda:
        lines = set(out.splitlines())
        for i in range(4):
            assert f"pid (0, 0, 0) idx ({i}) i16: {bits(i16, i)}" in lines, lines
            for k, a in enumerate(operands):
                assert f"pid (0, 0, 0) idx ({i}) rest: (operand {k}) {bits(a, i)}" in lines, lines
            assert f"pid (0, 0, 0) idx ({i}) plain: {i16[i]}" in lines, lines
        return
    expected = [f"(0, 0, 0) i16: [{', '.join(bits(i16, i) for i in range(4))}]"]
    expected += [f"(0, 0, 0) rest: [{', '.join(bits(a, i) for i in range(4))}]" for a in operands]
    expected += ["(0, 0, 0) plain: [   0,    1,   -1,  255]"]  # one more column where some are negative
    assert out.splitlines() == expected


@tegula.jit
def print_shapes(i_ptr, f_ptr, g_ptr, n, scale):
    tl.device_print("", tl.load(i_ptr + tl.arange(0, 4)[:, None] * 16 + tl.arange(0, 16)[None, :]))
    tl.device_print("f", tl.load(f_ptr + tl.arange(0, 4)))
    tl.device_print("g ", tl.load(g_ptr + tl.arange(0, 4)))
    print("scalars:", n, scale)
    print("no value")


def check_triton_gpu_lines(out, i, f, g, threads=128):
    """Every element once; every scalar line once per thread of the program (4 warps), as Triton prints."""
    lines = out.splitlines()
    assert len(lines) == 64 + 4 + 4 + threads * (2 + 1), len(lines)
    counts = collections.Counter(lines)
    assert counts["pid (0, 0, 0) no value"] == threads and counts["pid (0, 0, 0) idx () scalars: (operand 0) 7"] == threads
    lines = set(lines)
    for r in range(4):
        for c in range(16):
            assert f"pid (0, 0, 0) idx ({r}, {c:2}): {i[16 * r + c]}" in lines, lines
    for k in range(4):
        assert f"pid (0, 0, 0) idx ({k}) f: {f[k]:f}" in lines, lines
        assert f"pid (0, 0, 0) idx ({k}) g: {g[k]:f}" in lines, lines
    assert "pid (0, 0, 0) idx () scalars: (operand 0) 7" in lines, lines
    assert "pid (0, 0, 0) idx () scalars: (operand 1) 0.500000" in lines, lines
    assert "pid (0, 0, 0) no value" in lines, lines


def test_device_print_reads_as_triton_prints(backend, capfd):
    """The prefix in Triton's form (" name: ", ": " when empty); scalars with printf's %f; on the CPU
    Triton-CPU's blocks (nested rows, eight numbers a line, floats with four decimals or in scientific
    notation when their sizes differ by more than three digits), on CUDA Triton's lines, each index padded
    to its dimension's digits."""
    i = np.arange(-30, 34, dtype=np.int32)
    f = np.array([1.5, -0.25, 3.0, 12.125], np.float32)
    g = np.array([1.0, 123456.0, -0.5, 2.0], np.float32)
    print_shapes[(1,)](*(backend.array(a) for a in (i, f, g)), 7, 0.5)
    backend.synchronize()
    out = capfd.readouterr().out
    if backend.is_cuda:
        return check_triton_gpu_lines(out, i, f, g)
    rows = [", ".join(f"{v:3}" for v in i[16 * r:16 * r + 8]) + ",\n" + " " * 13 +
            ", ".join(f"{v:3}" for v in i[16 * r + 8:16 * r + 16]) for r in range(4)]
    expected = "(0, 0, 0): [[" + "],\n            [".join(rows) + "]]\n"
    expected += "(0, 0, 0) f: [  1.5000,  -0.2500,   3.0000,  12.1250]\n"  # a column for the sign
    expected += "(0, 0, 0) g: [ 1.0000e+00,  1.2346e+05, -5.0000e-01,  2.0000e+00]\n"
    expected += "(0, 0, 0) scalars: 7\n(0, 0, 0) scalars: 0.500000\n(0, 0, 0) no value\n"
    assert out == expected


def test_emulated_cuda_print_reads_as_triton_prints(capfd):
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    i = np.arange(-30, 34, dtype=np.int32)
    f = np.array([1.5, -0.25, 3.0, 12.125], np.float32)
    g = np.array([1.0, 123456.0, -0.5, 2.0], np.float32)
    emulate(print_shapes, (1,), i, f, g, 7, 0.5)
    check_triton_gpu_lines(capfd.readouterr().out, i, f, g)


@tegula.jit
def print_options(x_ptr, MODE: tl.constexpr):
    x = tl.load(x_ptr)
    if MODE == "hex":
        tl.device_print("x", x, hex=x > 0)
    elif MODE == "keyword":
        tl.device_print("x", x, bogus=3)
    else:
        tl.device_print("a\x00b", x)


@pytest.mark.parametrize("mode, message", [
    ("hex", "error[E0601]: tl.device_print's hex needs a compile-time True or False"),
    ("keyword", "error[E0402]: tl.device_print has no keyword `bogus`"),
    ("nul", "error[E0405]: a printed string cannot hold a NUL character"),
])
def test_device_print_options_it_cannot_honour_are_errors(mode, message):
    """A runtime hex and unknown keywords were ignored, and a NUL ended the printed prefix there: each is a
    located error now."""
    x = np.array([255], np.int32)
    with pytest.raises(tegula.CompilationError, match=re.escape(message)):
        print_options[(1,)](x, MODE=mode)


@tegula.jit(debug=True)
def nul_assert_messages(x_ptr, MODE: tl.constexpr):
    x = tl.load(x_ptr)
    if MODE == "device_assert":
        tl.device_assert(x > 5, "msg with \x00 inside")
    elif MODE == "assert":
        assert x > 5, "assert with \x00 inside"
    else:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;\x00", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(x_ptr, y)


@pytest.mark.parametrize("mode, message, needle", [
    ("device_assert", "the message of tl.device_assert", '"msg with'),
    ("assert", "the message of an `assert`", '"assert with'),
    ("asm", "the asm of tl.inline_asm_elementwise", '"mov.b32'),
])
def test_a_nul_in_text_the_kernel_holds_is_an_error(mode, message, needle):
    """A NUL ended an assertion's message there (what the failed assertion reported was cut short), as it
    did tl.device_print's text: E0405 at the string, as for device_print."""
    with pytest.raises(tegula.CompilationError) as info:
        nul_assert_messages[(1,)](np.array([1], np.int32), MODE=mode)
    text = str(info.value)
    assert f"error[E0405]: {message} cannot hold a NUL character" in text, text
    source, first = inspect.getsourcelines(nul_assert_messages.fn)
    line = next(first + i for i, t in enumerate(source) if needle in t)
    column = source[line - first].index(needle) + 1
    assert f"test_debug_mode.py:{line}:{column}: error[E0405]" in text, text


# --- CUDA code, compiled without a GPU --------------------------------------------------------------


def _require_nvrtc():
    try:
        tegula._C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def _cuda_stages(kernel, arch, args, meta):
    request, _ = kernel._request_for(*args, **meta)
    options = tegula._C.CompileOptions(backend="cuda", cuda_arch=arch, keep_stages=True, debug=request.debug)
    return tegula._C.compile(request, options)


def _f32(n):
    return np.zeros(n, np.float32)


CUDA_KERNELS = [
    (no_tail_mask, (_f32(8), _f32(8), 8), {"BLOCK": 128}),
    (wrong_row_stride, (_f32(8), _f32(8), 8, 8, 8), {"BM": 8, "BN": 64}),
    (copy_as_int64, (np.zeros(8, np.int64), np.zeros(8, np.int64), 8), {"BLOCK": 128}),
    (store_one_further, (_f32(8), _f32(8), 8), {"BLOCK": 128}),
    (histogram_no_mask, (np.zeros(8, np.int32), np.zeros(8, np.int32), 8), {"BLOCK": 128}),
    (scalar_past_end, (_f32(8), _f32(8), 8), {"BLOCK": 32}),
    (row_sums_carried, (_f32(8), _f32(8), 8, 2), {"BLOCK": 128}),
    (pick_by_program, (_f32(8), _f32(8), _f32(8)), {"BLOCK": 128}),
    (tile_2d_missing_col_mask, (_f32(8), _f32(8), 8, 8), {"BM": 8, "BN": 64}),
    (gather_rows, (np.zeros(8, np.int32), _f32(8), _f32(8), 8), {"BLOCK": 64}),
    (broadcast_row_start, (_f32(8), _f32(8), 8), {"BLOCK": 128}),
    (check_non_negative, (_f32(8), 8), {"BLOCK": 128}),
    (masked_copy, (np.zeros(8, np.int8), np.zeros(8, np.int8), 8), {"BLOCK": 128}),
    (row_max, (_f32(8), _f32(8), 8), {"BLOCK": 128}),
    (sum_until_zero, (_f32(8), _f32(8)), {"BLOCK": 64}),
    (second_half, (_f32(8), _f32(8), 8), {"BLOCK": 128}),
    (to_half, (_f32(8), np.zeros(8, np.float16), 8), {"BLOCK": 64}),
    (count_true, (np.zeros(8, np.bool_), np.zeros(8, np.int32), 8), {"BLOCK": 128}),
]


@pytest.mark.parametrize("arch", [90, 80])
def test_cuda_debug_code_compiles(arch):
    _require_nvrtc()
    for kernel, args, meta in CUDA_KERNELS:
        compiled = _cuda_stages(kernel, arch, args, meta)
        assert compiled.debug
        assert "tg_access<" in compiled.source or "tg_debug_assert(" in compiled.source, kernel.__name__
        assert "trap" not in compiled.ptx, f"{kernel.__name__}: debug mode must not trap"
        plain = _cuda_stages(tegula.jit(kernel.fn), arch, args, meta)
        for text in ("tg_access", "TgDebug", "tg_debug", "tg_record"):
            assert text not in plain.source, f"{kernel.__name__}: {text} without debug mode"
