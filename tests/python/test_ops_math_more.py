"""The float library functions beyond the core ones, against float64 NumPy
references: tan, atan, asin, acos, sinh, cosh, asinh, acosh, atanh, erfc,
exp10, expm1, log10, log1p, cbrt, lgamma (an IR op each), rint, nearbyint, round,
trunc, atan2, hypot, copysign, nextafter, fmod, pow (float ** float and
float ** int), the classification functions isnan, isinf, isfinite, signbit,
and the NaN rules of minimum/maximum with and without propagate_nan. They
are reached as tl.<name>, tl.math.<name> and libdevice.<name> alike.

Transcendentals may be a few ulp off (the backends' math libraries: SLEEF or
libm on the CPU, CUDA's on the GPU); f16/bf16 compute in f32 and round once,
so they are within an ulp. The rounding functions, copysign, nextafter, fmod
and the classification are exact and compared exactly.
"""

import math

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.language.extra import libdevice
from ops_util import FLOATS, check, grid1, random, rng_for, round_to, to_f64

erfc = np.vectorize(math.erfc, otypes=[np.float64])

# name, float64 reference, input range
UNARY = [
    ("tan", np.tan, (-1.4, 1.4)),
    ("atan", np.arctan, (-20.0, 20.0)),
    ("asin", np.arcsin, (-1.0, 1.0)),
    ("acos", np.arccos, (-1.0, 1.0)),
    ("sinh", np.sinh, (-8.0, 8.0)),
    ("cosh", np.cosh, (-8.0, 8.0)),
    ("asinh", np.arcsinh, (-50.0, 50.0)),
    ("acosh", np.arccosh, (1.0, 60.0)),
    ("atanh", np.arctanh, (-0.99, 0.99)),
    ("erfc", erfc, (-3.0, 8.0)),
    ("exp10", lambda x: 10.0**x, (-4.0, 4.0)),
    ("expm1", np.expm1, (-1.0, 1.0)),
    ("log10", np.log10, (1e-3, 1e4)),
    ("log1p", np.log1p, (-0.9, 50.0)),
    ("cbrt", np.cbrt, (-100.0, 100.0)),
]


@tegula.jit
def _row(x_ptr, k, n, offs, m):
    return tl.load(x_ptr + k * n + offs, mask=m, other=0.5)


@tegula.jit
def unary_more_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + 0 * n + offs, tl.math.tan(_row(x_ptr, 0, n, offs, m)), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.atan(_row(x_ptr, 1, n, offs, m)), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.asin(_row(x_ptr, 2, n, offs, m)), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.extra.libdevice.acos(_row(x_ptr, 3, n, offs, m)), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.sinh(_row(x_ptr, 4, n, offs, m)), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.cosh(_row(x_ptr, 5, n, offs, m)), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.asinh(_row(x_ptr, 6, n, offs, m)), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.acosh(_row(x_ptr, 7, n, offs, m)), mask=m)
    tl.store(out_ptr + 8 * n + offs, libdevice.atanh(_row(x_ptr, 8, n, offs, m)), mask=m)
    tl.store(out_ptr + 9 * n + offs, libdevice.erfc(_row(x_ptr, 9, n, offs, m)), mask=m)
    tl.store(out_ptr + 10 * n + offs, libdevice.exp10(_row(x_ptr, 10, n, offs, m)), mask=m)
    tl.store(out_ptr + 11 * n + offs, libdevice.expm1(_row(x_ptr, 11, n, offs, m)), mask=m)
    tl.store(out_ptr + 12 * n + offs, tl.math.log10(_row(x_ptr, 12, n, offs, m)), mask=m)
    tl.store(out_ptr + 13 * n + offs, tl.log1p(_row(x_ptr, 13, n, offs, m)), mask=m)
    y = libdevice.cbrt(_row(x_ptr, 14, n, offs, m))
    tl.static_assert(y.dtype == x_ptr.dtype.element_ty, "math keeps the input dtype")
    tl.store(out_ptr + 14 * n + offs, y, mask=m)


