"""Tuples (and named tuples) of runtime values as kernel arguments, as Triton
takes them: each element is an argument of its own (pointers, ints with their
specialization on 1 and 16, floats, None and tl.constexpr elements as
constants, nested tuples), bound in the kernel to a tuple of those values."""

from typing import NamedTuple

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def _scale_pair(ptrs, n, factors, BLOCK: tl.constexpr):
    x_ptr, y_ptr = ptrs
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * factors[0] + factors[1], mask=mask)


def test_pointers_and_scalars_in_tuples():
    rng = np.random.default_rng(0)
    n = 1000  # not a multiple of the block: a masked tail
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full_like(x, np.nan)
    _scale_pair[(tegula.cdiv(n, 128),)]((x, y), n, (2.5, -1.25), BLOCK=128)
    np.testing.assert_allclose(y, x * np.float32(2.5) - np.float32(1.25), rtol=1e-6)


@tegula.jit
def _nested(out_ptr, t, C: tl.constexpr):
    # t = (a_ptr, (k, None, b_ptr), tl.constexpr(7))
    tl.static_assert(t[1][1] is None)
    tl.static_assert(t[2] == 7)
    a = tl.load(t[0] + tl.arange(0, 4))
    b = tl.load(t[1][2] + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), a * t[1][0] + b + t[2] + C)


def test_nested_tuples_with_constants():
    a = np.arange(4, dtype=np.int32) + 1
    b = np.array([10, 20, 30, 40], dtype=np.int32)
    out = np.zeros(4, np.int32)
    _nested[(1,)](out, (a, (3, None, b), tl.constexpr(7)), C=100)
    np.testing.assert_array_equal(out, a * 3 + b + 7 + 100)


@tegula.jit
def _length_and_index(ptrs, values):
    for i in tl.static_range(len(values)):
        tl.store(ptrs[i], values[i] + 1)


@pytest.mark.parametrize("size", [0, 1, 3])
def test_len_and_constant_indexing(size):
    outs = tuple(np.zeros(1, np.float32) for _ in range(size))
    values = tuple(float(i) * 1.5 for i in range(size))
    _length_and_index[(1,)](outs, values)
    assert [o[0] for o in outs] == [v + 1 for v in values]


class Pair(NamedTuple):
    data: object
    count: int


@tegula.jit
def _named(pair, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < pair.count
    tl.store(out_ptr + offs, tl.load(pair.data + offs, mask=mask) * 2, mask=mask)


@tegula.jit
def _named_by_position(pair, out_ptr, BLOCK: tl.constexpr):
    data, count = pair
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(data + offs, mask=offs < count) + pair[1], mask=offs < count)


def test_named_tuples_by_field_and_by_position():
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(16, np.float32)
    _named[(1,)](Pair(x, 10), out, BLOCK=16)
    np.testing.assert_array_equal(out[:10], x * 2)
    out[:] = 0
    _named_by_position[(1,)](Pair(x, 7), out, BLOCK=16)
    np.testing.assert_array_equal(out[:7], x[:7] + 7)
    np.testing.assert_array_equal(out[7:], 0)


def test_a_missing_field_is_a_located_error():
    @tegula.jit
    def wrong_field(pair, out_ptr):
        tl.store(out_ptr, pair.size)

    with pytest.raises(tegula.CompilationError, match="has no attribute `size`"):
        wrong_field[(1,)](Pair(np.zeros(1, np.float32), 1), np.zeros(1, np.float32))


@tegula.jit
def _ints(out_ptr, t):
    tl.store(out_ptr + tl.arange(0, 4), tl.full([4], t[0] * 1000 + t[1], tl.int64))


