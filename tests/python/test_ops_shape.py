"""Tile creation (arange, zeros, full, zeros_like, full_like) and shape ops
(reshape, view, trans, permute, expand_dims, broadcast_to, join, split,
ravel, `.T`, `[:, None]`) against NumPy, plus the compile-time attributes
`x.shape`, `x.dtype` and `ptr.dtype.element_ty`.

Shape ops only move elements, so results must match exactly. Every kernel
stores its results flat, row-major, so a wrong element order shows up as a
mismatch at a precise index.
"""

import inspect

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import ALL, check, np_dtype, random, rng_for, tl_dtype


@tegula.jit
def creation_kernel(out_i32, out_f16, out_u8, out_f32, out_i64, out_b, x_ptr, n, FILL: tl.constexpr,
                    BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_i32 + offs, tl.arange(0, BLOCK))
    tl.store(out_i32 + BLOCK + offs, tl.arange(5, 5 + BLOCK))
    z = tl.zeros([BLOCK], dtype=tl.float16)
    tl.static_assert(z.dtype == tl.float16)
    tl.store(out_f16 + offs, z + 1.5)
    f = tl.full((BLOCK,), 250, dtype=tl.uint8)
    tl.static_assert(f.dtype == tl.uint8)
    tl.store(out_u8 + offs, f + 10)  # wraps in u8: 260 -> 4
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)  # f32
    zl = tl.zeros_like(x)
    fl = tl.full_like(x, FILL)
    tl.static_assert(zl.dtype == tl.float32 and fl.dtype == tl.float32)
    tl.store(out_f32 + offs, zl + x)
    tl.store(out_f32 + BLOCK + offs, fl)
    tl.store(out_f32 + 2 * BLOCK + offs, tl.full([BLOCK], n, tl.float32))  # a runtime value
    big = tl.full([2, BLOCK // 2], 2**40, dtype=tl.int64)
    tl.store(out_i64 + offs, tl.reshape(big, [BLOCK]) + offs)
    tl.store(out_b + offs, tl.full([BLOCK], True, tl.int1) & (offs % 3 == 0))
    tl.store(out_b + BLOCK + offs, tl.zeros([BLOCK], tl.int1) | (offs > 5))
    # No dtype: the literal's type (int -> int32, float -> float32).
    tl.static_assert(tl.full([BLOCK], 3).dtype == tl.int32)
    tl.static_assert(tl.full([BLOCK], 3.0).dtype == tl.float32)
    tl.static_assert(tl.zeros([BLOCK]).dtype == tl.float32)


def test_creation_ops(backend):
    B, n = 64, 41
    x = np.arange(B, dtype=np.float32) * 0.5
    outs = [backend.zeros(2 * B, np.int32), backend.zeros(B, np.float16), backend.zeros(B, np.uint8),
            backend.zeros(3 * B, np.float32), backend.zeros(B, np.int64), backend.zeros(2 * B, np.bool_)]
    creation_kernel[(1,)](*outs, backend.array(x), n, FILL=-2.25, BLOCK=B)
    i32, f16, u8, f32, i64, b = map(backend.numpy, outs)
    r = np.arange(B)
    np.testing.assert_array_equal(i32, np.concatenate([r, r + 5]))
    np.testing.assert_array_equal(f16, 1.5)
    np.testing.assert_array_equal(u8, 4)
    np.testing.assert_array_equal(f32[:B], np.where(r < n, x, 0))
    np.testing.assert_array_equal(f32[B:2 * B], -2.25)
    np.testing.assert_array_equal(f32[2 * B:], float(n))
    np.testing.assert_array_equal(i64, 2**40 + r)
    np.testing.assert_array_equal(b[:B], r % 3 == 0)
    np.testing.assert_array_equal(b[B:], r > 5)


@pytest.mark.parametrize("name", ALL)
def test_full_and_zeros_with_every_dtype(backend, name):
    out = backend.full(3 * 16, 1, np_dtype(name))
    fill_full_kernel[(1,)](out, DT=tl_dtype(name), BLOCK=16)
    out = backend.numpy(out)
    check(out[:16], np.zeros(16, out.dtype), name, ulps=0, atol=0, what="zeros")
    check(out[16:32], np.ones(16, out.dtype), name, ulps=0, atol=0, what="full 1")
    check(out[32:], np.zeros(16, out.dtype), name, ulps=0, atol=0, what="zeros_like")


@tegula.jit
def fill_full_kernel(out_ptr, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.zeros([BLOCK], dtype=DT)
    f = tl.full([BLOCK], 1, DT)
    tl.static_assert(z.dtype == DT and f.dtype == DT and out_ptr.dtype.element_ty == DT)
    tl.store(out_ptr + offs, z)
    tl.store(out_ptr + BLOCK + offs, f)
    tl.store(out_ptr + 2 * BLOCK + offs, tl.zeros_like(f))


@tegula.jit
def reshape_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    # x is A*B*C elements; every result is stored flat, row-major.
    i = tl.arange(0, A * B * C)
    x = tl.load(x_ptr + i)
    size = A * B * C
    x3 = tl.reshape(x, (A, B, C))
    tl.static_assert(x3.shape[0] == A and x3.shape[1] == B and x3.shape[2] == C)
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    flat3 = a * B * C + b * C + c
    tl.store(out_ptr + 0 * size + flat3, x3)
    x2 = x.reshape(A * B, C)  # varargs form, as a method
    r = tl.arange(0, A * B)[:, None]
    k = tl.arange(0, C)[None, :]
    tl.store(out_ptr + 1 * size + r * C + k, x2)
    tl.store(out_ptr + 2 * size + i, tl.ravel(x3))
    tl.store(out_ptr + 3 * size + i, tl.view(x2, [size]))
    t = tl.trans(x2)  # [C, A*B]
    tl.store(out_ptr + 4 * size + tl.arange(0, C)[:, None] * (A * B) + tl.arange(0, A * B)[None, :], t)
    tl.store(out_ptr + 5 * size + tl.arange(0, C)[:, None] * (A * B) + tl.arange(0, A * B)[None, :], x2.T)
    p = tl.permute(x3, (2, 0, 1))  # [C, A, B]
    pc = tl.arange(0, C)[:, None, None]
    pa = tl.arange(0, A)[None, :, None]
    pb = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + 6 * size + pc * A * B + pa * B + pb, p)
    q = x3.permute(1, 2, 0)  # [B, C, A], varargs method form
    qb = tl.arange(0, B)[:, None, None]
    qc = tl.arange(0, C)[None, :, None]
    qa = tl.arange(0, A)[None, None, :]
    tl.store(out_ptr + 7 * size + qb * C * A + qc * A + qa, q)
    tt = tl.trans(x3, 2, 1, 0)  # trans with dims is permute: [C, B, A]
    tc = tl.arange(0, C)[:, None, None]
    tb = tl.arange(0, B)[None, :, None]
    ta = tl.arange(0, A)[None, None, :]
    tl.store(out_ptr + 8 * size + tc * B * A + tb * A + ta, tt)
    bt = tl.trans(x3)  # without dims, Triton's batched transpose: the last two swap, [A, C, B]
    ba = tl.arange(0, A)[:, None, None]
    bc = tl.arange(0, C)[None, :, None]
    bb = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + 9 * size + ba * C * B + bc * B + bb, bt)


@pytest.mark.parametrize("name", ["float32", "int16", "bfloat16"])
def test_reshape_trans_permute_ravel(backend, name):
    A, B, C = 2, 4, 8
    rng = rng_for("reshape", name)
    x = random(rng, A * B * C, name)
    out = backend.zeros(10 * x.size, x.dtype)
    reshape_kernel[(1,)](backend.array(x), out, A=A, B=B, C=C)
    out = backend.numpy(out)
    x3 = x.reshape(A, B, C)
    x2 = x.reshape(A * B, C)
    refs = [x3, x2, x, x, x2.T, x2.T, x3.transpose(2, 0, 1), x3.transpose(1, 2, 0),
            x3.transpose(2, 1, 0), x3.transpose(0, 2, 1)]
    names = ["reshape 3-D", "reshape 2-D", "ravel", "view", "trans", ".T", "permute (2, 0, 1)",
             "permute (1, 2, 0)", "trans with dims", "trans of 3-D without dims"]
    for k, (want, what) in enumerate(zip(refs, names)):
        got = out[k * x.size:(k + 1) * x.size]
        check(got, want.reshape(-1), name, ulps=0, atol=0, what=what)


@tegula.jit
def expand_broadcast_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M))  # [M]
    y = tl.load(y_ptr + tl.arange(0, N))  # [N]
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    flat = r * N + c
    size = M * N
    col = tl.expand_dims(x, 1)  # [M, 1]
    row = tl.expand_dims(y, 0)  # [1, N]
    tl.static_assert(col.shape[0] == M and col.shape[1] == 1)
    tl.store(out_ptr + 0 * size + flat, col + row)  # implicit broadcasting
    tl.store(out_ptr + 1 * size + flat, tl.broadcast_to(col, (M, N)))
    tl.store(out_ptr + 2 * size + flat, tl.broadcast_to(row, M, N))
    tl.store(out_ptr + 3 * size + flat, x[:, None] * y[None, :])
    e = tl.expand_dims(y, (0, 2))  # [1, N, 1]
    tl.static_assert(len(e.shape) == 3 and e.shape[1] == N and e.shape[2] == 1)
    e2 = y.expand_dims(-1)  # [N, 1]
    tl.store(out_ptr + 4 * size + flat, tl.reshape(tl.broadcast_to(e, (1, N, M)), (N, M)).T - e2.T)
    tl.store(out_ptr + 5 * size + flat, tl.broadcast_to(x[:, None], (M, N)) + tl.zeros_like(row))