@pytest.mark.parametrize("name", FLOATS)
def test_unary_functions(backend, name):
    n = 700
    rng = rng_for("unary_more", name)
    x = np.stack([random(rng, n, name, low=lo, high=hi) for _, _, (lo, hi) in UNARY])
    x[12, :2] = [1.0, 1000.0]  # log10 of powers of ten is exact in every library
    out = backend.zeros(x.shape, x.dtype)
    unary_more_kernel[grid1(n, 256)](backend.array(x), out, n, BLOCK=256)
    out = backend.numpy(out)
    for k, (fn, ref, _) in enumerate(UNARY):
        want = ref(to_f64(x[k]))
        if name in ("float16", "bfloat16"):
            floor = 2.0**-24 if name == "float16" else 2.0**-120
            check(out[k], want, name, ulps=1, atol=2 * floor, what=f"{name} {fn}")
        else:
            check(out[k], want, name, ulps=4, atol=4 * 2.0**-(23 if name == "float32" else 52),
                  what=f"{name} {fn}")


lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


@tegula.jit
def lgamma_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, libdevice.lgamma(tl.load(x_ptr + offs, mask=m, other=1.0)), mask=m)


@pytest.mark.parametrize("name", FLOATS)
def test_lgamma(backend, name):
    n = 1000
    rng = rng_for("lgamma", name)
    x = random(rng, n, name, low=0.01, high=40.0)
    # lgamma(1) = lgamma(2) = 0, gamma(0.5) = sqrt(pi), and negative non-integers: log|gamma(x)|.
    x[:5] = [1.0, 2.0, 0.5, -0.5, -2.5]
    out = backend.zeros(n, x.dtype)
    lgamma_kernel[grid1(n, 256)](backend.array(x), out, n, BLOCK=256)
    want = lgamma(to_f64(x))
    if name in ("float16", "bfloat16"):
        floor = 2.0**-24 if name == "float16" else 2.0**-120
        check(backend.numpy(out), want, name, ulps=1, atol=2 * floor, what=f"{name} lgamma")
    else:
        # The math libraries' lgamma is within a few ulp, in absolute terms near its zeros at 1 and 2.
        check(backend.numpy(out), want, name, ulps=8, atol=8 * 2.0**-(23 if name == "float32" else 52),
              what=f"{name} lgamma")


@tegula.jit
def small_arguments_kernel(x_ptr, out_ptr, B: tl.constexpr):
    i = tl.arange(0, B)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, libdevice.expm1(x))
    tl.store(out_ptr + B + i, libdevice.log1p(x))


def test_expm1_and_log1p_keep_precision_near_zero(backend):
    # exp(x) - 1 and log(1 + x) would lose every digit here.
    x = np.array([1e-10, -3e-9, 1e-20, 2.0**-30, 1e-6, -1e-7, 0.0, -0.0], np.float32)
    out = backend.zeros((2, 8), np.float32)
    small_arguments_kernel[(1,)](backend.array(x), out, B=8)
    out = backend.numpy(out)
    check(out[0], np.expm1(to_f64(x)), "float32", ulps=2, atol=0, what="expm1")
    check(out[1], np.log1p(to_f64(x)), "float32", ulps=2, atol=0, what="log1p")


# --- rounding to integers -----------------------------------------------------------


@tegula.jit
def rounding_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.rint(x))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.nearbyint(x))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.round(x))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.math.trunc(x))


def round_half_away(x):
    return np.where(np.isfinite(x), np.copysign(np.floor(np.abs(x) + 0.5), x), x)


