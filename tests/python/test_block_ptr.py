"""Block pointers: tl.make_block_ptr / tl.advance with boundary_check and
padding_option, against NumPy, on the backend under test: ragged 2-D copies,
padding with zeros and NaN, negative offsets, column-major (order=(0, 1))
inputs, 1-D and 3-D blocks, a matmul whose K loop advances block pointers,
block pointers carried through for/while loops and runtime ifs and passed to
@jit helpers, debug-mode bounds checks, located compile errors, and the CUDA
code of a tutorial-style block-pointer matmul (sm_90 and sm_80, through NVRTC).
"""

import inspect
import os

import numpy as np
import pytest

import tegula
import tegula.language as tl


def rng_for(*key):
    return np.random.default_rng(abs(hash(("block_ptr",) + key)) % (2**32))


def random_array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-100, 100, size=shape).astype(dtype)


# --- 2-D copies with ragged edges ------------------------------------------------------


@tegula.jit
def scale_copy_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(sxm, sxn), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (sym, syn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    x = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    tl.store(dst, x * 3, boundary_check=(0, 1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8"])
@pytest.mark.parametrize("M,N", [(37, 45), (64, 32), (1, 70)])
def test_ragged_2d_copy(backend, dtype, M, N):
    rng = rng_for("copy", dtype, M, N)
    x = random_array(rng, (M, N), dtype)
    # The output lives inside a larger buffer: stores outside (M, N) must not happen.
    sentinel = random_array(rng, (M + 5, N + 7), dtype)
    out = backend.array(sentinel)
    ym, yn = backend.strides(out)
    BM, BN = 16, 32
    scale_copy_kernel[(tegula.cdiv(M, BM), tegula.cdiv(N, BN))](
        backend.array(x), out, M, N, N, 1, ym, yn, BM=BM, BN=BN)
    got = backend.numpy(out)
    expected = sentinel.copy()
    expected[:M, :N] = (x * 3).astype(dtype)
    np.testing.assert_array_equal(got, expected)


def test_column_major_input_order_0_1(backend):
    # A column-major M x N matrix (stored as its C-ordered transpose): stride 1
    # along rows, and order=(0, 1) says so.
    M, N = 45, 30
    x = random_array(rng_for("fortran"), (M, N), np.float32)
    storage = backend.array(np.ascontiguousarray(x.T))
    out = backend.zeros((M, N), np.float32)
    colmajor_copy_kernel[(tegula.cdiv(M, 16), tegula.cdiv(N, 16))](storage, out, M, N, 1, M, N, BM=16, BN=16)
    np.testing.assert_array_equal(backend.numpy(out), x)


@tegula.jit
def colmajor_copy_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_block_ptr(x_ptr, (M, N), (sxm, sxn), (pm * BM, pn * BN), (BM, BN), order=(0, 1))
    dst = tl.make_block_ptr(y_ptr, (M, N), (sym, 1), (pm * BM, pn * BN), (BM, BN), order=(1, 0))
    tl.store(dst, tl.load(src, boundary_check=(1, 0)), boundary_check=(0, 1))


# --- padding ---------------------------------------------------------------------------------


@tegula.jit
def padded_block_kernel(x_ptr, out_ptr, M, N, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr,
                        PADDING: tl.constexpr, ROWS_ONLY: tl.constexpr):
    # One block at (off_m, off_n), written whole into a dense BM x BN output.
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (off_m, off_n), (BM, BN), (1, 0))
    if ROWS_ONLY:
        block = tl.load(src, boundary_check=0, padding_option=PADDING)  # an int, as Triton allows
    else:
        block = tl.load(src, boundary_check=(1, 0), padding_option=PADDING)
    dst = tl.make_block_ptr(out_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(dst, block)


def reference_block(x, off_m, off_n, BM, BN, fill):
    M, N = x.shape
    out = np.full((BM, BN), fill, dtype=x.dtype)
    rows = np.arange(off_m, off_m + BM)
    cols = np.arange(off_n, off_n + BN)
    inside_r = (rows >= 0) & (rows < M)
    inside_c = (cols >= 0) & (cols < N)
    out[np.ix_(inside_r, inside_c)] = x[np.ix_(rows[inside_r], cols[inside_c])]
    return out


@pytest.mark.parametrize("padding,fill", [("zero", 0.0), ("nan", np.nan)])
@pytest.mark.parametrize("off_m,off_n", [(20, 25), (-3, -5), (-6, 28)])
def test_padding_at_every_edge(backend, padding, fill, off_m, off_n):
    M, N, BM, BN = 30, 33, 16, 8
    x = random_array(rng_for("pad", padding), (M, N), np.float32)
    out = backend.zeros((BM, BN), np.float32)
    padded_block_kernel[(1,)](backend.array(x), out, M, N, off_m, off_n, BM=BM, BN=BN, PADDING=padding,
                              ROWS_ONLY=False)
    np.testing.assert_array_equal(backend.numpy(out), reference_block(x, off_m, off_n, BM, BN, fill))


def test_boundary_check_of_one_dimension(backend):
    # Only rows are checked; the columns stay in range.
    M, N, BM, BN = 21, 16, 16, 16
    x = random_array(rng_for("one-dim"), (M, N), np.float32)
    out = backend.zeros((BM, BN), np.float32)
    padded_block_kernel[(1,)](backend.array(x), out, M, N, 10, 0, BM=BM, BN=BN, PADDING="zero", ROWS_ONLY=True)
    np.testing.assert_array_equal(backend.numpy(out), reference_block(x, 10, 0, BM, BN, 0.0))


@pytest.mark.parametrize("dtype", ["int16", "float16"])
def test_zero_padding_of_narrow_types(backend, dtype):
    M, N, BM, BN = 5, 7, 8, 8
    x = random_array(rng_for("narrow", dtype), (M, N), dtype)
    out = backend.zeros((BM, BN), dtype)
    padded_block_kernel[(1,)](backend.array(x), out, M, N, 0, 0, BM=BM, BN=BN, PADDING="zero", ROWS_ONLY=False)
    np.testing.assert_array_equal(backend.numpy(out), reference_block(x, 0, 0, BM, BN, 0))


# --- 1-D and 3-D blocks ----------------------------------------------------------------------


@tegula.jit
def copy_1d_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    src = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,))
    dst = tl.make_block_ptr(y_ptr, n, 1, start, BLOCK, 0)  # rank 1: scalars instead of 1-tuples
    tl.store(dst, tl.load(src, boundary_check=(0,)) + 1, boundary_check=(0,))


def test_1d_block(backend):
    n = 1000
    x = random_array(rng_for("1d"), n, np.float32)
    y = backend.zeros(n + 24, np.float32)
    copy_1d_kernel[(tegula.cdiv(n, 64),)](backend.array(x), y, n, BLOCK=64)
    got = backend.numpy(y)
    np.testing.assert_array_equal(got[:n], x + 1)
    np.testing.assert_array_equal(got[n:], 0)


@tegula.jit
def sum_middle_axis_kernel(x_ptr, out_ptr, A, B, C, sa, sb, sc, BA: tl.constexpr, BB: tl.constexpr,
                           BC: tl.constexpr):
    # out[a, c] = sum over b of x[a, b, c], one (BA, BC) output block per program.
    pa = tl.program_id(0)
    pc = tl.program_id(1)
    src = tl.make_block_ptr(x_ptr, (A, B, C), (sa, sb, sc), (pa * BA, 0, pc * BC), (BA, BB, BC), (2, 1, 0))
    acc = tl.zeros((BA, BC), dtype=tl.float32)
    for _ in range(0, B, BB):
        acc += tl.sum(tl.load(src, boundary_check=(0, 1, 2), padding_option="zero"), axis=1)
        src = tl.advance(src, (0, BB, 0))
    dst = tl.make_block_ptr(out_ptr, (A, C), (C, 1), (pa * BA, pc * BC), (BA, BC), (1, 0))
    tl.store(dst, acc, boundary_check=(0, 1))


def test_3d_block_advanced_through_a_loop(backend):
    A, B, C = 7, 19, 10
    x = random_array(rng_for("3d"), (A, B, C), np.float32)
    out = backend.zeros((A, C), np.float32)
    sum_middle_axis_kernel[(tegula.cdiv(A, 4), tegula.cdiv(C, 8))](
        backend.array(x), out, A, B, C, B * C, C, 1, BA=4, BB=8, BC=8)
    np.testing.assert_allclose(backend.numpy(out), x.sum(axis=1), rtol=1e-5, atol=1e-5)


# --- matmul with a K loop -------------------------------------------------------------------


@tegula.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_block_ptr = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                    offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_block_ptr = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                    offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_block_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block_ptr, boundary_check=(0, 1), padding_option="zero")
        accumulator = tl.dot(a, b, accumulator)
        a_block_ptr = tl.advance(a_block_ptr, (0, BLOCK_K))
        b_block_ptr = tl.advance(b_block_ptr, (BLOCK_K, 0))
    c = accumulator.to(tl.float16)
    c_block_ptr = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                    offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N), block_shape=(BLOCK_M, BLOCK_N),
                                    order=(1, 0))
    tl.store(c_block_ptr, c, boundary_check=(0, 1))


