"""Scans, sorting and indexing by value against NumPy: tl.cumsum, tl.cumprod,
tl.associative_scan (one tile and tuples, forward and reverse), tl.sort,
tl.topk, tl.flip, tl.gather, tl.histogram, and the helpers built from other
ops (tl.interleave, tl.cat, tl.swizzle2d).

What is asserted where the semantics have choices (docs/language.md):
  * cumsum of bool/int8/int16 returns int32, of uint8/uint16 uint32, of
    bfloat16 float32; float16 stays float16 (rounded after every step), as in
    Triton. cumprod widens bfloat16 (and bool, to int32) only. Integer scans
    wrap.
  * reverse=True scans from the last element: r[k] = combine(r[k+1], x[k]);
    the combine function's first argument always covers the elements already
    scanned, so non-commutative combiners (a linear recurrence) are exact.
  * sort puts NaN above +inf (last ascending, first descending).
  * gather reads index mod n for an index outside [0, n) (never out of the
    tile); debug mode reports such an index with the gather's location.
  * histogram counts values in [0, num_bins) where the mask holds.
Floats are compared within a bound of one rounding per combined element: the
CPU backend scans sequentially, the CUDA backend as a tree.
"""

import os

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import FLOATS, check, eps, int_range, np_dtype, random, rng_for, tl_dtype, to_f64

# --- cumsum / cumprod ---------------------------------------------------------------

M, N = 6, 50  # a masked tail in both dims of the 8 x 64 tile
BM, BN = 8, 64


def cumsum_dtype(name):
    if name in ("bool", "int8", "int16"):
        return "int32"
    if name in ("uint8", "uint16"):
        return "uint32"
    return "float32" if name == "bfloat16" else name


def cumprod_dtype(name):
    return {"bool": "int32", "bfloat16": "float32"}.get(name, name)


@tegula.jit
def cumulative_kernel(x_ptr, sums_ptr, prods_ptr, M, N, SUM_DT: tl.constexpr, PROD_DT: tl.constexpr,
                      BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    offs = rows * N + cols
    # Padding with the identity leaves every scan of the real elements alone,
    # reversed ones included (the padding sits after them).
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    ones = tl.load(x_ptr + offs, mask=mask, other=1)
    s1 = tl.cumsum(x, axis=1)
    tl.static_assert(s1.dtype == SUM_DT, "cumsum dtype")
    size = M * N
    tl.store(sums_ptr + offs, s1, mask=mask)
    tl.store(sums_ptr + size + offs, tl.cumsum(x, 0), mask=mask)
    tl.store(sums_ptr + 2 * size + offs, x.cumsum(axis=-1, reverse=True), mask=mask)
    tl.store(sums_ptr + 3 * size + offs, tl.cumsum(x, axis=0, reverse=True), mask=mask)
    p1 = tl.cumprod(ones, axis=1)
    tl.static_assert(p1.dtype == PROD_DT, "cumprod dtype")
    tl.store(prods_ptr + offs, p1, mask=mask)
    tl.store(prods_ptr + size + offs, tl.cumprod(ones, 0, reverse=True), mask=mask)


def scan_ref(x, axis, reverse, op, dtype):
    """Sequential scan in `dtype` (wrapping for integers)."""
    a = np.flip(x, axis) if reverse else x
    with np.errstate(over="ignore"):
        r = op.accumulate(a.astype(dtype), axis=axis, dtype=dtype)
    return np.flip(r, axis) if reverse else r


def float_scan_bound(x64, axis, reverse, dtype_name):
    """One rounding of the result type per element combined so far."""
    a = np.flip(np.abs(x64), axis) if reverse else np.abs(x64)
    count = np.cumsum(np.ones_like(a), axis=axis)
    bound = np.cumsum(a, axis=axis) * count * eps(dtype_name)
    return np.flip(bound, axis) if reverse else bound


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "int32", "int64", "float16", "bfloat16",
                                  "float32", "float64"])