@pytest.mark.parametrize("name", FLOATS)
def test_rint_round_trunc(backend, name):
    B = 64
    rng = rng_for("rounding", name)
    x = random(rng, B, name, low=-40.0, high=40.0)
    ties = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.3, 3.0, -0.0, np.inf, -np.inf, np.nan, 3e4]
    x[: len(ties)] = np.asarray(ties).astype(x.dtype)
    out = backend.zeros((4, B), x.dtype)
    rounding_kernel[(1,)](backend.array(x), out, BLOCK=B)
    out = backend.numpy(out)
    x64 = to_f64(x)
    refs = {"rint": np.rint(x64), "nearbyint": np.rint(x64), "round": round_half_away(x64), "trunc": np.trunc(x64)}
    for k, (fn, want) in enumerate(refs.items()):
        check(out[k], want, name, ulps=0, atol=0, what=f"{name} {fn}")
        # Signed zeros: trunc(-0.3) and rint(-0.5) are -0.0.
        assert (np.signbit(to_f64(out[k])) == np.signbit(want))[np.isfinite(want)].all(), (fn, out[k], want)


# --- two-operand functions -------------------------------------------------------------


def check_rounded(actual, want, name, **kw):
    """`check` against the float64 reference rounded to the result type (f16 overflows to inf)."""
    check(actual, round_to(want, name), name, **kw)


@tegula.jit
def binary_more_kernel(x_ptr, y_ptr, e_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    e = tl.load(e_ptr + offs, mask=m, other=1)  # int32 exponents
    tl.store(out_ptr + 0 * n + offs, libdevice.atan2(x, y), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.hypot(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.copysign(x, y), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.fmod(x, y), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.pow(tl.abs(x), y), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.pow(x, e), mask=m)
    tl.store(out_ptr + 6 * n + offs, x ** 3, mask=m)
    tl.store(out_ptr + 7 * n + offs, tl.abs(x) ** y, mask=m)


@pytest.mark.parametrize("name", FLOATS)
def test_binary_functions(backend, name):
    n = 500
    rng = rng_for("binary_more", name)
    x = random(rng, n, name, low=-5.0, high=5.0)
    y = random(rng, n, name, low=-3.0, high=3.0, nonzero=True)
    e = random(rng, n, "int32", low=-4, high=5)
    # atan2 in every quadrant and on the axes; fmod with every sign pair.
    corners = [(0.0, 1.0), (0.0, -1.0), (-0.0, -1.0), (1.0, 0.0), (-1.0, 0.0), (2.5, -2.0), (-2.5, 2.0),
               (-7.0, -2.0), (7.0, 2.0)]
    for i, (a, b) in enumerate(corners):
        x[i], y[i] = a, b
    out = backend.zeros((8, n), x.dtype)
    binary_more_kernel[grid1(n, 128)](*map(backend.array, (x, y, e)), out, n, BLOCK=128)
    out = backend.numpy(out)
    x64, y64 = to_f64(x), to_f64(y)
    half = name in ("float16", "bfloat16")
    ulps = 1 if half else 4
    floor = {"float16": 2.0**-23, "bfloat16": 2.0**-119, "float32": 2.0**-21, "float64": 2.0**-50}[name]
    with np.errstate(all="ignore"):
        check_rounded(out[0], np.arctan2(x64, y64), name, ulps=ulps, atol=floor, what=f"{name} atan2")
        check_rounded(out[1], np.hypot(x64, y64), name, ulps=ulps, atol=floor, what=f"{name} hypot")
        check_rounded(out[2], np.copysign(x64, y64), name, ulps=0, atol=0, what=f"{name} copysign")
        check_rounded(out[3], np.fmod(x64, y64), name, ulps=0, atol=0, what=f"{name} fmod")
        pow_ulps = 1 if half else 8
        check_rounded(out[4], np.power(np.abs(x64), y64), name, ulps=pow_ulps, atol=floor, what=f"{name} pow(|x|, y)")
        check_rounded(out[5], np.power(x64, e.astype(np.float64)), name, ulps=pow_ulps, atol=floor, what=f"{name} pow(x, int)")
        check_rounded(out[6], x64**3, name, ulps=pow_ulps, atol=floor, what=f"{name} x ** 3")
        check_rounded(out[7], np.power(np.abs(x64), y64), name, ulps=pow_ulps, atol=floor, what=f"{name} |x| ** y")
    assert np.signbit(out[0][2]) and not np.signbit(out[0][1]), "atan2(-0, -1) is -pi, atan2(0, -1) is pi"


@tegula.jit
def nextafter_kernel(x_ptr, y_ptr, out_ptr, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, libdevice.nextafter(tl.load(x_ptr + i), tl.load(y_ptr + i)))


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_nextafter(backend, name):
    dtype = np.dtype(name)
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([1.0, 1.0, 0.0, 0.0, -0.0, np.finfo(dtype).max, 3.0, np.nan, 1.5, -tiny, 5.0, 2.0, 1e-3, -1.0,
                  np.inf, -2.0], dtype)
    y = np.array([2.0, 0.0, 1.0, -1.0, 1.0, np.inf, 3.0, 1.0, np.nan, 1.0, -5.0, 2.5, 0.0, -2.0, 0.0, -np.inf],
                 dtype)
    out = backend.zeros(16, dtype)
    nextafter_kernel[(1,)](backend.array(x), backend.array(y), out, B=16)
    with np.errstate(over="ignore"):
        want = np.nextafter(x, y)
    check(backend.numpy(out), want, name, ulps=0, atol=0, what="nextafter")
    assert backend.numpy(out)[2] == tiny


# --- classification ----------------------------------------------------------------------


@tegula.jit
def classify_kernel(x_ptr, out_ptr, sign_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    nan = libdevice.isnan(x)
    tl.static_assert(nan.dtype == tl.int1, "isnan is a bool tile")
    s = libdevice.signbit(x)
    tl.static_assert(s.dtype == tl.int32, "signbit is int32, as Triton's libdevice")
    tl.store(out_ptr + 0 * BLOCK + offs, nan.to(tl.int8))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.isinf(x).to(tl.int8))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.isfinite(x).to(tl.int8))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.finitef(x).to(tl.int8))
    tl.store(sign_ptr + offs, s)


