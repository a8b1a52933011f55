"""Elementwise operators against NumPy: arithmetic, bitwise, comparisons,
unary ops, where/minimum/maximum/clamp, `and`/`or`/`not` on scalars and
chained comparisons, over every dtype they apply to.

One kernel per dtype family computes every operator at once into a stacked
output, so a dtype costs one compile. Integer results must match exactly
(wrapping, C-style `//` and `%`); f16/bf16 results are computed in f32 and
rounded once, so they may differ from the reference by at most one unit in
the last place.
"""

import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import (FLOATS, INTS, SIGNED, c_div, c_mod, check, grid1, int_range, np_dtype, random,
                      ref_binary, rng_for, round_to, run_isolated, to_f64)

CMP_NAMES = ["==", "!=", "<", "<=", ">", ">="]
CMP_REFS = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


@tegula.jit
def int_ops_kernel(x_ptr, y_ptr, z_ptr, s_ptr, c_ptr, out_ptr, div_ptr, cmp_ptr, n,
                   BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    z = tl.load(z_ptr + offs, mask=m)
    s = tl.load(s_ptr + offs, mask=m, other=0)
    c = tl.load(c_ptr + offs, mask=m, other=False)
    tl.store(out_ptr + 0 * n + offs, x + y, mask=m)
    tl.store(out_ptr + 1 * n + offs, x - y, mask=m)
    tl.store(out_ptr + 2 * n + offs, x * y, mask=m)
    tl.store(out_ptr + 3 * n + offs, x // y, mask=m)
    tl.store(out_ptr + 4 * n + offs, x % y, mask=m)
    tl.store(out_ptr + 5 * n + offs, x & y, mask=m)
    tl.store(out_ptr + 6 * n + offs, x | y, mask=m)
    tl.store(out_ptr + 7 * n + offs, x ^ y, mask=m)
    tl.store(out_ptr + 8 * n + offs, x << s, mask=m)
    tl.store(out_ptr + 9 * n + offs, x >> s, mask=m)
    tl.store(out_ptr + 10 * n + offs, -x, mask=m)
    tl.store(out_ptr + 11 * n + offs, ~x, mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.where(c, x, y), mask=m)
    tl.store(out_ptr + 13 * n + offs, tl.minimum(x, y), mask=m)
    tl.store(out_ptr + 14 * n + offs, tl.maximum(x, y), mask=m)
    tl.store(out_ptr + 15 * n + offs, tl.clamp(x, tl.minimum(y, z), tl.maximum(y, z)), mask=m)
    q = x / y
    tl.static_assert(q.dtype == tl.float32, "int / int is float32")
    tl.store(div_ptr + offs, q, mask=m)
    bits = ((x == y).to(tl.int32) | ((x != y).to(tl.int32) << 1) | ((x < y).to(tl.int32) << 2)
            | ((x <= y).to(tl.int32) << 3) | ((x > y).to(tl.int32) << 4) | ((x >= y).to(tl.int32) << 5))
    tl.store(cmp_ptr + offs, bits, mask=m)


INT_OPS = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "neg", "~", "where", "minimum",
           "maximum", "clamp"]


def int_inputs(name, n, rng):
    x = random(rng, n, name)
    y = random(rng, n, name, nonzero=True)
    # Small divisors too, so `//` and `%` see every sign combination.
    small_lo = -9 if name in SIGNED else 1
    y[::3] = rng.integers(small_lo, 10, size=y[::3].shape).astype(y.dtype)
    y[::11] = x[::11]  # equal pairs for the comparisons
    y[y == 0] = 3
    if name in SIGNED:  # MIN // -1 overflows; the IR leaves it to the backend
        y[(x == int_range(name)[0]) & (y == -1)] = 1
    z = random(rng, n, name)
    s = rng.integers(0, np_dtype(name).itemsize * 8, size=n).astype(np_dtype(name))
    c = rng.random(n) < 0.5
    return x, y, z, s, c


def int_references(x, y, z, s, c):
    lo, hi = np.minimum(y, z), np.maximum(y, z)
    with np.errstate(all="ignore"):
        return [x + y, x - y, x * y, c_div(x, y), c_mod(x, y), x & y, x | y, x ^ y,
                np.left_shift(x, s), np.right_shift(x, s), (-x).astype(x.dtype), ~x,
                np.where(c, x, y), np.minimum(x, y), np.maximum(x, y), np.minimum(np.maximum(x, lo), hi)]


def check_cmp_bits(bits, a64, b64, what=""):
    for k, (name, ref) in enumerate(zip(CMP_NAMES, CMP_REFS)):
        with np.errstate(invalid="ignore"):
            check(((bits >> k) & 1).astype(bool), ref(a64, b64), "bool", what=f"{what} `{name}`")


def run_int_ops(backend, name, n, block):
    rng = rng_for("int_ops", name, n, block)
    x, y, z, s, c = int_inputs(name, n, rng)
    out = backend.zeros((len(INT_OPS), n), x.dtype)
    div = backend.zeros(n, np.float32)
    cmp = backend.zeros(n, np.int32)
    int_ops_kernel[grid1(n, block)](*map(backend.array, (x, y, z, s, c)), out, div, cmp, n, BLOCK=block)
    out, div, cmp = backend.numpy(out), backend.numpy(div), backend.numpy(cmp)
    for op, got, want in zip(INT_OPS, out, int_references(x, y, z, s, c)):
        check(got, want, name, what=f"{name} `{op}`")
    check(div, x.astype(np.float32) / y.astype(np.float32), "float32", ulps=1, what=f"{name} `/`")
    # Comparing as Python ints keeps u64 vs i64 honest.
    check_cmp_bits(cmp, x.astype(object), y.astype(object), name)


@pytest.mark.parametrize("name", INTS)
def test_int_operators(backend, name):
    for n in (1000, 37):  # same specialization: several programs, and one masked program
        run_int_ops(backend, name, n, 128)


@pytest.mark.parametrize("name", ["int8", "int32", "uint64"])
@pytest.mark.parametrize("n,block", [(1, 64), (37, 64), (1000, 1024), (4096, 128)])
def test_int_operators_sizes(backend, name, n, block):
    run_int_ops(backend, name, n, block)


@tegula.jit
def float_ops_kernel(x_ptr, y_ptr, z_ptr, c_ptr, out_ptr, cmp_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    z = tl.load(z_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m, other=False)
    tl.store(out_ptr + 0 * n + offs, x + y, mask=m)
    tl.store(out_ptr + 1 * n + offs, x - y, mask=m)
    tl.store(out_ptr + 2 * n + offs, x * y, mask=m)
    tl.store(out_ptr + 3 * n + offs, x / y, mask=m)
    tl.store(out_ptr + 4 * n + offs, x % y, mask=m)
    tl.store(out_ptr + 5 * n + offs, -x, mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.where(c, x, y), mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.minimum(x, y), mask=m)
    tl.store(out_ptr + 8 * n + offs, tl.maximum(x, y), mask=m)
    tl.store(out_ptr + 9 * n + offs, tl.minimum(x, y, propagate_nan="all"), mask=m)
    tl.store(out_ptr + 10 * n + offs, tl.maximum(x, y, propagate_nan="all"), mask=m)
    tl.store(out_ptr + 11 * n + offs, tl.clamp(x, tl.minimum(y, z), tl.maximum(y, z)), mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.clamp(x, -1.5, 2.5), mask=m)
    bits = ((x == y).to(tl.int32) | ((x != y).to(tl.int32) << 1) | ((x < y).to(tl.int32) << 2)
            | ((x <= y).to(tl.int32) << 3) | ((x > y).to(tl.int32) << 4) | ((x >= y).to(tl.int32) << 5))
    tl.store(cmp_ptr + offs, bits, mask=m)


FLOAT_OPS = ["+", "-", "*", "/", "%", "neg", "where", "minimum", "maximum", "minimum(nan=all)",
             "maximum(nan=all)", "clamp", "clamp(literals)"]


def nan_propagating(op):
    def f(a, b):
        r = op(a, b)
        return np.where(np.isnan(a) | np.isnan(b), np.nan, r)
    return f


def run_float_ops(backend, name, n, block):
    rng = rng_for("float_ops", name, n, block)
    x = random(rng, n, name, specials=True)
    y = random(rng, n, name, nonzero=True)
    y[::13] = x[::13]
    y[5::17] = np.nan
    z = random(rng, n, name)
    c = rng.random(n) < 0.5
    out = backend.zeros((len(FLOAT_OPS), n), x.dtype)
    cmp = backend.zeros(n, np.int32)
    float_ops_kernel[grid1(n, block)](*map(backend.array, (x, y, z, c)), out, cmp, n, BLOCK=block)
    out, cmp = backend.numpy(out), backend.numpy(cmp)

    x64, y64, z64 = to_f64(x), to_f64(y), to_f64(z)
    fmin, fmax = np.fmin, np.fmax  # one NaN operand: the other one (IEEE minNum/maxNum)
    refs = {
        "+": ref_binary(np.add, x, y, name),
        "-": ref_binary(np.subtract, x, y, name),
        "*": ref_binary(np.multiply, x, y, name),
        # f16/bf16 `/` and `%` compute in f32 (Triton's rule); the store rounds.
        "/": ref_binary(np.divide, x, y, "float64" if name == "float64" else "float32"),
        "%": ref_binary(np.fmod, x, y, "float64" if name == "float64" else "float32"),
        "neg": -x64,
        "where": np.where(c, x64, y64),
        "minimum": fmin(x64, y64),
        "maximum": fmax(x64, y64),
        "minimum(nan=all)": nan_propagating(np.minimum)(x64, y64),
        "maximum(nan=all)": nan_propagating(np.maximum)(x64, y64),
        "clamp": np.minimum(np.maximum(x64, np.minimum(y64, z64)), np.maximum(y64, z64)),
        "clamp(literals)": np.minimum(np.maximum(x64, -1.5), 2.5),
    }
    for op, got in zip(FLOAT_OPS, out):
        want = refs[op]
        if name in ("float16", "bfloat16"):
            want = round_to(to_f64(want), name)
        where = None
        if op.startswith("clamp"):  # NaN operands of clamp: unspecified (Triton: undefined)
            where = ~(np.isnan(x64) | np.isnan(y64) | np.isnan(z64))
        check(got, want, name, ulps=1, where=where, what=f"{name} `{op}`")
    check_cmp_bits(cmp, x64, y64, name)


@pytest.mark.parametrize("name", FLOATS)
def test_float_operators(backend, name):
    for n in (1000, 37):
        run_float_ops(backend, name, n, 128)


@pytest.mark.parametrize("n,block", [(1, 64), (37, 64), (1000, 1024), (4096, 128)])
def test_float_operators_sizes(backend, n, block):
    run_float_ops(backend, "float32", n, block)


@tegula.jit
def bool_ops_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=False)
    b = tl.load(b_ptr + offs, mask=m, other=False)
    tl.store(out_ptr + 0 * n + offs, a & b, mask=m)
    tl.store(out_ptr + 1 * n + offs, a | b, mask=m)
    tl.store(out_ptr + 2 * n + offs, a ^ b, mask=m)
    tl.store(out_ptr + 3 * n + offs, ~a, mask=m)
    tl.store(out_ptr + 4 * n + offs, a == b, mask=m)
    tl.store(out_ptr + 5 * n + offs, a != b, mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.where(a, b, ~b), mask=m)
    tl.store(out_ptr + 7 * n + offs, a < b, mask=m)


def test_bool_operators(backend):
    rng = rng_for("bool_ops")
    n = 300
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.5
    out = backend.zeros((8, n), np.bool_)
    bool_ops_kernel[grid1(n, 128)](backend.array(a), backend.array(b), out, n, BLOCK=128)
    out = backend.numpy(out)
    refs = [a & b, a | b, a ^ b, ~a, a == b, a != b, np.where(a, b, ~b), ~a & b]
    for k, want in enumerate(refs):
        check(out[k], want, "bool", what=f"bool op {k}")


@tegula.jit
def scalar_logic_kernel(out_ptr, a, b, flag, x_ptr, BLOCK: tl.constexpr):
    # `and`/`or`/`not` on runtime scalars, and chained comparisons on scalars and tiles.
    tl.store(out_ptr + 0, (a < b) and (b < 10))
    tl.store(out_ptr + 1, (a > 0) or (b > 0))
    tl.store(out_ptr + 2, not (a == b))
    tl.store(out_ptr + 3, not a)
    tl.store(out_ptr + 4, a < b < 10)
    tl.store(out_ptr + 5, 0 <= a <= b)
    tl.store(out_ptr + 6, flag and a > 0)
    tl.store(out_ptr + 7, not flag)
    tl.store(out_ptr + 8, (a != 0) and (b != 0) or flag)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    inside = a < x <= b
    tl.store(out_ptr + 16 + offs, inside)


@pytest.mark.parametrize("a,b,flag", [(3, 5, True), (5, 3, False), (-2, 12, False), (0, 0, True),
                                      (7, 7, False), (0, -4, True)])
def test_scalar_logic_and_chained_comparisons(backend, a, b, flag):
    out = backend.zeros(16 + 32, np.int32)
    x = np.arange(-8, 24, dtype=np.int32)
    # The int arguments take values 1 and multiples of 16 nowhere here, so
    # these cases share one compiled kernel except where a or b is 0.
    scalar_logic_kernel[(1,)](out, a, b, flag, backend.array(x), BLOCK=32)
    out = backend.numpy(out)
    want = [(a < b) and (b < 10), (a > 0) or (b > 0), not (a == b), not a, a < b < 10, 0 <= a <= b,
            flag and a > 0, not flag, ((a != 0) and (b != 0)) or flag]
    assert out[:9].tolist() == [int(bool(w)) for w in want]
    check(out[16:], ((a < x) & (x <= b)).astype(np.int32), "int32", what="a < x <= b")


@tegula.jit
def runtime_int_kernel(out_ptr, a, b):
    # Scalar (not tile) arithmetic on runtime ints, C semantics for // and %.
    tl.store(out_ptr + 0, a // b)
    tl.store(out_ptr + 1, a % b)
    tl.store(out_ptr + 2, a * b + a - b)
    tl.store(out_ptr + 3, -a)
    tl.store(out_ptr + 4, a << 2)
    tl.store(out_ptr + 5, a >> 1)


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (-2147483647, 3), (5, 9)])
def test_scalar_int_arithmetic_truncates_like_c(backend, a, b):
    out = backend.zeros(6, np.int32)
    runtime_int_kernel[(1,)](out, a, b)
    out = backend.numpy(out)
    A, B = np.array([a], np.int32), np.array([b], np.int32)
    with np.errstate(all="ignore"):
        want = [c_div(A, B)[0], c_mod(A, B)[0], (A * B + A - B)[0], (-A)[0], (A << 2)[0], (A >> 1)[0]]
    assert out.tolist() == [int(w) for w in want]