def test_expand_dims_and_broadcast(backend):
    M, N = 8, 16
    rng = rng_for("expand")
    x = random(rng, M, "int32", low=-100, high=100)
    y = random(rng, N, "int32", low=-100, high=100)
    out = backend.zeros(6 * M * N, np.int32)
    expand_broadcast_kernel[(1,)](backend.array(x), backend.array(y), out, M=M, N=N)
    out = backend.numpy(out)
    refs = [x[:, None] + y[None, :], np.broadcast_to(x[:, None], (M, N)), np.broadcast_to(y, (M, N)),
            x[:, None] * y[None, :], np.broadcast_to(y[None, :], (M, N)) - y[None, :],
            np.broadcast_to(x[:, None], (M, N))]
    for k, want in enumerate(refs):
        check(out[k * M * N:(k + 1) * M * N].reshape(M, N), want, "int32", what=f"case {k}")


@tegula.jit
def join_split_kernel(a_ptr, b_ptr, out_ptr, first_ptr, second_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)  # [BLOCK, 2]
    tl.static_assert(j.shape[0] == BLOCK and j.shape[1] == 2)
    pair_offs = offs[:, None] * 2 + tl.arange(0, 2)[None, :]
    tl.store(out_ptr + pair_offs, j)
    # Split interleaved pairs read back from memory.
    first, second = tl.split(tl.load(out_ptr + pair_offs))
    tl.store(first_ptr + offs, first)
    tl.store(second_ptr + offs, second)
    # join of 2-D tiles and split of the result: [4, BLOCK // 4, 2].
    a2 = tl.reshape(a, (4, BLOCK // 4))
    x, y = tl.join(a2, a2 * 2).split()
    tl.store(first_ptr + BLOCK + offs, tl.ravel(x - y))


@pytest.mark.parametrize("name", ["float32", "int8"])
def test_join_and_split(backend, name):
    B = 32
    rng = rng_for("join", name)
    a = random(rng, B, name, low=-20, high=20)
    b = random(rng, B, name, low=-20, high=20)
    out = backend.zeros(2 * B, a.dtype)
    first = backend.zeros(2 * B, a.dtype)
    second = backend.zeros(B, a.dtype)
    join_split_kernel[(1,)](backend.array(a), backend.array(b), out, first, second, BLOCK=B)
    out, first, second = backend.numpy(out), backend.numpy(first), backend.numpy(second)
    check(out, np.stack([a, b], axis=-1).reshape(-1), name, ulps=0, atol=0, what="join")
    check(first[:B], a, name, ulps=0, atol=0, what="split: first")
    check(second, b, name, ulps=0, atol=0, what="split: second")
    check(first[B:], -a, name, ulps=0, atol=0, what="2-D join + split")


@tegula.jit
def attributes_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tile = tl.reshape(x, (2, BLOCK // 2))
    tl.static_assert(len(tile.shape) == 2)
    tl.static_assert(tile.shape[1] == BLOCK // 2)
    tl.static_assert(x.dtype == x_ptr.dtype.element_ty)
    tl.static_assert(out_ptr.dtype.element_ty == tl.int32)
    # Attributes as values: shape entries and the element type drive the code.
    tl.store(out_ptr + 0, tile.shape[0])
    tl.store(out_ptr + 1, tile.shape[1])
    tl.store(out_ptr + 2, x.dtype.primitive_bitwidth)
    tl.store(out_ptr + 3, tl.sum(tl.full(tile.shape, 1, x_ptr.dtype.element_ty)).to(tl.int32))
    if x.dtype == tl.float16:
        tl.store(out_ptr + 4, 16)
    else:
        tl.store(out_ptr + 4, 32)


@pytest.mark.parametrize("name,bits", [("float16", 16), ("float32", 32)])
def test_shape_and_dtype_attributes(backend, name, bits):
    x = backend.zeros(32, np_dtype(name))
    out = backend.zeros(5, np.int32)
    attributes_kernel[(1,)](x, out, BLOCK=32)
    assert backend.numpy(out).tolist() == [2, 16, bits, 32, 16 if name == "float16" else 32]


@tegula.jit
def shape_tuple_compare_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.static_assert(x.shape == (BLOCK,))
    tl.static_assert(x[:, None].shape == (BLOCK, 1))


def test_shape_compares_with_a_tuple(backend):
    # `x.shape == (BLOCK,)` is plain Python in Triton: shapes are tuples.
    shape_tuple_compare_kernel[(1,)](backend.zeros(16, np.float32), BLOCK=16)


@tegula.jit
def bad_reshape_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.ravel(tl.reshape(x, (4, 8))))


def test_reshape_to_another_element_count_is_rejected(backend):
    with pytest.raises(tegula.CompilationError, match="cannot reshape"):
        bad_reshape_kernel[(1,)](backend.zeros(16, np.float32), BLOCK=16)


@tegula.jit
def repeated_shape_kernel(x_ptr, y_ptr, RANK: tl.constexpr):
    offs = tl.arange(0, 256 << RANK)
    x = tl.load(x_ptr + offs).reshape([2] * (RANK - 2) + [32, 32])  # Triton's test_dot_multidim spells it so
    pair = 2 * (1,) + (7,) * 0
    tl.static_assert(len(pair) == 2)
    tl.store(y_ptr + offs, tl.reshape(tl.sum(x, axis=RANK - 1, keep_dims=True) + x * len(pair), [256 << RANK]))


@pytest.mark.parametrize("rank", [3, 4])
def test_tuples_repeat_like_python_tuples(backend, rank):
    x = random(rng_for("repeat", rank), 256 << rank, "float32")
    y = backend.zeros(256 << rank, np.float32)
    repeated_shape_kernel[(1,)](backend.array(x), y, RANK=rank)
    shaped = x.reshape([2] * (rank - 2) + [32, 32])
    expected = (shaped.sum(axis=rank - 1, keepdims=True) + 2 * shaped).reshape(-1)
    np.testing.assert_allclose(backend.numpy(y), expected, rtol=1e-5, atol=1e-5)


@tegula.jit
def repeat_by_float_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,) * 1.5, tl.float32))


def test_a_tuple_repeated_by_a_non_int_is_a_located_error():
    with pytest.raises(tegula.CompilationError, match=r"E0301.*a tuple repeats by an int constant, not float"):
        repeat_by_float_kernel[(1,)](np.zeros(16, np.float32), BLOCK=16)


@tegula.jit
def oversized_broadcast_kernel(o_ptr):
    c = tl.arange(0, 2**11)[:, None] + tl.arange(0, 2**11)[None, :]  # here
    tl.store(o_ptr + tl.arange(0, 16), tl.sum(tl.sum(c, 1), 0).to(tl.float32) + tl.zeros((16,), tl.float32))


@tegula.jit
def oversized_join_kernel(o_ptr):
    a = tl.zeros((2**20,), tl.float32)
    b = tl.join(a, a)  # here
    tl.store(o_ptr + tl.arange(0, 16), tl.sum(tl.sum(b, 1), 0) + tl.zeros((16,), tl.float32))


@tegula.jit
def oversized_cat_kernel(o_ptr):
    a = tl.zeros((2**20,), tl.float32)
    b = tl.cat(a, a, can_reorder=True)  # here
    tl.store(o_ptr + tl.arange(0, 16), tl.sum(b, 0) + tl.zeros((16,), tl.float32))


@tegula.jit
def oversized_dot_kernel(o_ptr):
    a = tl.zeros((1024, 16), tl.float32)
    b = tl.zeros((16, 2048), tl.float32)
    c = tl.dot(a, b)  # here
    tl.store(o_ptr + tl.arange(0, 16), tl.sum(tl.sum(c, 1), 0) + tl.zeros((16,), tl.float32))


@tegula.jit
def oversized_where_kernel(o_ptr):
    row = tl.arange(0, 2**20)[:, None]
    c = tl.where(row > 3, row, tl.zeros((1, 4), tl.int32))  # here
    tl.store(o_ptr + tl.arange(0, 16), tl.sum(tl.sum(c, 1), 0).to(tl.float32) + tl.zeros((16,), tl.float32))


@tegula.jit
def oversized_load_kernel(o_ptr):
    p = o_ptr + tl.arange(0, 2**20)[:, None]
    x = tl.load(p, mask=tl.arange(0, 2)[None, :] < 1)  # here
    tl.store(o_ptr + tl.arange(0, 16), tl.sum(tl.sum(x, 1), 0) + tl.zeros((16,), tl.float32))


@pytest.mark.parametrize("kernel, result", [
    (oversized_broadcast_kernel, "tile<2048x2048xi32>"),
    (oversized_join_kernel, "tile<1048576x2xf32>"),
    (oversized_cat_kernel, "tile<1048576x2xf32>"),
    (oversized_dot_kernel, "tile<1024x2048xf32>"),
    (oversized_where_kernel, "tile<1048576x4x"),
    (oversized_load_kernel, "tile<1048576x2x"),
])
def test_a_result_over_the_tile_limit_is_a_located_error(kernel, result):
    """An op whose result has more than 2^20 elements is E0503 at the user's line (as tl.full's
    size is), not an internal error of the IR verifier."""
    lines, first = inspect.getsourcelines(kernel.fn)
    line = first + next(i for i, text in enumerate(lines) if text.endswith("# here\n"))
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](np.zeros(16, np.float32))
    message = str(info.value)
    head = message.splitlines()[0]
    assert f"test_ops_shape.py:{line}:" in head and "error[E0503]: the result of this operation, a " + result in head, \
        message
    assert "hint: use smaller block sizes and a loop" in message, message