@pytest.mark.parametrize("name", FLOATS)
def test_classification(backend, name):
    B = 16
    rng = rng_for("classify", name)
    x = random(rng, B, name)
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0]
    x[: len(specials)] = np.asarray(specials).astype(x.dtype)
    x[1] = -np.abs(x[1])  # a NaN with its sign bit set
    out = backend.zeros((4, B), np.int8)
    sign = backend.zeros(B, np.int32)
    classify_kernel[(1,)](backend.array(x), out, sign, BLOCK=B)
    out, sign = backend.numpy(out), backend.numpy(sign)
    x64 = to_f64(x)
    check(out[0], np.isnan(x64), "int8", what="isnan")
    check(out[1], np.isinf(x64), "int8", what="isinf")
    check(out[2], np.isfinite(x64), "int8", what="isfinite")
    check(out[3], np.isfinite(x64), "int8", what="finitef")
    check(sign, np.signbit(x64).astype(np.int32), "int32", what="signbit")


# --- minimum / maximum and NaN ----------------------------------------------------------


@tegula.jit
def min_max_nan_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.maximum(x, y))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.minimum(x, y))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.NONE))
    # Triton 2's spelling (libdevice's fmax / fmin), still in libraries' kernels: elementwise, not the reduction.
    tl.store(out_ptr + 5 * BLOCK + offs, tl.math.max(x, y))
    tl.store(out_ptr + 6 * BLOCK + offs, tl.math.min(x, y))


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_minimum_maximum_nan_rules(backend, name):
    B = 32
    rng = rng_for("min_max_nan", name)
    x = random(rng, B, name)
    y = random(rng, B, name)
    pairs = [(np.nan, 1.0), (1.0, np.nan), (np.nan, np.nan), (np.nan, -np.inf), (np.inf, np.nan), (2.0, 3.0),
             (-np.inf, np.inf)]
    for i, (a, b) in enumerate(pairs):
        x[i], y[i] = a, b
    out = backend.zeros((7, B), x.dtype)
    min_max_nan_kernel[(1,)](backend.array(x), backend.array(y), out, BLOCK=B)
    out = backend.numpy(out)
    x64, y64 = to_f64(x), to_f64(y)
    # Default (and NONE): a NaN operand loses, as NumPy's fmax/fmin; ALL: any NaN wins, as maximum/minimum.
    check(out[0], np.fmax(x64, y64), name, ulps=0, atol=0, what="maximum")
    check(out[1], np.fmin(x64, y64), name, ulps=0, atol=0, what="minimum")
    check(out[2], np.maximum(x64, y64), name, ulps=0, atol=0, what="maximum(ALL)")
    check(out[3], np.minimum(x64, y64), name, ulps=0, atol=0, what="minimum(ALL)")
    check(out[4], np.fmax(x64, y64), name, ulps=0, atol=0, what="maximum(NONE)")
    check(out[5], np.fmax(x64, y64), name, ulps=0, atol=0, what="tl.math.max")
    check(out[6], np.fmin(x64, y64), name, ulps=0, atol=0, what="tl.math.min")


