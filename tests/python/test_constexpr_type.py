"""`.type` of constants, as Triton answers it.

A constexpr (a `tl.constexpr` parameter, or a name annotated `tl.constexpr`)
has the type `tl.constexpr_type(value)`, and two of those are equal when
their values are; `tl.constexpr_type(v)` builds one in a kernel. A number
bound by a plain assignment is a tensor in Triton, so its `.type` is the
dtype it would have (int32, fp32, ...), while it stays a constant for
everything else, and so is what is computed from it, and what a function
returns under an `if` on it (Triton's `if` is then a runtime one). A tuple of
constants has a constexpr_type too; a tuple holding tensors has a
`tl.tuple_type` of its elements' types.
"""

from __future__ import annotations

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.language.core import constexpr_type


@tegula.jit
def types_kernel(out_ptr, value: tl.constexpr, other: tl.constexpr, LIFTED: tl.constexpr):
    annotated: tl.constexpr = value
    plain = value
    same = (annotated.type == constexpr_type(value)) & (value.type == annotated.type)
    differs = value.type != constexpr_type(other)
    lifted = plain.type == LIFTED
    tl.store(out_ptr + 0, int(same))
    tl.store(out_ptr + 1, int(differs))
    tl.store(out_ptr + 2, int(lifted))
    tl.store(out_ptr + 3, plain + 1)  # still the constant


@pytest.mark.parametrize("value, other, lifted", [(10, 11, tl.int32), (32.5, 10, tl.float32), (True, False, tl.int1),
                                                  (2 ** 40, 10, tl.int64), (3, 3.5, tl.int32), (-7, 7.0, tl.int32)])
def test_type_of_constants(value, other, lifted):
    out = np.zeros(4, np.float64)
    types_kernel[(1,)](out, value, other, lifted)
    assert out[:3].tolist() == [1, 1, 1]
    assert out[3] == value + 1


@tegula.jit
def tuple_type_kernel(out_ptr, shape: tl.constexpr):
    named: tl.constexpr = shape
    tl.static_assert(named.type == constexpr_type(shape))
    tl.static_assert(named.type != constexpr_type((1, 2)))
    tl.store(out_ptr, len(shape))


def test_a_tuple_of_constants_has_a_constexpr_type():
    out = np.zeros(1, np.int32)
    tuple_type_kernel[(1,)](out, (5, 6, 7))
    assert out[0] == 3


@tegula.jit
def runtime_type_kernel(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * 2)
    t = constexpr_type(tl.load(x_ptr))  # noqa: F841


def test_constexpr_type_of_a_runtime_value_is_refused():
    x = np.ones(1, np.float32)
    with pytest.raises(tegula.CompilationError) as e:
        runtime_type_kernel[(1,)](x)
    assert "constexpr_type is a type" in str(e.value)


@tegula.jit
def equal_numbers_kernel(out_ptr):
    # Python's ==: constexpr_types of equal numbers are equal, whatever the numbers' types.
    tl.static_assert(constexpr_type(1) == constexpr_type(1.0))
    tl.static_assert(constexpr_type(True) == constexpr_type(1))
    tl.static_assert(constexpr_type((2, 3.0)) == constexpr_type((2.0, 3)))
    tl.static_assert(constexpr_type(0.5) != constexpr_type(0))
    tl.static_assert(constexpr_type("a") != constexpr_type("b"))
    tl.store(out_ptr, 1)


def test_constexpr_types_of_equal_numbers_are_equal():
    out = np.zeros(1, np.int32)
    equal_numbers_kernel[(1,)](out)
    assert out[0] == 1


@tegula.jit
def _sign(x):
    if x < 0:
        return 1
    else:
        return 0


@tegula.jit
def _sign_and_value(x):
    if x < 0:
        return 1, x
    else:
        return 0, x


@tegula.jit
def promotion_kernel(out_ptr, scale):
    # On a constexpr the `if` is a compile-time one: the result is a constexpr.
    a: tl.constexpr = _sign(-1)
    tl.static_assert(a == 1 and a.type == constexpr_type(1))
    b: tl.constexpr = _sign_and_value(-3)
    tl.static_assert(b[0] == 1 and b[1] == -3)
    # On a number bound by a plain assignment Triton's `if` is a runtime one.
    tmp = -3
    tl.static_assert((tmp < 0).type == tl.int1 and (tmp * 2.5).type == tl.float32 and (-tmp).type == tl.int32)
    tl.static_assert(_sign(tmp).type == tl.int32)
    c = _sign_and_value(tmp)
    tl.static_assert(c.type == tl.tuple_type([tl.int32, tl.int32]))
    tl.static_assert(isinstance(c.type, tl.tuple_type) and c.type[1] == tl.int32)
    chosen = 7 if tmp < 0 else 8
    tl.static_assert(chosen.type == tl.int32)
    pair = (scale, 4)
    tl.static_assert(pair.type == tl.tuple_type([tl.float32, tl.int32]))
    tl.store(out_ptr + 0, _sign(tmp) + c[0])
    tl.store(out_ptr + 1, c[1] * chosen)
    tl.store(out_ptr + 2, pair[0] * pair[1])


def test_numbers_triton_holds_as_tensors_have_dtypes_through_calls_and_ifs():
    out = np.zeros(3, np.float32)
    promotion_kernel[(1,)](out, 1.25)
    assert out.tolist() == [2.0, -21.0, 5.0]


def test_tuple_type_on_the_host():
    t = tl.tuple_type([tl.int32, tl.float16])
    assert list(t) == [tl.int32, tl.float16] and t[1] == tl.float16 and len(t) == 2
    assert t == tl.tuple_type([tl.int32, tl.float16]) and t != tl.tuple_type([tl.int32, tl.float16], ["a", "b"])
    assert str(t) == "[int32,fp16]" and str(tl.tuple_type([tl.int32], ["x"])) == "[x:int32]"


@tegula.jit
def bad_tuple_type_kernel(out_ptr):
    t: tl.constexpr = tl.tuple_type([tl.int32], ["a", "b"])  # noqa: F841
    tl.store(out_ptr, 1)


def test_tuple_type_with_mismatched_fields_is_a_located_error():
    with pytest.raises(tegula.CompilationError, match=r"fields of tl.tuple_type are one name"):
        bad_tuple_type_kernel[(1,)](np.zeros(1, np.int32))