def test_cumsum_cumprod_2d(backend, name):
    rng = rng_for("cumulative", name)
    if name in FLOATS:
        x = random(rng, (M, N), name, low=0.5, high=1.5)  # products stay in range
    else:
        x = random(rng, (M, N), name)
    sdt, pdt = cumsum_dtype(name), cumprod_dtype(name)
    sums = backend.zeros(4 * M * N, np_dtype(sdt))
    prods = backend.zeros(2 * M * N, np_dtype(pdt))
    cumulative_kernel[(1,)](backend.array(x), sums, prods, M, N, SUM_DT=tl_dtype(sdt),
                            PROD_DT=tl_dtype(pdt), BM=BM, BN=BN)
    sums = backend.numpy(sums).reshape(4, M, N)
    prods = backend.numpy(prods).reshape(2, M, N)
    cases = [(sums[0], 1, False), (sums[1], 0, False), (sums[2], 1, True), (sums[3], 0, True)]
    for got, axis, reverse in cases:
        what = f"cumsum axis {axis}{' reverse' if reverse else ''} of {name}"
        if name in FLOATS:
            x64 = to_f64(x)
            want = scan_ref(x64, axis, reverse, np.add, np.float64)
            bound = float_scan_bound(x64, axis, reverse, sdt)
            assert np.all(np.abs(to_f64(got) - want) <= bound), what
        else:
            check(got, scan_ref(x, axis, reverse, np.add, np_dtype(sdt)), sdt, what=what)
    for got, axis, reverse in [(prods[0], 1, False), (prods[1], 0, True)]:
        what = f"cumprod axis {axis}{' reverse' if reverse else ''} of {name}"
        if name in FLOATS:
            x64 = to_f64(x)
            want = scan_ref(x64, axis, reverse, np.multiply, np.float64)
            steps = np.cumsum(np.ones_like(x64), axis=axis)
            steps = np.flip(np.cumsum(np.ones_like(x64), axis=axis), axis) if reverse else steps
            check(got, want, pdt, atol=0, rtol=2 * steps * eps(pdt), what=what)
        else:
            check(got, scan_ref(x, axis, reverse, np.multiply, np_dtype(pdt)), pdt, what=what)


@tegula.jit
def cumsum_nd_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr,
                     REVERSE: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    offs = a * B * C + b * C + c
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=AXIS, reverse=REVERSE))


# Shapes from one row to 1024 elements, every axis, and block sizes that put
# the scanned dim in registers, lanes and warps on the GPU.
@pytest.mark.parametrize("shape,axis,reverse,warps", [
    ((1, 1, 16), 2, False, 4), ((1, 8, 64), 2, False, 4), ((1, 8, 64), 1, True, 4),
    ((1, 1, 128), 2, True, 1), ((1, 1, 1024), 2, False, 4), ((1, 1, 1024), 2, True, 8),
    ((1, 64, 16), 1, False, 8), ((4, 8, 16), 0, False, 4), ((4, 8, 16), 1, True, 2),
    ((4, 8, 16), 2, False, 4),
])
def test_cumsum_shapes_and_axes(backend, shape, axis, reverse, warps):
    x = random(rng_for("cumsum-nd", shape, axis), shape, "int32", low=-1000, high=1000)
    out = backend.zeros(shape, np.int32)
    cumsum_nd_kernel[(1,)](backend.array(x), out, A=shape[0], B=shape[1], C=shape[2], AXIS=axis,
                           REVERSE=reverse, num_warps=warps)
    check(backend.numpy(out), scan_ref(x, axis, reverse, np.add, np.int32), "int32")


@tegula.jit
def cumsum_1d_float_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, tl.cumsum(x), mask=offs < n)


@pytest.mark.parametrize("n,block", [(1000, 1024), (128, 128), (5, 16)])
def test_cumsum_1d_float_masked(backend, n, block):
    x = random(rng_for("cumsum-1d", n), n, "float32")
    out = backend.zeros(n, np.float32)
    cumsum_1d_float_kernel[(1,)](backend.array(x), out, n, BLOCK=block)
    x64 = to_f64(x)
    got = to_f64(backend.numpy(out))
    assert np.all(np.abs(got - np.cumsum(x64)) <= float_scan_bound(x64, 0, False, "float32"))


@tegula.jit
def cumsum_dtype_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = tl.cumsum(tl.load(x_ptr + offs), 0, dtype=tl.int8)  # an explicit, wrapping accumulator
    tl.static_assert(s.dtype == tl.int8, "cumsum dtype=")
    tl.store(out_ptr + offs, s)


def test_cumsum_dtype_argument_wraps(backend):
    x = random(rng_for("cumsum-dtype"), 64, "int32", low=-100, high=100)
    out = backend.zeros(64, np.int8)
    cumsum_dtype_kernel[(1,)](backend.array(x), out, BLOCK=64)
    check(backend.numpy(out), scan_ref(x.astype(np.int8), 0, False, np.add, np.int8), "int8")


