"""A variable (or a helper's return value, or a runtime `x if c else y`) that
holds a number on one path and something else on another: the number takes a
type that holds it unchanged, or the kernel is refused (E0308). The number
used to be materialized in the other path's type whatever it was: `1.5`
stored 1.0 beside an i32, `300` stored 44 beside an i8, two numbers took the
first one's type (`1` / `1.5` was an i32, `1` / `2**40` lost the 2**40), and a
number beside a pointer was an internal error (E0999)."""

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def int_or_float(c_ptr, o_ptr):
    if tl.load(c_ptr) > 0:
        v = 1
    else:
        v = 1.5
    tl.store(o_ptr, v)


@tegula.jit
def small_or_big(c_ptr, o_ptr):
    if tl.load(c_ptr) > 0:
        v = 1
    else:
        v = 2**40
    tl.store(o_ptr, v)


@tegula.jit
def float_tile_or_zero(c_ptr, x_ptr, o_ptr):
    offs = tl.arange(0, 4)
    if tl.load(c_ptr) > 0:
        v = tl.load(x_ptr + offs)
    else:
        v = 0
    tl.store(o_ptr + offs, v)


@pytest.mark.parametrize("c", [0.0, 1.0])
def test_numbers_on_two_paths_keep_their_values(c):
    cond = np.array([c], np.float32)
    o = np.zeros(1, np.float64)
    int_or_float[(1,)](cond, o)
    assert o[0] == (1.0 if c else 1.5)
    small_or_big[(1,)](cond, o)
    assert o[0] == (1.0 if c else 2.0**40)
    x = np.arange(1, 5, dtype=np.float16)
    out = np.full(4, 9, np.float16)
    float_tile_or_zero[(1,)](cond, x, out)  # a number the tile's type holds: still fine
    np.testing.assert_array_equal(out, x if c else np.zeros(4, np.float16))


@tegula.jit
def int_tile_or_fraction(c_ptr, i_ptr, o_ptr):
    if tl.load(c_ptr) > 0:
        v = tl.load(i_ptr)
    else:
        v = 1.5
    tl.store(o_ptr, v)


@tegula.jit
def int8_or_300(c_ptr, i_ptr, o_ptr):
    if tl.load(c_ptr) > 0:
        v = tl.load(i_ptr)
    else:
        v = 300
    tl.store(o_ptr, v)


@tegula.jit
def flag_or_seven(c_ptr, i_ptr, o_ptr):
    v = tl.load(c_ptr) > 5
    if tl.load(c_ptr) > 0:
        v = 7
    tl.store(o_ptr, v.to(tl.float64))


@tegula.jit
def loop_to_fraction(c_ptr, i_ptr, o_ptr):
    acc = 0
    for k in range(3):
        acc = 1.5
    tl.store(o_ptr, acc)


@tegula.jit
def pointer_or_number(c_ptr, i_ptr, o_ptr):
    p = o_ptr
    for k in range(3):
        p = 5
    tl.store(o_ptr, 1.0)


@tegula.jit
def ternary_fraction(c_ptr, i_ptr, o_ptr):
    tl.store(o_ptr, tl.load(i_ptr) if tl.load(c_ptr) > 0 else 2.5)


@tegula.jit
def first_positive(c_ptr, i_ptr):
    for k in range(4):
        if tl.load(c_ptr + k) > 0:
            return k
    return 0.5


@tegula.jit
def returns_int_or_fraction(c_ptr, i_ptr, o_ptr):
    tl.store(o_ptr, first_positive(c_ptr, i_ptr))


@pytest.mark.parametrize("kernel,message", [
    (int_tile_or_fraction, r"Mismatched type for v: `v` is i32 on one path and the constant 1.5 on another, and it "
                           r"is not an integer"),
    (int8_or_300, r"`v` is i8 on one path and the constant 300 on another, and it does not fit in int8"),
    (flag_or_seven, r"`v` is i1 on one path and the constant 7 on another"),
    (loop_to_fraction, r"`acc` is i32 on one path and the constant 1.5 on another"),
    (pointer_or_number, r"`p` is ptr<f32> on one path and the constant 5 on another, and a number cannot stand for a "
                        r"pointer"),
    (ternary_fraction, r"Ternary expression with dynamic condition has inconsistent type: the value of `x if c else "
                       r"y` is i32 on one path and the constant 2.5"),
    (returns_int_or_fraction, r"Return type mismatch: the return value is i32 on one path and the constant 0.5"),
])
def test_a_number_the_other_path_cannot_hold_is_e0308(kernel, message):
    i8 = kernel is int8_or_300
    with pytest.raises(tegula.CompilationError, match=message) as e:
        kernel[(1,)](np.ones(4, np.float32), np.zeros(1, np.int8 if i8 else np.int32), np.zeros(1, np.float32))
    assert e.value.code == "E0308"


@tegula.jit
def negative_or_huge(c_ptr, o_ptr):
    if tl.load(c_ptr) > 0:
        v = -1
    else:
        v = 18446744073709551615
    tl.store(o_ptr, v.to(tl.float64))


def test_two_numbers_no_integer_type_holds_are_e0308():
    with pytest.raises(tegula.CompilationError, match="no integer type holds both") as e:
        negative_or_huge[(1,)](np.ones(1, np.float32), np.zeros(1, np.float64))
    assert e.value.code == "E0308"
