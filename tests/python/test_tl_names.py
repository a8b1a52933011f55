"""The smaller names of `triton.language` against NumPy on random data:
squeeze/unsqueeze, reduce_or, x.item(), x.cdiv, x.logical_and/or, the
function forms tl.add/sub/mul, tl.to_tensor, bitonic_merge, map_elementwise,
dot_scaled (microscaled e2m1/e4m3/e5m2 operands with e8m0 scales), the type
objects (tl.dtype, tl.block_type, tl.pointer_type, tl.constexpr_type,
tl.tensor, tl.tuple, tl.void, tl.pi32_t, TRITON_MAX_TENSOR_NUMEL) with
isinstance, tl.condition, and tl.const pointer parameters.

Every kernel runs on the backend under test (conftest.py); the kernels also
compile for the CUDA backend through NVRTC (`test_kernels_compile_for_cuda`)
wherever NVRTC loads.
"""

import re

import ml_dtypes
import numpy as np
import pytest

import tegula
import tegula.language as tl

B = 16


def rng_for(name):
    return np.random.default_rng(abs(hash(name)) % 2**32)


# --- shape and reductions -------------------------------------------------------------


@tegula.jit
def shape_kernel(x_ptr, i_ptr, out_ptr, oi_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x2 = tl.load(x_ptr + offs[:, None] * BLOCK + offs[None, :])
    xi = tl.load(i_ptr + offs[:, None] * BLOCK + offs[None, :])
    row = tl.squeeze(tl.sum(x2, axis=0, keep_dims=True), 0)  # [1, B] -> [B]
    col = tl.squeeze(tl.max(x2, axis=1, keep_dims=True), -1)  # [B, 1] -> [B]
    tl.store(out_ptr + offs, row)
    tl.store(out_ptr + BLOCK + offs, col)
    u = tl.unsqueeze(row, 0) + tl.unsqueeze(col, 1)  # [1, B] + [B, 1]
    tl.static_assert(u.shape == (BLOCK, BLOCK))
    tl.store(out_ptr + 2 * BLOCK + offs[:, None] * BLOCK + offs[None, :], u)
    tl.store(out_ptr + (2 + BLOCK) * BLOCK + offs, x2.unsqueeze(2).squeeze(2).sum(axis=1))
    # reduce_or along each axis, as a function and a method, keep_dims too
    tl.store(oi_ptr + offs, tl.reduce_or(xi, axis=0))
    tl.store(oi_ptr + BLOCK + offs, xi.reduce_or(1))
    tl.store(oi_ptr + 2 * BLOCK + offs[:, None], tl.reduce_or(xi, 1, keep_dims=True))
    tl.store(oi_ptr + 3 * BLOCK + offs, tl.reduce_or(xi, None) + offs * 0)
    # item of one-element tiles and of a scalar
    one = tl.sum(xi, axis=1, keep_dims=True)  # [B, 1]
    tl.store(oi_ptr + 4 * BLOCK + offs, offs * 0 + tl.max(one, axis=0).item())
    tl.store(oi_ptr + 5 * BLOCK + offs, offs * 0 + tl.squeeze(tl.min(one, axis=0), 0) + tl.sum(xi).item())


def test_squeeze_unsqueeze_reduce_or_item(backend):
    rng = rng_for("shape")
    x = rng.standard_normal((B, B)).astype(np.float32)
    xi = rng.integers(0, 2**31 - 1, (B, B)).astype(np.int32) >> rng.integers(0, 31, (B, B)).astype(np.int32)
    out, oi = backend.zeros((3 + B) * B, np.float32), backend.zeros(6 * B, np.int32)
    shape_kernel[(1,)](backend.array(x), backend.array(xi), out, oi, BLOCK=B)
    out, oi = backend.numpy(out), backend.numpy(oi)
    np.testing.assert_allclose(out[:B], x.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[B:2 * B], x.max(1))
    np.testing.assert_allclose(out[2 * B:(2 + B) * B].reshape(B, B), x.sum(0)[None, :] + x.max(1)[:, None],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[(2 + B) * B:], x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(oi[:B], np.bitwise_or.reduce(xi, axis=0))
    np.testing.assert_array_equal(oi[B:2 * B], np.bitwise_or.reduce(xi, axis=1))
    np.testing.assert_array_equal(oi[2 * B:3 * B], np.bitwise_or.reduce(xi, axis=1))
    np.testing.assert_array_equal(oi[3 * B:4 * B], np.bitwise_or.reduce(xi, axis=None))
    row_sums = xi.astype(np.int64).sum(1).astype(np.int32)  # wraps like the kernel's int32 sums
    np.testing.assert_array_equal(oi[4 * B:5 * B], row_sums.max())
    total = np.int64(xi.astype(np.int64).sum()).astype(np.int32).astype(np.int64)
    np.testing.assert_array_equal(oi[5 * B:], (row_sums.min().astype(np.int64) + total).astype(np.int32))


# --- elementwise function forms ---------------------------------------------------------


@tegula.jit
def forms_kernel(x_ptr, i_ptr, out_ptr, oi_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    xi = tl.load(i_ptr + offs)
    tl.store(out_ptr + offs, tl.add(x, 1.5))
    tl.store(out_ptr + BLOCK + offs, tl.sub(x, tl.mul(x, x, sanitize_overflow=False)))
    tl.store(oi_ptr + offs, tl.mul(xi, 3) + tl.add(xi, xi) - tl.sub(7, xi))
    tl.store(oi_ptr + BLOCK + offs, xi.cdiv(5))
    both = (xi > 10).logical_and(xi < 60)
    either = (xi < 10).logical_or(xi > 60)
    tl.store(oi_ptr + 2 * BLOCK + offs, both.to(tl.int32) + 2 * either.to(tl.int32))
    t = tl.to_tensor(3)
    tl.static_assert(t.dtype == tl.int32)
    tl.static_assert(tl.to_tensor(2.5).dtype == tl.float32)
    tl.static_assert(tl.to_tensor(True).dtype == tl.int1)
    tl.static_assert(tl.to_tensor(2**40).dtype == tl.int64)
    tl.store(oi_ptr + 3 * BLOCK + offs, xi * t + tl.to_tensor(xi))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.expect_zero(x, x > 100.0))


def test_operator_function_forms(backend):
    rng = rng_for("forms")
    x = rng.standard_normal(B).astype(np.float32)
    xi = rng.integers(0, 100, B).astype(np.int32)
    out, oi = backend.zeros(3 * B, np.float32), backend.zeros(4 * B, np.int32)
    forms_kernel[(1,)](backend.array(x), backend.array(xi), out, oi, BLOCK=B)
    out, oi = backend.numpy(out), backend.numpy(oi)
    np.testing.assert_array_equal(out[:B], x + np.float32(1.5))
    np.testing.assert_allclose(out[B:2 * B], x - x * x, rtol=1e-6)
    np.testing.assert_array_equal(oi[:B], 3 * xi + 2 * xi - (7 - xi))
    np.testing.assert_array_equal(oi[B:2 * B], -(-xi // 5))
    np.testing.assert_array_equal(oi[2 * B:3 * B], ((xi > 10) & (xi < 60)) + 2 * ((xi < 10) | (xi > 60)))
    np.testing.assert_array_equal(oi[3 * B:], 4 * xi)
    np.testing.assert_array_equal(out[2 * B:], x)


@tegula.jit
def clipped_and_twice(x, lo, hi):
    return tl.minimum(tl.maximum(x, lo), hi), x * 2


@tegula.jit
def fma_like(a, b, c):
    return a * b + c


@tegula.jit
def map_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs[:, None] * BLOCK + offs[None, :])
    y = tl.load(y_ptr + offs)
    c, d = tl.map_elementwise(clipped_and_twice, x, -0.5, y[None, :])
    tl.store(out_ptr + offs[:, None] * BLOCK + offs[None, :], c)
    tl.store(out_ptr + BLOCK * BLOCK + offs[:, None] * BLOCK + offs[None, :], d)
    e = tl.map_elementwise(fma_like, y, 2.0, 1.0)
    tl.store(out_ptr + 2 * BLOCK * BLOCK + offs, e)


def test_map_elementwise(backend):
    rng = rng_for("map")
    x = rng.standard_normal((B, B)).astype(np.float32)
    y = rng.standard_normal(B).astype(np.float32)
    out = backend.zeros(2 * B * B + B, np.float32)
    map_kernel[(1,)](backend.array(x), backend.array(y), out, BLOCK=B)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:B * B].reshape(B, B), np.minimum(np.maximum(x, -0.5), y[None, :]))
    np.testing.assert_array_equal(out[B * B:2 * B * B].reshape(B, B), 2 * x)
    np.testing.assert_allclose(out[2 * B * B:], y * 2 + 1, rtol=1e-6)


@tegula.jit
def packed_divmod(a0, a1, b0, b1):  # Triton's test: two neighbours of each argument, two of each result
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@tegula.jit
def packed_window(x0, x1, x2, x3):  # neighbours mixed: each element gets its group's sum
    s = x0 + x1 + x2 + x3
    return s - x0 * 0, s, s + x2 * 0, s


@tegula.jit
def packed_kernel(a_ptr, b_ptr, c_ptr, d_ptr, x_ptr, w_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c, d = tl.map_elementwise(packed_divmod, a, b, pack=2)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)
    rows = tl.arange(0, 4)
    x = tl.load(x_ptr + rows[:, None] * BLOCK + offs[None, :])  # groups run along the rows' order
    tl.store(w_ptr + rows[:, None] * BLOCK + offs[None, :], tl.map_elementwise(packed_window, x, pack=4))


def test_map_elementwise_pack(backend):
    rng = rng_for("map pack")
    a = rng.integers(0, 2**32, B, dtype=np.uint32)
    b = rng.integers(1, 2**32, B, dtype=np.uint32)
    x = rng.standard_normal((4, B)).astype(np.float32)
    c, d = backend.zeros(B, np.uint32), backend.zeros(B, np.uint32)
    w = backend.zeros((4, B), np.float32)
    packed_kernel[(1,)](backend.array(a), backend.array(b), c, d, backend.array(x), w, BLOCK=B)
    np.testing.assert_array_equal(backend.numpy(c), a // b)
    np.testing.assert_array_equal(backend.numpy(d), a % b)
    groups = x.reshape(-1, 4)  # four neighbours in row-major order
    sums = groups[:, 0] + groups[:, 1] + groups[:, 2] + groups[:, 3]
    np.testing.assert_array_equal(backend.numpy(w), np.repeat(sums, 4).reshape(4, B))


@tegula.jit
def three_of_two(x0, x1):
    return x0, x1, x0


@tegula.jit
def pack_errors_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if CASE == 0:
        y = tl.map_elementwise(fma_like, x, x, x, pack=3)
    elif CASE == 1:
        y = tl.map_elementwise(fma_like, x, x, x, pack=8)
    else:
        y = tl.map_elementwise(three_of_two, x, pack=2)
    tl.store(x_ptr + offs, y)


@pytest.mark.parametrize("case, message", [
    (0, r"the pack of tl.map_elementwise must be a power of two, got 3"),
    (1, r"pack=8 needs tiles of a multiple of 8 elements, got 4"),
    (2, r"returns 2 values of each result, but it returned 3"),
])
def test_map_elementwise_pack_errors(case, message):
    with pytest.raises(tegula.CompilationError, match=message):
        pack_errors_kernel[(1,)](np.zeros(4, np.float32), CASE=case)


@tegula.jit
def compare(x, y):  # Triton's example: an if per element, early returns
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@tegula.jit
def piecewise(x, knee):  # variables chosen per element, a helper called, a late return
    y = x
    if x > knee:
        y = knee + 0.5 * (x - knee)
        if y > 2 * knee:
            return y * 0.0 - 1.0
    elif x < -knee:
        y = fma_like(x, 0.25, -0.75 * knee)
    return y * 2.0


@tegula.jit
def branch_map_kernel(x_ptr, y_ptr, z_ptr, w_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(z_ptr + offs, tl.map_elementwise(compare, x, y))
    xf = x.to(tl.float32) * 0.25
    tl.store(w_ptr + offs, tl.map_elementwise(piecewise, xf, 1.5))


def test_map_elementwise_branches_per_element(backend):
    rng = rng_for("map-if")
    x = rng.integers(-20, 20, B).astype(np.int32)
    y = rng.integers(-20, 20, B).astype(np.int32)
    y[::7] = x[::7]  # some ties
    z, w = backend.zeros(B, np.int32), backend.zeros(B, np.float32)
    branch_map_kernel[(1,)](backend.array(x), backend.array(y), z, w, BLOCK=B)
    np.testing.assert_array_equal(backend.numpy(z), (x > y).astype(np.int32) - (x < y).astype(np.int32))
    xf = x.astype(np.float32) * np.float32(0.25)
    knee = np.float32(1.5)
    want = xf.copy()
    high = xf > knee
    want[high] = knee + np.float32(0.5) * (xf[high] - knee)
    low = xf < -knee
    want[low] = xf[low] * np.float32(0.25) + np.float32(-0.75) * knee
    want = want * 2
    want[high & (knee + np.float32(0.5) * (xf - knee) > 2 * knee)] = -1.0
    np.testing.assert_allclose(backend.numpy(w), want, rtol=1e-6)


@tegula.jit
def store_in_branch(x, p):
    if x > 0:
        tl.store(p, x)
    return x


@tegula.jit
def effect_map_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.map_elementwise(store_in_branch, tl.load(x_ptr + offs), x_ptr + offs)


def test_map_elementwise_refuses_effects_under_a_per_element_if():
    x = np.ones(B, np.float32)
    with pytest.raises(tegula.CompilationError, match=r"`store` under a per-element `if` of a tl.map_elementwise"):
        effect_map_kernel[(1,)](x, BLOCK=B)


def test_an_if_on_a_tile_outside_map_elementwise_is_still_refused():
    @tegula.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        if x > 0:
            x = x + 1
        tl.store(x_ptr + tl.arange(0, BLOCK), x)

    with pytest.raises(tegula.CompilationError, match="the `if` condition must be a scalar"):
        k[(1,)](np.ones(B, np.float32), BLOCK=B)


# --- bitonic_merge -----------------------------------------------------------------------


@tegula.jit
def bitonic_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, BLOCK: tl.constexpr, DESCENDING: tl.constexpr):
    r = tl.arange(0, ROWS)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * BLOCK + offs[None, :])
    tl.store(out_ptr + r[:, None] * BLOCK + offs[None, :], tl.bitonic_merge(x, descending=DESCENDING))


def bitonic_merge_reference(x, descending):
    """Triton's network: for strides n/2 .. 1, the left element of each pair
    keeps the smaller value, the right one the larger (swapped if descending)."""
    x = x.copy()
    n = x.shape[-1]
    p = np.arange(n)
    stride = n // 2
    while stride >= 1:
        y = x[..., p ^ stride]
        right = (p & stride) != 0
        take_partner = (x > y) != (right ^ descending)
        x = np.where(take_partner, y, x)
        stride //= 2
    return x


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_bitonic_merge(backend, descending, dtype):
    rng = rng_for(f"bitonic{descending}{dtype}")
    rows, n = 4, 32
    x = rng.standard_normal((rows, n)) * 100
    x = x.astype(dtype)
    # Rows 0-1 are bitonic (ascending then descending halves): merging sorts them.
    x[:2, :n // 2].sort(axis=1)
    x[:2, n // 2:] = -np.sort(-x[:2, n // 2:], axis=1)
    out = backend.zeros((rows, n), dtype)
    bitonic_kernel[(1,)](backend.array(x), out, ROWS=rows, BLOCK=n, DESCENDING=descending)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out, bitonic_merge_reference(x, descending))
    expected = np.sort(x[:2], axis=1)
    np.testing.assert_array_equal(out[:2], expected[:, ::-1] if descending else expected)


# --- dot_scaled ----------------------------------------------------------------------------


@tegula.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, acc_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                      K: tl.constexpr, A_FORMAT: tl.constexpr, B_FORMAT: tl.constexpr, A_COLS: tl.constexpr,
                      B_ROWS: tl.constexpr, B_COLS: tl.constexpr, GROUPS: tl.constexpr, A_K_PACK: tl.constexpr,
                      SCALED: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    ra = tl.arange(0, A_COLS)
    rb = tl.arange(0, B_ROWS)
    cb = tl.arange(0, B_COLS)
    a = tl.load(a_ptr + rm[:, None] * A_COLS + ra[None, :]) if A_K_PACK else \
        tl.load(a_ptr + tl.arange(0, M // 2)[:, None] * A_COLS + ra[None, :])
    b = tl.load(b_ptr + rb[:, None] * B_COLS + cb[None, :])
    acc = tl.load(acc_ptr + rm[:, None] * N + rn[None, :])
    if SCALED:
        g = tl.arange(0, GROUPS)
        sa = tl.load(sa_ptr + rm[:, None] * GROUPS + g[None, :])
        sb = tl.load(sb_ptr + rn[:, None] * GROUPS + g[None, :])
        c = tl.dot_scaled(a, sa, A_FORMAT, b, sb, B_FORMAT, acc=acc, lhs_k_pack=A_K_PACK)
    else:
        c = tl.dot_scaled(a, None, A_FORMAT, b, None, B_FORMAT, acc)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], c)


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])