# --- associative_scan with user combine functions ---------------------------------------------


@tegula.jit
def running_max(v1, i1, v2, i2):
    take = v2 > v1  # ties keep the earlier index
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@tegula.jit
def affine(a1, b1, a2, b2):
    # h -> a2 * (a1 * h + b1) + b2: the composition of two steps of
    # h_t = a_t * h_(t-1) + b_t, in order (not commutative).
    return a1 * a2, a2 * b1 + b2


@tegula.jit
def first_non_zero(a, b):
    return tl.where(a != 0, a, b)


@tegula.jit
def associative_kernel(x_ptr, a_ptr, b_ptr, max_ptr, arg_ptr, h_ptr, hr_ptr, first_ptr,
                       R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    idx = tl.broadcast_to(tl.arange(0, C)[None, :], (R, C))
    m, i = tl.associative_scan((x, idx), 1, running_max)
    tl.store(max_ptr + offs, m)
    tl.store(arg_ptr + offs, i)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, h = tl.associative_scan((a, b), axis=1, combine_fn=affine)
    tl.store(h_ptr + offs, h)
    _, hr = tl.associative_scan((a, b), 0, affine, reverse=True)
    tl.store(hr_ptr + offs, hr)
    tl.store(first_ptr + offs, tl.associative_scan(x, 1, first_non_zero, reverse=True))


@pytest.mark.parametrize("R,C,warps", [(4, 64, 4), (32, 32, 8), (1, 256, 2)])
def test_associative_scan_tuples(backend, R, C, warps):
    rng = rng_for("associative", R, C)
    x = rng.integers(-20, 20, size=(R, C)).astype(np.int32)
    x[rng.random((R, C)) < 0.3] = 0
    a = rng.integers(-3, 4, size=(R, C)).astype(np.int32)
    b = rng.integers(-100, 100, size=(R, C)).astype(np.int32)
    outs = [backend.zeros((R, C), np.int32) for _ in range(5)]
    associative_kernel[(1,)](*(backend.array(v) for v in (x, a, b)), *outs, R=R, C=C, num_warps=warps)
    m, arg, h, hr, first = (backend.numpy(o) for o in outs)
    check(m, np.maximum.accumulate(x, axis=1), "int32", what="running max")
    want_arg = np.zeros_like(x)
    for r in range(R):
        best = 0
        for c in range(C):
            if x[r, c] > x[r, best]:
                best = c
            want_arg[r, c] = best
    check(arg, want_arg, "int32", what="running argmax")
    want_h = np.zeros_like(b)
    with np.errstate(over="ignore"):
        for r in range(R):
            acc = np.int32(b[r, 0])
            want_h[r, 0] = acc
            for c in range(1, C):
                acc = np.int32(a[r, c] * acc + b[r, c])
                want_h[r, c] = acc
        want_hr = np.zeros_like(b)
        for c in range(C):
            acc = np.int32(b[R - 1, c])
            want_hr[R - 1, c] = acc
            for r in range(R - 2, -1, -1):
                acc = np.int32(a[r, c] * acc + b[r, c])
                want_hr[r, c] = acc
    check(h, want_h, "int32", what="linear recurrence")
    check(hr, want_hr, "int32", what="reversed linear recurrence")
    # Reversed, the scan meets x[C-1] first: the first non-zero it meets in
    # x[c:] is the last non-zero of x[c:].
    want_last = np.zeros_like(x)
    for r in range(R):
        for c in range(C):
            tail = x[r, c:][x[r, c:] != 0]
            want_last[r, c] = tail[-1] if tail.size else 0
    check(first, want_last, "int32", what="last non-zero of x[c:]")


# --- sort, topk, flip -----------------------------------------------------------------------


@tegula.jit
def sort_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    size = R * C
    tl.store(out_ptr + offs, tl.sort(x))
    tl.store(out_ptr + size + offs, tl.sort(x, descending=True))
    tl.store(out_ptr + 2 * size + offs, x.sort(0))
    tl.store(out_ptr + 3 * size + offs, tl.sort(x, dim=0, descending=True))
    tl.store(out_ptr + 4 * size + offs, tl.flip(x))
    tl.store(out_ptr + 5 * size + offs, tl.flip(x, 0))


def nan_sort(x, axis, descending):
    # NumPy sorts NaN last for its own float types; ml_dtypes' bfloat16 does
    # not, so floats sort as float64 (exact) and convert back.
    s = np.sort(to_f64(x), axis=axis).astype(x.dtype) if x.dtype.name == "bfloat16" else np.sort(x, axis=axis)
    return np.flip(s, axis) if descending else s


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "int32", "int64", "float16", "bfloat16",
                                  "float32", "float64"])
