"""Reductions against NumPy: sum, max, min, argmax, argmin, xor_sum and
tl.reduce with user combine functions, over each axis of 1-D/2-D/3-D tiles,
axis=None, keep_dims, masked tiles and all-masked rows, and NaN inputs.

What is asserted where the semantics have choices:
  * sum of int8/int16 accumulates (and returns) int32, of uint8/uint16
    uint32; wider types keep their type. Integer sums wrap. A sum of
    f16/bf16 is of that type, as Triton's; Tegula adds in float32 and rounds
    the result once (Triton adds in the input type).
  * max/min return Triton's types: float32 for every float narrower than 32
    bits, int32 for every integer (unsigned and bool too) narrower than 32
    bits; with return_indices only bfloat16 widens (to float32).
  * argmax/argmin ties go to the smallest index.
  * max/min ignore a NaN when the other operand is a number (IEEE maxNum,
    docs/ir.md), so a row with some NaNs reduces to the max/min of its
    numbers and an all-NaN row to NaN; sum of a row with a NaN is NaN.
    argmax/argmin of rows holding NaN: test_nan_reductions.py.
  * an all-masked row (other=0 for sum, -inf/+inf for max/min) reduces to
    that identity; argmax/argmin of a constant row is index 0.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import (FLOATS, INTS, check, eps, int_range, np_dtype, random, rng_for, tl_dtype,
                      to_f64)

M, N = 13, 50
BM, BN = 16, 64


def sum_dtype(name):
    if name in ("int8", "int16"):
        return "int32"
    if name in ("uint8", "uint16", "bool"):
        return "uint32" if name != "bool" else "int32"
    return name


@tegula.jit
def reduce_2d_kernel(x_ptr, bounds_ptr, sums_ptr, ext_ptr, arg_ptr, xor_ptr, M, N,
                     SUM_DT: tl.constexpr, IS_INT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0)
    # The lowest and highest value of x's type (-inf/inf for floats), loaded
    # so they have x's type: padding that max/argmax and min/argmin never pick.
    lo = tl.where(mask, x, tl.load(bounds_ptr))
    hi = tl.where(mask, x, tl.load(bounds_ptr + 1))
    s1 = tl.sum(x, axis=1)
    s0 = x.sum(axis=0)
    s = tl.sum(x)
    tl.static_assert(s1.dtype == SUM_DT, "sum dtype")
    tl.static_assert(s.dtype == SUM_DT, "sum dtype")
    tl.store(sums_ptr + rows, s1, mask=rows < M)
    tl.store(sums_ptr + M + cols, s0, mask=cols < N)
    tl.store(sums_ptr + M + N, s)
    tl.store(ext_ptr + rows, tl.max(lo, axis=1), mask=rows < M)
    tl.store(ext_ptr + M + cols, tl.max(lo, 0), mask=cols < N)
    tl.store(ext_ptr + M + N, tl.max(lo))
    tl.store(ext_ptr + M + N + 1 + rows, tl.min(hi, axis=1), mask=rows < M)
    tl.store(ext_ptr + 2 * M + N + 1 + cols, hi.min(0), mask=cols < N)
    tl.store(ext_ptr + 2 * M + 2 * N + 1, tl.min(hi, axis=None))
    tl.store(arg_ptr + rows, tl.argmax(lo, axis=1), mask=rows < M)
    tl.store(arg_ptr + M + cols, tl.argmax(lo, 0), mask=cols < N)
    tl.store(arg_ptr + M + N, tl.argmax(lo, axis=None))  # flat index into the BM x BN tile
    tl.store(arg_ptr + M + N + 1 + rows, tl.argmin(hi, axis=1), mask=rows < M)
    tl.store(arg_ptr + 2 * M + N + 1 + cols, hi.argmin(0), mask=cols < N)
    tl.store(arg_ptr + 2 * M + 2 * N + 1, tl.argmin(hi, axis=None))
    if IS_INT:
        tl.store(xor_ptr + rows, tl.xor_sum(x, axis=1), mask=rows < M)
        tl.store(xor_ptr + M + cols, tl.xor_sum(x, 0), mask=cols < N)
        tl.store(xor_ptr + M + N, tl.xor_sum(x))


def reduce_data(name):
    rng = rng_for("reduce", name)
    if name in FLOATS:
        # Few distinct values, so max/min and argmax/argmin see ties.
        return (rng.integers(-20, 20, size=(M, N)) / 4).astype(np.float32).astype(np_dtype(name))
    if name in ("int8", "uint8"):
        return random(rng, (M, N), name)  # full range: sums overflow the input type
    lo, hi = int_range(name)
    x = random(rng, (M, N), name)
    x[:, ::3] = rng.integers(-3 if lo < 0 else 0, 4, size=x[:, ::3].shape)  # ties
    return x


def flat_index(idx):
    """An index into the padded BM x BN tile as an index into the M x N array."""
    return (idx // BN) * N + idx % BN


@pytest.mark.parametrize("name", INTS + FLOATS)
def test_reductions_2d(backend, name):
    x = reduce_data(name)
    sdt = sum_dtype(name)
    sums = backend.zeros(M + N + 1, np_dtype(sdt))
    ext = backend.zeros(2 * (M + N + 1), x.dtype)
    args = backend.zeros(2 * (M + N + 1), np.int32)
    xors = backend.zeros(M + N + 1, x.dtype)
    bounds = np.array([-np.inf, np.inf] if name in FLOATS else int_range(name), dtype=x.dtype)
    reduce_2d_kernel[(1,)](backend.array(x), backend.array(bounds), sums, ext, args, xors, M, N,
                           SUM_DT=tl_dtype(sdt), IS_INT=name in INTS, BM=BM, BN=BN)
    sums, ext, args, xors = (backend.numpy(a) for a in (sums, ext, args, xors))

    if name in FLOATS:
        x64 = to_f64(x)
        # Summation order is the backend's: allow one rounding per addend.
        for got, want, size in [(sums[:M], x64.sum(1), N), (sums[M:M + N], x64.sum(0), M),
                                (sums[M + N:], x64.sum(), M * N)]:
            bound = size * eps(sdt) * np.abs(x64).sum()
            check(got, want, sdt, atol=bound, rtol=0, what=f"sum of {name}")
            if name in ("float16", "bfloat16"):  # quarters add exactly in float32: one rounding, at the end
                np.testing.assert_array_equal(to_f64(got), to_f64(want.astype(np_dtype(name))), f"sum of {name}")
    else:
        acc = x.astype(np_dtype(sdt))
        check(sums[:M], acc.sum(1, dtype=acc.dtype), sdt, what=f"sum axis 1 of {name}")
        check(sums[M:M + N], acc.sum(0, dtype=acc.dtype), sdt, what=f"sum axis 0 of {name}")
        check(sums[M + N:], acc.sum(dtype=acc.dtype), sdt, what=f"sum of {name}")
        check(xors[:M], np.bitwise_xor.reduce(x, 1), name, what="xor_sum axis 1")
        check(xors[M:M + N], np.bitwise_xor.reduce(x, 0), name, what="xor_sum axis 0")
        check(xors[M + N:], np.bitwise_xor.reduce(x.reshape(-1)), name, what="xor_sum")
    k = M + N + 1
    check(ext[:M], x.max(1), name, ulps=0, atol=0, what="max axis 1")
    check(ext[M:M + N], x.max(0), name, ulps=0, atol=0, what="max axis 0")
    check(ext[M + N:k], x.max(), name, ulps=0, atol=0, what="max")
    check(ext[k:k + M], x.min(1), name, ulps=0, atol=0, what="min axis 1")
    check(ext[k + M:k + M + N], x.min(0), name, ulps=0, atol=0, what="min axis 0")
    check(ext[k + M + N:], x.min(), name, ulps=0, atol=0, what="min")
    check(args[:M], x.argmax(1), "int32", what="argmax axis 1")
    check(args[M:M + N], x.argmax(0), "int32", what="argmax axis 0")
    check(flat_index(args[M + N:k]), x.argmax(), "int32", what="argmax")
    check(args[k:k + M], x.argmin(1), "int32", what="argmin axis 1")
    check(args[k + M:k + M + N], x.argmin(0), "int32", what="argmin axis 0")
    check(flat_index(args[k + M + N:]), x.argmin(), "int32", what="argmin")


@tegula.jit
def sum_bool_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x)
    tl.store(out_ptr, s)
    tl.store(out_ptr + 1, tl.sum(x.to(tl.int8), dtype=tl.int8))  # an explicit, wrapping dtype
    tl.static_assert(tl.sum(x.to(tl.int8), dtype=tl.int8).dtype == tl.int8)


def test_sum_of_bool_counts_and_dtype_argument_wraps(backend):
    x = np.ones(256, np.bool_)
    x[::5] = False
    out = backend.zeros(2, np.int64)
    sum_bool_kernel[(1,)](backend.array(x), out, BLOCK=256)
    out = backend.numpy(out)
    assert out[0] == x.sum()
    assert out[1] == np.int8(np.int64(x.sum()).astype(np.int8))


@tegula.jit
def reduce_3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    # Every axis, through keep_dims so each result broadcasts back against x.
    s0 = tl.sum(x, axis=0, keep_dims=True)  # [1, B, C]
    s1 = tl.sum(x, axis=1, keep_dims=True)  # [A, 1, C]
    s2 = tl.sum(x, axis=-1, keep_dims=True)  # [A, B, 1]
    tl.static_assert(s1.shape[0] == A and s1.shape[1] == 1 and s1.shape[2] == C)
    m2 = tl.max(x, axis=2, keep_dims=True)
    n1 = tl.min(x, axis=1, keep_dims=True)
    total = tl.sum(x, axis=None, keep_dims=True)  # [1, 1, 1]
    tl.static_assert(len(total.shape) == 3 and total.shape[0] * total.shape[1] * total.shape[2] == 1)
    base = out_ptr + a * B * C + b * C + c
    size = A * B * C
    tl.store(base + 0 * size, x - s0)
    tl.store(base + 1 * size, x - s1)
    tl.store(base + 2 * size, x - s2)
    tl.store(base + 3 * size, x - m2)
    tl.store(base + 4 * size, x - n1)
    tl.store(base + 5 * size, x - total)
    # Without keep_dims the reduced axis disappears.
    r = tl.max(x, axis=1)  # [A, C]
    tl.static_assert(len(r.shape) == 2 and r.shape[0] == A and r.shape[1] == C)
    ac = tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + 6 * size + ac, r)
    i = tl.argmax(x, axis=1)  # [A, C]
    tl.store(out_ptr + 6 * size + A * C + ac, i.to(x.dtype))


@pytest.mark.parametrize("name", ["float32", "int32"])
def test_reductions_3d(backend, name):
    A, B, C = 4, 8, 16
    rng = rng_for("reduce3d", name)
    x = random(rng, (A, B, C), name, low=-50, high=50) if name in INTS else \
        random(rng, (A, B, C), name)
    out = backend.zeros(6 * A * B * C + 2 * A * C, x.dtype)
    reduce_3d_kernel[(1,)](backend.array(x), out, A=A, B=B, C=C)
    out = backend.numpy(out)
    size = A * B * C
    refs = [x - x.sum(0, keepdims=True), x - x.sum(1, keepdims=True), x - x.sum(2, keepdims=True),
            x - x.max(2, keepdims=True), x - x.min(1, keepdims=True), x - x.sum(keepdims=True)]
    for k, want in enumerate(refs):
        tol = 64 * eps("float32") * np.abs(x).sum() if name == "float32" else None
        check(out[k * size:(k + 1) * size].reshape(A, B, C), want, name, atol=tol, rtol=0,
              what=f"3-D reduction {k}")
    check(out[6 * size:6 * size + A * C].reshape(A, C), x.max(1), name, ulps=0, atol=0, what="max axis 1")
    check(out[6 * size + A * C:].reshape(A, C), x.argmax(1).astype(x.dtype), name, ulps=0, atol=0,
          what="argmax axis 1")


@tegula.jit
def mul_combine(a, b):
    return a * b


@tegula.jit
def sum_and_max_combine(a_sum, a_max, b_sum, b_max):
    return a_sum + b_sum, tl.maximum(a_max, b_max)


@tegula.jit
def argmax_combine(a_value, a_index, b_value, b_index):
    # A user-written argmax: bigger value wins, ties go to the smaller index.
    take_b = (b_value > a_value) | ((b_value == a_value) & (b_index < a_index))
    return tl.where(take_b, b_value, a_value), tl.where(take_b, b_index, a_index)


@tegula.jit
def user_reduce_kernel(x_ptr, y_ptr, prod_ptr, sum_ptr, max_ptr, arg_ptr, M, N, BM: tl.constexpr,
                       BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=1)  # the identity of `*`
    ys = tl.load(y_ptr + offs, mask=mask, other=0)  # the identity of `+`
    ym = tl.where(mask, ys, -1000)  # below every value, for max
    tl.store(prod_ptr + rows, tl.reduce(x, 1, mul_combine), mask=rows < M)
    tl.store(prod_ptr + M, tl.reduce(x, None, mul_combine))
    s, mx = tl.reduce((ys, ym), 1, sum_and_max_combine)
    tl.store(sum_ptr + rows, s, mask=rows < M)
    tl.store(max_ptr + rows, mx, mask=rows < M)
    idx = tl.broadcast_to(cols[None, :], (BM, BN))
    v, i = tl.reduce((ym, idx), axis=1, combine_fn=argmax_combine)
    tl.store(arg_ptr + rows, i, mask=rows < M)
    v0, i0 = tl.reduce((ym, tl.broadcast_to(rows[:, None], (BM, BN))), 0, argmax_combine,
                       keep_dims=True)
    tl.static_assert(len(i0.shape) == 2 and i0.shape[0] == 1 and i0.shape[1] == BN)
    tl.store(arg_ptr + M + cols[None, :], i0, mask=cols[None, :] < N)


def test_reduce_with_user_combine_functions(backend):
    rng = rng_for("user-reduce")
    x = rng.choice(np.array([-1, 1, 1, 1, 2], np.int64), size=(M, N))  # products stay small
    x[:, 20:] = 1
    y = rng.integers(-40, 40, size=(M, N)).astype(np.int64)
    prod = backend.zeros(M + 1, np.int64)
    sums = backend.zeros(M, np.int64)
    maxs = backend.zeros(M, np.int64)
    args = backend.zeros(M + N, np.int32)
    user_reduce_kernel[(1,)](backend.array(x), backend.array(y), prod, sums, maxs, args, M, N, BM=BM, BN=BN)
    prod, sums, maxs, args = (backend.numpy(a) for a in (prod, sums, maxs, args))
    with np.errstate(all="ignore"):
        check(prod[:M], x.prod(1), "int64", what="product axis 1")
        check(prod[M:], x.prod(), "int64", what="product of all")
    check(sums, y.sum(1), "int64", what="tuple reduce: sum")
    check(maxs, y.max(1), "int64", what="tuple reduce: max")
    check(args[:M], y.argmax(1), "int32", what="user argmax axis 1")
    check(args[M:], y.argmax(0), "int32", what="user argmax axis 0")


NEG_INF = float("-inf")
POS_INF = float("inf")


@tegula.jit
def masked_rows_kernel(x_ptr, out_ptr, M, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    # Rows at or past M are entirely masked off.
    mask = (rows[:, None] < M) & (cols[None, :] < BN)
    z = tl.load(x_ptr + rows[:, None] * BN + cols[None, :], mask=mask, other=0.0)
    lo = tl.where(mask, z, NEG_INF)
    hi = tl.where(mask, z, POS_INF)
    tl.store(out_ptr + 0 * BM + rows, tl.sum(z, axis=1))
    tl.store(out_ptr + 1 * BM + rows, tl.max(lo, axis=1))
    tl.store(out_ptr + 2 * BM + rows, tl.min(hi, axis=1))
    tl.store(out_ptr + 3 * BM + rows, tl.argmax(lo, axis=1).to(tl.float32))
    tl.store(out_ptr + 4 * BM + rows, tl.argmin(hi, axis=1).to(tl.float32))


def test_all_masked_rows_and_nan(backend):
    BM_, BN_, M_ = 8, 16, 5
    rng = rng_for("masked-rows")
    x = rng.standard_normal((M_, BN_)).astype(np.float32)
    x[1, [2, 9]] = np.nan  # some NaN: max/min ignore it, sum is NaN
    x[2, :] = np.nan  # all NaN: NaN
    x[3, :] = 4.0  # constant: argmax/argmin pick index 0
    out = backend.full((5, BM_), 123.0, np.float32)
    masked_rows_kernel[(1,)](backend.array(x), out, M_, BM=BM_, BN=BN_)
    sums, maxs, mins, amax, amin = backend.numpy(out)
    # Summation order is the backend's: allow one rounding per addend.
    x64 = x.astype(np.float64)
    bound = BN_ * eps("float32") * np.abs(x64).sum(1)
    check(sums[:M_], x64.sum(1), "float32", atol=bound, rtol=0, what="sum")
    np.testing.assert_array_equal(sums[M_:], 0.0, err_msg="sum of all-masked rows (other=0)")
    with np.errstate(invalid="ignore"):
        check(maxs[:M_], np.fmax.reduce(x, 1), "float32", ulps=0, atol=0, what="max ignoring NaN")
        check(mins[:M_], np.fmin.reduce(x, 1), "float32", ulps=0, atol=0, what="min ignoring NaN")
    np.testing.assert_array_equal(maxs[M_:], -np.inf, err_msg="max of all-masked rows (other=-inf)")
    np.testing.assert_array_equal(mins[M_:], np.inf, err_msg="min of all-masked rows (other=inf)")
    finite = [0, 3, 4]
    np.testing.assert_array_equal(amax[finite], x[finite].argmax(1))
    np.testing.assert_array_equal(amin[finite], x[finite].argmin(1))
    np.testing.assert_array_equal(amax[M_:], 0, err_msg="argmax of all-masked rows")
    np.testing.assert_array_equal(amin[M_:], 0, err_msg="argmin of all-masked rows")


@tegula.jit
def max_with_indices_kernel(x_ptr, v_ptr, i_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    v, i = tl.max(x, axis=0, return_indices=True)
    tl.store(v_ptr, v)
    tl.store(i_ptr, i)
    v2, i2 = tl.min(x, 0, return_indices=True)
    tl.store(v_ptr + 1, v2)
    tl.store(i_ptr + 1, i2)


@pytest.mark.parametrize("n", [1, 37, 1000])
def test_max_min_return_indices_1d(backend, n):
    block = 1 << (n - 1).bit_length() if n > 1 else 1
    rng = rng_for("max-indices", n)
    x = np.full(block, 0, np.int16)
    x[:n] = rng.integers(-30, 30, size=n)
    x[n:] = x[0]  # padding ties with element 0, which has the smaller index
    v = backend.zeros(2, np.int16)
    i = backend.zeros(2, np.int32)
    max_with_indices_kernel[(1,)](backend.array(x), v, i, BLOCK=block)
    v, i = backend.numpy(v), backend.numpy(i)
    assert v.tolist() == [x.max(), x.min()]
    assert i.tolist() == [x.argmax(), x.argmin()]


@tegula.jit
def reduce_1d_kernel(x_ptr, out_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.store(out_ptr, tl.sum(x, axis=0))
    lo = tl.where(m, x, tl.load(x_ptr))  # padding equal to element 0: never a later winner
    tl.store(out_ptr + 1, tl.max(lo, axis=0))
    tl.store(out_ptr + 2, tl.min(lo, 0))
    tl.store(idx_ptr, tl.argmax(lo, 0))
    tl.store(idx_ptr + 1, tl.argmin(lo, axis=0))


@pytest.mark.parametrize("name", ["float32", "int32"])
@pytest.mark.parametrize("n,block", [(1, 64), (37, 64), (1000, 1024), (37, 1024)])
def test_reductions_1d_masked_tails(backend, name, n, block):
    rng = rng_for("reduce1d", name, n)
    x = random(rng, n, name, low=-1000, high=1000) if name == "int32" else random(rng, n, name)
    out = backend.zeros(3, x.dtype)
    idx = backend.zeros(2, np.int32)
    reduce_1d_kernel[(1,)](backend.array(x), out, idx, n, BLOCK=block)
    out, idx = backend.numpy(out), backend.numpy(idx)
    if name == "float32":
        bound = n * eps("float32") * np.abs(x.astype(np.float64)).sum()
        check(out[:1], x.astype(np.float64).sum(), "float32", atol=bound, rtol=0, what="sum")
    else:
        check(out[:1], x.sum(dtype=np.int32), "int32", what="sum")
    check(out[1:], [x.max(), x.min()], name, ulps=0, atol=0, what="max, min")
    assert idx.tolist() == [x.argmax(), x.argmin()]


@tegula.jit
def reduction_types_kernel(x_ptr, out_ptr, DT: tl.constexpr, MAX_DT: tl.constexpr, IDX_DT: tl.constexpr,
                           SUM_DT: tl.constexpr, PAIR_DT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8)).to(DT)
    tl.static_assert(tl.max(x, 0).dtype == MAX_DT and tl.min(x).dtype == MAX_DT, "max / min")
    tl.static_assert(tl.max(x, 0, return_indices=True)[0].dtype == IDX_DT, "max with indices")
    tl.static_assert(tl.sum(x, 0).dtype == SUM_DT, "sum")
    tl.static_assert(tl.maximum(x, x).dtype == PAIR_DT and tl.minimum(x, 1).dtype == PAIR_DT, "maximum / minimum")
    tl.static_assert(tl.clamp(x, x, x).dtype == PAIR_DT, "clamp")
    tl.store(out_ptr, tl.max(x, 0).to(tl.float32))


@pytest.mark.parametrize("name, max_dt, idx_dt, sum_dt, pair_dt", [
    ("float16", "float32", "float16", "float16", "float16"),
    ("bfloat16", "float32", "float32", "bfloat16", "float32"),
    ("float8e5", "float32", "float8e5", "float8e5", "float8e5"),
    ("int8", "int32", "int8", "int32", "int8"),
    ("uint8", "int32", "uint8", "uint32", "uint8"),
    ("int16", "int32", "int16", "int32", "int16"),
    ("float32", "float32", "float32", "float32", "float32"),
    ("uint32", "uint32", "uint32", "uint32", "uint32"),
])
def test_reductions_and_comparisons_have_tritons_types(name, max_dt, idx_dt, sum_dt, pair_dt):
    """Triton's standard library widens what max and min reduce, and compares bfloat16 as float32
    (a bitcast of tl.max of bfloat16 to int32 depends on it, as torchao's MX quantizer's does)."""
    out = np.zeros(1, np.float32)
    dt = {key: getattr(tl, value) for key, value in
          (("DT", name), ("MAX_DT", max_dt), ("IDX_DT", idx_dt), ("SUM_DT", sum_dt), ("PAIR_DT", pair_dt))}
    reduction_types_kernel[(1,)](np.arange(8, dtype=np.float32), out, **dt)
    assert out[0] == 7


@tegula.jit
def clamp_bf16_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.clamp(x, -0.1, 0.1))
    tl.store(out_ptr + BLOCK + tl.arange(0, BLOCK), tl.maximum(x, 0.1))


def test_bf16_comparisons_with_numbers_happen_in_float32(backend):
    """tl.clamp(x, -0.1, 0.1) of bfloat16 x is float32 with the float32 bounds, not bounds rounded to bfloat16."""
    x = (np.random.default_rng(5).standard_normal(64) * 0.3).astype(np_dtype("bfloat16"))
    out = backend.zeros(128, np.float32)
    clamp_bf16_kernel[(1,)](backend.array(x), out, BLOCK=64)
    x32 = to_f64(x).astype(np.float32)
    np.testing.assert_array_equal(backend.numpy(out)[:64], np.clip(x32, np.float32(-0.1), np.float32(0.1)))
    np.testing.assert_array_equal(backend.numpy(out)[64:], np.maximum(x32, np.float32(0.1)))


@tegula.jit
def softmax_type_kernel(x_ptr, out_ptr, DT: tl.constexpr, OUT_DT: tl.constexpr):
    y = tl.softmax(tl.load(x_ptr + tl.arange(0, 8)).to(DT))
    tl.static_assert(y.dtype == OUT_DT, "softmax")
    tl.store(out_ptr + tl.arange(0, 8), y)


@pytest.mark.parametrize("name, out_dt", [("float16", "float32"), ("bfloat16", "float32"), ("float32", "float32"),
                                          ("float64", "float64")])
def test_softmax_has_tritons_type(name, out_dt):
    x = np.linspace(-2, 2, 8).astype(np.float32)
    out = np.zeros(8, np.float32)
    softmax_type_kernel[(1,)](x, out, DT=getattr(tl, name), OUT_DT=getattr(tl, out_dt))
    xr = to_f64(x.astype(np_dtype(name)))
    np.testing.assert_allclose(out, np.exp(xr - xr.max()) / np.exp(xr - xr.max()).sum(), rtol=2e-6)
