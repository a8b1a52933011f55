"""Compile-time integers at the ends of int64 and past them, where the front
end computed in int64 and wrapped: tuple indices and slices take Python's
values (2**64 - 1 is out of range as an index, clamped as a slice bound), a
tl.static_range or a comprehension's range over the whole of int64 counts its
iterations right, a constant of 2**63 or more where an int64 is needed is a
located error (E0603), and tl.arange past int32 is E0406, not an internal
error."""

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def slices(o_ptr):
    t = (1, 2, 3)
    tl.store(o_ptr + 0, len(t[::18446744073709551615]))  # Python: (1,)
    tl.store(o_ptr + 1, len(t[18446744073709551615:]))  # ()
    tl.store(o_ptr + 2, len(t[:18446744073709551615]))  # (1, 2, 3)
    tl.store(o_ptr + 3, t[2::9223372036854775807][0])  # (3,): the next index passes int64
    tl.store(o_ptr + 4, len(t[2::9223372036854775807]))
    tl.store(o_ptr + 5, t[::-9223372036854775808][0])  # (3,)
    tl.store(o_ptr + 6, len(t[-9223372036854775808:9223372036854775807:-9223372036854775808]))  # ()


def test_tuple_slices_take_python_values_past_int64():
    out = np.full(7, -1, np.int64)
    slices[(1,)](out)
    t = (1, 2, 3)
    expected = [len(t[::2**64 - 1]), len(t[2**64 - 1:]), len(t[:2**64 - 1]), t[2::2**63 - 1][0],
                len(t[2::2**63 - 1]), t[::-2**63][0], len(t[-2**63:2**63 - 1:-2**63])]
    assert out.tolist() == expected == [1, 0, 3, 3, 1, 3, 0]


@tegula.jit
def index_past_int64(o_ptr):
    t = (1, 2, 3)
    tl.store(o_ptr, t[18446744073709551615])


def test_a_tuple_index_past_int64_is_out_of_range():
    # It read as -1: the last element.
    with pytest.raises(tegula.CompilationError, match="tuple index out of range") as e:
        index_past_int64[(1,)](np.zeros(1, np.int64))
    assert e.value.code == "E0508"


@tegula.jit
def whole_int64_ranges(o_ptr):
    n = 0
    for i in tl.static_range(-9223372036854775808, 9223372036854775807, 4611686018427387904):
        n += 1
        tl.store(o_ptr + 3 + n, i)
    tl.store(o_ptr + 0, n)
    near_top = tuple(v for v in range(9223372036854775805, 9223372036854775807, 4611686018427387904))
    tl.store(o_ptr + 1, len(near_top))
    near_bottom = tuple(v for v in range(-9223372036854775807, -9223372036854775808, -4611686018427387904))
    tl.store(o_ptr + 2, len(near_bottom))


def test_static_ranges_and_comprehensions_over_int64_count_right():
    # The static loop unrolled nothing (its span wrapped); the comprehensions ran on past the end
    # of int64 until the 4096-element bound.
    out = np.zeros(8, np.int64)
    whole_int64_ranges[(1,)](out)
    assert out[:3].tolist() == [4, 1, 1]
    assert out[4:8].tolist() == list(range(-2**63, 2**63 - 1, 2**62))


@tegula.jit
def unroll_all_of_int64(o_ptr):
    for i in tl.static_range(-9223372036854775808, 9223372036854775807):
        tl.store(o_ptr, 1)


def test_a_static_range_over_all_of_int64_is_refused_at_once():
    # It unrolled a million iterations (seconds) before the kernel-wide bound stopped it.
    with pytest.raises(tegula.CompilationError, match="tl.static_range would unroll 18446744073709551615 "
                                                      "iterations") as e:
        unroll_all_of_int64[(1,)](np.zeros(1, np.int64))
    assert e.value.code == "E0609"


@tegula.jit
def static_range_to_2_64(o_ptr):
    for i in tl.static_range(18446744073709551615):
        tl.store(o_ptr, 1)


@tegula.jit
def arange_to_2_64(o_ptr):
    tl.store(o_ptr + tl.arange(0, 18446744073709551615), 1)


@pytest.mark.parametrize("kernel,what", [(static_range_to_2_64, "the end of tl.static_range"),
                                         (arange_to_2_64, "the end of tl.arange")])
def test_a_constant_past_int64_where_an_int64_is_needed_is_refused(kernel, what):
    # The static loop unrolled nothing (the end read as -1); tl.arange said "end <= start".
    with pytest.raises(tegula.CompilationError, match=what + " is 18446744073709551615, which does not fit in a "
                                                             "64-bit signed integer") as e:
        kernel[(1,)](np.zeros(1, np.int64))
    assert e.value.code == "E0603"


