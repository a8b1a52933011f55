"""Triton's methods of type objects inside kernels: `x.dtype.is_fp64()`,
`ptr.dtype.element_ty.is_floating()`, `DT.get_int_max_value()`, ... are
compile-time constants that pick code (`a if x.dtype.is_fp64() else b`, as
libraries' elementwise kernels do). They answer as the host's tl.dtype does,
which follows Triton's name lists (int1 counts as unsigned, a pointer type
is no int)."""

import numpy as np
import pytest

import tegula
import tegula.language as tl

PREDICATES = ("is_floating", "is_standard_floating", "is_fp8", "is_int", "is_int_signed", "is_int_unsigned",
              "is_bool", "is_ptr", "is_block", "is_void", "is_const", "is_int1", "is_int8", "is_int16", "is_int32",
              "is_int64", "is_uint8", "is_uint16", "is_uint32", "is_uint64", "is_fp16", "is_bf16", "is_fp32",
              "is_fp64", "is_fp8e4nv", "is_fp8e5", "is_fp8e4b15", "is_fp8e4b8", "is_fp8e5b16")

DTYPES = (tl.int1, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.uint16, tl.uint32, tl.uint64, tl.float16,
          tl.bfloat16, tl.float32, tl.float64, tl.float8e4nv, tl.float8e5, tl.float8e4b15, tl.float8e4b8,
          tl.float8e5b16)


@tegula.jit
def predicates_kernel(out_ptr, DT: tl.constexpr):
    tl.store(out_ptr + 0, DT.is_floating())
    tl.store(out_ptr + 1, DT.is_standard_floating())
    tl.store(out_ptr + 2, DT.is_fp8())
    tl.store(out_ptr + 3, DT.is_int())
    tl.store(out_ptr + 4, DT.is_int_signed())
    tl.store(out_ptr + 5, DT.is_int_unsigned())
    tl.store(out_ptr + 6, DT.is_bool())
    tl.store(out_ptr + 7, DT.is_ptr())
    tl.store(out_ptr + 8, DT.is_block())
    tl.store(out_ptr + 9, DT.is_void())
    tl.store(out_ptr + 10, DT.is_const())
    tl.store(out_ptr + 11, DT.is_int1())
    tl.store(out_ptr + 12, DT.is_int8())
    tl.store(out_ptr + 13, DT.is_int16())
    tl.store(out_ptr + 14, DT.is_int32())
    tl.store(out_ptr + 15, DT.is_int64())
    tl.store(out_ptr + 16, DT.is_uint8())
    tl.store(out_ptr + 17, DT.is_uint16())
    tl.store(out_ptr + 18, DT.is_uint32())
    tl.store(out_ptr + 19, DT.is_uint64())
    tl.store(out_ptr + 20, DT.is_fp16())
    tl.store(out_ptr + 21, DT.is_bf16())
    tl.store(out_ptr + 22, DT.is_fp32())
    tl.store(out_ptr + 23, DT.is_fp64())
    tl.store(out_ptr + 24, DT.is_fp8e4nv())
    tl.store(out_ptr + 25, DT.is_fp8e5())
    tl.store(out_ptr + 26, DT.is_fp8e4b15())
    tl.store(out_ptr + 27, DT.is_fp8e4b8())
    tl.store(out_ptr + 28, DT.is_fp8e5b16())


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_every_predicate_of_every_dtype_answers_as_the_host_does(backend, dt):
    out = backend.zeros(len(PREDICATES), np.int32)
    predicates_kernel[(1,)](out, DT=dt)
    want = [int(getattr(dt, name)()) for name in PREDICATES]
    assert backend.numpy(out).tolist() == want, dict(zip(PREDICATES, backend.numpy(out).tolist()))


def test_the_host_follows_tritons_name_lists():
    assert tl.int1.is_int_unsigned() and not tl.int1.is_int_signed() and tl.int1.is_int()
    assert not tl.pointer_type(tl.float32).is_int() and tl.pointer_type(tl.int8).is_ptr()
    assert tl.int1.get_int_max_value() == 1 and tl.uint64.get_int_max_value() == 2**64 - 1


@tegula.jit
def int_limits_kernel(out_ptr, DT: tl.constexpr):
    tl.store(out_ptr + 0, DT.get_int_max_value())
    tl.store(out_ptr + 1, DT.get_int_min_value())


@pytest.mark.parametrize("dt", (tl.int1, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.uint16, tl.uint32),
                         ids=str)
def test_integer_limits(backend, dt):
    out = backend.zeros(2, np.int64)
    int_limits_kernel[(1,)](out, DT=dt)
    assert backend.numpy(out).tolist() == [dt.get_int_max_value(), dt.get_int_min_value()]


@tegula.jit
def uint64_max_kernel(out_ptr):
    tl.static_assert(tl.uint64.get_int_max_value() == 18446744073709551615)
    tl.static_assert(tl.uint64.get_int_min_value() == 0)
    tl.store(out_ptr, tl.uint64.get_int_max_value())