def test_sort_and_flip_2d(backend, name):
    R, C = 8, 64
    rng = rng_for("sort", name)
    x = random(rng, (R, C), name, specials=True)
    if name not in FLOATS and name != "bool":
        x[:, ::4] = x[:, 1::4]  # duplicates
    out = backend.zeros(6 * R * C, x.dtype)
    sort_kernel[(1,)](backend.array(x), out, R=R, C=C)
    out = backend.numpy(out).reshape(6, R, C)
    for k, (axis, desc) in enumerate([(1, False), (1, True), (0, False), (0, True)]):
        check(out[k], nan_sort(x, axis, desc), name, ulps=0, atol=0, rtol=0,
              what=f"sort axis {axis}{' descending' if desc else ''} of {name}")
    check(out[4], x[:, ::-1], name, ulps=0, atol=0, rtol=0, what="flip last dim")
    check(out[5], x[::-1, :], name, ulps=0, atol=0, rtol=0, what="flip dim 0")


@tegula.jit
def sort_1d_kernel(x_ptr, out_ptr, top_ptr, bottom_ptr, BLOCK: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x))
    tl.store(top_ptr + tl.arange(0, K), tl.topk(x, K))
    tl.store(bottom_ptr + tl.arange(0, K), tl.topk(x, K, descending=False))


@pytest.mark.parametrize("block,k,warps", [(1024, 16, 4), (128, 128, 1), (16, 4, 8)])
def test_sort_and_topk_1d(backend, block, k, warps):
    x = random(rng_for("sort1d", block), block, "float32", specials=True)
    out = backend.zeros(block, np.float32)
    top, bottom = backend.zeros(k, np.float32), backend.zeros(k, np.float32)
    sort_1d_kernel[(1,)](backend.array(x), out, top, bottom, BLOCK=block, K=k, num_warps=warps)
    check(backend.numpy(out), np.sort(x), "float32", ulps=0, atol=0, rtol=0)
    check(backend.numpy(top), np.sort(x)[::-1][:k], "float32", ulps=0, atol=0, rtol=0)
    check(backend.numpy(bottom), np.sort(x)[:k], "float32", ulps=0, atol=0, rtol=0, what="the k smallest")


# --- gather --------------------------------------------------------------------------------


