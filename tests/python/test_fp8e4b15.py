"""tl.float8e4b15 (fp8 e4m3 with exponent bias 15, Triton's format for
pre-Hopper NVIDIA GPUs): conversions, storage, arithmetic, bitcasts and tl.dot,
against a NumPy reference written here, on the backend under test and on the
CUDA backend's code through the host emulator (tests/python/cuda_emulator.h).

The format has no infinities and no NaN: S.1111.111 is +-1.875. Conversions
to it follow Triton's: round to nearest, ties away from zero, saturating at
+-1.75 (infinities too, by their sign; NaN becomes +1.75), so 0x7f and 0xff
come only from memory. `encode` below searches the nearest code; `triton_cuda_encode`
replays Triton's CUDA recipe (truncate to f16, clamp, add half a step) on the
bits, and the two are checked against each other.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import tegula
import tegula.language as tl

E4B15 = tl.float8e4b15
ALL_CODES = np.arange(256, dtype=np.uint8)


def decode(codes) -> np.ndarray:
    codes = np.asarray(codes, dtype=np.int64)
    e, m = (codes >> 3) & 0xF, codes & 0x7
    value = np.where(e == 0, np.ldexp(m.astype(np.float64), -17), np.ldexp((m + 8).astype(np.float64), e - 18))
    return np.where(codes & 0x80, -value, value)


_SAT_CODES = np.arange(0x7F)          # every magnitude a conversion may give: 0 .. 1.75
_SAT_VALUES = decode(_SAT_CODES)      # increasing


def encode(x) -> np.ndarray:
    """float64 -> code: the nearest of 0 .. 1.75, ties to the larger magnitude, the sign bit kept; NaN -> +1.75."""
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(np.nan_to_num(x, nan=np.inf)), 1.75)
    hi = np.clip(np.searchsorted(_SAT_VALUES, a), 0, len(_SAT_VALUES) - 1)
    lo = np.clip(hi - 1, 0, len(_SAT_VALUES) - 1)
    pick_hi = (_SAT_VALUES[hi] - a) <= (a - _SAT_VALUES[lo])
    code = np.where(pick_hi, _SAT_CODES[hi], _SAT_CODES[lo])
    code = code | np.where(np.signbit(x), 0x80, 0)
    return np.where(np.isnan(x), 0x7E, code).astype(np.uint8)


def triton_cuda_encode(x32: np.ndarray) -> np.ndarray:
    """Triton's NVIDIA conversion, f32 -> f16 rounding toward zero, then on the
    f16 bits: clamp the magnitude at 0x3f00 (1.75; min.f16x2 gives it for NaN),
    double and add 0x80 (half an fp8 step, in the high byte), take the high byte
    and the sign. cvt.rz.f16.f32 gives the positive canonical NaN for every NaN
    (measured on an H200 over all 2^32 inputs)."""
    x32 = np.asarray(x32, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = x32.astype(np.float16)
        away = np.isfinite(x32) & (np.abs(h.astype(np.float32)) > np.abs(x32))
        h = np.where(away, np.nextafter(h, np.float16(0)), h)
        h = np.where(np.isfinite(x32) & np.isinf(h), np.copysign(np.float16(65504), x32).astype(np.float16), h)
    bits = np.where(np.isnan(x32), np.uint16(0x7FFF), h.view(np.uint16)).astype(np.uint32)
    mag = bits & 0x7FFF
    mag = np.where(np.isnan(h) | (mag > 0x3F00), 0x3F00, mag)
    return ((((mag * 2 + 0x80) >> 8) & 0x7F) | ((bits >> 8) & 0x80)).astype(np.uint8)


def interesting_values(rng) -> np.ndarray:
    """Every value, the midpoints between neighbours (ties), the floats beside
    them, values beyond 1.75 and below the smallest, and random ones."""
    values = np.unique(decode(ALL_CODES))
    mids = (values[:-1] + values[1:]) / 2
    beside = np.concatenate([np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
                             np.nextafter(mids.astype(np.float32), np.float32(-np.inf))])
    extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.8, 1.8125, 1.9, -1.875, 2.0, 7.0, 1e30,
                      2.0**-18, -2.0**-18, 2.0**-19, 1e-30, -1e-30])
    rand = rng.standard_normal(400) * rng.choice([1e-5, 1e-3, 0.1, 1.0], 400)
    return np.concatenate([values, mids, beside, extra, rand]).astype(np.float32)


def random_f32_bits(rng, n: int) -> np.ndarray:
    """Random float32 bit patterns, most of them in the format's range (exponent field 100 .. 130)."""
    bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    exponent = rng.integers(100, 131, size=n).astype(np.uint32)
    near = (bits & ~np.uint32(0x7F800000)) | (exponent << 23)
    return np.where(rng.random(n) < 0.9, near, bits).astype(np.uint32).view(np.float32)


