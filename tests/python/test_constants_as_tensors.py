"""Python constants are tensors where Triton makes them tensors: a number in
a kernel has a `dtype` (Triton's to_tensor: bool -> int1, int -> int32,
uint32 below 2**32, int64, uint64; float -> fp32, fp64 where fp32 would not
keep it), `.to()` and the other tensor methods, and a constant stored to
memory is converted from that type. Triton's tensor operators by name
(`x.__add__(y)`, `x.__rlt__(y)`, `x.logical_or(y)`) mean the operators.

Results are compared with NumPy on random data; the kernels are compiled by
the CUDA backend too (NVRTC, no GPU needed) where NVRTC loads.
"""

import math

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C

from cuda_compile_util import require_nvrtc
from ops_util import check, rng_for


@tegula.jit
def store_constant_kernel(out_ptr, VALUE: tl.constexpr):
    val = VALUE
    tl.store(out_ptr.to(tl.pointer_type(val.dtype)), val)


@tegula.jit
def for_iv_kernel(out_ptr, lo, hi, iv: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, iv):
        acc += i
    tl.store(out_ptr, acc)


@tegula.jit
def full_of_constant_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    value = 1
    output = tl.full([BLOCK], value=value, dtype=value.dtype)
    tl.store(out_ptr + offs, output, mask=offs < n)
    tl.store(out_ptr + BLOCK + offs, 3, mask=offs < n)
    tl.store(out_ptr + 2 * BLOCK + offs, 7, mask=False)


@tegula.jit
def float_operator_methods_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    two = 2
    three = 3.0
    a = x.__add__(two.to(tl.float32))
    b = x.__rsub__(1.0)
    c = two.__mul__(x)
    d = three.__truediv__(x)
    pick = x.__lt__(0.5).logical_or(x.__rge__(1.5))
    tl.store(out_ptr + offs, tl.where(pick, a, b) + c.__neg__() + d)


@tegula.jit
def int_operator_methods_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    mask = 0xFF
    a = x.__and__(mask).__xor__(x.__rshift__(3))
    b = x.__invert__().__or__(7).__floordiv__(5)
    c = x.__and__(15).__rlshift__(1)
    d = x.__mod__(11)
    keep = x.__gt__(0).logical_and(x.__ne__(17))
    tl.store(out_ptr + offs, tl.where(keep, a + b, c - d))


def _fp32_holds(v: float) -> bool:
    m = abs(v)
    return m == 0.0 or math.isinf(m) or math.isnan(m) or 2.0**-126 <= m <= float(np.finfo(np.float32).max)


def _constant_cases():
    rng = rng_for("store-constant")
    floats = [float(v) for v in rng.uniform(-1e6, 1e6, 3)] + [1e50, -3e-300, 1e-40, 1.0, 0.0]
    floats += [float("inf"), float("-inf"), float("nan")]
    ints = [int(v) for v in rng.integers(-(2**31), 2**31, 3)] + [int(rng.integers(2**31, 2**32))]
    ints += [int(rng.integers(2**32, 2**62)), -(2**40), 5]
    cases = [(v, "float32" if _fp32_holds(v) else "float64") for v in floats]
    for v in ints:
        dt = "int32" if -(2**31) <= v < 2**31 else "uint32" if 0 <= v < 2**32 else "int64"
        cases.append((v, dt))
    return cases + [(True, "bool"), (False, "bool")]


@pytest.mark.parametrize("value, dtype", _constant_cases(), ids=lambda v: str(v))
def test_a_constant_has_tritons_dtype_and_keeps_its_value(backend, value, dtype):
    out = backend.zeros(8, np.uint8)
    store_constant_kernel[(1,)](out, VALUE=value)
    got = backend.numpy(out)[: np.dtype(dtype).itemsize].view(dtype)[0]
    expected = np.array(value, dtype=dtype)
    if dtype.startswith("float") and math.isnan(value):
        assert np.isnan(got)
    else:
        assert got == expected, (value, dtype, got)


@pytest.mark.parametrize("step", [1, 2, 3, -1, -2, -3])
def test_a_constant_converted_with_to_accumulates_a_loop(backend, step):
    rng = rng_for("for-iv", step)
    lo = int(rng.integers(-(2**40), 2**40)) + 2**35
    hi = lo + int(rng.integers(5, 40)) * (1 if step > 0 else -1)
    out = backend.zeros(1, np.int64)
    for_iv_kernel[(1,)](out, lo, hi, step)
    assert backend.numpy(out)[0] == sum(range(lo, hi, step))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"])
def test_constants_filled_and_stored_convert_to_the_pointee(backend, dtype):
    block, n = 64, int(rng_for("full-constant", dtype).integers(1, 64))
    sentinel = np.full(3 * block, 9, dtype=dtype)
    out = backend.array(sentinel)
    full_of_constant_kernel[(1,)](out, n, BLOCK=block)
    expected = sentinel.copy()
    expected[:n] = 1
    expected[block:block + n] = 3
    check(backend.numpy(out), expected, dtype)


def test_float_operator_methods_are_the_operators(backend):
    x = rng_for("float-dunders").uniform(0.1, 2.0, 256).astype(np.float32)
    out = backend.zeros(256, np.float32)
    float_operator_methods_kernel[(1,)](backend.array(x), out, BLOCK=256)
    x64 = x.astype(np.float64)
    pick = (x64 < 0.5) | (1.5 >= x64)
    ref = np.where(pick, x64 + 2, 1 - x64) - 2 * x64 + 3.0 / x64
    check(backend.numpy(out), ref, "float32", ulps=8)


def test_int_operator_methods_are_the_operators(backend):
    x = rng_for("int-dunders").integers(-1000, 1000, 256).astype(np.int32)
    x[:4] = [17, 0, -1, 1]
    out = backend.zeros(256, np.int32)
    int_operator_methods_kernel[(1,)](backend.array(x), out, BLOCK=256)
    a = (x & 0xFF) ^ (x >> 3)
    b = (~x | 7).astype(np.int64)
    b = np.trunc(b / 5).astype(np.int32)  # C-style division, as Triton's `//` on ints
    c = np.left_shift(1, x & 15)
    d = np.fmod(x, 11)  # C-style remainder, as Triton's `%` on ints
    ref = np.where((x > 0) & (x != 17), a + b, c - d)
    check(backend.numpy(out), ref, "int32")


@pytest.mark.parametrize("arch", [90, 80])
def test_constant_kernels_compile_for_cuda(tmp_path, arch):
    require_nvrtc(arch)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch, cache_dir=str(tmp_path), keep_stages=True)
    raw = np.zeros(256, np.uint8)
    f32, i32, i64 = np.zeros(256, np.float32), np.zeros(256, np.int32), np.zeros(1, np.int64)
    for kernel, args, constexprs in [
        (store_constant_kernel, (raw,), dict(VALUE=1e50)),
        (store_constant_kernel, (raw,), dict(VALUE=2**31 + 7)),
        (for_iv_kernel, (i64, 2**35, 2**35 + 20), dict(iv=3)),
        (full_of_constant_kernel, (f32, 10), dict(BLOCK=64)),
        (float_operator_methods_kernel, (f32, f32), dict(BLOCK=256)),
        (int_operator_methods_kernel, (i32, i32), dict(BLOCK=256)),
    ]:
        request, _ = kernel._request_for(*args, **constexprs)
        _C.compile(request, options)
