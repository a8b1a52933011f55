"""libdevice's directed roundings and conversions against exact references.

add/sub/mul/div/fma/rcp/sqrt_{rn,rz,rd,ru} and the conversions
double2float_*, int2float_*, ll2double_*, float2int_*... are computed on the
CPU in the hardware rounding mode set per operation (docs/backend-cpu.md) and
on CUDA by the intrinsics. The reference rounds the exact value (a fraction,
or the square root of one, compared through integers) to the float format in
each mode, so every result must match bit for bit: on random data across the
exponent range and planted ties, cancellations to zero, subnormals, overflow,
infinities and NaN.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.language.extra import libdevice
from exact_rounding import FORMATS, MODES, round_fraction, round_sqrt, same_bits
from ops_util import grid1, rng_for


def zero_sum_sign(a_negative, b_negative, mode):
    """The sign of an exact zero sum: of two zeros, theirs if they agree;
    otherwise -0 when rounding down, +0 else (IEEE 754 6.3)."""
    if a_negative == b_negative:
        return -1.0 if a_negative else 1.0
    return -1.0 if mode == "rd" else 1.0


def reference(op, mode, x, y, z, dtype):
    """op in add sub mul div fma rcp sqrt, on elements of `dtype`."""
    used = {"fma": (x, y, z), "rcp": (x,), "sqrt": (x,)}.get(op, (x, y))
    with np.errstate(all="ignore"):
        if not np.isfinite(used).all() or (op == "div" and y == 0) or (op == "rcp" and x == 0) or \
                (op == "sqrt" and x < 0):
            # inf and NaN results do not depend on the rounding
            nearest = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
                       "rcp": lambda: dtype(1) / x, "sqrt": lambda: np.sqrt(x),
                       "fma": lambda: dtype(float(x) * float(y) + float(z))}[op]()
            return dtype(nearest)
    fx, fy, fz = (Fraction(float(v)) if np.isfinite(v) else None for v in (x, y, z))
    if op == "sqrt":
        return dtype(x) if x == 0 else round_sqrt(fx, mode, dtype)
    v = {"add": lambda: fx + fy, "sub": lambda: fx - fy, "mul": lambda: fx * fy, "div": lambda: fx / fy,
         "rcp": lambda: 1 / fx, "fma": lambda: fx * fy + fz}[op]()
    if v != 0:
        return round_fraction(v, mode, dtype)
    if op in ("mul", "div"):  # the sign of a zero product or quotient is the signs' xor
        return dtype(math.copysign(0.0, math.copysign(1, x) * math.copysign(1, y)))
    if op == "fma":
        if fx * fy != 0:  # a cancellation: the rule of unequal signs
            product_negative, z_negative = False, True
        else:
            product_negative = math.copysign(1, x) * math.copysign(1, y) < 0
            z_negative = math.copysign(1, z) < 0
        return dtype(zero_sum_sign(product_negative, z_negative, mode) * 0.0)
    b = y if op == "add" else -y
    return dtype(zero_sum_sign(math.copysign(1, x) < 0, math.copysign(1, b) < 0, mode) * 0.0)


# --- data ---------------------------------------------------------------------------------


def operands(rng, n, dtype):
    """Three operand rows: random magnitudes over a wide range and planted
    ties, cancellations, subnormals, overflow and special values."""
    p, emin, emax = FORMATS[dtype]

    def wide(size, low, high):
        exponents = rng.integers(low, high, size)
        return (rng.choice([-1.0, 1.0], size) * np.ldexp(1 + rng.random(size), exponents)).astype(dtype)

    x, y, z = wide(n, -30, 30), wide(n, -30, 30), wide(n, -30, 30)
    k = 0

    def plant(xs, ys, zs=None):
        nonlocal k
        m = len(xs)
        x[k:k + m], y[k:k + m] = xs, ys
        if zs is not None:
            z[k:k + m] = zs
        k += m

    ones = np.ones(16, dtype)
    half_ulp = np.spacing(ones) / 2
    plant(ones + np.arange(16) * np.spacing(ones), half_ulp * rng.choice([-1, 1], 16))  # ties of a sum
    plant(x[:16], -x[:16], -x[:16] * y[:16])  # exact zeros: x - x, x * y - x * y
    tiny = np.ldexp(1.0, emin - p + 1)
    plant(np.array([tiny * 3, -tiny * 5, np.ldexp(1.0, emin) * 1.5, tiny], dtype),
          np.array([0.5, 0.25, 1 / 3, -1.5], dtype))  # subnormal products and quotients
    big = np.finfo(dtype).max
    plant(np.array([big, -big, big, big / 2, big], dtype), np.array([big, -big, 2, 3, -big], dtype))  # overflow
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 0.0, -0.0, 1.0], dtype)
    plant(specials, np.array([1.0, np.inf, 2.0, -0.0, -0.0, 0.0, 0.0, -np.inf], dtype),
          np.array([0.0, -0.0, 0.0, -0.0, -0.0, 0.0, 0.0, 1.0], dtype))
    plant(wide(32, emin + 10, emin + 40), wide(32, -40, -10), wide(32, emin - 10, emin + 20))  # near underflow
    return x, y, z


# --- the kernels --------------------------------------------------------------------------

ROUNDED = ["add", "sub", "mul", "div", "fma", "rcp", "sqrt"]


@tegula.jit
def rounded_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + 0 * n + offs, libdevice.add_rn(x, y), mask=m)
    tl.store(out_ptr + 1 * n + offs, libdevice.add_rz(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.add_rd(x, y), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.add_ru(x, y), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.sub_rn(x, y), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.sub_rz(x, y), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.sub_rd(x, y), mask=m)
    tl.store(out_ptr + 7 * n + offs, libdevice.sub_ru(x, y), mask=m)
    tl.store(out_ptr + 8 * n + offs, libdevice.mul_rn(x, y), mask=m)
    tl.store(out_ptr + 9 * n + offs, libdevice.mul_rz(x, y), mask=m)
    tl.store(out_ptr + 10 * n + offs, libdevice.mul_rd(x, y), mask=m)
    tl.store(out_ptr + 11 * n + offs, libdevice.mul_ru(x, y), mask=m)
    tl.store(out_ptr + 12 * n + offs, libdevice.div_rn(x, y), mask=m)
    tl.store(out_ptr + 13 * n + offs, libdevice.div_rz(x, y), mask=m)
    tl.store(out_ptr + 14 * n + offs, libdevice.div_rd(x, y), mask=m)
    tl.store(out_ptr + 15 * n + offs, libdevice.div_ru(x, y), mask=m)
    tl.store(out_ptr + 16 * n + offs, libdevice.fma_rn(x, y, z), mask=m)
    tl.store(out_ptr + 17 * n + offs, libdevice.fma_rz(x, y, z), mask=m)
    tl.store(out_ptr + 18 * n + offs, libdevice.fma_rd(x, y, z), mask=m)
    tl.store(out_ptr + 19 * n + offs, libdevice.fma_ru(x, y, z), mask=m)
    tl.store(out_ptr + 20 * n + offs, libdevice.rcp_rn(x), mask=m)
    tl.store(out_ptr + 21 * n + offs, libdevice.rcp_rz(x), mask=m)
    tl.store(out_ptr + 22 * n + offs, libdevice.rcp_rd(x), mask=m)
    tl.store(out_ptr + 23 * n + offs, libdevice.rcp_ru(x), mask=m)
    tl.store(out_ptr + 24 * n + offs, libdevice.sqrt_rn(tl.abs(x)), mask=m)
    tl.store(out_ptr + 25 * n + offs, libdevice.sqrt_rz(tl.abs(x)), mask=m)
    tl.store(out_ptr + 26 * n + offs, libdevice.sqrt_rd(tl.abs(x)), mask=m)
    tl.store(out_ptr + 27 * n + offs, libdevice.sqrt_ru(tl.abs(x)), mask=m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_directed_rounding(backend, dtype):
    n = 384
    x, y, z = operands(rng_for("libdevice-rounded", dtype.__name__), n, dtype)
    out = backend.zeros((len(ROUNDED) * 4, n), dtype)
    rounded_kernel[grid1(n, 128)](backend.array(x), backend.array(y), backend.array(z), out, n, BLOCK=128)
    out = backend.numpy(out)
    for i, op in enumerate(ROUNDED):
        for j, mode in enumerate(MODES):
            a = np.abs(x) if op == "sqrt" else x
            want = np.array([reference(op, mode, a[k], y[k], z[k], dtype) for k in range(n)], dtype)
            ok = same_bits(out[4 * i + j], want)
            bad = np.flatnonzero(~ok)[:5]
            assert ok.all(), f"{op}_{mode}: " + "; ".join(
                f"({a[k]!r}, {y[k]!r}, {z[k]!r}) -> {out[4 * i + j][k]!r}, want {want[k]!r}" for k in bad)


def test_reference_rounds_as_ieee():
    """The reference itself against values whose roundings are known."""
    one, ulp = Fraction(1), Fraction(1, 2**23)
    assert [round_fraction(one + ulp / 2, m, np.float32) for m in MODES] == [1.0, 1.0, 1.0, 1 + 2**-23]
    assert [round_fraction(-(one + ulp / 2), m, np.float32) for m in MODES] == [-1.0, -1.0, -1 - 2**-23, -1.0]
    assert round_fraction(one + 3 * ulp / 2, "rn", np.float32) == 1 + 2 * 2**-23  # tie to even
    big = Fraction(2) ** 128
    assert [round_fraction(big, m, np.float32) for m in MODES] == [np.inf, np.finfo(np.float32).max,
                                                                    np.finfo(np.float32).max, np.inf]
    assert round_fraction(Fraction(1, 2**150), "ru", np.float32) == np.float32(2.0**-149)
    assert round_fraction(Fraction(1, 2**150), "rn", np.float32) == 0.0  # a tie with 0, which is even
    assert round_sqrt(Fraction(2), "rd", np.float64) == math.sqrt(2) or round_sqrt(Fraction(2), "ru",
                                                                                     np.float64) == math.sqrt(2)


# --- conversions ------------------------------------------------------------------------------


@tegula.jit
def to_float_kernel(d_ptr, i_ptr, u_ptr, l_ptr, v_ptr, f_ptr, e_ptr, n, BLOCK: tl.constexpr):
    """Rows of f_ptr (f32): double2float, int2float, uint2float, ll2float,
    ull2float in rn rz rd ru; rows of e_ptr (f64): ll2double, ull2double,
    then int2double_rn and uint2double_rn."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(d_ptr + offs, mask=m)
    i = tl.load(i_ptr + offs, mask=m)
    u = tl.load(u_ptr + offs, mask=m)
    ll = tl.load(l_ptr + offs, mask=m)
    ull = tl.load(v_ptr + offs, mask=m)
    tl.store(f_ptr + 0 * n + offs, libdevice.double2float_rn(d), mask=m)
    tl.store(f_ptr + 1 * n + offs, libdevice.double2float_rz(d), mask=m)
    tl.store(f_ptr + 2 * n + offs, libdevice.double2float_rd(d), mask=m)
    tl.store(f_ptr + 3 * n + offs, libdevice.double2float_ru(d), mask=m)
    tl.store(f_ptr + 4 * n + offs, libdevice.int2float_rn(i), mask=m)
    tl.store(f_ptr + 5 * n + offs, libdevice.int2float_rz(i), mask=m)
    tl.store(f_ptr + 6 * n + offs, libdevice.int2float_rd(i), mask=m)
    tl.store(f_ptr + 7 * n + offs, libdevice.int2float_ru(i), mask=m)
    tl.store(f_ptr + 8 * n + offs, libdevice.uint2float_rn(u), mask=m)
    tl.store(f_ptr + 9 * n + offs, libdevice.uint2float_rz(u), mask=m)
    tl.store(f_ptr + 10 * n + offs, libdevice.uint2float_rd(u), mask=m)
    tl.store(f_ptr + 11 * n + offs, libdevice.uint2float_ru(u), mask=m)
    tl.store(f_ptr + 12 * n + offs, libdevice.ll2float_rn(ll), mask=m)
    tl.store(f_ptr + 13 * n + offs, libdevice.ll2float_rz(ll), mask=m)
    tl.store(f_ptr + 14 * n + offs, libdevice.ll2float_rd(ll), mask=m)
    tl.store(f_ptr + 15 * n + offs, libdevice.ll2float_ru(ll), mask=m)
    tl.store(f_ptr + 16 * n + offs, libdevice.ull2float_rn(ull), mask=m)
    tl.store(f_ptr + 17 * n + offs, libdevice.ull2float_rz(ull), mask=m)
    tl.store(f_ptr + 18 * n + offs, libdevice.ull2float_rd(ull), mask=m)
    tl.store(f_ptr + 19 * n + offs, libdevice.ull2float_ru(ull), mask=m)
    tl.store(e_ptr + 0 * n + offs, libdevice.ll2double_rn(ll), mask=m)
    tl.store(e_ptr + 1 * n + offs, libdevice.ll2double_rz(ll), mask=m)
    tl.store(e_ptr + 2 * n + offs, libdevice.ll2double_rd(ll), mask=m)
    tl.store(e_ptr + 3 * n + offs, libdevice.ll2double_ru(ll), mask=m)
    tl.store(e_ptr + 4 * n + offs, libdevice.ull2double_rn(ull), mask=m)
    tl.store(e_ptr + 5 * n + offs, libdevice.ull2double_rz(ull), mask=m)
    tl.store(e_ptr + 6 * n + offs, libdevice.ull2double_rd(ull), mask=m)
    tl.store(e_ptr + 7 * n + offs, libdevice.ull2double_ru(ull), mask=m)
    tl.store(e_ptr + 8 * n + offs, libdevice.int2double_rn(i), mask=m)
    tl.store(e_ptr + 9 * n + offs, libdevice.uint2double_rn(u), mask=m)