# --- the reference itself ---------------------------------------------------------


def test_reference_decodes_the_format():
    v = decode(ALL_CODES)
    assert np.isfinite(v).all() and v[0x7F] == 1.875 and v[0xFF] == -1.875 and v[0x7E] == 1.75
    assert v[0x01] == 2.0**-17 and v[0x08] == 2.0**-14 and v[0x78] == 1.0 and v[0x80] == 0 and np.signbit(v[0x80])
    # every value is a float16 value, the f16 bits being the code's shifted by 7
    np.testing.assert_array_equal(v.astype(np.float16).view(np.uint16),
                                  ((ALL_CODES.astype(np.uint16) & 0x80) << 8) | ((ALL_CODES.astype(np.uint16) & 0x7F) << 7))
    keep = (ALL_CODES & 0x7F) != 0x7F
    np.testing.assert_array_equal(encode(v[keep]), ALL_CODES[keep])
    np.testing.assert_array_equal(encode(v[~keep]), [0x7E, 0xFE])


def test_reference_is_tritons_cuda_conversion():
    rng = np.random.default_rng(5)
    x = np.concatenate([interesting_values(rng), random_f32_bits(rng, 200_000)])
    with np.errstate(invalid="ignore"):  # signaling NaNs among the random bits
        wide = x.astype(np.float64)
    np.testing.assert_array_equal(encode(wide), triton_cuda_encode(x))


def test_dtype_on_the_host():
    assert str(E4B15) == "fp8e4b15" and repr(E4B15) == "tegula.language.float8e4b15"
    assert E4B15.fp_mantissa_width == 3 and E4B15.exponent_bias == 15 and E4B15.primitive_bitwidth == 8
    assert E4B15.is_fp8() and E4B15.is_floating() and E4B15.is_fp8e4b15() and not E4B15.is_fp8e4nv()
    assert "fp8e4b15" in tl.dtype.FP_TYPES and tl.str_to_ty("*fp8e4b15") == tl.pointer_type(E4B15)
    assert tl.dtype("fp8e4b15") == E4B15 and not tl.float8e4nv.is_fp8e4b15()


# --- kernels ---------------------------------------------------------------------------


@tegula.jit
def to_e4b15_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.float8e4b15), mask=mask)