# --- constants fold ---------------------------------------------------------------------


@tegula.jit
def folded_kernel(out_ptr):
    tl.store(out_ptr + 0, libdevice.atan2(1.0, -1.0))
    tl.store(out_ptr + 1, libdevice.cbrt(27.0))
    tl.store(out_ptr + 2, libdevice.round(-2.5))
    tl.store(out_ptr + 3, libdevice.exp10(2.0))  # not folded (no host exp10): computed at run time


def test_constant_arguments(backend):
    out = backend.zeros(4, np.float32)
    folded_kernel[(1,)](out)
    check(backend.numpy(out), [3 * math.pi / 4, 3.0, -3.0, 100.0], "float32", ulps=1, atol=0)


# --- errors -------------------------------------------------------------------------------


@tegula.jit
def tan_of_int_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, libdevice.tan(tl.load(x_ptr)))


@tegula.jit
def nextafter_f16_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, libdevice.nextafter(x, x))


@tegula.jit
def pow_of_int_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, libdevice.pow(tl.load(x_ptr), 2.0))


def test_errors(backend):
    with pytest.raises(tegula.CompilationError, match=r"tl.tan needs a floating-point operand, but it is a scalar of "
                                                      r"type i32") as info:
        tan_of_int_kernel[(1,)](backend.zeros(1, np.int32), backend.zeros(1, np.float32))
    assert "test_ops_math_more.py:" in str(info.value) and "x.to(tl.float32)" in str(info.value)
    with pytest.raises(tegula.CompilationError, match="tl.nextafter takes float32 or float64 operands, not fp16"):
        nextafter_f16_kernel[(1,)](backend.zeros(1, np.float16), backend.zeros(1, np.float16))
    with pytest.raises(tegula.CompilationError, match="tl.pow needs a floating-point base"):
        pow_of_int_kernel[(1,)](backend.zeros(1, np.int32), backend.zeros(1, np.float32))


# --- the CUDA backend, without a GPU -----------------------------------------------------


def test_cuda_compiles_math_kernels_for_sm80_and_sm90(tmp_path):
    from cuda_compile_util import compile_for_cuda

    for arch in (80, 90):
        for t in ("fp32", "fp64", "bf16"):
            compile_for_cuda(unary_more_kernel, f"*{t}:16, *{t}:16, i32, 256", arch, tmp_path)
        compile_for_cuda(binary_more_kernel, "*fp32:16, *fp32:16, *i32:16, *fp32:16, i32, 128", arch, tmp_path)
        compile_for_cuda(classify_kernel, "*fp64:16, *i8:16, *i32:16, 16", arch, tmp_path)
        compile_for_cuda(rounding_kernel, "*fp16:16, *fp16:16, 64", arch, tmp_path)
        for t in ("fp32", "fp64"):
            compile_for_cuda(lgamma_kernel, f"*{t}:16, *{t}:16, i32, 256", arch, tmp_path)