def round_exact(v, mode, dtype):
    if isinstance(v, float) and (not math.isfinite(v) or v == 0):
        return dtype(v)
    return round_fraction(Fraction(v), mode, dtype)


def test_conversions_to_float(backend):
    n = 256
    rng = rng_for("libdevice-to-float")
    d = (rng.choice([-1.0, 1.0], n) * np.ldexp(1 + rng.random(n), rng.integers(-160, 140, n))).astype(np.float64)
    d[:8] = [np.inf, -np.inf, np.nan, -0.0, 1 + 2**-24, -(1 + 3 * 2**-24), 2.0**-150, 3.5e38]
    i = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    u = rng.integers(0, 2**32, n, dtype=np.uint32)
    ll = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    ull = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    i[:3], u[:3] = [2**24 + 1, -(2**24 + 3), 2**31 - 1], [2**24 + 1, 2**32 - 1, 2**25 + 2]
    ll[:3], ull[:3] = [2**53 + 1, -(2**63), 2**63 - 1], [2**53 + 1, 2**64 - 1, 2**63 + 2**10 + 1]
    f = backend.zeros((20, n), np.float32)
    e = backend.zeros((10, n), np.float64)
    to_float_kernel[grid1(n, 64)](*(backend.array(a) for a in (d, i, u, ll, ull)), f, e, n, BLOCK=64)
    f, e = backend.numpy(f), backend.numpy(e)
    rows = [(f, 4 * k + j, src, mode, np.float32) for k, src in enumerate((d, i, u, ll, ull))
            for j, mode in enumerate(MODES)]
    rows += [(e, 4 * k + j, src, mode, np.float64) for k, src in enumerate((ll, ull)) for j, mode in enumerate(MODES)]
    rows += [(e, 8, i, "rn", np.float64), (e, 9, u, "rn", np.float64)]
    for out, row, src, mode, dtype in rows:
        want = np.array([round_exact(v.item(), mode, dtype) for v in src], dtype)
        ok = same_bits(out[row], want)
        assert ok.all(), (row, mode, [(src[k], out[row][k], want[k]) for k in np.flatnonzero(~ok)[:4]])


