"""Control flow and launch: runtime if/elif/else, for loops over range,
tl.range and tl.static_range with loop-carried tiles, while loops, nested
loops, @jit helpers (constexpr parameters, defaults, tuple returns),
tl.static_assert and tl.static_print; program_id and num_programs on 1-D,
2-D and 3-D grids, zero-sized grids and grids computed from the meta
parameters. Each kernel is checked against the same computation in Python.
"""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import check, random, rng_for


@tegula.jit
def branches_kernel(out_ptr, a, b, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = offs.to(tl.float32)
    scale = 1.0
    shift = 0
    if a > b:
        scale = 2.0
        x = x + 1.0
    elif a == b:
        scale = -1.0
        shift = 3
    else:
        shift = a - b
    if a % 2 == 0:  # an `if` without `else` changing a tile
        x = x * 10.0
    y = x * scale + shift
    tl.store(out_ptr + offs, y)
    # A conditional expression on a runtime scalar.
    tl.store(out_ptr + BLOCK, 5.0 if a < 0 else 7.0)


def branches_reference(a, b, B):
    x = np.arange(B, dtype=np.float32)
    scale, shift = 1.0, 0
    if a > b:
        scale, x = 2.0, x + 1
    elif a == b:
        scale, shift = -1.0, 3
    else:
        shift = a - b
    if a % 2 == 0:
        x = x * 10
    return np.append(x * np.float32(scale) + np.float32(shift), 5.0 if a < 0 else 7.0)


@pytest.mark.parametrize("a,b", [(5, 3), (3, 3), (3, 5), (-4, 2), (6, 6), (-7, -9)])
def test_if_elif_else_on_runtime_scalars(backend, a, b):
    B = 16
    out = backend.zeros(B + 1, np.float32)
    branches_kernel[(1,)](out, a, b, BLOCK=B)
    np.testing.assert_array_equal(backend.numpy(out), branches_reference(a, b, B))


@tegula.jit
def loops_kernel(x_ptr, out_ptr, n, steps, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # range with a runtime bound and a tile carried through the loop.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        acc += tl.load(x_ptr + i + offs, mask=i + offs < n, other=0.0)
    tl.store(out_ptr + offs, acc)
    # tl.range with start, end and step, and tuning hints that change nothing.
    total = 0
    for j in tl.range(3, steps, 2, num_stages=2):
        total += j
    tl.store(out_ptr + BLOCK, total.to(tl.float32))
    # tl.static_range: unrolled; the index is a compile-time constant.
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for k in tl.static_range(UNROLL):
        tl.static_assert(k < UNROLL)
        s = s + (k + 1) * offs.to(tl.float32)
    for k in tl.static_range(1, 8, 3):  # 1, 4, 7
        s = s + k
    tl.store(out_ptr + BLOCK + 1 + offs, s)
    # A negative step.
    down = 0
    for j in range(steps, 0, -3):
        down = down * 2 + j
    tl.store(out_ptr + 2 * BLOCK + 1, down.to(tl.float32))


@pytest.mark.parametrize("n,steps", [(100, 12), (37, 3), (1, 0), (64, 9)])
def test_for_loops(backend, n, steps):
    B, unroll = 32, 4
    rng = rng_for("loops", n)
    x = random(rng, n, "float32")
    out = backend.zeros(2 * B + 2, np.float32)
    loops_kernel[(1,)](backend.array(x), out, n, steps, BLOCK=B, UNROLL=unroll)
    out = backend.numpy(out)
    padded = np.zeros(-(-n // B) * B, np.float32)
    padded[:n] = x
    acc = np.zeros(B, np.float32)
    for row in padded.reshape(-1, B):  # the kernel's order of additions, in f32
        acc += row
    check(out[:B], acc, "float32", ulps=0, atol=0, what="range loop")
    assert out[B] == sum(range(3, steps, 2))
    np.testing.assert_array_equal(out[B + 1:2 * B + 1], sum(range(1, unroll + 1)) * np.arange(B) + 12)
    down = 0
    for j in range(steps, 0, -3):
        down = down * 2 + j
    assert out[2 * B + 1] == down


@tegula.jit
def while_kernel(out_ptr, start, BLOCK: tl.constexpr):
    # Collatz steps of `start`, and a tile halved until its sum is small.
    v = start
    count = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        count += 1
    tl.store(out_ptr, count)
    t = tl.full([BLOCK], start, tl.int32)
    rounds = 0
    while tl.sum(t) > BLOCK:
        t = t // 2
        rounds += 1
    tl.store(out_ptr + 1, rounds)
    tl.store(out_ptr + 2 + tl.arange(0, BLOCK), t)


def collatz(v):
    count = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        count += 1
    return count


@pytest.mark.parametrize("start", [1, 6, 27, 97])
def test_while_loops(backend, start):
    B = 8
    out = backend.zeros(2 + B, np.int32)
    while_kernel[(1,)](out, start, BLOCK=B)
    out = backend.numpy(out)
    t, rounds = np.full(B, start), 0
    while t.sum() > B:
        t, rounds = t // 2, rounds + 1
    assert out[0] == collatz(start)
    assert out[1] == rounds
    np.testing.assert_array_equal(out[2:], t)


@tegula.jit
def nested_kernel(out_ptr, M, N, BLOCK: tl.constexpr):
    # out[i, j] = sum over k < j of (i + k), computed with three nested loops.
    offs = tl.arange(0, BLOCK)
    for i in range(M):
        row = tl.zeros([BLOCK], dtype=tl.int32)
        for j in range(N):
            s = 0
            for k in range(j):
                s += i + k
            row = tl.where(offs == j, s, row)
        tl.store(out_ptr + i * N + offs, row, mask=offs < N)


def test_nested_loops(backend):
    M, N = 5, 7
    out = backend.zeros(M * N, np.int32)
    nested_kernel[(1,)](out, M, N, BLOCK=8)
    out = backend.numpy(out)
    want = [[sum(i + k for k in range(j)) for j in range(N)] for i in range(M)]
    np.testing.assert_array_equal(out.reshape(M, N), want)


@tegula.jit
def scaled(x, factor, OFFSET: tl.constexpr = 1, SQUARE: tl.constexpr = False):
    y = x * factor + OFFSET
    if SQUARE:
        y = y * y
    return y


@tegula.jit
def stats(x):
    # A tuple return, through another helper.
    return tl.sum(x, axis=0), tl.max(x, axis=0), scaled(x, 2)


@tegula.jit
def helpers_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, scaled(x, 3))
    tl.store(out_ptr + BLOCK + offs, scaled(x, 3, OFFSET=5, SQUARE=True))
    tl.store(out_ptr + 2 * BLOCK + offs, scaled(x, factor=-1, SQUARE=True))
    total, biggest, twice = stats(x)
    tl.store(out_ptr + 3 * BLOCK, total)
    tl.store(out_ptr + 3 * BLOCK + 1, biggest)
    tl.store(out_ptr + 4 * BLOCK + offs, twice)


def test_jit_helpers(backend):
    B = 16
    x = np.arange(B, dtype=np.int32) - 6
    out = backend.zeros(5 * B, np.int32)
    helpers_kernel[(1,)](backend.array(x), out, BLOCK=B)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:B], x * 3 + 1)
    np.testing.assert_array_equal(out[B:2 * B], (x * 3 + 5) ** 2)
    np.testing.assert_array_equal(out[2 * B:3 * B], (-x + 1) ** 2)
    assert out[3 * B] == x.sum() and out[3 * B + 1] == x.max()
    np.testing.assert_array_equal(out[4 * B:], x * 2 + 1)


@tegula.jit
def static_kernel(out_ptr, BLOCK: tl.constexpr, MODE: tl.constexpr):
    tl.static_assert(BLOCK >= 16, "BLOCK must be at least 16")
    tl.static_print("static_print:", BLOCK, MODE)
    tl.static_print(tl.arange(0, BLOCK), out_ptr, out_ptr.dtype.element_ty, 0.1, sep="|", end="$\n")
    tl.static_print("tuples:", tl.arange(0, BLOCK).shape, (BLOCK, MODE), [tl.arange(0, 2), 0.5], ())
    if MODE == "double":  # a constexpr condition: only one branch is compiled
        v = tl.arange(0, BLOCK) * 2
    else:
        v = tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), v)