@pytest.mark.parametrize("M,N,K", [(70, 50, 90), (64, 64, 64), (33, 17, 5)])
def test_matmul_k_loop_with_masked_tails(backend, M, N, K):
    rng = rng_for("matmul", M, N, K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = backend.zeros((M, N), np.float16)
    BM, BN, BK = 32, 32, 16
    matmul_kernel[(tegula.cdiv(M, BM), tegula.cdiv(N, BN))](
        backend.array(a), backend.array(b), c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(backend.numpy(c).astype(np.float64), ref, rtol=1e-2, atol=2e-2)


# --- carried through control flow, passed to helpers ------------------------------------------


@tegula.jit
def load_rows(block_ptr):
    return tl.load(block_ptr, boundary_check=(0, 1), padding_option="zero")


@tegula.jit
def next_columns(block_ptr, step: tl.constexpr):
    return tl.advance(block_ptr, (0, step))


@tegula.jit
def row_sums_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, USE_WHILE: tl.constexpr):
    # out[i] = sum of row i, walking the columns BN at a time; the odd column
    # blocks are skipped by a runtime `if` that advances twice.
    pm = tl.program_id(0)
    blocks = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    if USE_WHILE:
        start = 0
        while start < N:
            acc += tl.sum(load_rows(blocks), axis=1)
            blocks = next_columns(blocks, BN)
            start += BN
    else:
        for start in range(0, N, BN):
            acc += tl.sum(load_rows(blocks), axis=1)
            blocks = blocks.advance((0, BN))
    rows = tl.make_block_ptr(out_ptr, (M,), (1,), (pm * BM,), (BM,), (0,))
    tl.store(rows, acc, boundary_check=(0,))


@pytest.mark.parametrize("use_while", [False, True])
def test_block_pointers_through_loops_and_helpers(backend, use_while):
    M, N = 37, 101
    x = random_array(rng_for("rows", use_while), (M, N), np.float32)
    out = backend.zeros(M, np.float32)
    row_sums_kernel[(tegula.cdiv(M, 16),)](backend.array(x), out, M, N, BM=16, BN=32, USE_WHILE=use_while)
    np.testing.assert_allclose(backend.numpy(out), x.sum(axis=1), rtol=1e-5, atol=1e-4)


@tegula.jit
def even_blocks_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Sums the even-numbered blocks of x: a runtime `if` advances the pointer
    # once more after every block it reads, and a tuple carries two pointers.
    src = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    pair = (src, tl.make_block_ptr(x_ptr, (n,), (1,), (BLOCK,), (BLOCK,), (0,)))
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    odd_acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, tl.cdiv(n, BLOCK)):
        if i % 2 == 0:
            acc += tl.load(src, boundary_check=(0,), padding_option="zero")
            src = tl.advance(src, (2 * BLOCK,))
        even, odd = pair
        odd_acc += tl.load(odd, boundary_check=(0,), padding_option="zero")
        pair = (even, tl.advance(odd, (2 * BLOCK,)))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
    tl.store(out_ptr + BLOCK + tl.arange(0, BLOCK), odd_acc)


