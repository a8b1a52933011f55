"""A Python constant that becomes a tile value must be a number (int, float
or bool): a string, None or a dtype is a located E0309 error naming the
operand, on every path a constant takes into the IR (tl.store's value,
tl.full's fill value, tl.load's `other`, .to()/tl.cast's input, an
operator's operand), never a silent 0. Both backends share the front end;
the CUDA compile is checked too."""

import os

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C

from test_diagnostics import where


@tegula.jit
def store_string(p):
    tl.store(p, "hello")


@tegula.jit
def store_none(p):
    tl.store(p, None)


@tegula.jit
def store_dtype(p):
    tl.store(p, tl.float32)


@tegula.jit
def store_constexpr(p, VALUE: tl.constexpr):
    tl.store(p + tl.arange(0, 4), VALUE)


@tegula.jit
def full_string(p):
    tl.store(p + tl.arange(0, 4), tl.full((4,), "x", tl.int32).to(tl.float32))


@tegula.jit
def other_string(p):
    offs = tl.arange(0, 4)
    tl.store(p + offs, tl.load(p + offs, mask=offs < 2, other="x"))


@tegula.jit
def cast_string(p):
    tl.store(p, tl.cast("x", tl.float32))


CASES = [
    (store_string, {}, '"hello"', "the value of tl.store", "the constant 'hello'"),
    (store_none, {}, "None", "the value of tl.store", "the constant None"),
    (store_dtype, {}, "tl.float32", "the value of tl.store", "the constant tl."),
    (store_constexpr, {"VALUE": "hello"}, "VALUE", "the value of tl.store", "the constant 'hello'"),
    (full_string, {}, "tl.full", "the fill value", "the constant 'x'"),
    (other_string, {}, '"x"', "`other` of tl.load", "the constant 'x'"),
    (cast_string, {}, "tl.cast", "the input of .cast()", "the constant 'x'"),
]


@pytest.mark.parametrize("kernel,constexprs,needle,operand,given", CASES, ids=[c[0].__name__ for c in CASES])
def test_non_numeric_constant_is_a_located_error(kernel, constexprs, needle, operand, given):
    out = np.full(4, 7.0, np.float32)
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](out, **constexprs)
    message = str(info.value)
    line, col = where(kernel, needle)
    first = message.splitlines()[0]
    assert f"test_non_numeric_constants.py:{line}:" in first, message
    assert "error[E0309]" in first, message
    assert operand in first and "must be a tensor or a number" in first and given in first, message
    np.testing.assert_array_equal(out, 7.0, err_msg="nothing ran")


@pytest.mark.parametrize("kernel,constexprs", [(c[0], c[1]) for c in CASES[:4]], ids=[c[0].__name__ for c in CASES[:4]])
def test_cuda_compile_refuses_them_too(kernel, constexprs):
    request, _ = kernel._request_for(np.zeros(4, np.float32), **constexprs)
    options = _C.CompileOptions(backend="cuda", cuda_arch=90, num_warps=4)
    with pytest.raises(Exception, match=r"E0309.*must be a tensor or a number"):
        _C.compile(request, options)


@tegula.jit
def numbers_still_work(p):
    offs = tl.arange(0, 4)
    tl.store(p + offs, tl.full((4,), True, tl.int32).to(tl.float32) + tl.load(p + offs, mask=offs < 2, other=2.5))


def test_numbers_still_become_values():
    out = np.array([1, 2, 3, 4], np.float32)
    numbers_still_work[(1,)](out)
    np.testing.assert_array_equal(out, [2.0, 3.0, 3.5, 3.5])