@tegula.jit
def to_int_kernel(x_ptr, d_ptr, i_ptr, l_ptr, n, BLOCK: tl.constexpr):
    """Rows of i_ptr (i32): float2int, float2uint, double2int, double2uint;
    of l_ptr (i64): float2ll, float2ull, double2ll, double2ull; then llrint
    and llround of f32 and f64. Each in rn rz rd ru."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    d = tl.load(d_ptr + offs, mask=m)
    tl.store(i_ptr + 0 * n + offs, libdevice.float2int_rn(x), mask=m)
    tl.store(i_ptr + 1 * n + offs, libdevice.float2int_rz(x), mask=m)
    tl.store(i_ptr + 2 * n + offs, libdevice.float2int_rd(x), mask=m)
    tl.store(i_ptr + 3 * n + offs, libdevice.float2int_ru(x), mask=m)
    tl.store(i_ptr + 4 * n + offs, libdevice.float2uint_rn(x), mask=m)
    tl.store(i_ptr + 5 * n + offs, libdevice.float2uint_rz(x), mask=m)
    tl.store(i_ptr + 6 * n + offs, libdevice.float2uint_rd(x), mask=m)
    tl.store(i_ptr + 7 * n + offs, libdevice.float2uint_ru(x), mask=m)
    tl.store(i_ptr + 8 * n + offs, libdevice.double2int_rn(d), mask=m)
    tl.store(i_ptr + 9 * n + offs, libdevice.double2int_rz(d), mask=m)
    tl.store(i_ptr + 10 * n + offs, libdevice.double2int_rd(d), mask=m)
    tl.store(i_ptr + 11 * n + offs, libdevice.double2int_ru(d), mask=m)
    tl.store(i_ptr + 12 * n + offs, libdevice.double2uint_rn(d), mask=m)
    tl.store(i_ptr + 13 * n + offs, libdevice.double2uint_rz(d), mask=m)
    tl.store(i_ptr + 14 * n + offs, libdevice.double2uint_rd(d), mask=m)
    tl.store(i_ptr + 15 * n + offs, libdevice.double2uint_ru(d), mask=m)
    tl.store(l_ptr + 0 * n + offs, libdevice.float2ll_rn(x), mask=m)
    tl.store(l_ptr + 1 * n + offs, libdevice.float2ll_rz(x), mask=m)
    tl.store(l_ptr + 2 * n + offs, libdevice.float2ll_rd(x), mask=m)
    tl.store(l_ptr + 3 * n + offs, libdevice.float2ll_ru(x), mask=m)
    tl.store(l_ptr + 4 * n + offs, libdevice.float2ull_rn(x), mask=m)
    tl.store(l_ptr + 5 * n + offs, libdevice.float2ull_rz(x), mask=m)
    tl.store(l_ptr + 6 * n + offs, libdevice.float2ull_rd(x), mask=m)
    tl.store(l_ptr + 7 * n + offs, libdevice.float2ull_ru(x), mask=m)
    tl.store(l_ptr + 8 * n + offs, libdevice.double2ll_rn(d), mask=m)
    tl.store(l_ptr + 9 * n + offs, libdevice.double2ll_rz(d), mask=m)
    tl.store(l_ptr + 10 * n + offs, libdevice.double2ll_rd(d), mask=m)
    tl.store(l_ptr + 11 * n + offs, libdevice.double2ll_ru(d), mask=m)
    tl.store(l_ptr + 12 * n + offs, libdevice.double2ull_rn(d), mask=m)
    tl.store(l_ptr + 13 * n + offs, libdevice.double2ull_rz(d), mask=m)
    tl.store(l_ptr + 14 * n + offs, libdevice.double2ull_rd(d), mask=m)
    tl.store(l_ptr + 15 * n + offs, libdevice.double2ull_ru(d), mask=m)
    tl.store(l_ptr + 16 * n + offs, libdevice.llrint(x), mask=m)
    tl.store(l_ptr + 17 * n + offs, libdevice.llround(x), mask=m)
    tl.store(l_ptr + 18 * n + offs, libdevice.llrint(d), mask=m)
    tl.store(l_ptr + 19 * n + offs, libdevice.llround(d), mask=m)


def to_integer(v, mode, bits, signed):
    """The integer nearest v in `mode`, saturated to the type; NaN -> 0; the
    bits of an unsigned result read as signed (Triton's result dtypes)."""
    if math.isnan(v):
        return 0
    if math.isinf(v):
        r = v
    else:
        f = Fraction(v)
        r = {"rz": math.trunc(f), "rd": math.floor(f), "ru": math.ceil(f), "rn": round(f),
             "away": math.floor(abs(f) + Fraction(1, 2)) * (1 if f >= 0 else -1)}[mode]
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    r = int(min(max(r, lo), hi))
    return r - 2**bits if r >= 2 ** (bits - 1) else r


def test_conversions_to_integers(backend):
    n = 256
    rng = rng_for("libdevice-to-int")
    halves = rng.integers(-2**20, 2**20, n) / 2  # ties: x.5
    x = np.where(rng.random(n) < 0.3, halves, rng.standard_normal(n) * 10.0**rng.integers(0, 21, n))
    x[:10] = [np.nan, np.inf, -np.inf, 2.5, -2.5, 0.5, -0.5, 3e9, -3e9, 1e19]
    x = x.astype(np.float32)
    d = x.astype(np.float64) + np.where(rng.random(n) < 0.5, 0.0, 2.0**-40)
    out_i = backend.zeros((16, n), np.int32)
    out_l = backend.zeros((20, n), np.int64)
    to_int_kernel[grid1(n, 64)](backend.array(x), backend.array(d), out_i, out_l, n, BLOCK=64)
    out_i, out_l = backend.numpy(out_i), backend.numpy(out_l)
    cases = []
    for k, (src, signed) in enumerate(((x, True), (x, False), (d, True), (d, False))):
        cases += [(out_i, 4 * k + j, src, mode, 32, signed) for j, mode in enumerate(MODES)]
        cases += [(out_l, 4 * k + j, src, mode, 64, signed) for j, mode in enumerate(MODES)]
    cases += [(out_l, 16, x, "rn", 64, True), (out_l, 17, x, "away", 64, True),
              (out_l, 18, d, "rn", 64, True), (out_l, 19, d, "away", 64, True)]
    for out, row, src, mode, bits, signed in cases:
        want = np.array([to_integer(float(v), mode, bits, signed) for v in src], np.int64)
        ok = out[row].astype(np.int64) == want
        assert ok.all(), (row, mode, bits, signed, [(src[k], out[row][k], want[k]) for k in np.flatnonzero(~ok)[:4]])


# --- the CUDA backend, without a GPU -----------------------------------------------------


def test_cuda_compiles_rounding_kernels(tmp_path):
    from cuda_compile_util import compile_for_cuda

    for arch in (80, 90):
        for t in ("fp32", "fp64"):
            source = compile_for_cuda(rounded_kernel, f"*{t}:16, *{t}:16, *{t}:16, *{t}:16, i32, 128", arch, tmp_path,
                                      emit="cuda,ptx,ptxas")
            r = "f" if t == "fp32" else "d"
            for op in ("add", "sub", "mul", "div", "sqrt"):
                assert f"__{r}{op}_rd(" in source and f"__{r}{op}_ru(" in source
            assert ("__fmaf_rz(" if t == "fp32" else "__fma_rz(") in source
        source = compile_for_cuda(to_float_kernel, "*fp64:16, *i32:16, *u32:16, *i64:16, *u64:16, *fp32:16, *fp64:16, "
                                  "i32, 64", arch, tmp_path, emit="cuda,ptx,ptxas")
        for name in ("__double2float_rd(", "__int2float_ru(", "__uint2float_rz(", "__ll2float_rd(", "__ull2double_ru("):
            assert name in source
        compile_for_cuda(to_int_kernel, "*fp32:16, *fp64:16, *i32:16, *i64:16, i32, 64", arch, tmp_path)


@tegula.jit
def round_to_nearest_kernel(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.store(q_ptr + offs, libdevice.div_rn(x, y), mask=m)
    tl.store(r_ptr + offs, libdevice.sqrt_rn(tl.abs(x)), mask=m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_libdevice_div_rn_and_sqrt_rn_are_ieee(backend, dtype):
    # libdevice's names for tl.div_rn and tl.sqrt_rn: IEEE division and square root.
    rng = np.random.default_rng(31)
    n = 45
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    q, r = backend.zeros(n, dtype), backend.zeros(n, dtype)
    round_to_nearest_kernel[(1,)](backend.array(x), backend.array(y), q, r, n, BLOCK=64)
    np.testing.assert_array_equal(backend.numpy(q), x / y)
    np.testing.assert_array_equal(backend.numpy(r), np.sqrt(np.abs(x)))
