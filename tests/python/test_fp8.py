"""fp8 (tl.float8e4nv = e4m3fn, tl.float8e5 = e5m2; tl.float8e4b15 and AMD's
fnuz formats have their own files, test_fp8e4b15.py and test_fp8_fnuz.py): conversions, storage,
arithmetic, bitcasts and tl.dot, against a NumPy reference written here.

NumPy has no fp8 type: fp8 data lives in uint8 arrays handed to kernels through
tegula.reinterpret. The reference below decodes the 256 codes of each format
from the format's definition and encodes by searching the nearest finite code
(ties to the even code, saturating at the largest finite value, NaN -> 0x7f),
so it shares nothing with the compiler's bit manipulation.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_compile_util import compile_for_cuda

FORMATS = {
    # name: (tl dtype, signature name, mantissa bits, bias, has_inf, max finite)
    "e4m3": (tl.float8e4nv, "fp8e4nv", 3, 7, False, 448.0),
    "e5m2": (tl.float8e5, "fp8e5", 2, 15, True, 57344.0),
}


def decode(codes: np.ndarray, fmt: str) -> np.ndarray:
    _, _, m, bias, has_inf, _ = FORMATS[fmt]
    codes = np.asarray(codes, dtype=np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent = (codes & 0x7F) >> m
    mantissa = codes & ((1 << m) - 1)
    value = np.where(exponent == 0, np.ldexp(mantissa.astype(np.float64), 1 - bias - m),
                     np.ldexp((mantissa + (1 << m)).astype(np.float64), exponent - bias - m))
    value = sign * value
    if has_inf:
        top = exponent == (0x7F >> m)
        value = np.where(top & (mantissa == 0), sign * np.inf, value)
        value = np.where(top & (mantissa != 0), np.nan, value)
    else:
        value = np.where((codes & 0x7F) == 0x7F, np.nan, value)
    return value


def encode(x: np.ndarray, fmt: str) -> np.ndarray:
    """float64 -> fp8 code: nearest finite value, ties to the even code, saturating; NaN -> 0x7f."""
    max_finite = FORMATS[fmt][5]
    x = np.asarray(x, dtype=np.float64)
    finite_codes = np.array([c for c in range(128) if np.isfinite(decode(np.array([c]), fmt)[0])])
    values = decode(finite_codes, fmt)  # increasing with the code
    a = np.minimum(np.abs(np.nan_to_num(x, nan=0.0, posinf=max_finite, neginf=-max_finite)), max_finite)
    hi = np.clip(np.searchsorted(values, a), 0, len(values) - 1)
    lo = np.clip(hi - 1, 0, len(values) - 1)
    d_lo, d_hi = a - values[lo], values[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (finite_codes[hi] % 2 == 0))
    code = np.where(pick_hi, finite_codes[hi], finite_codes[lo])
    code = code | np.where(np.signbit(x), 0x80, 0)
    return np.where(np.isnan(x), 0x7F, code).astype(np.uint8)


def interesting_values(fmt: str, rng) -> np.ndarray:
    """Every fp8 value, the midpoints between neighbours (rounding ties), the
    floats just beside each midpoint, values beyond the largest, and random ones."""
    finite = decode(np.arange(256), fmt)
    finite = np.unique(finite[np.isfinite(finite)])
    mids = (finite[:-1] + finite[1:]) / 2
    beside = np.concatenate([np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
                             np.nextafter(mids.astype(np.float32), np.float32(-np.inf))])
    big = FORMATS[fmt][5]
    extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big * 1.0625, big * 1.07, -big * 2, 1e30, 1e-30, -1e-30])
    rand = rng.standard_normal(300) * rng.choice([1e-3, 1.0, 100.0], 300)
    return np.concatenate([finite, mids, beside, extra, rand]).astype(np.float32)


# --- the reference itself ---------------------------------------------------------


def test_reference_decodes_the_formats():
    e4 = decode(np.arange(256), "e4m3")
    assert np.nanmax(e4) == 448 and e4[0x01] == 2.0**-9 and e4[0x08] == 2.0**-6 and e4[0x38] == 1.0
    assert np.isnan(e4[0x7F]) and np.isnan(e4[0xFF]) and np.isnan(e4).sum() == 2
    e5 = decode(np.arange(256), "e5m2")
    assert np.nanmax(e5[np.isfinite(e5)]) == 57344 and e5[0x01] == 2.0**-16 and e5[0x3C] == 1.0
    assert e5[0x7C] == np.inf and e5[0xFC] == -np.inf and np.isnan(e5).sum() == 6
    for fmt in FORMATS:  # every finite code encodes back to itself
        codes = np.arange(256)
        values = decode(codes, fmt)
        keep = np.isfinite(values)
        np.testing.assert_array_equal(encode(values[keep], fmt), codes[keep])


# --- kernels ---------------------------------------------------------------------------


@tegula.jit
def to_fp8_kernel(x_ptr, y_ptr, n, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x.to(DT), mask=mask)


@tegula.jit
def from_fp8_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def fp8_math_kernel(a_ptr, b_ptr, prod_ptr, sum32_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(prod_ptr + offs, a * b, mask=mask)                 # fp8 * fp8 stays fp8
    tl.store(sum32_ptr + offs, a + 1.5 * b.to(tl.float32), mask=mask)  # fp8 + f32 is f32
    tl.store(bits_ptr + offs, a.to(tl.int8, bitcast=True), mask=mask)


@tegula.jit
def fp8_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def launch_1d(kernel, n, *args, **meta):
    block = 128
    kernel[(tegula.cdiv(n, block),)](*args, n, BLOCK=block, **meta)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("src", [np.float32, np.float64, np.float16])
def test_to_fp8_rounds_to_nearest_even_and_saturates(backend, fmt, src):
    rng = np.random.default_rng(7)
    with np.errstate(over="ignore"):  # 1e30 is inf in float16
        x = interesting_values(fmt, rng).astype(src)
    n = x.size - 3  # a masked tail, not a power of two
    out = backend.full((x.size,), 0xAA, np.uint8)
    launch_1d(to_fp8_kernel, n, backend.array(x), tegula.reinterpret(out, FORMATS[fmt][0]), DT=FORMATS[fmt][0])
    got = backend.numpy(out)
    want = encode(x.astype(np.float64), fmt)
    nan = np.isnan(x[:n])
    np.testing.assert_array_equal(got[:n][~nan], want[:n][~nan])
    assert np.isnan(decode(got[:n][nan], fmt)).all()
    assert (got[n:] == 0xAA).all()


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("dst", [np.float32, np.float64, np.float16, np.int32])
def test_from_fp8_is_exact_for_all_codes(backend, fmt, dst):
    codes = np.arange(256, dtype=np.uint8)
    values = decode(codes, fmt)
    if dst is np.int32:
        codes = codes[np.isfinite(values)]
        values = values[np.isfinite(values)]
    out = backend.zeros((codes.size,), dst)
    launch_1d(from_fp8_kernel, codes.size, tegula.reinterpret(backend.array(codes), FORMATS[fmt][0]), out)
    want = np.trunc(values) if dst is np.int32 else values
    np.testing.assert_array_equal(backend.numpy(out).astype(np.float64), want.astype(dst).astype(np.float64))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_fp8_arithmetic_and_bitcast(backend, fmt):
    rng = np.random.default_rng(3)
    n = 300
    codes = rng.integers(0, 256, size=(2, n)).astype(np.uint8)
    a, b = decode(codes[0], fmt), decode(codes[1], fmt)
    dt = FORMATS[fmt][0]
    prod = backend.zeros((n,), np.uint8)
    sum32 = backend.zeros((n,), np.float32)
    bits = backend.zeros((n,), np.int8)
    fp8_math_kernel[(tegula.cdiv(n, 128),)](tegula.reinterpret(backend.array(codes[0]), dt),
                                            tegula.reinterpret(backend.array(codes[1]), dt),
                                            tegula.reinterpret(prod, dt), sum32, bits, n, BLOCK=128)
    want = encode(a * b, fmt)  # the product of two fp8 values is exact in f32, then rounds once
    got = backend.numpy(prod)
    ok = ~np.isnan(a * b)
    np.testing.assert_array_equal(got[ok], want[ok])
    assert np.isnan(decode(got[~ok], fmt)).all()
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(backend.numpy(sum32), (a + 1.5 * b).astype(np.float32))
    np.testing.assert_array_equal(backend.numpy(bits), codes[0].view(np.int8))


@pytest.mark.parametrize("fmts", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")])
def test_fp8_dot_accumulates_in_f32(backend, fmts):
    rng = np.random.default_rng(11)
    M, N, K = 32, 16, 32
    a = encode(rng.standard_normal((M, K)) * 4, fmts[0])
    b = encode(rng.standard_normal((K, N)) * 4, fmts[1])
    c = backend.zeros((M, N), np.float32)
    fp8_dot_kernel[(1,)](tegula.reinterpret(backend.array(a), FORMATS[fmts[0]][0]),
                         tegula.reinterpret(backend.array(b), FORMATS[fmts[1]][0]), c, M=M, N=N, K=K)
    want = decode(a, fmts[0]) @ decode(b, fmts[1])
    np.testing.assert_allclose(backend.numpy(c), want, rtol=1e-5, atol=1e-3)


@tegula.jit
def cast_to(x_ptr, T: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr).to(T).to(tl.float32))


def test_a_wrapper_reinterpreted_as_no_scalar_dtype_is_refused():
    # A wrapper built without tegula.reinterpret (a TensorWrapper subclass of Triton-ported code) meets the
    # launcher's own check, not a bare "bad argument type". (AMD's fnuz formats have their own tests,
    # test_fp8_fnuz.py.)
    from tegula._reinterpret import ReinterpretedArray

    for dtype in (tl.pointer_type(tl.float32), "uint8", tl.void):
        with pytest.raises(TypeError, match=r"argument 'x_ptr' of kernel 'cast_to' is reinterpreted as .*, which "
                                            r"Tegula has no type for"):
            cast_to[(1,)](ReinterpretedArray(np.zeros(4, np.uint8), dtype), T=tl.float32)


@tegula.jit
def rtz_e5m2_kernel(x_ptr, d_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m).to(tl.float8e5, fp_downcast_rounding="rtz"), mask=m)
    tl.store(y_ptr + BLOCK + offs, tl.load(d_ptr + offs, mask=m).to(tl.float8e5, fp_downcast_rounding="rtz"),
             mask=m)


def _e5m2_toward_zero(x: np.ndarray) -> np.ndarray:
    """The e5m2 bits of x rounded toward zero: the value of largest magnitude not above |x|, with x's sign;
    inf and NaN (with its sign) stay, a finite value past the largest finite one saturates there (57344)."""
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(ml_dtypes.float8_e5m2).astype(np.float64)
    finite = np.isfinite(values) & (codes < 0x80)  # the non-negative finite codes, ascending by value
    positive_codes, positive_values = codes[finite], values[finite]
    out = np.empty(x.shape, np.uint8)
    for i, v in enumerate(x.astype(np.float64)):
        if np.isnan(v):  # a quiet NaN of the same sign
            out[i] = 0x7E | (0x80 if np.signbit(v) else 0)
        elif np.isinf(v):
            out[i] = 0x7C if v > 0 else 0xFC
        else:
            k = np.searchsorted(positive_values, abs(v), side="right") - 1
            out[i] = positive_codes[k] | (0x80 if np.signbit(v) else 0)
    return out


def _assert_e5m2_codes(got: np.ndarray, want: np.ndarray) -> None:
    """Equal codes, except that a NaN may come back as a NaN of either sign (the GPU's cvt.rz.f16.f32 drops
    a NaN's sign)."""
    nan = (want & 0x7F) > 0x7C
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert ((got[nan] & 0x7F) > 0x7C).all(), got[nan]


def test_rtz_to_float8e5_truncates(backend):
    # Triton's test_typeconvert_downcast with rounding "rtz": float32 (and float64) to float8e5 toward zero,
    # subnormals, saturation, infinities and NaN included.
    rng = np.random.default_rng(31)
    n = 1000
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-26, 18, n))).astype(np.float32)
    x[:9] = [np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 0.0, -0.0, 57343.9]
    d = x.astype(np.float64) * (1 + 1e-12)  # float64 sources, a hair off every float32
    y = backend.zeros(2048, np.uint8)
    rtz_e5m2_kernel[(1,)](backend.array(x), backend.array(d), tegula.reinterpret(y, tl.float8e5), n, BLOCK=1024)
    got = backend.numpy(y)
    _assert_e5m2_codes(got[:n], _e5m2_toward_zero(x))
    _assert_e5m2_codes(got[1024:1024 + n], _e5m2_toward_zero(d))