@tegula.jit
def gather_kernel(src_ptr, i1_ptr, i0_ptr, out1_ptr, out0_ptr, R: tl.constexpr, C: tl.constexpr,
                  K: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    src = tl.load(src_ptr + rows * C + cols)
    ks = tl.arange(0, K)
    along1 = tl.load(i1_ptr + rows * K + ks[None, :])  # [R, K] column indices
    tl.store(out1_ptr + rows * K + ks[None, :], tl.gather(src, along1, 1))
    along0 = tl.load(i0_ptr + ks[:, None] * C + cols)  # [K, C] row indices
    tl.store(out0_ptr + ks[:, None] * C + cols, src.gather(along0, axis=0))


@pytest.mark.parametrize("name,index_name", [("float32", "int32"), ("int16", "int64"), ("bfloat16", "uint8")])
def test_gather(backend, name, index_name):
    R, C, K = 16, 32, 64
    rng = rng_for("gather", name)
    src = random(rng, (R, C), name)
    i1 = rng.integers(0, C, size=(R, K)).astype(np_dtype(index_name))
    i0 = rng.integers(0, R, size=(K, C)).astype(np_dtype(index_name))
    out1 = backend.zeros((R, K), src.dtype)
    out0 = backend.zeros((K, C), src.dtype)
    gather_kernel[(1,)](backend.array(src), backend.array(i1), backend.array(i0), out1, out0, R=R, C=C, K=K)
    check(backend.numpy(out1), np.take_along_axis(src, i1.astype(np.int64), 1), name, ulps=0, atol=0, rtol=0)
    check(backend.numpy(out0), np.take_along_axis(src, i0.astype(np.int64), 0), name, ulps=0, atol=0, rtol=0)


@tegula.jit
def gather_1d_kernel(src_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.gather(tl.load(src_ptr + offs), tl.load(idx_ptr + offs), 0))


def test_gather_out_of_range_reads_index_mod_n(backend):
    src = np.arange(16, dtype=np.float32)
    idx = np.array([3, -1, 16, 17, 1000, -16, 0, 15] * 2, dtype=np.int32)
    out = backend.zeros(16, np.float32)
    gather_1d_kernel[(1,)](backend.array(src), backend.array(idx), out, BLOCK=16)
    check(backend.numpy(out), src[idx % 16], "float32", ulps=0, atol=0, rtol=0)


gather_checked = tegula.jit(gather_1d_kernel.fn, debug=True)


def test_gather_out_of_range_is_located_in_debug_mode(backend, capfd):
    src = np.arange(16, dtype=np.float32)
    idx = np.zeros(16, dtype=np.int32)
    idx[5] = 16
    out = backend.zeros(16, np.float32)
    try:
        gather_checked[(1,)](backend.array(src), backend.array(idx), out, BLOCK=16)
        backend.synchronize()
        text = capfd.readouterr().err
    except Exception as e:  # a backend may raise instead of printing
        text = str(e)
    line = gather_1d_kernel.fn.__code__.co_firstlineno + 3
    assert f"{os.path.basename(__file__)}:{line}" in text, text
    assert "tl.gather index out of range [0, 16) along axis 0" in text, text


# --- histogram -----------------------------------------------------------------------------


@tegula.jit
def histogram_kernel(x_ptr, out_ptr, masked_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))
    tl.store(masked_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


@pytest.mark.parametrize("name,n,block,bins", [("int32", 1000, 1024, 64), ("uint8", 100, 128, 16),
                                               ("int64", 16, 16, 32), ("int8", 300, 512, 8)])
def test_histogram(backend, name, n, block, bins):
    rng = rng_for("histogram", name)
    lo = -5 if name.startswith("int") else 0
    x = rng.integers(lo, bins + 5, size=n).astype(np_dtype(name))
    out = backend.zeros(bins, np.int32)
    masked = backend.zeros(bins, np.int32)
    histogram_kernel[(1,)](backend.array(x), out, masked, n, BLOCK=block, BINS=bins)
    inside = x[(x >= 0) & (x < bins)].astype(np.int64)
    want = np.bincount(inside, minlength=bins)
    check(backend.numpy(masked), want, "int32", what="masked histogram")
    want[0] += block - n  # the padding (other=0) counts without the mask
    check(backend.numpy(out), want, "int32", what="histogram")


@tegula.jit
def histogram_total_kernel(x_ptr, out_ptr, BINS: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.histogram(tl.load(x_ptr + tl.arange(0, 16)), BINS), axis=0))


@pytest.mark.parametrize("bins", [12, 2**21])
def test_histogram_bins_that_no_tile_holds_are_said(bins):
    with pytest.raises(tegula.CompilationError, match=(
            f"the num_bins of tl.histogram must be a power of two of at most 1048576 \\(it is the result's "
            f"size, a tile\\), not {bins}")):
        histogram_total_kernel[(1,)](np.zeros(16, np.int32), np.zeros(1, np.int32), BINS=bins)


# --- interleave, cat, swizzle2d ------------------------------------------------------------------