@tegula.jit
def arange_past_int32(o_ptr):
    offs = tl.arange(2147483640, 2147483656)
    tl.store(o_ptr + offs - 2147483640, 1)


def test_an_arange_past_int32_is_a_located_error_not_an_internal_one():
    with pytest.raises(tegula.CompilationError, match=r"tl.arange must fit in int32, but \[2147483640, "
                                                      r"2147483656\) holds values outside") as e:
        arange_past_int32[(1,)](np.zeros(16, np.int64))
    assert e.value.code == "E0406"
    assert "offs = tl.arange(2147483640, 2147483656)" in str(e.value)


@tegula.jit
def float_floor_divisions(o_ptr):
    tl.store(o_ptr + 0, 1.0 // 0.1)
    tl.store(o_ptr + 1, -1.0 // 0.1)
    tl.store(o_ptr + 2, 7.5 // -2.0)
    tl.store(o_ptr + 3, 3 // 0.7)
    tl.store(o_ptr + 4, -0.0 // 5.0)
    tl.store(o_ptr + 5, 0.3 // 0.1)


def test_constant_float_floor_division_is_pythons():
    # floor(1.0 / 0.1) is 10.0; Python's `//` (from fmod) gives 9.0, as Triton's constexprs do.
    out = np.full(6, np.nan)
    float_floor_divisions[(1,)](out)
    expected = [1.0 // 0.1, -1.0 // 0.1, 7.5 // -2.0, 3 // 0.7, -0.0 // 5.0, 0.3 // 0.1]
    assert out.tolist() == expected
    assert np.signbit(out[4])


@tegula.jit
def power(o_ptr, A: tl.constexpr, B: tl.constexpr):
    tl.store(o_ptr, A ** B)


@pytest.mark.parametrize("a,b,message", [
    (0, -1, "0 cannot be raised to a negative power"),
    (0.0, -1.5, r"0.0 cannot be raised to a negative power"),
    (-8.0, 0.5, "a negative number raised to a fractional power is a complex number"),
    (10.0, 400.0, "overflows a float"),
])
def test_a_constant_power_python_refuses_is_e0603(a, b, message):
    # They were inf, inf, NaN and inf; Python raises ZeroDivisionError, returns a complex, raises OverflowError.
    with pytest.raises(tegula.CompilationError, match=message) as e:
        power[(1,)](np.zeros(1), a, b)
    assert e.value.code == "E0603"


def test_constant_powers_python_computes_still_compute():
    out = np.zeros(1)
    for a, b in [(2, -2), (-8.0, 3.0), (0.0, 0.0), (float("inf"), -1.0), (-2.0, 0.5 * 2)]:
        power[(1,)](out, a, b)
        assert out[0] == a ** b, (a, b)


@tegula.jit
def int_float_compares(o_ptr):
    # Python compares an int with a float exactly: 2**63 - 1 is not 2.0**63,
    # and 2**53 + 1 is more than 2.0**53.
    tl.store(o_ptr + 0, 9223372036854775807 == 9223372036854775808.0)
    tl.store(o_ptr + 1, 9007199254740993 > 9007199254740992.0)
    tl.store(o_ptr + 2, 9007199254740993 != 9007199254740992.0)
    tl.store(o_ptr + 3, 18446744073709551615 < 18446744073709551616.0)
    tl.store(o_ptr + 4, -1 % 0.5 == 0.0)


def test_constant_int_float_comparisons_are_exact():
    out = np.full(5, -1, np.int32)
    int_float_compares[(1,)](out)
    expected = [2**63 - 1 == 2.0**63, 2**53 + 1 > 2.0**53, 2**53 + 1 != 2.0**53,
                2**64 - 1 < 2.0**64, -1 % 0.5 == 0.0]
    assert out.tolist() == [int(e) for e in expected] == [0, 1, 1, 1, 1]


@tegula.jit
def float_mod_zero_sign(o_ptr):
    tl.store(o_ptr + 0, -1.0 % 0.5)  # +0.0: the divisor is positive
    tl.store(o_ptr + 1, 1.0 % -0.5)  # -0.0: the divisor is negative


def test_constant_float_modulo_zero_takes_the_divisors_sign():
    out = np.full(2, 7.0, np.float32)
    float_mod_zero_sign[(1,)](out)
    expected = np.array([-1.0 % 0.5, 1.0 % -0.5], np.float32)
    assert out.tolist() == [0.0, 0.0]
    assert np.signbit(out).tolist() == np.signbit(expected).tolist() == [False, True]