def decode_mx(x, fmt, axis):
    """Exact float64 values of an operand: e2m1 nibbles (low first) unpacked
    along `axis`, fp8 bytes through ml_dtypes, bf16/fp16 as they are."""
    if fmt == "e2m1":
        halves = [np.where(n & 8, -1.0, 1.0) * E2M1[n & 7] for n in (x & 15, x >> 4)]
        shape = list(x.shape)
        shape[axis] *= 2
        return np.stack(halves, axis=axis + 1).reshape(shape)
    kinds = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
    return (x.view(kinds[fmt]) if fmt in kinds else x).astype(np.float64)


def random_mx(rng, fmt, shape):
    if fmt == "bf16":
        return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    if fmt == "fp16":
        return rng.standard_normal(shape).astype(np.float16)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt == "e4m3":
        x[(x & 0x7F) == 0x7F] = 0x11  # no NaN
    if fmt == "e5m2":
        x[(x & 0x7C) == 0x7C] = 0x22  # no inf, no NaN
    return x


@pytest.mark.parametrize("a_format,b_format,a_k_pack", [
    ("e2m1", "e2m1", True), ("e4m3", "e2m1", True), ("e2m1", "e5m2", True), ("e5m2", "e4m3", True),
    ("e2m1", "e4m3", False), ("bf16", "bf16", True), ("fp16", "e4m3", True)])