@tegula.jit
def compose_kernel(a_ptr, b_ptr, inter_ptr, cat_ptr, cat2_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    a = tl.load(a_ptr + rows * C + cols)
    b = tl.load(b_ptr + rows * C + cols)
    tl.store(inter_ptr + rows * 2 * C + tl.arange(0, 2 * C)[None, :], tl.interleave(a, b))
    tl.store(cat_ptr + tl.arange(0, 2 * R)[:, None] * C + cols, tl.cat(a, b, can_reorder=True))
    flat = tl.arange(0, R * C)
    tl.store(cat2_ptr + tl.arange(0, 2 * R * C), tl.cat(tl.load(a_ptr + flat), tl.load(b_ptr + flat)))


def test_interleave_and_cat(backend):
    R, C = 4, 16
    rng = rng_for("compose")
    a = random(rng, (R, C), "float32")
    b = random(rng, (R, C), "float32")
    inter = backend.zeros((R, 2 * C), np.float32)
    cat = backend.zeros((2 * R, C), np.float32)
    cat2 = backend.zeros(2 * R * C, np.float32)
    compose_kernel[(1,)](backend.array(a), backend.array(b), inter, cat, cat2, R=R, C=C)
    check(backend.numpy(inter), np.stack([a, b], -1).reshape(R, 2 * C), "float32", ulps=0, atol=0, rtol=0)
    check(backend.numpy(cat), np.concatenate([a, b], 0), "float32", ulps=0, atol=0, rtol=0)
    check(backend.numpy(cat2), np.concatenate([a.ravel(), b.ravel()]), "float32", ulps=0, atol=0, rtol=0)


@tegula.jit
def cat_dim_kernel(a_ptr, b_ptr, out_ptr, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr,
                   DIM: tl.constexpr):
    i = tl.arange(0, D0)[:, None, None]
    j = tl.arange(0, D1)[None, :, None]
    k = tl.arange(0, D2)[None, None, :]
    offs = (i * D1 + j) * D2 + k
    z = tl.cat(tl.load(a_ptr + offs), tl.load(b_ptr + offs), dim=DIM)
    # z's shape doubles axis DIM; store it row-major.
    wrapped: tl.constexpr = DIM % 3
    E0: tl.constexpr = D0 * 2 if wrapped == 0 else D0
    E1: tl.constexpr = D1 * 2 if wrapped == 1 else D1
    E2: tl.constexpr = D2 * 2 if wrapped == 2 else D2
    zi = tl.arange(0, E0)[:, None, None]
    zj = tl.arange(0, E1)[None, :, None]
    zk = tl.arange(0, E2)[None, None, :]
    tl.store(out_ptr + (zi * E1 + zj) * E2 + zk, z)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cat_along_any_dim(backend, dim):
    shape = (2, 4, 8)
    rng = rng_for(f"cat-{dim}")
    a = random(rng, shape, "float32")
    b = random(rng, shape, "float32")
    want = np.concatenate([a, b], axis=dim)
    out = backend.zeros(want.size, np.float32)
    cat_dim_kernel[(1,)](backend.array(a), backend.array(b), out, *shape, DIM=dim)
    check(backend.numpy(out).reshape(want.shape), want, "float32", ulps=0, atol=0, rtol=0)


def test_cat_dim_out_of_range_is_located():
    @tegula.jit
    def bad(a_ptr):
        x = tl.load(a_ptr + tl.arange(0, 4))
        tl.store(a_ptr + tl.arange(0, 8), tl.cat(x, x, dim=1))

    with pytest.raises(tegula.CompilationError, match=r"the dim of tl.cat is 1, out of range for a tile of rank 1"):
        bad[(1,)](np.zeros(8, np.float32))


@tegula.jit
def swizzle_kernel(out_ptr, size_i, size_j, G: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = offs // size_j
    j = offs % size_j
    ni, nj = tl.swizzle2d(i, j, size_i, size_j, G)
    valid = offs < size_i * size_j
    tl.store(out_ptr + offs, ni, mask=valid)
    tl.store(out_ptr + BLOCK + offs, nj, mask=valid)
    si, sj = tl.swizzle2d(5, 3, 7, 4, 3)  # constants stay constants
    tl.static_assert(si == 5 and sj == 3, "swizzle2d on constants")


def swizzle_ref(i, j, size_i, size_j, g):
    linear = i * size_j + j
    first = linear // (g * size_j) * g
    rows = min(size_i - first, g)
    within = linear % (g * size_j)
    return first + within % rows, within // rows


def test_swizzle2d(backend):
    size_i, size_j, g = 7, 5, 3
    out = backend.zeros(2 * 64, np.int32)
    swizzle_kernel[(1,)](out, size_i, size_j, G=g, BLOCK=64)
    out = backend.numpy(out)
    cells = size_i * size_j
    want = [swizzle_ref(k // size_j, k % size_j, size_i, size_j, g) for k in range(cells)]
    check(out[:cells], [w[0] for w in want], "int32")
    check(out[64:64 + cells], [w[1] for w in want], "int32")
    assert sorted(want) == [(i, j) for i in range(size_i) for j in range(size_j)]  # a permutation


# --- errors ------------------------------------------------------------------------------------


def where(fn, needle):
    import inspect

    lines, first = inspect.getsourcelines(fn.fn)
    for k, text in enumerate(lines):
        col = text.find(needle)
        if col >= 0 and not text.lstrip().startswith(("@", "def ")):
            return first + k, col + 1
    raise AssertionError(needle)


@tegula.jit
def bad_sort_dim(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.store(x_ptr, tl.sum(tl.sort(x, dim=2)))


@tegula.jit
def bad_histogram_input(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(out_ptr + tl.arange(0, 8), tl.histogram(x, 8))


@tegula.jit
def bad_combine_fn(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), tl.associative_scan(x, 0, tl.maximum))


@tegula.jit
def bad_gather_shapes(x_ptr, i_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :])
    i = tl.load(i_ptr + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :])
    tl.store(x_ptr, tl.sum(tl.gather(x, i, 1)))


@tegula.jit
def none_scan_axis(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), tl.cumsum(x, axis=None))


@pytest.mark.parametrize("kernel,args,needle,text", [
    (bad_sort_dim, (np.zeros(64, np.float32),), "dim=2",
     "the dim of tl.sort is 2, out of range for a tile of rank 2"),
    (bad_histogram_input, (np.zeros(16, np.float32), np.zeros(8, np.int32)), "x, 8",
     "tl.histogram counts integers, but its input is"),
    (bad_combine_fn, (np.zeros(16, np.float32),), "tl.maximum",
     "the combine_fn of tl.associative_scan must be a @jit function"),
    (bad_gather_shapes, (np.zeros(64, np.float32), np.zeros(16, np.int32)), "tl.gather(",
     "tl.gather needs index to match src in every dimension but axis 1"),
    (none_scan_axis, (np.zeros(16, np.float32),), "axis=None", "tl.cumsum needs an integer axis, not None"),
])
def test_errors_are_located(kernel, args, needle, text):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args)
    message = str(info.value)
    line, col = where(kernel, needle)
    assert f"{os.path.basename(__file__)}:{line}:{col}: error[E" in message.splitlines()[0], message
    assert text in message, message


# --- CUDA code generation without a GPU ----------------------------------------------------------

def _compile_for_cuda(tmp_path, kernel, args, constexprs, arch, num_warps):
    from tegula import _C

    request, _ = kernel._request_for(*args, **constexprs)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch, num_warps=num_warps, keep_stages=True,
                                cache_dir=str(tmp_path))
    return _C.compile(request, options)