def test_int_elements_specialize_like_int_arguments():
    out = np.zeros(4, np.int64)
    _ints[(1,)](out, (1, 16))  # 1 is a constant, 16 a divisible int
    np.testing.assert_array_equal(out, 1016)
    _ints[(1,)](out, (3, 2**40))  # i64 element
    np.testing.assert_array_equal(out, 3000 + 2**40)
    # Each distinct specialization compiled once; the values never go into the key.
    _ints[(1,)](out, (5, 2**40 + 3))
    np.testing.assert_array_equal(out, 5000 + 2**40 + 3)
    # The elements' parameters are named after the tuple's; 1 is specialized (another key than 3's).
    assert [p[0] for p in _ints.inspect(out, (1, 16)).params] == ["out_ptr", "t__0", "t__1"]
    assert _ints.inspect(out, (1, 16)).key != _ints.inspect(out, (3, 16)).key
    assert _ints.inspect(out, (3, 16)).key == _ints.inspect(out, (5, 32)).key


@tegula.jit
def _helper_sum(values):
    return values[0] + values[1]


@tegula.jit
def _passes_on(out_ptr, values):
    tl.store(out_ptr, _helper_sum(values))


def test_a_tuple_argument_passed_to_a_jit_function():
    out = np.zeros(1, np.float32)
    _passes_on[(1,)](out, (1.5, 2.25))
    assert out[0] == np.float32(3.75)


def test_an_element_of_no_kind_names_its_place():
    out = np.zeros(1, np.float32)
    with pytest.raises(TypeError, match=r"argument 'values\[1\]' of kernel '_passes_on' must be an array or a "
                                        r"scalar, got list"):
        _passes_on[(1,)](out, (1.0, [2.0]))


def test_a_constexpr_parameter_still_takes_a_tuple_of_constants():
    @tegula.jit
    def shaped(out_ptr, SHAPE: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, SHAPE[0] * SHAPE[1]), tl.full([SHAPE[0] * SHAPE[1]], SHAPE[1], tl.int32))

    out = np.zeros(8, np.int32)
    shaped[(1,)](out, (2, 4))
    np.testing.assert_array_equal(out, 4)


def test_a_tuple_element_written_through_a_read_only_array_is_refused():
    x = np.zeros(4, np.float32)
    ro = np.frombuffer(bytes(16), np.float32)
    with pytest.raises(ValueError, match="E0714|read-only|not writable|writeable"):
        _scale_pair[(1,)]((x, ro), 4, (1.0, 0.0), BLOCK=4)


# --- comprehensions over tuples and constant ranges (unrolled at compile time) ---


@tegula.jit
def _incremented(values):
    return tl.tuple([v + 1 for v in values])


@tegula.jit
def _comprehensions(ptrs, values, out_ptr):
    values = _incremented(values)
    for i in tl.static_range(len(values)):
        tl.store(ptrs[i], values[i])
    odd_squares = tuple(i * i for i in range(6) if i % 2 == 1)  # (1, 9, 25)
    pairs = [(i, j) for i in range(3) for j in range(i)]  # (1, 0), (2, 0), (2, 1)
    total = sum_of(odd_squares) * 1000 + len(pairs) * 100 + pairs[2][0] * 10 + pairs[2][1]
    tl.store(out_ptr, total)
    v = 7  # a comprehension's names are its own
    _ = [v for v in range(2)]
    tl.store(out_ptr + 1, v)


@tegula.jit
def sum_of(t):
    s = 0
    for i in tl.static_range(len(t)):
        s += t[i]
    return s


def test_comprehensions_unroll_into_tuples():
    outs = tuple(np.zeros(1, np.float32) for _ in range(3))
    out = np.zeros(2, np.int32)
    _comprehensions[(1,)](outs, (1.0, 2.5, -3.0), out)
    assert [o[0] for o in outs] == [2.0, 3.5, -2.0]
    assert out.tolist() == [35 * 1000 + 3 * 100 + 21, 7]


def test_a_comprehension_over_a_runtime_value_is_a_located_error():
    @tegula.jit
    def over_tile(out_ptr, n):
        t = [v for v in range(n)]
        tl.store(out_ptr, len(t))

    with pytest.raises(tegula.CompilationError, match=r"known when compiling|constant"):
        over_tile[(1,)](np.zeros(1, np.int32), 5)


