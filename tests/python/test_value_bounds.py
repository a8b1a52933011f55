"""The compile-time values a kernel builds (tuples, aggregates, strings) are
bounded where they are built (src/frontend/value_bounds.h, error E0612): a
static loop that doubles one, or nests it a little deeper each time, is a
located error in well under a second instead of a compile that exhausts the
memory (std::bad_alloc reported as an internal error, E0999) or the stack.
Tuples handed to the compiler from the host (constexpr arguments, a
@constexpr_function's result) have the same bounds."""

import time

import numpy as np
import pytest

import tegula
import tegula.language as tl


@pytest.fixture
def fast():
    """Each refusal comes in well under a second on an idle machine; loosely here, as tests share cores."""
    started = time.perf_counter()
    yield
    assert time.perf_counter() - started < 10.0


def out():
    return np.zeros(4, np.float32)


@tegula.jit
def doubled_tuple(x_ptr):
    t = (0, 1)
    for i in tl.static_range(40):
        t = (t, t)
    tl.store(x_ptr, 1.0)


@tegula.jit
def deepened_tuple(x_ptr):
    t = (tl.load(x_ptr),)
    for i in tl.static_range(4000):
        for j in tl.static_range(250):
            t = (t,)
    tl.store(x_ptr, 1.0)


@tegula.jit
def doubled_string(x_ptr):
    s = "ab"
    for i in tl.static_range(40):
        s = s + s
    tl.store(x_ptr, 1.0)


@tegula.jit
def doubled_fstring(x_ptr):
    s = "ab"
    for i in tl.static_range(40):
        s = f"{s}{s}"
    tl.store(x_ptr, 1.0)


@tegula.jit
def repeated_tuple(x_ptr):
    t = (0,) * 1_000_000
    tl.store(x_ptr, 1.0)


@tegula.jit
def doubled_by_helper(t, D: tl.constexpr):
    if D == 0:
        return t
    return doubled_by_helper((t, t), D - 1)


@tegula.jit
def helper_doubling(x_ptr):
    t = doubled_by_helper((1, 2), 40)
    tl.store(x_ptr, 1.0)


@tegula.aggregate
class Pair:
    a: tl.tensor
    b: tl.tensor


@tegula.jit
def doubled_aggregate(x_ptr):
    p = Pair(tl.load(x_ptr), tl.load(x_ptr))
    for i in tl.static_range(40):
        p = Pair(p, p)
    tl.store(x_ptr, 1.0)


@pytest.mark.parametrize("kernel,line,message", [
    (doubled_tuple, "t = (t, t)", r"this tuple would hold more than 8192 values"),
    (deepened_tuple, "t = (t,)", r"this tuple would nest tuples or aggregates more than 256 deep"),
    (doubled_string, "s = s + s", r"this string would be 2097152 characters long, more than the 1048576"),
    (doubled_fstring, 's = f"{s}{s}"', r"this string would be \d+ characters long"),
    (repeated_tuple, "(0,) * 1_000_000", r"a tuple repeated 1000000 times would hold more than 8192 values"),
    (helper_doubling, "doubled_by_helper((t, t), D - 1)", r"would hold more than 8192 values"),
    (doubled_aggregate, "p = Pair(p, p)", r"more than 8192 values"),
])
def test_a_growing_value_is_a_located_error(fast, kernel, line, message):
    with pytest.raises(tegula.CompilationError, match=message) as e:
        kernel[(1,)](out())
    assert e.value.code == "E0612"
    assert line in str(e.value)


@tegula.jit
def many_copies(x_ptr):
    t = (0,) * 8000
    u = (t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t)
    tl.store(x_ptr, 1.0)


@tegula.jit
def many_arguments(x_ptr):
    t = (0,) * 8000
    tl.static_print(t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t)
    tl.store(x_ptr, 1.0)


@pytest.mark.parametrize("kernel,what", [(many_copies, "this tuple"), (many_arguments, "the arguments of this call")])
def test_copies_of_a_large_value_stop_at_the_bound(fast, kernel, what):
    # Counted element by element: the second copy passes the bound, the others are never made.
    with pytest.raises(tegula.CompilationError, match=what + r" would hold more than 8192 values") as e:
        kernel[(1,)](out())
    assert e.value.code == "E0612"


@tegula.jit
def within_bounds(x_ptr, o_ptr):
    t = tuple(i for i in range(4096))
    deep = (tl.load(x_ptr),)
    for i in tl.static_range(250):
        deep = (deep,)
    leaf = deep
    for i in tl.static_range(251):
        leaf = leaf[0]
    half = "a"
    for i in tl.static_range(19):
        half = half + half  # 2^19 characters; doubled once more: exactly the bound
    s = half + half
    tl.static_assert(len(s) == 1048576)
    tl.store(o_ptr, leaf + t[4095])


def test_values_within_the_bounds_compile_and_compute():
    x = np.full(1, 1.5, np.float32)
    o = np.zeros(1, np.float32)
    within_bounds[(1,)](x, o)
    assert o[0] == 4096.5


@tegula.jit
def takes_constant(x_ptr, C: tl.constexpr):
    tl.store(x_ptr, 1.0)


def test_a_deep_constexpr_tuple_argument_is_refused_not_a_crash(fast):
    deep = 1
    for _ in range(100_000):  # overflowed the launcher's stack
        deep = (deep,)
    with pytest.raises(TypeError, match="constexpr argument 'C' of kernel 'takes_constant' nests tuples more "
                                        "than 32 deep") as e:
        takes_constant[(1,)](out(), deep)
    assert e.value.code == "E0702"


def test_a_huge_constexpr_tuple_argument_is_refused(fast):
    # Compiled for 40 s into a kernel that did not read it.
    with pytest.raises(TypeError, match="constexpr argument 'C' of kernel 'takes_constant' holds more than 8192 "
                                        "values") as e:
        takes_constant[(1,)](out(), tuple(range(10_000_000)))
    assert e.value.code == "E0702"


@tegula.constexpr_function
def range_tuple(n):
    return tuple(range(n))


@tegula.constexpr_function
def nested_tuple(n):
    t = 1
    for _ in range(n):
        t = (t,)
    return t


@tegula.jit
def huge_host_result(x_ptr):
    t = range_tuple(10_000_000)
    tl.store(x_ptr, 1.0)


@tegula.jit
def deep_host_result(x_ptr):
    t = nested_tuple(100_000)
    tl.store(x_ptr, 1.0)


@pytest.mark.parametrize("kernel,message", [
    (huge_host_result, "returned a tuple of more than 8192 values"),
    (deep_host_result, "returned tuples nested more than 256 deep"),
])
def test_a_constexpr_function_result_past_the_bounds_is_refused(fast, kernel, message):
    # Converted for 20 s before the compiler refused it.
    with pytest.raises(tegula.CompilationError, match=message) as e:
        kernel[(1,)](out())
    assert e.value.code == "E0208"