def test_block_pointer_advanced_in_a_runtime_if_and_carried_in_a_tuple(backend):
    n, BLOCK = 300, 32
    x = random_array(rng_for("if"), n, np.float32)
    out = backend.zeros(2 * BLOCK, np.float32)
    even_blocks_kernel[(1,)](backend.array(x), out, n, BLOCK=BLOCK)
    padded = np.zeros(tegula.cdiv(n, BLOCK) * BLOCK + 2 * BLOCK, np.float32)
    padded[:n] = x
    blocks = padded.reshape(-1, BLOCK)
    count = tegula.cdiv(n, BLOCK)
    evens = blocks[0:count:2].sum(axis=0)
    odds = blocks[1::2].sum(axis=0)
    got = backend.numpy(out)
    np.testing.assert_allclose(got[:BLOCK], evens, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[BLOCK:], odds, rtol=1e-5, atol=1e-5)


@tegula.jit
def fill_kernel(y_ptr, M, N, value, BM: tl.constexpr, BN: tl.constexpr):
    dst = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    tl.store(dst, value, boundary_check=(0, 1))  # a scalar is broadcast to the block


def test_store_of_a_scalar(backend):
    y = backend.zeros((10, 12), np.float32)
    fill_kernel[(2,)](y, 10, 12, 2.5, BM=8, BN=16)
    np.testing.assert_array_equal(backend.numpy(y), np.full((10, 12), 2.5, np.float32))