def test_rtz_to_float8e5_as_sm90_compiles_it():
    # The CUDA path (cvt.rz.f16.f32, then the high byte) through NVRTC and ptxas, run in the CUDA emulator.
    from cuda_emulator import compile_cuda, emulate, require_emulator

    rng = np.random.default_rng(37)
    n = 500
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-26, 18, n))).astype(np.float32)
    x[:5] = [np.inf, -np.nan, 1e30, -0.0, 6e-8]
    d = x.astype(np.float64) * (1 - 1e-12)
    y = np.zeros(1024, np.uint8)
    compiled, _ = compile_cuda(rtz_e5m2_kernel, (x, d, tegula.reinterpret(y, tl.float8e5), n), dict(BLOCK=512))
    assert "tg_f32_to_f16_rz(" in compiled.source and "__double2float_rz(" in compiled.source
    require_emulator()
    emulate(rtz_e5m2_kernel, (1,), x, d, tegula.reinterpret(y, tl.float8e5), n, BLOCK=512)
    _assert_e5m2_codes(y[:n], _e5m2_toward_zero(x))
    _assert_e5m2_codes(y[512:512 + n], _e5m2_toward_zero(d))


def test_rtz_to_float8e4nv_is_an_error():
    @tegula.jit
    def rtz(x_ptr, y_ptr):
        tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e4nv, fp_downcast_rounding="rtz"))

    with pytest.raises(tegula.CompilationError, match="(?s)not supported for fp8e4nv results.*only float8e5 "
                                                      "rounds toward zero"):
        rtz[(1,)](np.zeros(4, np.float32), tegula.reinterpret(np.zeros(4, np.uint8), tl.float8e4nv))