def test_uint64_max_is_two_to_the_64_minus_one(backend):
    out = backend.zeros(1, np.uint64)
    uint64_max_kernel[(1,)](out)
    assert int(backend.numpy(out)[0]) == 2**64 - 1


@tegula.jit
def finite_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    # A conditional expression on a dtype method, and the methods of pointer and block types.
    finite = tl.abs(x) < float("inf") if x.dtype.is_fp64() else tl.abs(x.to(tl.float32)) < float("inf")
    tl.static_assert(x_ptr.dtype.is_ptr() and not x_ptr.dtype.is_floating())
    tl.static_assert(x_ptr.dtype.element_ty.is_floating() and x.type.is_block() and not x.type.is_fp32())
    if y_ptr.dtype.element_ty.is_int8():
        tl.store(y_ptr + offs, finite.to(tl.int8), mask=offs < n)
    else:
        tl.store(y_ptr + offs, finite, mask=offs < n)


@pytest.mark.parametrize("dtype", (np.float16, np.float32, np.float64))
@pytest.mark.parametrize("out_dtype", (np.int8, np.bool_))
def test_a_dtype_method_picks_the_code(backend, dtype, out_dtype):
    rng = np.random.default_rng(7)
    n = 37
    x = rng.standard_normal(n).astype(dtype)
    x[::5], x[1::7], x[2::9] = np.inf, -np.inf, np.nan
    y = backend.zeros(n, out_dtype)
    finite_kernel[(1,)](backend.array(x), y, n, BLOCK=64)
    np.testing.assert_array_equal(backend.numpy(y).astype(bool), np.isfinite(x))


@tegula.jit
def float_limit_kernel(out_ptr):
    tl.store(out_ptr, tl.float32.get_int_max_value())


@tegula.jit
def unknown_method_kernel(out_ptr):
    tl.store(out_ptr, tl.float32.is_fp12())


def test_wrong_uses_are_located_errors(backend):
    out = backend.zeros(1, np.int64)
    with pytest.raises(tegula.CompilationError, match=r"get_int_max_value of tl.float32, which is not an integer"):
        float_limit_kernel[(1,)](out)
    with pytest.raises(tegula.CompilationError, match=r"the constant tl.float32 has no attribute `is_fp12`"):
        unknown_method_kernel[(1,)](out)


@tegula.jit
def attributes_kernel(out_ptr, DT: tl.constexpr):
    if DT.is_floating():
        tl.store(out_ptr + 0, DT.fp_mantissa_width)
        tl.store(out_ptr + 1, DT.exponent_bias)
    else:
        tl.store(out_ptr + 0, DT.int_bitwidth)
        tl.store(out_ptr + 1, -1)
    tl.store(out_ptr + 2, DT.primitive_bitwidth)
    tl.static_assert(DT.name == "fp32" or DT.name != "fp32")


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_the_attributes_of_every_dtype_are_the_hosts(backend, dt):
    out = backend.zeros(3, np.int32)
    attributes_kernel[(1,)](out, DT=dt)
    if dt.is_floating():
        want = [dt.fp_mantissa_width, dt.exponent_bias, dt.primitive_bitwidth]
    else:
        want = [dt.int_bitwidth, -1, dt.primitive_bitwidth]
    assert backend.numpy(out).tolist() == want


@tegula.jit
def name_kernel(out_ptr, x_ptr):
    x = tl.load(x_ptr)
    tl.static_assert(x.dtype.name == "fp16" and tl.int8.name == "int8")
    tl.store(out_ptr, x.dtype.int_bitwidth if x.dtype.is_int() else 16)


def test_a_dtype_attribute_on_a_branch_not_taken_is_not_evaluated(backend):
    # int_bitwidth of a float is an error, but the conditional expression never evaluates it.
    out = backend.zeros(1, np.int32)
    name_kernel[(1,)](out, backend.array(np.ones(1, np.float16)))
    assert backend.numpy(out)[0] == 16


@tegula.constexpr_function
def _unsigned_like(dt):
    return tl.core.get_int_dtype(dt.primitive_bitwidth, False)


@tegula.jit
def bits_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), x.to(_unsigned_like(x.dtype), bitcast=True))


def test_get_int_dtype_picks_the_integer_type_of_a_width(backend):
    assert tl.core.get_int_dtype(16, True) == tl.int16 and tl.core.get_int_dtype(64, False) == tl.uint64
    assert tl.core.get_int_dtype(1, True) == tl.int1
    with pytest.raises(ValueError, match="no integer type of 24 bits"):
        tl.core.get_int_dtype(24, True)
    x = np.array([1.0, -2.5, np.inf, 0.0], np.float32)
    out = backend.zeros(4, np.uint32)
    bits_kernel[(1,)](backend.array(x), out, N=4)
    np.testing.assert_array_equal(backend.numpy(out), x.view(np.uint32))