# --- debug mode ----------------------------------------------------------------------------


@tegula.jit(debug=True)
def unchecked_block_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (n,), (1,), (tl.program_id(0) * BLOCK,), (BLOCK,), (0,))
    tl.store(y_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), tl.load(src))  # no boundary_check


def test_debug_mode_reports_an_unchecked_block_past_the_end(backend):
    # Without boundary_check an access outside the tensor is undefined (as in
    # Triton); debug mode reports it instead of reading past the array.
    x = backend.zeros(48, np.float32)
    y = backend.zeros(64, np.float32)
    with pytest.raises(tegula.DeviceError) as info:
        unchecked_block_kernel[(2,)](x, y, 48, BLOCK=32)
        backend.synchronize()
    assert info.value.kind == "load" and info.value.arg == "x_ptr", str(info.value)


# --- compile errors ---------------------------------------------------------------------------


def where(fn, needle):
    lines, first = inspect.getsourcelines(fn.fn)
    for i, text in enumerate(lines):
        if text.lstrip().startswith(("@", "def ")):
            continue
        col = text.find(needle)
        if col >= 0:
            return first + i, col + 1
    raise AssertionError(f"{needle!r} not in the source of {fn.__name__}")


def assert_compile_error(kernel, needle, text, *args, **kwargs):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    message = str(info.value)
    line, col = where(kernel, needle)
    assert f"{os.path.basename(__file__)}:{line}:{col}: error[E" in message.splitlines()[0], message
    assert text in message, message
    return message


X = np.zeros((8, 8), np.float32)


@tegula.jit
def wrong_rank_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), strides=(8, 1, 1), offsets=(0, 0), block_shape=(8, 8), order=(1, 0))
    tl.store(p, 1.0)


def test_error_wrong_rank():
    assert_compile_error(wrong_rank_kernel, "strides=(8, 1, 1)",
                         "`strides` of tl.make_block_ptr has 3 elements but the block has rank 2", X)


@tegula.jit
def runtime_block_shape_kernel(x_ptr, n):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), block_shape=(n,), order=(0,))
    tl.store(p, 1.0)


def test_error_non_constexpr_block_shape():
    msg = assert_compile_error(runtime_block_shape_kernel, "block_shape=(n,)",
                               "`block_shape` of tl.make_block_ptr must be compile-time integers, but element 0 "
                               "is a scalar of type i32", X, 8)
    assert "hint:" in msg


@tegula.jit
def bad_boundary_check_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    x = tl.load(p, boundary_check=(0, 2))
    tl.store(p, x)


def test_error_boundary_check_out_of_range():
    msg = assert_compile_error(bad_boundary_check_kernel, "boundary_check=(0, 2)",
                               "boundary_check dimension 2 is out of range for a block of rank 2", X)
    assert "numbered from 0 to 1" in msg


@tegula.jit
def wrong_value_shape_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.store(p, tl.zeros((8, 4), dtype=tl.float32), boundary_check=(0, 1))


def test_error_store_of_a_wrong_shape():
    assert_compile_error(wrong_value_shape_kernel, "tl.zeros",
                         "the value stored by tl.store has shape 8x4 but the block is 8x8", X)


@tegula.jit
def mask_with_block_pointer_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    x = tl.load(p, mask=tl.full((8, 8), True, tl.int1))
    tl.store(p, x)


def test_error_mask_with_a_block_pointer():
    msg = assert_compile_error(mask_with_block_pointer_kernel, "mask=",
                               "`mask` and `other` cannot be used with a block pointer", X)
    assert "boundary_check" in msg


@tegula.jit
def nan_padding_of_ints_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.store(p, tl.load(p, boundary_check=(0,), padding_option="nan"))


def test_error_nan_padding_of_integers():
    assert_compile_error(nan_padding_of_ints_kernel, "padding_option=",
                         "padding_option=\"nan\" needs floating-point elements, but they are int32",
                         np.zeros((8, 8), np.int32))


@tegula.jit
def wide_offset_kernel(x_ptr, start):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (start, 0), (8, 8), (1, 0))
    tl.store(p, 1.0)


def test_error_64_bit_offsets():
    msg = assert_compile_error(wide_offset_kernel, "(start, 0)",
                               "`offsets[0]` of tl.make_block_ptr must be a 32-bit integer", X, 2**40)
    assert ".to(tl.int32)" in msg


@tegula.jit
def bad_order_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), order=(1, 1))
    tl.store(p, 1.0)