def test_reinterpret_checks_the_element_size():
    with pytest.raises(ValueError, match="elements are 4 bytes"):
        tegula.reinterpret(np.zeros(4, np.float32), tl.float8e5)
    with pytest.raises(TypeError, match="scalar tl dtype"):
        tegula.reinterpret(np.zeros(4, np.uint8), tl.pointer_type(tl.float8e5))


def test_fp8_dtypes_on_the_host():
    assert str(tl.float8e4nv) == "fp8e4nv" and str(tl.float8e5) == "fp8e5"
    assert tl.float8e5.primitive_bitwidth == 8 and tl.float8e4nv.is_fp8() and tl.float8e5.is_floating()


@pytest.mark.parametrize("arch", [90, 80])
@pytest.mark.parametrize("sig", ["*fp32,*fp8e4nv,i32,fp8e4nv,128", "*fp64,*fp8e5,i32,fp8e5,128"])
def test_fp8_casts_compile_for_cuda(tmp_path, arch, sig):
    out = compile_for_cuda(to_fp8_kernel, sig, arch, tmp_path)
    assert ("cvt.rn.satfinite" in out) == (arch >= 89)


@pytest.mark.parametrize("arch", [90, 80])
def test_fp8_math_and_dot_compile_for_cuda(tmp_path, arch):
    compile_for_cuda(fp8_math_kernel, "*fp8e5,*fp8e5,*fp8e5,*fp32,*i8,i32,128", arch, tmp_path)
    compile_for_cuda(from_fp8_kernel, "*fp8e4nv,*fp16,i32,128", arch, tmp_path)
    compile_for_cuda(fp8_dot_kernel, "*fp8e4nv,*fp8e4nv,*fp32,64,64,32", arch, tmp_path)
