"""Math functions against float64 NumPy references: exp, exp2, log, log2,
sqrt, sqrt_rn, rsqrt, abs, sin, cos, tanh (also through tl.extra.libdevice
and `from tegula.language.extra import libdevice`), sigmoid, erf, floor,
ceil, fma, div_rn, fdiv, umulhi and cdiv, through `tl.`, `tl.math.` and the
tile methods.

Transcendentals are "accurate to a few ulp" (docs/ir.md): f32/f64 results
may be 4 ulp off the exact value; f16/bf16 are computed in f32 and rounded
once, so they may be 1 ulp off. sqrt, floor, ceil, abs, fma and division
are exact operations and are checked to half an ulp (f16/bf16: 1 ulp).
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.language.extra import libdevice
from ops_util import FLOATS, c_div, check, erf, grid1, random, rng_for, round_to, to_f64, umulhi

UNARY = ["exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "abs", "sin", "cos", "tanh",
         "libdevice.tanh", "tl.extra.libdevice.tanh", "sigmoid", "erf", "floor", "ceil",
         "math.exp", "math.log", "math.sqrt", "x.exp()", "x.abs()", "abs(x)"]


@tegula.jit
def unary_math_kernel(x_ptr, p_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)  # any sign
    p = tl.load(p_ptr + offs, mask=m, other=1.0)  # positive
    tl.store(out_ptr + 0 * n + offs, tl.exp(x), mask=m)
    tl.store(out_ptr + 1 * n + offs, tl.exp2(x), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.log(p), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.log2(p), mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.sqrt(p), mask=m)
    tl.store(out_ptr + 5 * n + offs, tl.sqrt_rn(p), mask=m)
    tl.store(out_ptr + 6 * n + offs, tl.rsqrt(p), mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.abs(x), mask=m)
    tl.store(out_ptr + 8 * n + offs, tl.sin(x), mask=m)
    tl.store(out_ptr + 9 * n + offs, tl.cos(x), mask=m)
    tl.store(out_ptr + 10 * n + offs, tl.tanh(x), mask=m)
    tl.store(out_ptr + 11 * n + offs, libdevice.tanh(x), mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.extra.libdevice.tanh(x), mask=m)
    tl.store(out_ptr + 13 * n + offs, tl.sigmoid(x), mask=m)
    tl.store(out_ptr + 14 * n + offs, tl.erf(x), mask=m)
    tl.store(out_ptr + 15 * n + offs, tl.floor(x), mask=m)
    tl.store(out_ptr + 16 * n + offs, tl.ceil(x), mask=m)
    tl.store(out_ptr + 17 * n + offs, tl.math.exp(x), mask=m)
    tl.store(out_ptr + 18 * n + offs, tl.math.log(p), mask=m)
    tl.store(out_ptr + 19 * n + offs, tl.math.sqrt(p), mask=m)
    tl.store(out_ptr + 20 * n + offs, x.exp(), mask=m)
    tl.store(out_ptr + 21 * n + offs, x.abs(), mask=m)
    tl.store(out_ptr + 22 * n + offs, abs(x), mask=m)
    y = tl.exp(x)
    tl.static_assert(y.dtype == x.dtype, "math keeps the input dtype")


def unary_references(x64, p64):
    sigmoid = 1 / (1 + np.exp(-x64))
    return {
        "exp": np.exp(x64), "exp2": np.exp2(x64), "log": np.log(p64), "log2": np.log2(p64),
        "sqrt": np.sqrt(p64), "sqrt_rn": np.sqrt(p64), "rsqrt": 1 / np.sqrt(p64), "abs": np.abs(x64),
        "sin": np.sin(x64), "cos": np.cos(x64), "tanh": np.tanh(x64), "libdevice.tanh": np.tanh(x64),
        "tl.extra.libdevice.tanh": np.tanh(x64), "sigmoid": sigmoid, "erf": erf(x64),
        "floor": np.floor(x64), "ceil": np.ceil(x64), "math.exp": np.exp(x64), "math.log": np.log(p64),
        "math.sqrt": np.sqrt(p64), "x.exp()": np.exp(x64), "x.abs()": np.abs(x64), "abs(x)": np.abs(x64),
    }


EXACT = {"sqrt", "sqrt_rn", "math.sqrt", "abs", "floor", "ceil", "x.abs()", "abs(x)"}


@pytest.mark.parametrize("name", FLOATS)
def test_unary_math(backend, name):
    n = 1000
    rng = rng_for("unary", name)
    x = random(rng, n, name, low=-6.0, high=6.0)
    x[:4] = [0.0, -0.0, 2.5, -2.5]  # floor/ceil/abs at integers, halves and signed zeros
    p = random(rng, n, name, low=0.01, high=200.0)
    out = backend.zeros((len(UNARY), n), x.dtype)
    unary_math_kernel[grid1(n, 256)](backend.array(x), backend.array(p), out, n, BLOCK=256)
    out = backend.numpy(out)
    refs = unary_references(to_f64(x), to_f64(p))
    for fn, got in zip(UNARY, out):
        want = refs[fn]
        if name in ("float16", "bfloat16"):
            # Computed in f32, rounded once: within one ulp of the exact result.
            check(got, want, name, ulps=1, atol=2 * 2.0**-24 if name == "float16" else 2.0**-120,
                  what=f"{name} {fn}")
        elif fn in EXACT:
            check(got, round_to(want, name), name, ulps=0, atol=0, what=f"{name} {fn}")
        else:
            # sin/cos near their zeros and erf/tanh are compared with an
            # absolute floor of a few ulp of 1.
            check(got, want, name, ulps=4, atol=4 * 2.0**-(23 if name == "float32" else 52),
                  what=f"{name} {fn}")


@tegula.jit
def special_values_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.exp(x))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.log(x))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.sqrt(x))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.abs(x))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.floor(x))
    tl.store(out_ptr + 5 * BLOCK + offs, tl.tanh(x))
    tl.store(out_ptr + 6 * BLOCK + offs, tl.sigmoid(x))


def test_special_values_f32(backend):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -1.0, 100.0, -100.0] * 2, np.float32)
    out = backend.zeros((7, 16), np.float32)
    special_values_kernel[(1,)](backend.array(x), out, BLOCK=16)
    out = backend.numpy(out)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        refs = [np.exp(x64), np.log(x64), np.sqrt(x64), np.abs(x64), np.floor(x64), np.tanh(x64),
                1 / (1 + np.exp(-x64))]
    for k, want in enumerate(refs):
        check(out[k], round_to(want, "float32"), "float32", ulps=4, what=f"special values, function {k}")
    assert np.signbit(out[3]).sum() == 0, "abs(-0.0) must be +0.0"


@tegula.jit
def binary_math_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1.0)
    b = tl.load(b_ptr + offs, mask=m, other=1.0)
    c = tl.load(c_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + 0 * n + offs, tl.fma(a, b, c), mask=m)
    tl.store(out_ptr + 1 * n + offs, tl.math.fma(a, b, c), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.div_rn(a, b), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.fdiv(a, b), mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.math.div_rn(a, b), mask=m)


@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
def test_fma_and_division(backend, name):
    n = 300
    rng = rng_for("binary_math", name)
    a = random(rng, n, name, low=0.5, high=4.0)
    b = random(rng, n, name, low=0.5, high=4.0)
    c = random(rng, n, name, low=-4.0, high=4.0)
    if name != "float16":
        # a*b + c where the unfused product would round away the answer:
        # (1 + e)(1 - e) - 1 = -e^2 exactly only with a single rounding.
        e = 2.0**-13 if name == "float32" else 2.0**-30
        a[:3], b[:3], c[:3] = 1 + e, 1 - e, -1.0
    out = backend.zeros((5, n), a.dtype)
    binary_math_kernel[grid1(n, 128)](*map(backend.array, (a, b, c)), out, n, BLOCK=128)
    out = backend.numpy(out)
    a64, b64, c64 = to_f64(a), to_f64(b), to_f64(c)
    fma = a64 * b64 + c64  # exact in f64 for f16/f32 inputs
    if name == "float64":
        fma[:3] = -(2.0**-60)  # the exact value; a*b+c in f64 arithmetic gives 0
    ulps = 1 if name == "float16" else 0.5
    check(out[0], fma, name, ulps=ulps, atol=0, what=f"{name} fma")
    check(out[1], fma, name, ulps=ulps, atol=0, what=f"{name} tl.math.fma")
    quotient = a64 / b64
    for k, what in [(2, "div_rn"), (3, "fdiv"), (4, "tl.math.div_rn")]:
        # fdiv is the fast division: Triton allows it 2 ulp.
        check(out[k], quotient, name, ulps=2 if what == "fdiv" else ulps, atol=0, what=f"{name} {what}")


@tegula.jit
def umulhi_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.umulhi(x, y), mask=m)


# int16 once came out wrong on the CPU: GCC vectorized its high half as a signed one.
@pytest.mark.parametrize("name", ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"])
def test_umulhi(backend, name):
    n = 200
    rng = rng_for("umulhi", name)
    x = random(rng, n, name)
    y = random(rng, n, name)
    out = backend.zeros(n, x.dtype)
    umulhi_kernel[grid1(n, 64)](backend.array(x), backend.array(y), out, n, BLOCK=64)
    check(backend.numpy(out), umulhi(x, y), name, what=f"umulhi {name}")


@tegula.jit
def cdiv_kernel(x_ptr, d_ptr, out_ptr, scalar_out_ptr, n, d, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    dv = tl.load(d_ptr + offs, mask=m, other=1)
    tl.store(out_ptr + offs, tl.cdiv(x, dv), mask=m)
    tl.store(out_ptr + n + offs, tl.math.cdiv(x, 7), mask=m)
    # On runtime scalars and on constants (folded at compile time).
    tl.store(scalar_out_ptr + 0, tl.cdiv(n, d))
    tl.store(scalar_out_ptr + 1, tegula.cdiv(n, BLOCK))
    tl.store(scalar_out_ptr + 2, tl.cdiv(BLOCK, 48))


def test_cdiv(backend):
    n, block, d = 1000, 128, 24
    rng = rng_for("cdiv")
    x = random(rng, n, "int32", low=0, high=1 << 20)
    dv = random(rng, n, "int32", low=1, high=100)
    out = backend.zeros(2 * n, np.int32)
    scalars = backend.zeros(3, np.int32)
    cdiv_kernel[grid1(n, block)](backend.array(x), backend.array(dv), out, scalars, n, d, BLOCK=block)
    out, scalars = backend.numpy(out), backend.numpy(scalars)
    check(out[:n], c_div(x + dv - 1, dv), "int32", what="tl.cdiv tile")
    check(out[n:], c_div(x + 6, np.int32(7)), "int32", what="tl.math.cdiv tile")
    assert scalars.tolist() == [-(-n // d), -(-n // block), -(-block // 48)]


@tegula.jit
def int_math_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.abs(x))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.floor(x))  # identity on integers
    tl.store(out_ptr + 2 * BLOCK + offs, tl.ceil(x))


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint16"])
def test_abs_floor_ceil_on_integers(backend, name):
    B = 64
    rng = rng_for("int_math", name)
    x = random(rng, B, name)
    if name.startswith("int"):
        x[0] = np.iinfo(x.dtype).min  # abs(MIN) wraps to MIN
    out = backend.zeros((3, B), x.dtype)
    int_math_kernel[(1,)](backend.array(x), out, BLOCK=B)
    out = backend.numpy(out)
    with np.errstate(all="ignore"):
        check(out[0], np.abs(x), name, what=f"abs {name}")
    check(out[1], x, name, what=f"floor {name}")
    check(out[2], x, name, what=f"ceil {name}")


@tegula.jit
def math_on_int_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.exp(tl.load(x_ptr)))


def test_float_math_on_integers_is_rejected(backend):
    with pytest.raises(tegula.CompilationError, match="floating-point"):
        math_on_int_kernel[(1,)](backend.full(1, 1, np.int32), backend.zeros(1, np.float32))