def test_dot_scaled(backend, a_format, b_format, a_k_pack):
    rng = rng_for(f"dot_scaled{a_format}{b_format}{a_k_pack}")
    M, N, K = 32, 16, 64
    groups = K // 32
    pa, pb = (2 if a_format == "e2m1" else 1), (2 if b_format == "e2m1" else 1)
    a_shape = (M, K // pa) if a_k_pack else (M // pa, K)
    a, b = random_mx(rng, a_format, a_shape), random_mx(rng, b_format, (K // pb, N))
    scaled = a_format not in ("bf16", "fp16")
    sa = rng.integers(118, 136, (M, groups), dtype=np.uint8)
    sb = rng.integers(118, 136, (N, groups), dtype=np.uint8)
    acc = rng.standard_normal((M, N)).astype(np.float32)
    out = backend.zeros((M, N), np.float32)
    dot_scaled_kernel[(1,)](backend.array(a), backend.array(sa), backend.array(b), backend.array(sb),
                            backend.array(acc), out, M=M, N=N, K=K, A_FORMAT=a_format, B_FORMAT=b_format,
                            A_COLS=a_shape[1], B_ROWS=K // pb, B_COLS=N, GROUPS=groups, A_K_PACK=a_k_pack,
                            SCALED=scaled)
    lhs = decode_mx(a, a_format, 1 if a_k_pack else 0)
    rhs = decode_mx(b, b_format, 0)
    if scaled:
        lhs = lhs * np.exp2(np.repeat(sa.astype(np.float64) - 127, 32, axis=1))
        rhs = rhs * np.exp2(np.repeat(sb.astype(np.float64) - 127, 32, axis=1)).T
    # Operands are rounded to the compute type (fp16 if either is fp16, else bf16).
    compute = np.float16 if "fp16" in (a_format, b_format) else ml_dtypes.bfloat16
    lhs = lhs.astype(compute).astype(np.float64)
    rhs = rhs.astype(compute).astype(np.float64)
    expected = lhs @ rhs + acc
    scale = np.abs(lhs) @ np.abs(rhs) + np.abs(acc)
    np.testing.assert_array_less(np.abs(backend.numpy(out) - expected), 1e-5 * scale + 1e-30)


@tegula.jit
def dot_scaled_nan_kernel(a_ptr, sa_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    k = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + k[None, :])
    b = tl.load(b_ptr + k[:, None] * BLOCK + r[None, :])
    sa = tl.load(sa_ptr + r)[:, None]
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], tl.dot_scaled(a, sa, "e4m3", b, None, "e4m3"))


def test_dot_scaled_scale_255_is_nan(backend):
    a = np.full((B, 32), 0x38, np.uint8)  # 1.0 in e4m3
    b = np.full((32, B), 0x38, np.uint8)
    sa = np.full(B, 127, np.uint8)
    sa[3] = 255
    out = backend.zeros((B, B), np.float32)
    dot_scaled_nan_kernel[(1,)](backend.array(a), backend.array(sa), backend.array(b), out, BLOCK=B)
    out = backend.numpy(out)
    assert np.isnan(out[3]).all()
    np.testing.assert_array_equal(np.delete(out, 3, axis=0), 32.0)


# --- type objects, constants and annotations --------------------------------------------------


@tegula.jit
def pair(a, b):
    return tl.tuple([a + b, a - b])


@tegula.jit
def swap(t):
    return t[1], t[0]


@tegula.jit
def types_kernel(x_ptr, i_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.static_assert(isinstance(x, tl.tensor) and not isinstance(BLOCK, tl.tensor))
    tl.static_assert(isinstance(x.dtype, tl.dtype) and isinstance(x.type, tl.block_type))
    tl.static_assert(x.type == tl.block_type(tl.float32, [BLOCK]))
    tl.static_assert(x.type.scalar == tl.float32 and x.type.element_ty == tl.float32)
    tl.static_assert(x.type.shape == (BLOCK,) and x.type.numel == BLOCK)
    tl.static_assert(isinstance(x_ptr.dtype, tl.pointer_type) and not isinstance(x.dtype, tl.pointer_type))
    tl.static_assert(i_ptr.dtype == tl.pi32_t and x_ptr.dtype != tl.pi32_t)
    tl.static_assert(i_ptr.dtype == tl.pointer_type(tl.int32))
    tl.static_assert(tl.void != tl.float32 and tl.dtype("void") == tl.void)
    tl.static_assert(tl.dtype("fp16") == tl.float16 and tl.dtype("int8") == tl.int8)
    tl.static_assert(BLOCK * BLOCK <= tl.TRITON_MAX_TENSOR_NUMEL and tl.TRITON_MAX_TENSOR_NUMEL == 1048576)
    tl.static_assert(isinstance(tl.constexpr(1).type, tl.constexpr_type))
    tl.static_assert(isinstance(n, tl.tensor) and n.type == tl.int32)
    tl.static_assert(isinstance(BLOCK, int) and isinstance(2.0, float) and not isinstance(BLOCK, float))
    t = pair(x, 1.0)
    tl.static_assert(isinstance(t, tl.tuple) and isinstance(t, tuple) and len(t) == 2)
    s = swap(t)
    tl.static_assert(len(s[1:]) == 1 and len(s[::-1]) == 2 and len(s[5:]) == 0)
    r = (s + (x,))[-2::-1]  # (s[1], s[0])
    tl.store(out_ptr + offs, r[1] * 2 + r[0])
    y: tl.tensor = x * n
    tl.store(out_ptr + BLOCK + offs, y)
    k = 0
    while tl.condition(k < n, disable_licm=True):
        k += 2
        with tl.async_task([0]):
            k += 1
    tl.store(out_ptr + 2 * BLOCK + offs, x * 0 + k)
    with tl.async_task([1, 2], num_warps=4):
        z = x + 1.0
    tl.store(out_ptr + 3 * BLOCK + offs, z)
    tl.static_assert(not tl.target_info.is_hip() and not tl.target_info.is_hip_cdna3())
    if tl.target_info.is_cuda():
        tl.static_assert(tl.target_info.cuda_capability_geq(7) and not tl.target_info.cuda_capability_geq(99, 0))
        tl.store(i_ptr + offs, offs * 0 + 1)
    else:
        tl.static_assert(not tl.target_info.cuda_capability_geq(0))
        tl.store(i_ptr + offs, offs * 0 + 2)


def test_type_objects_tuples_condition_async_task_target_info(backend):
    rng = rng_for("types")
    x = rng.standard_normal(B).astype(np.float32)
    out, flags = backend.zeros(4 * B, np.float32), backend.zeros(B, np.int32)
    types_kernel[(1,)](backend.array(x), flags, out, 7, BLOCK=B)
    out = backend.numpy(out)
    np.testing.assert_array_equal(backend.numpy(flags), 1 if backend.is_cuda else 2)  # tl.target_info.is_cuda()
    np.testing.assert_array_equal(out[3 * B:], x + 1)
    np.testing.assert_allclose(out[:B], 2 * (x - 1) + (x + 1), rtol=1e-6)
    np.testing.assert_array_equal(out[B:2 * B], x * 7)
    np.testing.assert_array_equal(out[2 * B:3 * B], 9)  # k: 0 -> 3 -> 6 -> 9


@tegula.jit
def target_info_kernel(out_ptr, CUDA_ARCH: tl.constexpr):
    # Each answer is a compile-time constant: a wrong one fails the compile.
    if CUDA_ARCH == 0:
        tl.static_assert(not tl.target_info.is_cuda() and not tl.target_info.cuda_capability_geq(0))
    else:
        tl.static_assert(tl.target_info.is_cuda() and tl.target_info.cuda_capability_geq(CUDA_ARCH // 10))
        tl.static_assert(not tl.target_info.cuda_capability_geq(CUDA_ARCH // 10, CUDA_ARCH % 10 + 1))
    tl.store(out_ptr, 1)


@pytest.mark.parametrize("arch", [80, 90])
def test_target_info_answers_for_the_cuda_architecture_compiled_for(arch, tmp_path):
    from cuda_compile_util import compile_for_cuda

    compile_for_cuda(target_info_kernel, f"*i32:16, {arch}", arch, tmp_path, emit="ptx")


def test_target_info_on_the_cpu_backend():
    out = np.zeros(1, np.int32)
    target_info_kernel[(1,)](out, CUDA_ARCH=0)  # NumPy memory: the CPU backend
    assert out[0] == 1


from tegula.language.target_info import cuda_capability_geq as _capability_geq  # noqa: E402  imported by name


@tegula.jit
def target_info_by_name_kernel(out_ptr):
    if _capability_geq(9, 0):
        tl.store(out_ptr, 1)
    else:
        tl.store(out_ptr, 2)


def test_target_info_imported_by_name_and_asked_from_host_code():
    # Triton's target_info functions are constexpr functions: a kernel may call one imported by name, and
    # host code (test markers, a constexpr function) asks them about the active driver's target.
    out = np.zeros(1, np.int32)
    target_info_by_name_kernel[(1,)](out)
    assert out[0] == 2  # the CPU backend
    from tegula.language import target_info
    from tegula.runtime import driver

    target = target_info.current_target()
    assert target == driver.active.get_current_target()
    assert target_info.is_cuda() == (target.backend == "cuda")
    assert not target_info.is_hip() and not target_info.is_hip_cdna3() and not target_info.is_hip_gfx1250()
    assert target_info.cuda_capability_geq(0) == target_info.is_cuda()


def test_python_objects_match_triton():
    assert tl.TRITON_MAX_TENSOR_NUMEL == 1048576
    assert tl.pi32_t == tl.pointer_type(tl.int32)
    assert tl.void != tl.float32 and str(tl.void) == "void"
    bt = tl.block_type(tl.float16, [4, 8])
    assert bt.shape == (4, 8) and bt.numel == 32 and bt.element_ty == tl.float16
    assert bt == tl.block_type(tl.float16, (4, 8)) and bt != tl.block_type(tl.float32, (4, 8))
    assert tl.constexpr_type(3) == tl.constexpr_type(3)
    assert tl.tuple([1, 2]) == (1, 2)
    c = tl.condition(True, disable_licm=True)
    assert c.condition is True and c.disable_licm


@tegula.jit
def const_load_kernel(in_ptr: tl.const, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs) * 2)


@tegula.jit
def const_store_kernel(in_ptr: tl.const, out_ptr, CHOOSE_CONST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    target = in_ptr if CHOOSE_CONST else out_ptr
    tl.store(target + offs, tl.load(in_ptr + offs))


@tegula.jit
def const_select_kernel(in_ptr: tl.const, out_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if flag > 0:
        target = in_ptr
    else:
        target = out_ptr
    tl.store(target + offs, tl.load(in_ptr + offs))


@tegula.jit
def const_atomic_kernel(in_ptr: tl.const, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(in_ptr + offs, 1.0)


def test_const_pointers(backend):
    x = rng_for("const").standard_normal(B).astype(np.float32)
    out = backend.zeros(B, np.float32)
    const_load_kernel[(1,)](backend.array(x), out, BLOCK=B)
    np.testing.assert_array_equal(backend.numpy(out), 2 * x)
    const_store_kernel[(1,)](backend.array(x), out, CHOOSE_CONST=False, BLOCK=B)
    np.testing.assert_array_equal(backend.numpy(out), x)
    with pytest.raises(tegula.CompilationError, match="Cannot store to a constant pointer: `in_ptr`"):
        const_store_kernel[(1,)](backend.array(x), out, CHOOSE_CONST=True, BLOCK=B)
    # A pointer that may be the const one at run time is refused too, as in Triton.
    with pytest.raises(tegula.CompilationError, match="Cannot store to a constant pointer"):
        const_select_kernel[(1,)](backend.array(x), out, 0, BLOCK=B)
    with pytest.raises(tegula.CompilationError, match="Cannot store to a constant pointer"):
        const_atomic_kernel[(1,)](backend.array(x), BLOCK=B)


# --- inline assembly ---------------------------------------------------------------------------


@tegula.jit
def inline_asm_kernel(x_ptr, y_ptr, b_ptr, out_ptr, bout_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    b = tl.load(b_ptr + offs)  # uint8
    # Two results, float and integer operands, a scalar argument broadcast.
    s, bits = tl.inline_asm_elementwise("add.f32 $0, $2, $3; mov.b32 $1, $2;", "=f,=r,f,f", [x, y],
                                        dtype=(tl.float32, tl.int32), is_pure=True, pack=1)
    tl.store(out_ptr + offs, s)
    tl.store(out_ptr + BLOCK + offs, bits.to(tl.float32, bitcast=True))
    # Four uint8 per 32-bit register: one instance adds 1 to every byte.
    c = tl.inline_asm_elementwise("{ .reg .b32 t; and.b32 t, $1, 0x7f7f7f7f; add.u32 $0, t, 0x01010101; }",
                                  "=r,r", [b], dtype=tl.uint8, is_pure=False, pack=4)
    tl.store(bout_ptr + offs, c)


def test_inline_asm_runs_on_cuda_and_is_refused_on_the_cpu(backend):
    rng = rng_for("asm")
    x = rng.standard_normal(B).astype(np.float32)
    y = rng.standard_normal(B).astype(np.float32)
    b = rng.integers(0, 256, B).astype(np.uint8)
    out, bout = backend.zeros(2 * B, np.float32), backend.zeros(B, np.uint8)
    args = (backend.array(x), backend.array(y), backend.array(b), out, bout)
    if not backend.is_cuda:
        with pytest.raises(tegula.CompilationError,
                           match=r"error\[E0805\]: tl.inline_asm_elementwise runs GPU assembly \(PTX on the CUDA"):
            inline_asm_kernel[(1,)](*args, BLOCK=B)
        return
    inline_asm_kernel[(1,)](*args, BLOCK=B)
    out, bout = backend.numpy(out), backend.numpy(bout)
    np.testing.assert_array_equal(out[:B], x + y)
    np.testing.assert_array_equal(out[B:], x)
    np.testing.assert_array_equal(bout, (b & 0x7F) + 1)


def test_inline_asm_cuda_source(tmp_path):
    from cuda_compile_util import compile_for_cuda

    source = compile_for_cuda(inline_asm_kernel, "*fp32:16, *fp32:16, *u8:16, *fp32:16, *u8:16, 128", 90, tmp_path,
                              emit="cuda,ptx")
    cuda, ptx = source.split("// ===== ptx =====")
    # Results first, then arguments; `$n` became `%n` (escaped in the C string); pure asm is not volatile.
    assert ': "=f"(asm0), "=r"(asm1) : "f"(asm2), "f"(asm3));' in cuda
    assert 'asm("add.f32 \\0450, \\0452, \\0453; mov.b32 \\0451, \\0452;"' in cuda
    assert 'asm volatile("{ .reg .b32 t;' in cuda and ': "=r"(asm0) : "r"(asm1));' in cuda
    # What reaches the PTX: the instructions with the operands' registers.
    assert re.search(r"add\.f32 \t?%f\d+, %f\d+, %f\d+; mov\.b32 %r\d+, %f\d+;", ptx), ptx
    assert re.search(r"and\.b32 t, %r\d+, 0x7f7f7f7f; add\.u32 %r\d+, t, 0x01010101;", ptx), ptx


@tegula.jit
def asm_pointer_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Real kernels load through asm of their own (acquire loads, cache hints): the pointers go in as addresses.
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    bits = tl.inline_asm_elementwise("ld.global.relaxed.gpu.b32 $0, [$1];", "=r,l", [x_ptr + tl.where(mask, offs, 0)],
                                     dtype=tl.int32, is_pure=False, pack=1)
    tl.store(out_ptr + offs, bits, mask=mask)


@tegula.jit
def asm_pointer_constraint_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    bits = tl.inline_asm_elementwise("ld.global.b32 $0, [$1];", "=r,r", [x_ptr + offs], dtype=tl.int32,
                                     is_pure=True, pack=1)
    tl.store(out_ptr + offs, bits)


def test_inline_asm_takes_pointers(backend):
    x = rng_for("asm pointers").standard_normal(B).astype(np.float32)
    out = backend.zeros(B, np.int32)
    if not backend.is_cuda:
        with pytest.raises(tegula.CompilationError, match=r"error\[E0805\]"):
            asm_pointer_kernel[(1,)](backend.array(x), out, B - 3, BLOCK=B)
        return
    asm_pointer_kernel[(1,)](backend.array(x), out, B - 3, BLOCK=B)
    got = backend.numpy(out)
    np.testing.assert_array_equal(got[:B - 3], x.view(np.int32)[:B - 3])
    np.testing.assert_array_equal(got[B - 3:], 0)


def test_inline_asm_pointer_operands_compile_for_cuda(tmp_path):
    from cuda_compile_util import compile_for_cuda
    from cuda_emulator import compile_cuda

    source = compile_for_cuda(asm_pointer_kernel, "*fp32:16, *i32:16, i32, 128", 90, tmp_path, emit="cuda,ptx")
    cuda, ptx = source.split("// ===== ptx =====")
    assert re.search(r'asm volatile\("ld\.global\.relaxed\.gpu\.b32 \\0450, \[\\0451\];" : "=r"\(asm0\) : '
                     r'"l"\(asm1\)\);', cuda), cuda
    assert re.search(r"ld\.global\.relaxed\.gpu\.b32 \t?%r\d+, \[%rd\d+\];", ptx), ptx
    x, out = np.zeros(B, np.float32), np.zeros(B, np.int32)
    compiled, _ = compile_cuda(asm_pointer_kernel, (x, out, B), dict(BLOCK=B))
    # Not pure: the asm may write through its pointers, so a launch treats x as written.
    effects = compiled.effects["x_ptr"]
    assert (effects.read, effects.written, effects.atomic) == (True, True, False)


def test_inline_asm_pointer_needs_a_64_bit_constraint():
    from cuda_emulator import compile_cuda

    x, out = np.zeros(B, np.float32), np.zeros(B, np.int32)
    with pytest.raises(tegula.CompilationError, match=r"(?s)is a pointer, a 64-bit address, but its "
                                                      r'constraint is "r".*give pointer operands the constraint l'):
        compile_cuda(asm_pointer_constraint_kernel, (x, out), dict(BLOCK=B))


# --- the CUDA backend -----------------------------------------------------------------------

CUDA_KERNELS = [
    (shape_kernel, "*fp32:16, *i32:16, *fp32:16, *i32:16, 16"),
    (forms_kernel, "*fp32:16, *i32:16, *fp32:16, *i32:16, 16"),
    (map_kernel, "*fp32:16, *fp32:16, *fp32:16, 16"),
    (bitonic_kernel, "*fp32:16, *fp32:16, 4, 32, 1"),
    (dot_scaled_kernel, "*u8:16, *u8:16, *u8:16, *u8:16, *fp32:16, *fp32:16, 32, 16, 64, 'e2m1', 'e4m3', "
                        "32, 64, 16, 2, 1, 1"),
    (types_kernel, "*fp32:16, *i32:16, *fp32:16, i32, 16"),
    (inline_asm_kernel, "*fp32:16, *fp32:16, *u8:16, *fp32:16, *u8:16, 16"),
    (asm_pointer_kernel, "*fp32:16, *i32:16, i32, 16"),
    (packed_kernel, "*u32:16, *u32:16, *u32:16, *u32:16, *fp32:16, *fp32:16, 16"),
]


@pytest.mark.parametrize("kernel,signature", CUDA_KERNELS, ids=[k.fn.__name__ for k, _ in CUDA_KERNELS])
def test_kernels_compile_for_cuda(kernel, signature, tmp_path):
    from cuda_compile_util import compile_for_cuda

    compile_for_cuda(kernel, signature, 90, tmp_path)