def test_static_assert_and_static_print(backend, capfd):
    out = backend.zeros(32, np.int32)
    static_kernel[(1,)](out, BLOCK=32, MODE="double")
    np.testing.assert_array_equal(backend.numpy(out), np.arange(32) * 2)
    static_kernel[(1,)](out, BLOCK=16, MODE="plain")
    np.testing.assert_array_equal(backend.numpy(out)[:16], np.arange(16))
    printed = capfd.readouterr().out
    # Printed to stdout while compiling, as Python's print (Triton's static_print): absent when the disk
    # cache already held the kernel.
    if printed:
        assert "static_print: 32 double" in printed or "static_print: 16 plain" in printed, printed
        assert ("int32[constexpr[32]]|pointer<int32>[]|int32|0.1$" in printed
                or "int32[constexpr[16]]|pointer<int32>[]|int32|0.1$" in printed), printed
        # A tuple shows its elements as Python's print shows a tuple (their repr()s).
        assert ("tuples: (32,) (32, 'double') [int32[constexpr[2]], 0.5] ()" in printed
                or "tuples: (16,) (16, 'plain') [int32[constexpr[2]], 0.5] ()" in printed), printed
    with pytest.raises(tegula.CompilationError, match="static assertion failed: BLOCK must be at least 16"):
        static_kernel[(1,)](out, BLOCK=8, MODE="plain")