@tegula.jit
def ew_2d_kernel(x_ptr, row_ptr, col_ptr, c_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.load(row_ptr + cols, mask=cols < N)
    c = tl.load(col_ptr + rows, mask=rows < M)
    cond = tl.load(c_ptr + offs, mask=mask, other=False)
    # Row and column vectors broadcast against the tile, then a select
    # between a tile and a broadcast row.
    y = (x + r[None, :]) * c[:, None] - x
    tl.store(out_ptr + offs, tl.where(cond, y, r[None, :]), mask=mask)
    tl.store(out_ptr + M * N + offs, tl.maximum(x, c[:, None]), mask=mask)


@pytest.mark.parametrize("name", INTS + FLOATS)
def test_2d_broadcasting_ops(backend, name):
    M, N = 13, 50
    rng = rng_for("ew2d", name)
    small = {"low": -8, "high": 8}
    x = random(rng, (M, N), name, **small)
    r = random(rng, N, name, **small)
    c = random(rng, M, name, **small)
    cond = rng.random((M, N)) < 0.7
    out = backend.zeros((2, M, N), x.dtype)
    grid = (tegula.cdiv(M, 16), tegula.cdiv(N, 64))
    # Exact per-op IEEE rounding is the reference: no FMA contraction on the GPU.
    ew_2d_kernel[grid](*map(backend.array, (x, r, c, cond)), out, M, N, BM=16, BN=64,
                       enable_fp_fusion=False)
    out = backend.numpy(out)
    rb = np.broadcast_to(r[None, :], (M, N))
    cb = np.broadcast_to(c[:, None], (M, N))
    y = ref_binary(np.subtract, ref_binary(np.multiply, ref_binary(np.add, x, rb, name), cb, name), x, name)
    check(out[0], np.where(cond, y, rb), name, ulps=0, atol=0, what=f"{name} 2-D broadcasting")
    check(out[1], np.maximum(x, cb), name, ulps=0, atol=0, what=f"{name} 2-D maximum")


@tegula.jit
def where_literals_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(x > 0, 1.0, 0.0))
    tl.store(out_ptr + BLOCK + offs, tl.where(x > 0, x, 0))  # literal adopts x's type
    tl.store(out_ptr + 2 * BLOCK + offs, tl.where(x > 0, -1, x * 2))


