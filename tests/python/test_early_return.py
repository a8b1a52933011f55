"""Early `return`: inside a runtime `if`/`else`, a `for` or a `while`, in
kernels and in @jit helpers that return values, and under constexpr `if`s.
Each kernel is checked against the same computation in NumPy on random data,
on the backend under test and (for a few) through the CUDA backend's code on
the host emulator.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import rng_for


# --- a kernel that returns early ---------------------------------------------------


@tegula.jit
def skip_negative_rows_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    first = tl.load(x_ptr + row * n)
    if first < 0:
        return  # the row keeps what `out` held
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row * n + offs, x * 2.0 + first, mask=offs < n)


def skip_negative_rows_reference(x, out):
    ref = out.copy()
    for r in range(x.shape[0]):
        if x[r, 0] >= 0:
            ref[r] = x[r] * np.float32(2.0) + x[r, 0]
    return ref


def test_kernel_returns_early_when_a_loaded_value_is_negative(backend):
    rng = rng_for("skip_negative_rows")
    x = rng.standard_normal((37, 20)).astype(np.float32)
    before = rng.standard_normal((37, 20)).astype(np.float32)
    out = backend.array(before.copy())
    skip_negative_rows_kernel[(37,)](backend.array(x), out, 20, BLOCK=32)
    np.testing.assert_array_equal(backend.numpy(out), skip_negative_rows_reference(x, before))


# --- a helper returning different values from nested if/else ----------------------


@tegula.jit
def classify(x, t):
    # Scalars and constants on different paths; the fall-through return last.
    if x > t:
        if x > 2 * t:
            return x * 3
        else:
            return x * 2
    elif x < -t:
        if x < -2 * t:
            return 7
        return x - 100
    return x + 1


@tegula.jit
def scale_tile(x, s):
    # A tile returned from both branches of a runtime `if`.
    if s > 0:
        return x * s
    else:
        return x - s


@tegula.jit
def nested_helper_kernel(x_ptr, s_ptr, out_ptr, tiles_ptr, t, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid, classify(x, t))
    offs = tl.arange(0, BLOCK)
    row = tl.load(tiles_ptr + pid * BLOCK + offs)
    tl.store(tiles_ptr + pid * BLOCK + offs, scale_tile(row, tl.load(s_ptr + pid)))


def classify_reference(x, t):
    x = int(x)
    if x > t:
        return x * 3 if x > 2 * t else x * 2
    if x < -t:
        return 7 if x < -2 * t else x - 100
    return x + 1


def test_helper_returns_from_nested_if_else(backend):
    rng = rng_for("nested_helper")
    n, block, t = 64, 16, 10
    x = rng.integers(-40, 40, n).astype(np.int32)
    s = rng.integers(-3, 4, n).astype(np.int32)
    tiles = rng.integers(-50, 50, (n, block)).astype(np.int32)
    out = backend.zeros(n, np.int32)
    dev_tiles = backend.array(tiles.copy())
    nested_helper_kernel[(n,)](backend.array(x), backend.array(s), out, dev_tiles, t, BLOCK=block)
    np.testing.assert_array_equal(backend.numpy(out), [classify_reference(v, t) for v in x])
    expected = np.where(s[:, None] > 0, tiles * s[:, None], tiles - s[:, None])
    np.testing.assert_array_equal(backend.numpy(dev_tiles), expected)


# --- returns inside loops ----------------------------------------------------------


@tegula.jit
def first_negative_for(x_ptr, n):
    for i in range(n):
        if tl.load(x_ptr + i) < 0:
            return i
    return -1


@tegula.jit
def first_negative_while(x_ptr, n):
    i = 0
    while i < n:
        if tl.load(x_ptr + i) < 0:
            return i
        i += 1
    return -1


@tegula.jit
def prefix_sum_until_negative(x_ptr, n, BLOCK: tl.constexpr):
    # A tile carried by the loop and returned from inside it.
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    offs = tl.arange(0, BLOCK)
    for i in range(n):
        v = tl.load(x_ptr + i * BLOCK + offs)
        if tl.min(v, axis=0) < 0:
            return acc
        acc += v
    return acc * -1.0


@tegula.jit
def loop_return_kernel(x_ptr, rows_ptr, firsts_ptr, sums_ptr, n, WHILE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if WHILE:
        first = first_negative_while(x_ptr + pid * n, n)
    else:
        first = first_negative_for(x_ptr + pid * n, n)
    tl.store(firsts_ptr + pid, first)
    offs = tl.arange(0, BLOCK)
    tl.store(sums_ptr + pid * BLOCK + offs, prefix_sum_until_negative(rows_ptr + pid * n * BLOCK, n, BLOCK))


@tegula.jit
def stores_until_negative_kernel(x_ptr, out_ptr, n):
    # A kernel's own loop that returns: the stores after the return never run.
    pid = tl.program_id(0)
    for i in range(n):
        v = tl.load(x_ptr + pid * n + i)
        if v < 0:
            return
        tl.store(out_ptr + pid * n + i, v * 10)
    tl.store(out_ptr + pid * n, -1)  # only rows without a negative value get here


def first_negative_reference(rows):
    return np.array([np.flatnonzero(r < 0)[0] if (r < 0).any() else -1 for r in rows], np.int32)


def prefix_sum_reference(tiles):
    out = []
    for row in tiles:  # row: (n, BLOCK)
        acc = np.zeros(row.shape[1], np.float32)
        for v in row:
            if v.min() < 0:
                break
            acc = acc + v
        else:
            acc = acc * np.float32(-1.0)
        out.append(acc)
    return np.array(out)


@pytest.mark.parametrize("loop", ["for", "while"])
def test_return_inside_loops_stops_the_loop(backend, loop):
    rng = rng_for("loop_return", loop)
    programs, n, block = 24, 12, 8
    x = rng.integers(-3, 60, (programs, n)).astype(np.int32)
    rows = rng.uniform(-0.05, 1.0, (programs, n, block)).astype(np.float32)
    firsts = backend.zeros(programs, np.int32)
    sums = backend.zeros((programs, block), np.float32)
    loop_return_kernel[(programs,)](backend.array(x), backend.array(rows), firsts, sums, n,
                                    WHILE=loop == "while", BLOCK=block)
    np.testing.assert_array_equal(backend.numpy(firsts), first_negative_reference(x))
    np.testing.assert_allclose(backend.numpy(sums), prefix_sum_reference(rows), rtol=1e-6)


def test_kernel_loop_return_skips_later_stores(backend):
    rng = rng_for("stores_until_negative")
    programs, n = 16, 10
    x = rng.integers(-4, 50, (programs, n)).astype(np.int32)
    out = backend.zeros((programs, n), np.int32)
    stores_until_negative_kernel[(programs,)](backend.array(x), out, n)
    ref = np.zeros_like(x)
    for r in range(programs):
        for i in range(n):
            if x[r, i] < 0:
                break
            ref[r, i] = x[r, i] * 10
        else:
            ref[r, 0] = -1
    np.testing.assert_array_equal(backend.numpy(out), ref)


# --- constexpr `if` returns beside runtime ones ------------------------------------


@tegula.jit
def constexpr_return_kernel(sem_ptr, out_ptr, total: tl.constexpr):
    if total == 1:
        tl.store(out_ptr, tl.program_id(0))
        return
    prev = tl.atomic_add(sem_ptr, 1)
    if prev + 1 != total:
        return
    tl.store(out_ptr, tl.program_id(0) + prev)


def test_constexpr_if_return(backend):
    sem = backend.zeros(1, np.int32)
    out = backend.full(1, -1, np.int32)
    constexpr_return_kernel[(1,)](sem, out, 1)
    assert backend.numpy(out)[0] == 0 and backend.numpy(sem)[0] == 0
    sem = backend.zeros(1, np.int32)
    out = backend.full(1, -1, np.int32)
    constexpr_return_kernel[(4,)](sem, out, 4)
    # Only the program that increments last stores: its id plus 3.
    assert backend.numpy(sem)[0] == 4 and 3 <= backend.numpy(out)[0] <= 6


@tegula.jit
def nested_if_else_return_kernel(c_ptr, v_ptr, out_ptr):
    pid = tl.program_id(0)
    val = 0
    if tl.load(c_ptr + 3 * pid):
        if tl.load(c_ptr + 3 * pid + 1):
            val = tl.load(v_ptr)
        else:
            return
    else:
        if tl.load(c_ptr + 3 * pid + 2):
            val = tl.load(v_ptr + 1)
        else:
            val = tl.load(v_ptr + 2)
    tl.store(out_ptr + pid, val)


def test_nested_if_else_return_every_path(backend):
    conds = np.array([[a, b, c] for a in (1, 0) for b in (1, 0) for c in (1, 0)], np.int32)
    vals = rng_for("nested_if_else").integers(1, 100, 3).astype(np.int32)
    out = backend.full(8, -1, np.int32)
    nested_if_else_return_kernel[(8,)](backend.array(conds), backend.array(vals), out)
    ref = [(vals[0] if b else -1) if a else (vals[1] if c else vals[2]) for a, b, c in conds]
    np.testing.assert_array_equal(backend.numpy(out), ref)


# --- the CUDA backend's code, run on the host ---------------------------------------


def test_emulated_cuda_early_returns():
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    rng = rng_for("emulated_early_return")
    x = rng.standard_normal((6, 20)).astype(np.float32)
    before = rng.standard_normal((6, 20)).astype(np.float32)
    out = before.copy()
    emulate(skip_negative_rows_kernel, (6,), x, out, 20, BLOCK=32)
    np.testing.assert_array_equal(out, skip_negative_rows_reference(x, before))

    programs, n, block = 4, 6, 8
    xi = rng.integers(-2, 30, (programs, n)).astype(np.int32)
    rows = rng.uniform(-0.1, 1.0, (programs, n, block)).astype(np.float32)
    for use_while in (False, True):
        firsts = np.zeros(programs, np.int32)
        sums = np.zeros((programs, block), np.float32)
        emulate(loop_return_kernel, (programs,), xi, rows, firsts, sums, n, WHILE=use_while, BLOCK=block)
        np.testing.assert_array_equal(firsts, first_negative_reference(xi))
        np.testing.assert_allclose(sums, prefix_sum_reference(rows), rtol=1e-6)

    out = np.zeros(8, np.float32)
    emulate(pointer_set_beside_return_kernel, (8,), x[0, :8].copy(), out, 5)
    np.testing.assert_array_equal(out, np.concatenate([x[0, :5] + np.float32(1.0), np.zeros(3)]))


# --- what stays refused --------------------------------------------------------------


@tegula.jit
def mismatched_returns(x):
    if x > 0:
        return x
    return tl.zeros((4,), dtype=tl.float32)


@tegula.jit
def mismatched_returns_kernel(out_ptr, x):
    tl.store(out_ptr + tl.arange(0, 4), mismatched_returns(x))


def test_returns_of_different_types_are_refused():
    with pytest.raises(tegula.CompilationError, match="the return value") as e:
        mismatched_returns_kernel[(1,)](np.zeros(4, np.float32), 3)
    assert "the return value" in str(e.value)


# --- nested loops, tuples and unrolled loops -----------------------------------------


@tegula.jit
def find_negative_2d(x_ptr, n, m):
    for i in range(n):
        for j in range(m):
            if tl.load(x_ptr + i * m + j) < 0:
                return i, j
    return -1, -1


@tegula.jit
def find_2d_kernel(x_ptr, out_ptr, n, m):
    pid = tl.program_id(0)
    i, j = find_negative_2d(x_ptr + pid * n * m, n, m)
    tl.store(out_ptr + 2 * pid, i)
    tl.store(out_ptr + 2 * pid + 1, j)


def test_tuple_returned_from_nested_loops(backend):
    x = rng_for("find_2d").integers(-2, 40, (8, 5, 6)).astype(np.int32)
    out = backend.zeros(16, np.int32)
    find_2d_kernel[(8,)](backend.array(x), out, 5, 6)
    ref = []
    for r in x:
        where = np.argwhere(r < 0)
        ref += list(where[0]) if len(where) else [-1, -1]
    np.testing.assert_array_equal(backend.numpy(out), ref)


@tegula.jit
def static_range_return_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    if pid % 2 == 0:
        for i in tl.static_range(4):
            if tl.load(x_ptr + pid * 4 + i) < 0:
                return
            tl.store(out_ptr + pid * 4 + i, 1)
    tl.store(out_ptr + pid * 4, 5)


def test_return_inside_unrolled_loop_under_runtime_if(backend):
    x = rng_for("static_range_return").integers(-2, 10, (8, 4)).astype(np.int32)
    out = backend.zeros((8, 4), np.int32)
    static_range_return_kernel[(8,)](backend.array(x), out)
    ref = np.zeros((8, 4), np.int32)
    for p in range(8):
        returned = False
        if p % 2 == 0:
            for i in range(4):
                if x[p, i] < 0:
                    returned = True
                    break
                ref[p, i] = 1
        if not returned:
            ref[p, 0] = 5
    np.testing.assert_array_equal(backend.numpy(out), ref)


@tegula.jit
def returns_a_dtype(x):
    if x > 0:
        return tl.float32
    return tl.int32


@tegula.jit
def returns_a_dtype_kernel(x_ptr):
    tl.load(x_ptr).to(returns_a_dtype(tl.load(x_ptr)))


@tegula.jit
def kernel_returning_a_value_early(x_ptr):
    if tl.load(x_ptr) > 0:
        return 1


def test_returns_kernels_cannot_express_are_refused():
    x = np.ones(4, np.int32)
    with pytest.raises(tegula.CompilationError, match="E0606.*can return tensors and numbers"):
        returns_a_dtype_kernel[(1,)](x)
    with pytest.raises(tegula.CompilationError, match="E0606.*a kernel cannot return a value"):
        kernel_returning_a_value_early[(1,)](x)


@tegula.jit
def pointer_set_beside_return_kernel(x_ptr, out_ptr, n):
    # A pointer first assigned in the branch that does not return.
    pid = tl.program_id(0)
    if pid >= n:
        return
    else:
        p = out_ptr + pid
    tl.store(p, tl.load(x_ptr + pid) + 1.0)


def test_pointer_assigned_beside_a_return(backend):
    x = rng_for("pointer_beside_return").standard_normal(32).astype(np.float32)
    out = backend.zeros(32, np.float32)
    pointer_set_beside_return_kernel[(32,)](backend.array(x), out, 20)
    np.testing.assert_array_equal(backend.numpy(out), np.concatenate([x[:20] + np.float32(1.0), np.zeros(12)]))


# --- names that take a new type after `if ...: return` -------------------------------


@tegula.jit
def retyped_after_return_kernel(x_ptr, out_ptr, n_rows, n, BLOCK: tl.constexpr):
    # As rotary kernels write it: the pointer arguments become tiles of pointers
    # only after the programs past the end have returned.
    row = tl.program_id(0)
    if row >= n_rows:
        return
    scale = row
    x_ptr = x_ptr + row * n + tl.arange(0, BLOCK)
    out_ptr = out_ptr + row * n + tl.arange(0, BLOCK)
    scale = tl.full((BLOCK,), 0.5, tl.float32) * scale
    tl.store(out_ptr, tl.load(x_ptr, mask=tl.arange(0, BLOCK) < n) * scale, mask=tl.arange(0, BLOCK) < n)


@tegula.jit
def offsets_or_nothing(p, flag, BLOCK: tl.constexpr):
    if flag == 0:
        return 0.0
    p = p + tl.arange(0, BLOCK)
    return tl.sum(tl.load(p), axis=0)


@tegula.jit
def retyped_in_helper_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, offsets_or_nothing(x_ptr + pid * BLOCK, pid % 2, BLOCK))


def retyped_after_return_reference(x, out, n_rows):
    ref = out.copy()
    ref[:n_rows] = x[:n_rows] * (np.float32(0.5) * np.arange(n_rows, dtype=np.float32))[:, None]
    return ref


def test_names_retyped_after_an_early_return(backend):
    rng = rng_for("retyped_after_return")
    x = rng.standard_normal((9, 13)).astype(np.float32)
    before = rng.standard_normal((9, 13)).astype(np.float32)
    out = backend.array(before.copy())
    retyped_after_return_kernel[(9,)](backend.array(x), out, 6, 13, BLOCK=16)
    np.testing.assert_array_equal(backend.numpy(out), retyped_after_return_reference(x, before, 6))

    xs = rng.standard_normal((5, 8)).astype(np.float32)
    sums = backend.zeros(5, np.float32)
    retyped_in_helper_kernel[(5,)](backend.array(xs), sums, BLOCK=8)
    ref = np.where(np.arange(5) % 2 == 1, xs.sum(axis=1, dtype=np.float64), 0.0)
    np.testing.assert_allclose(backend.numpy(sums), ref, rtol=1e-6, atol=1e-6)


def test_emulated_cuda_names_retyped_after_an_early_return():
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    rng = rng_for("emulated_retyped_after_return")
    x = rng.standard_normal((9, 13)).astype(np.float32)
    before = rng.standard_normal((9, 13)).astype(np.float32)
    out = before.copy()
    emulate(retyped_after_return_kernel, (9,), x, out, 6, 13, BLOCK=16)
    np.testing.assert_array_equal(out, retyped_after_return_reference(x, before, 6))