@tegula.jit
def nul_message_kernel(out_ptr, B: tl.constexpr):
    tl.static_assert(B > 100, "before\x00after")
    tl.store(out_ptr, B)


def test_a_message_with_a_nul_byte_reaches_python_whole():
    """User text in a diagnostic may hold NUL bytes: the error keeps what follows them (its source
    line, caret and call note too), not a C string's prefix."""
    with pytest.raises(tegula.CompilationError) as info:
        nul_message_kernel[(1,)](np.zeros(1, np.int32), B=8)
    text = str(info.value)
    assert "static assertion failed: before\x00after\n" in text, repr(text)
    assert 'tl.static_assert(B > 100, "before\\x00after")' in text, repr(text)
    assert info.value.error_message == "static assertion failed: before\x00after"


@tegula.jit
def grid_kernel(out_ptr, STRIDE: tl.constexpr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    linear = (z * ny + y) * nx + x
    # Each program writes its ids and the grid size into its own slot.
    base = out_ptr + linear * STRIDE
    tl.store(base + 0, x)
    tl.store(base + 1, y)
    tl.store(base + 2, z)
    tl.store(base + 3, nx)
    tl.store(base + 4, ny)
    tl.store(base + 5, nz)


@pytest.mark.parametrize("grid", [(7,), (3, 5), (2, 3, 4), (1, 1, 6), [4, 2]], ids=str)
def test_program_id_and_num_programs(backend, grid):
    dims = tuple(grid) + (1,) * (3 - len(grid))
    total = int(np.prod(dims))
    out = backend.full((total + 1, 8), -1, np.int32)
    grid_kernel[grid](out, STRIDE=8)
    out = backend.numpy(out)
    nx, ny, nz = dims
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                row = out[(z * ny + y) * nx + x]
                assert row[:6].tolist() == [x, y, z, nx, ny, nz], (x, y, z)
    assert (out[total] == -1).all(), "a program outside the grid ran"


@pytest.mark.parametrize("grid", [(0,), (0, 4), (3, 0), (2, 2, 0)], ids=str)
def test_zero_sized_grid_runs_nothing(backend, grid):
    out = backend.full((16, 8), -1, np.int32)
    grid_kernel[grid](out, STRIDE=8)
    assert (backend.numpy(out) == -1).all()


@tegula.jit
def meta_grid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@pytest.mark.parametrize("block", [16, 64])
def test_grid_callable_of_meta(backend, block):
    n = 150
    x = np.arange(n, dtype=np.int64)
    out = backend.zeros(n, np.int64)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tegula.cdiv(meta["n"], meta["BLOCK"]),)

    meta_grid_kernel[grid](backend.array(x), out, n, BLOCK=block, num_warps=4)
    np.testing.assert_array_equal(backend.numpy(out), x * 2)
    assert seen["BLOCK"] == block and seen["n"] == n and seen["num_warps"] == 4


# --- `x if c else y` with calls in its arms, and one-element conditions --------------------------


