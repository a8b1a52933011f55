"""`.type` of constants, as Triton answers it.

A constexpr (a `tl.constexpr` parameter, or a name annotated `tl.constexpr`)
has the type `tl.constexpr_type(value)`, and two of those are equal when
their values are; `tl.constexpr_type(v)` builds one in a kernel. A number
bound by a plain assignment is a tensor in Triton, so its `.type` is the
dtype it would have (int32, fp32, ...), while it stays a constant for
everything else. A tuple of constants has a constexpr_type too.
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