def _cuda_cases():
    f32 = np.zeros(1 << 14, np.float32)
    i32 = np.zeros(1 << 14, np.int32)
    bf16 = np.zeros(1 << 14, np_dtype("bfloat16"))
    i8 = np.zeros(1 << 14, np.int8)
    u8 = np.zeros(1 << 14, np.uint8)
    return [
        (cumulative_kernel, (bf16, f32, f32, 6, 50), dict(SUM_DT=tl.float32, PROD_DT=tl.float32, BM=8, BN=64), 4),
        (cumulative_kernel, (i8, i32, i8, 6, 50), dict(SUM_DT=tl.int32, PROD_DT=tl.int8, BM=8, BN=64), 8),
        (cumsum_nd_kernel, (i32, i32), dict(A=1, B=1, C=1024, AXIS=2, REVERSE=True), 8),
        (cumsum_nd_kernel, (i32, i32), dict(A=4, B=8, C=16, AXIS=0, REVERSE=False), 4),
        (associative_kernel, (i32,) * 8, dict(R=32, C=32), 8),
        (sort_kernel, (bf16, bf16), dict(R=8, C=64), 4),
        (sort_1d_kernel, (f32, f32, f32, f32), dict(BLOCK=1024, K=16), 4),
        (gather_kernel, (f32, u8, u8, f32, f32), dict(R=16, C=32, K=64), 4),
        (gather_checked, (f32, i32, f32), dict(BLOCK=16), 4),
        (histogram_kernel, (i8, i32, i32, 300), dict(BLOCK=512, BINS=8), 4),
        (compose_kernel, (f32,) * 5, dict(R=4, C=16), 4),
    ]


@pytest.mark.parametrize("arch", [90, 80])
def test_cuda_kernels_compile(tmp_path, arch):
    from tegula import _C

    try:
        _C.cuda_target(arch=arch)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")
    for kernel, args, constexprs, warps in _cuda_cases():
        compiled = _compile_for_cuda(tmp_path, kernel, args, constexprs, arch, warps)
        what = f"{kernel.__name__} {constexprs} sm_{arch}"
        assert ".entry tegula_kernel" in compiled.ptx, what
        assert "0 bytes stack frame" in compiled.compile_log, what + "\n" + compiled.compile_log