@tegula.jit
def ternary_arms_kernel(cond_ptr, xt_ptr, xf_ptr, out_ptr, far, MODE: tl.constexpr):
    pid = tl.program_id(0)
    if MODE == 0:  # both arms store: exactly one store per program
        tl.atomic_add(out_ptr + pid, tl.load(xt_ptr + pid)) if pid % 3 == 0 else tl.atomic_add(out_ptr + pid,
                                                                                                tl.load(xf_ptr + pid))
    elif MODE == 1:  # a constant arm takes the other arm's type
        value = 3.25 if pid % 2 == 0 else tl.load(xf_ptr + pid)
        tl.store(out_ptr + pid, value)
    elif MODE == 2:  # the arm not chosen is not evaluated: its load is out of bounds
        value = tl.load(xt_ptr + far) if pid >= far else tl.load(xf_ptr + pid)
        tl.store(out_ptr + pid, value)
    else:  # a one-element tile as an `if` condition and a ternary condition (Triton unsplats them)
        flag = tl.load(cond_ptr + pid + tl.arange(0, 1)) > 42
        if flag:
            tl.store(out_ptr + pid, 1.0)
        tl.atomic_add(out_ptr + pid, 10.0) if flag else tl.atomic_add(out_ptr + pid, 20.0)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_ternary_runs_only_the_chosen_arm(backend, mode):
    n = 37
    rng = rng_for("ternary", mode)
    xt, xf = random(rng, n, "float32"), random(rng, n, "float32")
    cond = rng.integers(0, 100, n).astype(np.int32)
    out = np.zeros(n, np.float32)
    out_d = backend.array(out)
    ternary_arms_kernel[(n,)](backend.array(cond), backend.array(xt), backend.array(xf), out_d, 1 << 40,
                              MODE=mode)
    pid = np.arange(n)
    expected = {
        0: np.where(pid % 3 == 0, xt, xf),
        1: np.where(pid % 2 == 0, np.float32(3.25), xf),
        2: xf,
        3: np.where(cond > 42, 11.0, 20.0).astype(np.float32),
    }[mode]
    np.testing.assert_array_equal(backend.numpy(out_d), expected)


def test_the_unchosen_arm_is_not_bounds_checked_in_debug_mode(backend):
    n = 8
    xt, xf = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
    out = backend.zeros(n, np.float32)
    kernel = tegula.jit(ternary_arms_kernel.fn, debug=True)
    kernel[(n,)](backend.array(np.zeros(n, np.int32)), backend.array(xt), backend.array(xf), out, 1 << 20, MODE=2)
    np.testing.assert_array_equal(backend.numpy(out), xf)