def test_where_with_literal_branches(backend):
    B = 32
    x = np.linspace(-3, 3, B).astype(np.float16)
    out = backend.zeros(3 * B, np.float16)
    where_literals_kernel[(1,)](backend.array(x), out, BLOCK=B)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:B], (x > 0).astype(np.float16))
    np.testing.assert_array_equal(out[B:2 * B], np.where(x > 0, x, 0))
    np.testing.assert_array_equal(out[2 * B:], np.where(x > 0, -1, x * 2))


@tegula.jit
def propagate_nan_enum_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.NONE))


def test_propagate_nan_enum(backend):
    # Triton spells the option as the enum tl.PropagateNan.ALL / .NONE.
    x = np.array([1.0, np.nan, 3.0, np.nan] * 4, np.float32)
    y = np.array([2.0, 5.0, np.nan, np.nan] * 4, np.float32)
    out = backend.zeros(32, np.float32)
    propagate_nan_enum_kernel[(1,)](backend.array(x), backend.array(y), out, BLOCK=16)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:16], np.maximum(x, y))  # NaN wins
    np.testing.assert_array_equal(out[16:], np.fmin(x, y))  # NaN loses


EDGE_SCRIPT = textwrap.dedent('''
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def edges(x_ptr, y_ptr, s_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
        s = tl.load(s_ptr + offs)
        tl.store(out_ptr + offs, x // y)
        tl.store(out_ptr + BLOCK + offs, x % y)
        tl.store(out_ptr + 2 * BLOCK + offs, x << s)
        tl.store(out_ptr + 3 * BLOCK + offs, x >> s)

    for dt in (np.int32, np.int64, np.int8, np.uint32):
        info = np.iinfo(dt)
        x = np.array([7, -7 if info.min else 9, info.min, info.min, 5, 1, -1 if info.min else 3, 0], dt)
        y = np.array([0, 0, -1 if info.min else 1, 0, 2, 1, 1, 0], dt)
        bits = np.dtype(dt).itemsize * 8
        s = np.array([bits, bits + 3, 1, 2 * bits, 0, bits - 1, bits, 0], dt)
        out = backend.zeros(4 * 8, dt)
        edges[(1,)](backend.array(x), backend.array(y), backend.array(s), out, BLOCK=8)
        q, r, shl, shr = backend.numpy(out).reshape(4, 8)
        ok = y != 0
        assert (q[~ok] == 0).all(), ("x // 0 is 0", dt, q)
        assert (r[~ok] == x[~ok]).all(), ("x % 0 is x", dt, r)
        if info.min:
            assert q[2] == info.min and r[2] == 0, ("MIN // -1 is MIN, MIN % -1 is 0", dt, q, r)
        big = s >= bits
        assert (shl[big] == 0).all(), ("x << bits moves every bit out", dt, shl)
        want = np.where(x[big] < 0, -1, 0).astype(dt)
        assert (shr[big] == want).all(), ("x >> bits moves every bit out", dt, shr)
    print("ok")
''')


def test_integer_edge_cases_do_not_trap(backend, tmp_path):
    # Division by zero, MIN // -1 and shifts by >= the bit width: the IR
    # leaves the value to the backend but forbids undefined behaviour; both
    # backends document x // 0 == 0, x % 0 == x, MIN // -1 == MIN and shifts
    # that move every bit out (docs/backend-cpu.md, docs/backend-cuda.md).
    # Run apart: a trap would kill pytest, a CUDA fault its context.
    run_isolated(tmp_path, EDGE_SCRIPT, backend)