def test_hostile_tuples_are_refused_with_a_message():
    out = np.zeros(1, np.float32)
    deep = 1.0
    for _ in range(100_000):  # would exhaust the stack if followed
        deep = (deep,)
    with pytest.raises(TypeError, match="nests tuples or aggregates more than 32 deep"):
        _passes_on[(1,)](out, deep)
    with pytest.raises(TypeError, match="more than 4096 values"):
        _passes_on[(1,)](out, tuple(range(10_000)))


def test_nested_comprehensions_have_a_budget():
    @tegula.jit
    def huge(out_ptr):
        # Each inner list is dropped (its length kept), so no value passes
        # E0612's bound: what stops it is the unrolling.
        t = [len([i * j for j in range(4000)]) for i in range(4000)]
        tl.store(out_ptr, len(t))

    with pytest.raises(tegula.CompilationError, match="unroll more than 65536 elements"):
        huge[(1,)](np.zeros(1, np.int32))


@tegula.jit
def _affine(x, a_ptr, b):
    return x * tl.load(a_ptr) + b


@tegula.jit
def _star_call(x_ptr, out_ptr, captured):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), _affine(x, *captured))


def test_a_tuple_unpacked_into_a_call():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    _star_call[(1,)](x, out, (np.array([2.0], np.float32), 0.5))
    np.testing.assert_array_equal(out, x * 2 + 0.5)


def test_unpacking_what_is_not_a_tuple_is_a_located_error():
    @tegula.jit
    def star_scalar(out_ptr, n):
        tl.store(out_ptr, _affine(1.0, *n))

    with pytest.raises(tegula.CompilationError, match=r"`\*` unpacks a tuple into the arguments of a call, but "
                                                      r"this is a scalar"):
        star_scalar[(1,)](np.zeros(1, np.float32), 3)


class View(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple
    scale: float = 1.0


@tegula.jit
def _views(x_ptr, out_ptr, n):
    src = View(ptr=x_ptr, shape=(n,), stride=(1,))  # by field, the default for scale
    dst = View(out_ptr, (n,), (1,), 3.0)  # by position
    offs = tl.arange(0, 8)
    v = tl.load(src.ptr + offs * src.stride[0], mask=offs < src.shape[0]) * dst.scale * src.scale
    tl.store(dst.ptr + offs, v, mask=offs < dst.shape[0])


def test_named_tuples_built_inside_the_kernel():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _views[(1,)](x, out, 6)
    np.testing.assert_array_equal(out, np.where(np.arange(8) < 6, x * 3, 0))


@tegula.constexpr_function
def _doubled(view):
    return View(view.ptr, view.shape, view.stride, view.scale * 2)


@tegula.jit
def _through_constexpr_function(out_ptr):
    v = _doubled(View(0, (4,), (1,)))
    tl.static_assert(v.scale == 2.0)
    tl.store(out_ptr, v.scale + v.shape[0])


def test_named_tuples_cross_a_constexpr_function_with_their_fields():
    out = np.zeros(1, np.float32)
    _through_constexpr_function[(1,)](out)
    assert out[0] == 6.0


def test_named_tuple_construction_errors_name_the_field():
    @tegula.jit
    def unknown_field(out_ptr):
        v = View(out_ptr, (1,), (1,), size=2)
        tl.store(v.ptr, 1.0)

    with pytest.raises(tegula.CompilationError, match="`View` has no field named `size`"):
        unknown_field[(1,)](np.zeros(1, np.float32))

    @tegula.jit
    def missing_field(out_ptr):
        v = View(out_ptr)
        tl.store(v.ptr, 1.0)

    with pytest.raises(tegula.CompilationError, match="`View` is missing the field `shape`"):
        missing_field[(1,)](np.zeros(1, np.float32))