def test_error_order_not_a_permutation():
    assert_compile_error(bad_order_kernel, "order=(1, 1)", "`order` of tl.make_block_ptr must be a permutation of 0..1", X)


@tegula.jit
def advance_wrong_count_kernel(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    p = tl.advance(p, (1, 2, 3))
    tl.store(p, 1.0)


def test_error_advance_with_wrong_offsets():
    assert_compile_error(advance_wrong_count_kernel, "(1, 2, 3)", "tl.advance got 3 offsets for a block of rank 2", X)


@tegula.jit
def boundary_check_on_pointer_tile_kernel(x_ptr):
    offs = tl.arange(0, 8)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, boundary_check=(0,)))


def test_error_boundary_check_on_a_pointer_tile():
    assert_compile_error(boundary_check_on_pointer_tile_kernel, "boundary_check=(0,)",
                         "`boundary_check` applies to block pointers, not to a tile of type", X)


@tegula.jit
def reassigned_in_loop_kernel(x_ptr, n):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    for i in range(n):
        p = x_ptr
    tl.store(x_ptr, 1.0)


def test_error_block_pointer_replaced_in_a_loop():
    with pytest.raises(tegula.CompilationError) as info:
        reassigned_in_loop_kernel[(1,)](X, 2)
    assert "`p` is a block pointer to 8x8 fp32 blocks before the loop and a scalar of type ptr<f32> inside it" in \
        str(info.value), str(info.value)


# --- the CUDA code (compiled through NVRTC, no GPU needed) -----------------------------------


@pytest.mark.parametrize("arch", [90, 80])
def test_block_pointer_matmul_compiles_for_cuda(tmp_path, arch):
    from cuda_compile_util import compile_for_cuda

    signature = "*fp16:16, *fp16:16, *fp16:16, i32, i32, i32, i32, i32:1, i32, i32:1, i32, i32:1, 64, 64, 32"
    out = compile_for_cuda(matmul_kernel, signature, arch, tmp_path)
    assert "mma" in out  # tensor cores: mma.sync, or wgmma on sm_90
    assert "spill" in out  # the ptxas report


def test_block_pointer_copy_is_vectorized_for_cuda(tmp_path):
    from cuda_compile_util import compile_for_cuda

    signature = "*fp32:16, *fp32:16, i32, i32, i32:16, i32:1, i32:16, i32:1, 32, 64"
    out = compile_for_cuda(scale_copy_kernel, signature, 90, tmp_path, emit="ptx")
    assert "ld.global.v4.f32" in out


@tegula.jit
def block_ptr_dtype_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    # A block pointer's dtype is a pointer dtype whose element_ty is the element's (Triton's code casts to it).
    block = tl.make_block_ptr(src_ptr, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,))
    values = tl.load(block, boundary_check=(0,), padding_option="zero").to(block.dtype.element_ty)
    tl.static_assert(block.dtype.element_ty == tl.float16)
    tl.store(dst_ptr + tl.arange(0, BLOCK), values * 2)


def test_block_pointer_dtype_element_ty(backend):
    x = np.random.default_rng(6).standard_normal(13).astype(np.float16)
    out = backend.zeros((16,), np.float16)
    block_ptr_dtype_kernel[(1,)](backend.array(x), out, 13, BLOCK=16)
    np.testing.assert_array_equal(backend.numpy(out), np.concatenate([x * 2, np.zeros(3, np.float16)]))


@tegula.jit
def block_ptr_type_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # `.type.element_ty` too: a store converts to it (generated elementwise kernels do this).
    off = tl.program_id(0) * BLOCK
    xb = tl.make_block_ptr(x_ptr, (n,), (1,), (off,), (BLOCK,), order=(0,))
    yb = tl.make_block_ptr(y_ptr, (n,), (1,), (off,), (BLOCK,), order=(0,))
    x = tl.load(xb, boundary_check=(0,)).to(tl.float32)
    tl.static_assert(yb.type.element_ty == tl.float16 and yb.type.is_ptr())
    tl.store(yb, (x * 2.5).to(yb.type.element_ty), boundary_check=(0,))


def test_block_pointer_type_element_ty(backend):
    n = 100
    x = np.random.default_rng(8).standard_normal(n).astype(np.float16)
    out = backend.zeros((n,), np.float16)
    block_ptr_type_kernel[(tegula.cdiv(n, 32),)](backend.array(x), out, n, BLOCK=32)
    np.testing.assert_array_equal(backend.numpy(out), (x.astype(np.float32) * 2.5).astype(np.float16))