@tegula.jit
def ternary_mixed_kernel(x_ptr, i_ptr, out_ptr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    if MODE == 0:
        value = tl.load(x_ptr) if pid == 0 else tl.load(i_ptr)
        tl.store(out_ptr, value)
    else:
        value = tl.load(x_ptr) if pid == 0 else tl.store(out_ptr, 1.0)


@pytest.mark.parametrize("mode, message", [
    (0, r"E0[0-9]+.*Ternary expression with dynamic condition has inconsistent type: f32 and i32"),
    (1, r"E0[0-9]+.*one arm of `x if c else y` gives no value \(None\)"),
])
def test_ternary_arms_of_different_kinds_are_located_errors(mode, message):
    with pytest.raises(tegula.CompilationError, match=message):
        ternary_mixed_kernel[(1,)](np.zeros(1, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32),
                                   MODE=mode)


@tegula.jit(do_not_specialize=["flag"])
def choose_pointer_kernel(a_ptr, b_ptr, out_ptr, flag, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    src = a_ptr if flag else b_ptr  # an int condition, pointer arms
    tl.store(out_ptr + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("flag", [0, 5])
def test_ternary_chooses_between_pointers(backend, flag):
    n = 45
    rng = rng_for("choose_pointer", flag)
    a, b = random(rng, n, "float32"), random(rng, n, "float32")
    out = backend.zeros(n, np.float32)
    choose_pointer_kernel[(1,)](backend.array(a), backend.array(b), out, flag, n, BLOCK=64)
    np.testing.assert_array_equal(backend.numpy(out), a if flag else b)


@tegula.jit
def pairs_swapped_kernel(out_ptr, x_ptr, N: tl.constexpr):
    # A shape computed from constexprs and annotated constexpr, as Triton's test_flip_inf writes it.
    x = tl.load(x_ptr + tl.program_id(0) * N + tl.arange(0, N))
    shape: tl.constexpr = (N // 2, 2)
    y = tl.flip(x.reshape(shape), dim=1).reshape(x.shape)
    tl.store(out_ptr + tl.program_id(0) * N + tl.arange(0, N), y)


def test_a_tuple_of_constants_is_a_constexpr(backend):
    x = random(rng_for("pairs", 16), (3, 16), "float32")
    x[:, -1] = np.inf
    out = backend.zeros((3, 16), np.float32)
    pairs_swapped_kernel[(3,)](out, backend.array(x), 16)
    np.testing.assert_array_equal(backend.numpy(out), x.reshape(3, 8, 2)[..., ::-1].reshape(3, 16))


def test_a_runtime_value_annotated_constexpr_warns_and_stays_a_runtime_value(tmp_path, monkeypatch):
    from cache_util import seed_precompiled_prelude

    monkeypatch.setenv("TEGULA_CACHE_DIR", str(seed_precompiled_prelude(tmp_path / "cache")))  # a build warns
    # As Triton, which wraps the value and goes on with it (libraries annotate products of arguments so).
    @tegula.jit
    def annotated(x_ptr, n, TILE: tl.constexpr):
        shape: tl.constexpr = (n, 2)
        span: tl.constexpr = TILE * n
        tl.store(x_ptr, shape[1] + span)

    x = np.zeros(4, np.float32)
    with pytest.warns(tegula.CompileWarning) as caught:
        annotated[(1,)](x, 3, TILE=16)
    texts = [str(w.message) for w in caught]
    assert len(texts) == 2 and "`shape` is annotated constexpr but" in texts[0] and "`span`" in texts[1]
    assert "it stays a runtime value" in texts[0]
    assert x[0] == 2 + 16 * 3


@tegula.jit
def rounding_kernel(x_ptr, out_ptr, MODE: tl.constexpr):
    # The branch a constexpr leaves out may hold host code such as `raise` (Triton's test_conversions has one).
    x = tl.load(x_ptr + tl.arange(0, 16))
    if MODE == "floor":
        y = tl.floor(x)
    elif MODE == "ceil":
        y = tl.ceil(x)
    else:
        raise ValueError("unrecognized rounding mode " + MODE)
    tl.store(out_ptr + tl.arange(0, 16), y)


def test_a_raise_left_out_by_a_constexpr_branch_costs_nothing(backend):
    x = random(rng_for("raise", 16), 16, "float32") * 10
    out = backend.zeros(16, np.float32)
    rounding_kernel[(1,)](backend.array(x), out, MODE="floor")
    np.testing.assert_array_equal(backend.numpy(out), np.floor(x))
    rounding_kernel[(1,)](backend.array(x), out, MODE="ceil")
    np.testing.assert_array_equal(backend.numpy(out), np.ceil(x))


def test_a_raise_that_is_reached_is_a_located_error():
    import inspect

    line = inspect.getsourcelines(rounding_kernel.fn)[1] + 9
    with pytest.raises(tegula.CompilationError,
                       match=rf"(?s)test_ops_control.py:{line}:9: error\[E0110\]: `raise` statements.*constexpr"):
        rounding_kernel[(1,)](np.zeros(16, np.float32), np.zeros(16, np.float32), MODE="round")


@tegula.jit
def optional_accumulator_kernel(x_ptr, out_ptr, n, USE_EXTRA: tl.constexpr, BLOCK: tl.constexpr):
    # A library's pattern (flash-linear-attention's chunk_o): an accumulator that is None unless a constexpr
    # flag asks for it, updated in the loop only under that flag.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    extra = tl.zeros([BLOCK], dtype=tl.float32) if USE_EXTRA else None
    for i in range(n):
        offs = i * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        acc += x
        if USE_EXTRA:
            extra += x * x
    if USE_EXTRA:
        acc += extra
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("use_extra", [False, True])
def test_a_none_the_loop_leaves_alone_may_sit_beside_it(backend, use_extra):
    x = np.random.default_rng(21).standard_normal((5, 32)).astype(np.float32)
    out = backend.zeros(32, np.float32)
    optional_accumulator_kernel[(1,)](backend.array(x), out, 5, USE_EXTRA=use_extra, BLOCK=32)
    want = x.sum(0) + ((x * x).sum(0) if use_extra else 0)
    np.testing.assert_allclose(backend.numpy(out), want, rtol=1e-5, atol=1e-5)


@tegula.jit
def none_reassigned_kernel(out_ptr, n):
    v = None
    for i in range(n):
        v = i
    tl.store(out_ptr, v)


def test_a_none_the_loop_reassigns_is_still_an_error():
    with pytest.raises(tegula.CompilationError, match=r"E0308.*`v` \(the constant None\) is reassigned inside a "
                                                      r"runtime loop"):
        none_reassigned_kernel[(1,)](np.zeros(1, np.int32), 3)


@tegula.jit
def nested_unroll_kernel(o_ptr, N: tl.constexpr):
    acc = 0
    for i in tl.static_range(N):
        for j in tl.static_range(N):
            for k in tl.static_range(N):
                acc += i ^ j ^ k
    tl.store(o_ptr, acc)


def test_nested_static_ranges_have_one_budget():
    """Each loop may unroll 4096 iterations, the kernel's loops 2**20 in all: three nested loops of
    4096 (2**36 iterations) are a located error, not a compile that never ends."""
    o = np.zeros(1, np.int32)
    with pytest.raises(tegula.CompilationError, match=re.escape(
            "error[E0609]: the tl.static_range loops of this kernel unroll more than 1048576 iterations in all "
            "(nested loops multiply)")):
        nested_unroll_kernel[(1,)](o, 4096)
    nested_unroll_kernel[(1,)](o, 10)
    assert o[0] == sum(i ^ j ^ k for i in range(10) for j in range(10) for k in range(10))


@tegula.jit
def loop_variable_after_kernel(out_ptr, lo, hi, step, FLAG: tl.constexpr):
    for i in range(lo, hi, step):
        pass
    for j in range(hi - 1, lo - 1, -1):  # counting down, as chunked backward kernels do
        pass
    if FLAG:
        k_out = i * 1000 + j
    else:
        k_out = j
    tl.store(out_ptr, k_out)
    for m in range(0, hi):
        tl.store(out_ptr + 1, m + i)  # read inside a later loop too


@tegula.jit
def loop_in_branch_kernel(out_ptr, n, c):
    if c > 0:
        for i in range(n):
            pass
    tl.store(out_ptr, i)


@pytest.mark.parametrize("lo, hi, step", [(0, 10, 3), (2, 9, 3), (5, 6, 1), (9, 0, -2), (-4, 4, 5)])
def test_a_loop_variable_read_after_its_loop_has_its_last_value(backend, lo, hi, step):
    """Python leaves a loop's variable at its last value; Triton compiles such a read (undefined there)."""
    out = backend.zeros(2, np.int32)
    loop_variable_after_kernel[(1,)](out, lo, hi, step, FLAG=True)
    last_i, last_j = list(range(lo, hi, step))[-1], list(range(hi - 1, lo - 1, -1))[-1] if hi > lo else None
    got = backend.numpy(out).tolist()
    if last_j is not None:
        assert got[0] == last_i * 1000 + last_j, got
        assert got[1] == hi - 1 + last_i, got
    else:
        assert got[0] // 1000 == last_i or got[0] % 1000, got


def test_a_loop_variable_of_one_branch_stays_undefined_after_it():
    with pytest.raises(tegula.CompilationError, match="`i` is not defined"):
        loop_in_branch_kernel[(1,)](np.zeros(1, np.int32), 4, 5)  # c == 1 would make the `if` a constexpr one


# --- lambdas, `:=` and a helper's *args -------------------------------------------------------

@tegula.jit
def lambda_kernel(x_ptr, scan_ptr, red_ptr, map_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # A lambda captures the constexpr SCALE; a default is evaluated where the lambda is written.
    # The combine must be associative: the GPU scans as a tree, the CPU left to right.
    tl.store(scan_ptr + offs, tl.associative_scan(x, 0, lambda a, b: a + b + SCALE), mask=mask)
    biggest = tl.reduce(tl.where(mask, x, float("-inf")), 0, lambda a, b: tl.maximum(a, b))
    clip = lambda v, lo=-1.0: tl.minimum(tl.maximum(v, lo), 1.0)
    tl.store(red_ptr, biggest)
    tl.store(map_ptr + offs, tl.map_elementwise(lambda v: v * v + SCALE, clip(x)), mask=mask)


@pytest.mark.parametrize("n", [1, 37, 100])
def test_lambdas_combine_scan_reduce_and_map(backend, n):
    x = random(rng_for("lambda", n), n, "float32")
    scan, red, mapped = backend.zeros(n, np.float32), backend.zeros(1, np.float32), backend.zeros(n, np.float32)
    lambda_kernel[(1,)](backend.array(x), scan, red, mapped, n, SCALE=2.0, BLOCK=128)
    expected = np.cumsum(x.astype(np.float64)) + 2.0 * np.arange(n)
    check(backend.numpy(scan), expected, "float32", atol=1e-4)
    assert backend.numpy(red)[0] == x.max()
    check(backend.numpy(mapped), np.clip(x, -1.0, 1.0) ** 2 + 2.0, "float32")


@tegula.jit
def lambda_capture_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.associative_scan(x, 0, lambda a, b: a + b + x))


def test_a_lambda_capturing_a_runtime_value_is_an_unsupported_construct():
    x = np.zeros(16, np.float32)
    with pytest.raises(tegula.UnsupportedLanguageConstruct,
                       match=r"(?s)error\[E0110\]: a lambda can only capture constexpr values.*`x` is a tile"):
        lambda_capture_kernel[(1,)](x, x.copy(), BLOCK=16)
    assert issubclass(tegula.UnsupportedLanguageConstruct, tegula.CompilationError)


@tegula.jit
def sum_all(first, *rest):
    total = first
    for i in tl.static_range(len(rest)):
        total += rest[i]
    return total, len(rest)


@tegula.jit
def walrus_varargs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    acc = x * 0
    s = 0
    for i in range(3):
        if (s := tl.sum(x) + i) > 0:  # `:=` inside a runtime loop: `s` is carried like any variable
            acc += s
    dims: tl.constexpr = (1, 2, 3)
    three, count = sum_all(x, *dims)
    one, none = sum_all(x)
    tl.store(out_ptr + offs, acc + three * 10 + one * 100 + count * 1000 + none * 10000, mask=offs < n)
    tl.store(out_ptr + n, s)


@pytest.mark.parametrize("n", [5, 33])
def test_walrus_and_star_parameters(backend, n):
    x = random(rng_for("walrus", n), n, "int32", low=-20, high=20)
    out = backend.zeros(n + 1, np.int32)
    walrus_varargs_kernel[(1,)](backend.array(x), out, n, BLOCK=64)
    total = int(x.sum())
    acc = sum(total + i for i in range(3) if total + i > 0)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:n], acc + (x + 6) * 10 + x * 100 + 3 * 1000)
    assert out[n] == total + 2


@tegula.jit
def walrus_while_kernel(out_ptr, n):
    i = 0
    while (i := i + 1) < n:
        pass
    tl.store(out_ptr, i)


def test_walrus_in_a_while_condition_is_a_located_error():
    with pytest.raises(tegula.UnsupportedLanguageConstruct,
                       match=r"error\[E0110\]: an assignment expression \(`:=`\) in a `while` condition"):
        walrus_while_kernel[(1,)](np.zeros(1, np.int32), 4)


@tegula.jit
def wide_program_id_kernel(out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0, bitwidth=64)
    tl.static_assert(pid.dtype == tl.int64)
    tl.static_assert(tl.program_id(1, bitwidth=32).dtype == tl.int32)
    # int64 ids: a block offset past 2**31 does not wrap.
    offs = pid * 3_000_000_000 + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@tegula.jit
def bad_program_id_width_kernel(out_ptr):
    tl.store(out_ptr, tl.program_id(0, bitwidth=48))


def test_program_id_bitwidth(backend):
    out = backend.zeros(3 * 8, np.int64)
    wide_program_id_kernel[(3,)](out, BLOCK=8)
    expected = (np.arange(3, dtype=np.int64)[:, None] * 3_000_000_000 + np.arange(8)).ravel()
    np.testing.assert_array_equal(backend.numpy(out), expected)
    with pytest.raises(tegula.CompilationError, match=r"bitwidth of tl.program_id must be 32 or 64 but got 48"):
        bad_program_id_width_kernel[(1,)](np.zeros(1, np.int32))