@tegula.jit
def from_e4b15_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(y_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def e4b15_math_kernel(a_ptr, b_ptr, prod_ptr, sum32_ptr, bits_ptr, abs_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.static_assert((a * b).dtype == tl.float8e4b15)
    tl.store(prod_ptr + offs, a * b, mask=mask)                          # stays fp8e4b15
    tl.store(sum32_ptr + offs, a + 1.5 * b.to(tl.float32), mask=mask)   # with f32: f32
    tl.store(bits_ptr + offs, a.to(tl.int8, bitcast=True), mask=mask)
    tl.store(abs_ptr + offs, tl.abs(a), mask=mask)


@tegula.jit
def e4b15_constants_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    small = tl.full([BLOCK], 0.3, tl.float8e4b15)
    big = tl.full([BLOCK], 5.0, tl.float32).to(tl.float8e4b15)   # saturates at 1.75
    tie = tl.full([BLOCK], 1.0625, tl.float32).to(tl.float8e4b15)  # halfway: away from zero, to 1.125
    tiny = tl.full([BLOCK], -1e-6, tl.float32).to(tl.float8e4b15)  # -0
    tl.store(y_ptr + offs, tl.where(offs == 0, small, tl.where(offs == 1, big, tl.where(offs == 2, tie, tiny))))


@tegula.jit
def e4b15_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


BLOCK = 128


# --- the backend under test ----------------------------------------------------------


@pytest.mark.parametrize("src", [np.float32, np.float64, np.float16])
def test_to_e4b15_rounds_ties_away_and_saturates(backend, src):
    rng = np.random.default_rng(7)
    with np.errstate(over="ignore"):  # 1e30 is inf in float16
        x = np.concatenate([interesting_values(rng), random_f32_bits(rng, 3000)]).astype(src)
    n = x.size - 5  # a masked tail, not a power of two
    out = backend.full((x.size,), 0xAA, np.uint8)
    to_e4b15_kernel[(tegula.cdiv(n, BLOCK),)](backend.array(x), tegula.reinterpret(out, E4B15), n, BLOCK=BLOCK)
    got = backend.numpy(out)
    np.testing.assert_array_equal(got[:n], encode(x[:n].astype(np.float64)))
    assert (got[n:] == 0xAA).all()


@pytest.mark.parametrize("dst", [np.float32, np.float64, np.float16, np.int32])
def test_from_e4b15_is_exact_for_all_codes(backend, dst):
    out = backend.zeros((256,), dst)
    from_e4b15_kernel[(2,)](tegula.reinterpret(backend.array(ALL_CODES), E4B15), out, 256, BLOCK=BLOCK)
    want = decode(ALL_CODES)
    want = np.trunc(want) if dst is np.int32 else want
    got = backend.numpy(out).astype(np.float64)
    np.testing.assert_array_equal(got, want.astype(dst).astype(np.float64))
    if dst is not np.int32:
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("via", [np.float16, np.float32])
def test_random_codes_round_trip(backend, via):
    rng = np.random.default_rng(13)
    codes = rng.integers(0, 256, size=1000).astype(np.uint8)
    n = codes.size - 7
    wide = backend.zeros((codes.size,), via)
    back = backend.full((codes.size,), 0x55, np.uint8)
    from_e4b15_kernel[(tegula.cdiv(n, BLOCK),)](tegula.reinterpret(backend.array(codes), E4B15), wide, n, BLOCK=BLOCK)
    to_e4b15_kernel[(tegula.cdiv(n, BLOCK),)](wide, tegula.reinterpret(back, E4B15), n, BLOCK=BLOCK)
    got = backend.numpy(back)
    top = (codes[:n] & 0x7F) == 0x7F  # 1.875 saturates to 1.75 on the way back, as in Triton
    np.testing.assert_array_equal(got[:n][~top], codes[:n][~top])
    np.testing.assert_array_equal(got[:n][top], codes[:n][top] - 1)
    assert (got[n:] == 0x55).all()


def test_arithmetic_abs_and_bitcast(backend):
    rng = np.random.default_rng(3)
    n = 300
    codes = rng.integers(0, 256, size=(2, n)).astype(np.uint8)
    a, b = decode(codes[0]), decode(codes[1])
    prod = backend.zeros((n,), np.uint8)
    absolute = backend.zeros((n,), np.uint8)
    sum32 = backend.zeros((n,), np.float32)
    bits = backend.zeros((n,), np.int8)
    e4b15_math_kernel[(tegula.cdiv(n, BLOCK),)](
        tegula.reinterpret(backend.array(codes[0]), E4B15), tegula.reinterpret(backend.array(codes[1]), E4B15),
        tegula.reinterpret(prod, E4B15), sum32, bits, tegula.reinterpret(absolute, E4B15), n, BLOCK=BLOCK)
    np.testing.assert_array_equal(backend.numpy(prod), encode(a * b))  # exact in f32, then rounds once
    np.testing.assert_array_equal(backend.numpy(sum32), (a + 1.5 * b).astype(np.float32))
    np.testing.assert_array_equal(backend.numpy(bits), codes[0].view(np.int8))
    np.testing.assert_array_equal(backend.numpy(absolute), codes[0] & 0x7F)  # Triton clears the sign bit


def test_constants_fold_by_the_same_rule(backend):
    out = backend.zeros((8,), np.uint8)
    e4b15_constants_kernel[(1,)](tegula.reinterpret(out, E4B15), BLOCK=8)
    want = encode(np.array([0.3, 5.0, 1.0625] + [-1e-6] * 5))
    assert list(want[:4]) == [encode(0.3), 0x7E, 0x79, 0x80]
    np.testing.assert_array_equal(backend.numpy(out), want)


@pytest.mark.parametrize("other", [E4B15, tl.float8e4nv])
def test_dot_computes_through_f16(backend, other):
    rng = np.random.default_rng(11)
    M, N, K = 32, 16, 32
    a = encode(rng.standard_normal((M, K)) * 0.7)
    b_values = rng.standard_normal((K, N)) * 0.7
    b = encode(b_values) if other == E4B15 else b_values
    if other != E4B15:
        import ml_dtypes
        b = b_values.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    c = backend.zeros((M, N), np.float32)
    e4b15_dot_kernel[(1,)](tegula.reinterpret(backend.array(a), E4B15),
                           tegula.reinterpret(backend.array(b), other), c, M=M, N=N, K=K)
    b_decoded = decode(b) if other == E4B15 else b.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    np.testing.assert_allclose(backend.numpy(c), decode(a) @ b_decoded, rtol=1e-5, atol=1e-5)


def test_rtz_to_e4b15_is_an_error_naming_the_rule():
    @tegula.jit
    def rtz(x_ptr, y_ptr):
        tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e4b15, fp_downcast_rounding="rtz"))

    with pytest.raises(tegula.CompilationError, match="ties away from zero"):
        rtz[(1,)](np.zeros(4, np.float32), tegula.reinterpret(np.zeros(4, np.uint8), E4B15))


