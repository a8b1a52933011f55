"""Scalars, tiles of one element and subscripts, as Triton defines them.

`x[...]` on a tile or a scalar takes `None` (a new size-1 dim at its
position) and full slices (`:`, `::`, `None:`, `:None`, `None:None:None`: a
kept dim); a scalar indexed with `None` becomes a tile of one element (a `None`
past its dimensions, `flag[:, None]`, inserts at their end, as in Triton).
Anything else (`x[1:3]`, `x[None, 2]`) is refused at the index. Tuples take
Python slices. `tl.expand_dims` of a scalar, `tl.join`/`tl.interleave` of two
scalars (a tile of 2) and `tl.split` of a tile of 2 (two scalars) follow
Triton. Data: random, 100 elements in blocks of 64 (a masked tail).
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import check, grid1, random, rng_for


@tegula.jit
def subscript_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.static_assert(x[None, None:].shape == [1, BLOCK])
    tl.static_assert(x[None, :None].shape == [1, BLOCK])
    tl.static_assert(x[None, None:None:None, None].shape == [1, BLOCK, 1])
    tl.static_assert(x[None, ::None, None].shape == [1, BLOCK, 1])
    row = x[None, :]  # [1, BLOCK]
    col = x[:, None]  # [BLOCK, 1]
    square = row[:] + col  # one `:` for two dims: the rest are kept, as in Triton
    tl.static_assert(square.shape == [BLOCK, BLOCK])
    tl.store(out_ptr + offs, tl.sum(square, axis=0) - BLOCK * x, mask=m)
    first = tl.load(x_ptr + tl.program_id(0) * BLOCK)  # a scalar
    one = first[None]
    tl.static_assert(one.shape == [1])
    tl.static_assert(first[None, None].shape == [1, 1])
    # Past a scalar's dimensions a None inserts at their end, as Triton's expand_dims of a scalar does.
    tl.static_assert(first[:, None].shape == [1] and first[:, :, None, None].shape == [1, 1])
    tl.static_assert(tl.expand_dims(first, 0).shape == [1])
    tl.static_assert(tl.expand_dims(first, -1).shape == [1])
    tl.static_assert(tl.expand_dims(BLOCK, -1).shape == [1])
    tl.static_assert(tl.expand_dims(x, (0, 2)).shape == [1, BLOCK, 1])
    # A scalar pointer indexed like a tile: a tile of one pointer.
    p = (out_ptr + n + tl.program_id(0))[None, None, :]
    tl.static_assert(p.shape == [1, 1])
    tl.store(p, tl.expand_dims(one, 1) * 2)
    dims = (BLOCK, 2 * BLOCK, 3, 4, 5)
    tl.static_assert(dims[1:3] == (2 * BLOCK, 3))
    tl.static_assert(dims[::-2] == (5, 3, BLOCK))
    tl.static_assert(dims[-2:] == (4, 5))
    tl.static_assert(dims[:100] == dims)


def test_subscripts_and_rank0(backend):
    n, block = 100, 64
    x = random(rng_for("subscripts"), n, "int32", low=-1000, high=1000)
    out = backend.zeros(n + 2, np.int32)
    subscript_kernel[grid1(n, block)](backend.array(x), out, n, BLOCK=block)
    out = backend.numpy(out)
    padded = np.zeros(2 * block, np.int64)
    padded[:n] = x
    want = np.repeat(padded.reshape(2, block).sum(1), block)  # each element: the sum of its block
    check(out[:n], want[:n].astype(np.int32), "int32", what="row[:] + col, summed")
    check(out[n:], np.array([2 * x[0], 2 * x[block]], np.int32), "int32", what="scalar[None] * 2")


@tegula.jit
def scalar_pairs_kernel(x_ptr, out_ptr):
    pair = tl.load(x_ptr + tl.arange(0, 2))
    a, b = tl.split(pair)  # a tile of 2 splits to two scalars
    tl.static_assert(a.shape == [] and b.shape == [])
    tl.store(out_ptr, a * 10 + b)
    j = tl.join(a, b + 1)
    tl.static_assert(j.shape == [2])
    tl.store(out_ptr + 1 + tl.arange(0, 2), j)
    k = tl.interleave(b, 7)
    tl.static_assert(k.shape == [2])
    tl.store(out_ptr + 3 + tl.arange(0, 2), k)


@tegula.jit
def scalar_reshape_kernel(x_ptr, out_ptr):
    s = tl.load(x_ptr)
    a = tl.reshape(s, [1])  # a scalar is one element: reshaping it makes a tile
    b = s.reshape(1, 1).reshape(1)
    c = tl.ravel(s) + tl.view(s, (1,))
    tl.static_assert(a.shape == [1] and b.shape == [1] and c.shape == [1])
    tl.store(out_ptr + tl.arange(0, 1), a + 10 * b + 100 * c)


def test_reshape_of_a_scalar(backend):
    out = backend.zeros(1, np.int32)
    scalar_reshape_kernel[(1,)](backend.array(np.array([3], np.int32)), out)
    assert backend.numpy(out).tolist() == [3 + 30 + 600]


def test_split_join_interleave_of_scalars(backend):
    x = np.array([3, -4], np.int32)
    out = backend.zeros(5, np.int32)
    scalar_pairs_kernel[(1,)](backend.array(x), out)
    assert backend.numpy(out).tolist() == [26, 3, -3, -4, 7]


@tegula.jit
def annotated_helper(x: tl.tensor, y: tl.tensor) -> tl.tensor:
    z: tl.tensor = x + y
    return z


@tegula.jit
def annotated_kernel(x_ptr, out_ptr, s: tl.tensor):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, annotated_helper(tl.load(x_ptr + offs), s))


def test_tensor_annotations(backend):
    x = np.arange(4, dtype=np.float32)
    out = backend.zeros(4, np.float32)
    annotated_kernel[(1,)](backend.array(x), out, 0.5)
    assert (backend.numpy(out) == x + 0.5).all()


@tegula.jit
def bad_index_kernel(x_ptr, WHICH: tl.constexpr):
    x = tl.arange(0, 8)
    if WHICH == 0:
        y = x[1:3]
    elif WHICH == 1:
        y = x[None, 2]
    elif WHICH == 2:
        y = x_ptr[10:]
    elif WHICH == 3:
        y = x[:, :, None]
    else:
        y = tl.reshape(tl.full([1], 3, tl.int32), ())
    tl.store(x_ptr + tl.arange(0, 8), y)


@pytest.mark.parametrize("which,column,message", [
    (0, 15, "unsupported tensor index: .* got a slice with bounds"),
    (1, 21, "unsupported tensor index: .* got the constant 2"),
    (2, 19, "unsupported tensor index"),
    (3, 21, "past the dimensions"),
    (4, 13, "tl.reshape cannot make a scalar")])
def test_unsupported_indices_are_refused_at_the_index(backend, which, column, message):
    with pytest.raises(tegula.CompilationError, match=message) as info:
        bad_index_kernel[(1,)](backend.zeros(8, np.int32), WHICH=which)
    assert f":{column}: error" in str(info.value), str(info.value)