_SEEN_SIGNATURES = []


def _record_signature(specialization):
    _SEEN_SIGNATURES.append(dict(specialization.signature))
    return "e4b15_decode"


@tegula.jit(repr=_record_signature)
def e4b15_named_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.float32), mask=mask)


def test_reinterpret_of_int8_and_the_signature_name():
    x = np.array([0x78, 0xF8, 0x7F, 0x01], np.uint8).view(np.int8)  # 1, -1, 1.875, 2^-17
    out = np.zeros(4, np.float32)
    e4b15_named_kernel[(1,)](tegula.reinterpret(x, E4B15), out, 4, BLOCK=4)
    np.testing.assert_array_equal(out, [1.0, -1.0, 1.875, 2.0**-17])
    assert _SEEN_SIGNATURES[-1]["x_ptr"] == "*fp8e4b15"


def test_aot_signature_spells_it_fp8e4b15(tmp_path):
    from tegula.cli import executable

    done = subprocess.run([str(executable()), "aot", f"{__file__}::from_e4b15_kernel", "--signature",
                           "*fp8e4b15, *fp32, i32, 128", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "uint8_t* x_ptr" in (tmp_path / "out" / "from_e4b15_kernel.h").read_text()
    done = subprocess.run([str(executable()), "aot", f"{__file__}::to_e4b15_kernel", "--signature",
                           "*fp32, *fp8e4b15, fp8e4b15, 128", "-o", str(tmp_path / "bad")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "float scalar arguments are passed as fp32, not fp8e4b15" in done.stderr


# --- the CUDA backend's code, run on the host ------------------------------------------


@pytest.mark.parametrize("arch", [80, 90])
def test_cuda_code_converts_like_the_reference(arch):
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    rng = np.random.default_rng(17)
    x = np.concatenate([interesting_values(rng), random_f32_bits(rng, 500)]).astype(np.float32)
    n = x.size - 3
    out = np.full(x.size, 0xAA, np.uint8)
    emulate(to_e4b15_kernel, (tegula.cdiv(n, BLOCK),), x, tegula.reinterpret(out, E4B15), n, arch=arch, BLOCK=BLOCK)
    np.testing.assert_array_equal(out[:n], encode(x[:n].astype(np.float64)))
    assert (out[n:] == 0xAA).all()
    for dst in (np.float32, np.float64, np.float16):
        wide = np.zeros(256, dst)
        emulate(from_e4b15_kernel, (2,), tegula.reinterpret(ALL_CODES.copy(), E4B15), wide, 256, arch=arch,
                BLOCK=BLOCK)
        np.testing.assert_array_equal(wide.astype(np.float64), decode(ALL_CODES))


@pytest.mark.parametrize("arch", [80, 90])
def test_cuda_code_math_and_dot(arch):
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    rng = np.random.default_rng(19)
    n = 200
    codes = rng.integers(0, 256, size=(2, n)).astype(np.uint8)
    a, b = decode(codes[0]), decode(codes[1])
    prod, absolute = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    sum32, bits = np.zeros(n, np.float32), np.zeros(n, np.int8)
    emulate(e4b15_math_kernel, (2,), tegula.reinterpret(codes[0].copy(), E4B15),
            tegula.reinterpret(codes[1].copy(), E4B15), tegula.reinterpret(prod, E4B15), sum32, bits,
            tegula.reinterpret(absolute, E4B15), n, arch=arch, BLOCK=BLOCK)
    np.testing.assert_array_equal(prod, encode(a * b))
    np.testing.assert_array_equal(sum32, (a + 1.5 * b).astype(np.float32))
    np.testing.assert_array_equal(bits, codes[0].view(np.int8))
    np.testing.assert_array_equal(absolute, codes[0] & 0x7F)
    M, N, K = 16, 16, 32
    x, y = encode(rng.standard_normal((M, K)) * 0.7), encode(rng.standard_normal((K, N)) * 0.7)
    c = np.zeros((M, N), np.float32)
    emulate(e4b15_dot_kernel, (1,), tegula.reinterpret(x, E4B15), tegula.reinterpret(y, E4B15), c, arch=arch,
            M=M, N=N, K=K)
    np.testing.assert_allclose(c, decode(x) @ decode(y), rtol=1e-5, atol=1e-5)
