"""AMD's "fnuz" fp8 formats, tl.float8e4b8 (e4m3fnuz: bias 8, largest 240)
and tl.float8e5b16 (e5m2fnuz: bias 16, largest 57344): no infinities, no -0,
and 0x80 (the code of -0 elsewhere) their one NaN. Conversions, storage,
arithmetic, bitcasts, torch and ml_dtypes arguments and tl.dot, on
the backend under test and on the CUDA backend's code through the host
emulator (tests/python/cuda_emulator.h), against PyTorch's own conversions
(torch.float8_e4m3fnuz, torch.float8_e5m2fnuz).

Tegula converts to them as Triton does on AMD GPUs (ir/fp8.h): round to
nearest even, saturate finite magnitudes beyond the largest value, and make
NaN and +-inf 0x80; a zero result is +0 whatever the sign. PyTorch makes
every value beyond the largest NaN, so `encode` below is torch's conversion
of the value clamped to the format's range where it is finite: it differs
from torch only there. `nearest_code` encodes from the formats' definition
(a search of the nearest code), and the two are checked against each other;
it also rounds doubles once, where torch rounds them to float first.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.language.core import DTYPES
from test_fp8 import fp8_dot_kernel  # the other fp8 formats' dot kernel, on these

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

FORMATS = {
    # name: (tl dtype, torch dtype, ml_dtypes type, mantissa bits, bias, largest value)
    "e4b8": (tl.float8e4b8, torch.float8_e4m3fnuz, ml_dtypes.float8_e4m3fnuz, 3, 8, 240.0),
    "e5b16": (tl.float8e5b16, torch.float8_e5m2fnuz, ml_dtypes.float8_e5m2fnuz, 2, 16, 57344.0),
}
FMTS = list(FORMATS)
ALL_CODES = np.arange(256, dtype=np.uint8)
BLOCK = 128


def tl_dtype(fmt):
    return FORMATS[fmt][0]


def decode(codes, fmt) -> np.ndarray:
    """fp8 codes -> float64 values, by torch (0x80 is NaN)."""
    codes = torch.from_numpy(np.array(codes, dtype=np.uint8, ndmin=1))
    return codes.view(FORMATS[fmt][1]).to(torch.float64).numpy()


def encode(x, fmt) -> np.ndarray:
    """float32 values -> codes: torch's conversion of the value clamped to the format's range where finite."""
    big = FORMATS[fmt][5]
    x = np.array(x, dtype=np.float32, ndmin=1)
    with np.errstate(invalid="ignore"):
        clamped = np.where(np.isfinite(x), np.clip(x, -big, big), x).astype(np.float32)
    return torch.from_numpy(clamped).to(FORMATS[fmt][1]).view(torch.uint8).numpy()


def definition_decode(codes, fmt) -> np.ndarray:
    _, _, _, m, bias, _ = FORMATS[fmt]
    codes = np.asarray(codes, dtype=np.int64)
    magnitude = codes & 0x7F
    exponent, mantissa = magnitude >> m, magnitude & ((1 << m) - 1)
    value = np.where(exponent == 0, np.ldexp(mantissa.astype(np.float64), 1 - bias - m),
                     np.ldexp((mantissa + (1 << m)).astype(np.float64), exponent - bias - m))
    return np.where(codes == 0x80, np.nan, np.where(codes & 0x80, -value, value))


def nearest_code(x, fmt) -> np.ndarray:
    """float64 -> code from the definition: the nearest of the 128 magnitudes, ties to the even code, finite
    values beyond the largest saturating; the sign kept unless the magnitude is 0; NaN and inf -> 0x80."""
    x = np.asarray(x, dtype=np.float64)
    values = definition_decode(np.arange(128), fmt)  # increasing with the code
    a = np.minimum(np.abs(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)), values[-1])
    hi = np.clip(np.searchsorted(values, a), 0, 127)
    lo = np.clip(hi - 1, 0, 127)
    d_lo, d_hi = a - values[lo], values[hi] - a
    code = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    code = np.where(np.signbit(x) & (code != 0), code | 0x80, code)
    return np.where(np.isfinite(x), code, 0x80).astype(np.uint8)


def interesting_values(fmt, rng) -> np.ndarray:
    """Every value, the midpoints between neighbours (ties), the floats beside them, zeros, infinities, NaNs,
    values beyond the largest (ties with the next binade among them), below the smallest, and random ones."""
    values = definition_decode(ALL_CODES, fmt)
    values = np.unique(values[np.isfinite(values)])
    mids = (values[:-1] + values[1:]) / 2
    beside = np.concatenate([np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
                             np.nextafter(mids.astype(np.float32), np.float32(-np.inf))])
    big, tiny = FORMATS[fmt][5], values[values > 0].min()
    extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, big * 1.03, big * 1.0625, -big * 1.0625,
                      big * 1.07, -big * 2, 1e30, -1e30, tiny / 2, -tiny / 2, tiny * 0.51, -tiny * 0.49, 1e-30,
                      -1e-30])
    rand = rng.standard_normal(400) * rng.choice([tiny * 4, 1e-2, 1.0, big / 8], 400)
    return np.concatenate([values, mids, beside, extra, rand]).astype(np.float32)


def random_f32_bits(rng, n: int, fmt) -> np.ndarray:
    """Random float32 bit patterns, most of them near the format's range."""
    bias = FORMATS[fmt][4]
    bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    exponent = rng.integers(127 - 2 * bias, 127 + bias + 3, size=n).astype(np.uint32)
    near = (bits & ~np.uint32(0x7F800000)) | (exponent << 23)
    return np.where(rng.random(n) < 0.9, near, bits).astype(np.uint32).view(np.float32)


# --- the references ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FMTS)
def test_torch_is_the_formats_definition(fmt):
    np.testing.assert_array_equal(decode(ALL_CODES, fmt), definition_decode(ALL_CODES, fmt))
    v = decode(ALL_CODES, fmt)
    assert np.isnan(v).sum() == 1 and np.isnan(v[0x80]) and not np.signbit(v[0]) and np.nanmax(v) == FORMATS[fmt][5]
    np.testing.assert_array_equal(v[1], 2.0 ** (1 - FORMATS[fmt][4] - FORMATS[fmt][3]))  # the smallest subnormal
    rng = np.random.default_rng(1)
    with np.errstate(invalid="ignore"):  # signaling NaNs among the random bits
        x = np.concatenate([interesting_values(fmt, rng), random_f32_bits(rng, 50_000, fmt)])
        np.testing.assert_array_equal(encode(x, fmt), nearest_code(x.astype(np.float64), fmt))
    # Where the rule is torch's own: beyond the largest finite value torch gives NaN, Tegula the largest.
    big = FORMATS[fmt][5]
    over = torch.tensor([big * 1.25, -big * 2, np.inf], dtype=torch.float32)
    assert torch.isnan(over.to(FORMATS[fmt][1]).to(torch.float32)).all()
    assert list(encode(over.numpy(), fmt)) == [0x7F, 0xFF, 0x80]
    # ml_dtypes agrees with torch.
    np.testing.assert_array_equal(ALL_CODES.view(FORMATS[fmt][2]).astype(np.float64), decode(ALL_CODES, fmt))


@pytest.mark.parametrize("fmt", FMTS)
def test_dtype_on_the_host(fmt):
    dt, _, _, m, bias, _ = FORMATS[fmt]
    name = {"e4b8": "fp8e4b8", "e5b16": "fp8e5b16"}[fmt]
    assert str(dt) == name and repr(dt) == f"tegula.language.{dt.canonical_name}" and dt.scalar == "f" + name[2:]
    assert (dt.fp_mantissa_width, dt.exponent_bias, dt.primitive_bitwidth) == (m, bias, 8)
    assert dt.is_fp8() and dt.is_floating() and getattr(dt, "is_" + name)() and not dt.is_fp8e4nv()
    assert name in tl.dtype.FP_TYPES and tl.str_to_ty("*" + name) == tl.pointer_type(dt) and tl.dtype(name) == dt
    assert DTYPES[dt.canonical_name] is dt and tl.float8e4b8 != tl.float8e5b16


# --- kernels ---------------------------------------------------------------------------


@tegula.jit
def convert_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(y_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def to_bits_kernel(x_ptr, bits_ptr, n, DT: tl.constexpr, BLOCK: tl.constexpr):
    # The dtype as a constexpr argument; the result seen as its bits.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask).to(DT)
    tl.static_assert(y.dtype == DT)
    tl.store(bits_ptr + offs, y.to(tl.uint8, bitcast=True), mask=mask)


@tegula.jit
def fnuz_math_kernel(a_ptr, b_ptr, prod_ptr, neg_ptr, abs_ptr, sum32_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.static_assert((a * b).dtype == a.dtype)
    tl.store(prod_ptr + offs, a * b, mask=mask)                         # stays fnuz: rounds once
    tl.store(neg_ptr + offs, -a, mask=mask)
    tl.store(abs_ptr + offs, tl.abs(a), mask=mask)
    tl.store(sum32_ptr + offs, a + 1.5 * b.to(tl.float32), mask=mask)  # with f32: f32
    tl.store(bits_ptr + offs, a.to(tl.int8, bitcast=True), mask=mask)


@tegula.jit
def mixed_fp8_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.static_assert(c.dtype == tl.float16)  # two fp8 formats meet in f16, as in Triton
    tl.store(c_ptr + offs, c, mask=mask)


INF = float("inf")
NAN = float("nan")


@tegula.jit
def fnuz_constants_kernel(y_ptr, DT: tl.constexpr):
    two = tl.arange(0, 2)
    tl.store(y_ptr + 0 + two, tl.full([2], -0.0, tl.float32).to(DT))
    tl.store(y_ptr + 2 + two, tl.full([2], 1e6, tl.float32).to(DT))    # saturates
    tl.store(y_ptr + 4 + two, tl.full([2], -1e6, tl.float32).to(DT))
    tl.store(y_ptr + 6 + two, tl.full([2], INF, tl.float32).to(DT))    # NaN
    tl.store(y_ptr + 8 + two, tl.full([2], -INF, tl.float32).to(DT))
    tl.store(y_ptr + 10 + two, tl.full([2], NAN, tl.float32).to(DT))
    tl.store(y_ptr + 12 + two, tl.full([2], -1e-9, tl.float32).to(DT))  # +0
    tl.store(y_ptr + 14 + two, tl.full([2], 0.3, DT))
    tl.store(y_ptr + 16 + two, tl.full([2], -0.0, DT))


CONSTANTS = [-0.0, 1e6, -1e6, np.inf, -np.inf, np.nan, -1e-9, 0.3, -0.0]


def to_fnuz_inputs(fmt, seed, src):
    rng = np.random.default_rng(seed)
    x = np.concatenate([interesting_values(fmt, rng), random_f32_bits(rng, 3000, fmt)])
    if src is ml_dtypes.bfloat16 or src is np.float16:
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float16's range: inf
            x = x.astype(src)
    return x


# --- the backend under test ----------------------------------------------------------


@pytest.mark.parametrize("src", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("fmt", FMTS)
def test_to_fnuz_rounds_to_nearest_even_and_saturates(backend, fmt, src):
    x = to_fnuz_inputs(fmt, 7, src)
    n = x.size - 5  # a masked tail, not a power of two
    out = backend.full((x.size,), 0xAA, np.uint8)
    convert_kernel[(tegula.cdiv(n, BLOCK),)](backend.array(x), tegula.reinterpret(out, tl_dtype(fmt)), n, BLOCK=BLOCK)
    got = backend.numpy(out)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got[:n], encode(x[:n].astype(np.float32), fmt))
    assert (got[n:] == 0xAA).all()


@pytest.mark.parametrize("fmt", FMTS)
def test_to_fnuz_from_f64_rounds_once(backend, fmt):
    # Doubles round once, not first to float: 1 + 2^-4 + 2^-40 lies just above e4b8's tie between 1 and 1.125.
    rng = np.random.default_rng(8)
    with np.errstate(invalid="ignore"):
        x = interesting_values(fmt, rng).astype(np.float64)
    step = 2.0 ** -FORMATS[fmt][3]
    near_ties = np.array([1 + step / 2 + 2.0**-40, 1 + step / 2 - 2.0**-40, -(1 + 3 * step / 2 + 2.0**-40)])
    x = np.concatenate([x, near_ties, rng.standard_normal(500) * 3])
    n = x.size - 3
    out = backend.full((x.size,), 0x55, np.uint8)
    convert_kernel[(tegula.cdiv(n, BLOCK),)](backend.array(x), tegula.reinterpret(out, tl_dtype(fmt)), n, BLOCK=BLOCK)
    got = backend.numpy(out)
    np.testing.assert_array_equal(got[:n], nearest_code(x[:n], fmt))
    assert (got[n:] == 0x55).all()
    assert list(nearest_code(near_ties, fmt)) == list(encode([1 + step, 1.0, -(1 + 2 * step)], fmt))


@pytest.mark.parametrize("dst", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16],
                         ids=["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("fmt", FMTS)
def test_from_fnuz_is_exact_for_all_codes(backend, fmt, dst):
    out = backend.full((256 + 3,), 7, dst)
    convert_kernel[(3,)](tegula.reinterpret(backend.array(ALL_CODES), tl_dtype(fmt)), out, 256, BLOCK=BLOCK)
    got = backend.numpy(out).astype(np.float64)
    want = decode(ALL_CODES, fmt)
    np.testing.assert_array_equal(got[:256], want)
    np.testing.assert_array_equal(np.signbit(got[:256]) & ~np.isnan(got[:256]), want < 0)  # no -0
    assert (got[256:] == 7).all()


@pytest.mark.parametrize("via", [np.float16, ml_dtypes.bfloat16, np.float32], ids=["f16", "bf16", "f32"])
@pytest.mark.parametrize("fmt", FMTS)
def test_every_code_round_trips(backend, fmt, via):
    codes = np.concatenate([ALL_CODES, np.random.default_rng(13).integers(0, 256, size=300).astype(np.uint8)])
    n = codes.size - 7
    wide = backend.zeros((codes.size,), via)
    back = backend.full((codes.size,), 0x55, np.uint8)
    convert_kernel[(tegula.cdiv(n, BLOCK),)](tegula.reinterpret(backend.array(codes), tl_dtype(fmt)), wide, n,
                                             BLOCK=BLOCK)
    convert_kernel[(tegula.cdiv(n, BLOCK),)](wide, tegula.reinterpret(back, tl_dtype(fmt)), n, BLOCK=BLOCK)
    got = backend.numpy(back)
    np.testing.assert_array_equal(got[:n], codes[:n])  # 0x80 too: NaN goes back to 0x80
    assert (got[n:] == 0x55).all()


@pytest.mark.parametrize("fmt", FMTS)
def test_constexpr_dtype_and_bitcast_to_uint8(backend, fmt):
    x = to_fnuz_inputs(fmt, 9, np.float32)
    n = x.size - 1
    bits = backend.zeros((x.size,), np.uint8)
    to_bits_kernel[(tegula.cdiv(n, BLOCK),)](backend.array(x), bits, n, DT=tl_dtype(fmt), BLOCK=BLOCK)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(backend.numpy(bits)[:n], encode(x[:n], fmt))


@pytest.mark.parametrize("fmt", FMTS)
def test_arithmetic_negation_abs_and_bitcast(backend, fmt):
    rng = np.random.default_rng(3)
    codes = np.concatenate([np.stack([ALL_CODES, rng.permutation(ALL_CODES)]),
                            rng.integers(0, 256, size=(2, 300)).astype(np.uint8)], axis=1)
    n = codes.shape[1] - 2
    a, b = decode(codes[0], fmt), decode(codes[1], fmt)
    dt = tl_dtype(fmt)
    prod, neg, absolute = (backend.zeros((n,), np.uint8) for _ in range(3))
    sum32, bits = backend.zeros((n,), np.float32), backend.zeros((n,), np.int8)
    fnuz_math_kernel[(tegula.cdiv(n, BLOCK),)](
        tegula.reinterpret(backend.array(codes[0]), dt), tegula.reinterpret(backend.array(codes[1]), dt),
        tegula.reinterpret(prod, dt), tegula.reinterpret(neg, dt), tegula.reinterpret(absolute, dt), sum32, bits, n,
        BLOCK=BLOCK)
    a, b, c = a[:n], b[:n], codes[0][:n]
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(backend.numpy(prod), encode(a * b, fmt))  # exact in f32, then rounds once
        np.testing.assert_array_equal(backend.numpy(sum32),
                                      a.astype(np.float32) + np.float32(1.5) * b.astype(np.float32))
    # -x flips the sign bit, but 0 stays 0 and the NaN 0x80 stays itself; so does tl.abs.
    np.testing.assert_array_equal(backend.numpy(neg), np.where((c & 0x7F) == 0, c, c ^ 0x80))
    np.testing.assert_array_equal(backend.numpy(absolute), np.where(c == 0x80, c, c & 0x7F))
    np.testing.assert_array_equal(backend.numpy(bits), c.view(np.int8))


@pytest.mark.parametrize("other", ["e5b16", "e4m3fn"])
def test_two_fp8_formats_meet_in_f16(backend, other):
    rng = np.random.default_rng(4)
    n = 100
    a = rng.integers(0, 256, size=n).astype(np.uint8)
    b = rng.integers(0, 256, size=n).astype(np.uint8)
    b_dt, b_values = ((tl.float8e5b16, decode(b, "e5b16")) if other == "e5b16" else
                      (tl.float8e4nv, b.view(ml_dtypes.float8_e4m3fn).astype(np.float64)))
    c = backend.zeros((n,), np.float16)
    mixed_fp8_kernel[(1,)](tegula.reinterpret(backend.array(a), tl.float8e4b8),
                           tegula.reinterpret(backend.array(b), b_dt), c, n, BLOCK=128)
    want = decode(a, "e4b8").astype(np.float16) + b_values.astype(np.float16)
    np.testing.assert_array_equal(backend.numpy(c), want)


@pytest.mark.parametrize("fmt", FMTS)
def test_constants_fold_by_the_same_rule(backend, fmt):
    out = backend.full((18,), 0xAA, np.uint8)
    fnuz_constants_kernel[(1,)](tegula.reinterpret(out, tl_dtype(fmt)), DT=tl_dtype(fmt))
    want = nearest_code(np.repeat(CONSTANTS, 2), fmt)
    big_code = 0x7F
    assert list(want[::2]) == [0, big_code, 0x80 | big_code, 0x80, 0x80, 0x80, 0, nearest_code(0.3, fmt), 0]
    np.testing.assert_array_equal(backend.numpy(out), want)


@pytest.mark.parametrize("b_fmt", ["e4b8", "e5b16", "e4m3fn"])
def test_dot_computes_through_f16(backend, b_fmt):
    rng = np.random.default_rng(11)
    M, N, K = 32, 16, 32
    a = encode(rng.standard_normal((M, K)) * 4, "e4b8").reshape(M, K)
    b_values = rng.standard_normal((K, N)) * 4
    if b_fmt == "e4m3fn":
        b, b_dt = b_values.astype(ml_dtypes.float8_e4m3fn).view(np.uint8), tl.float8e4nv
        b_decoded = b.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    else:
        b, b_dt = encode(b_values, b_fmt).reshape(K, N), tl_dtype(b_fmt)
        b_decoded = decode(b.ravel(), b_fmt).reshape(K, N)
    c = backend.zeros((M, N), np.float32)
    fp8_dot_kernel[(1,)](tegula.reinterpret(backend.array(a), tl.float8e4b8),
                          tegula.reinterpret(backend.array(b), b_dt), c, M=M, N=N, K=K)
    np.testing.assert_allclose(backend.numpy(c), decode(a.ravel(), "e4b8").reshape(M, K) @ b_decoded,
                               rtol=1e-5, atol=1e-3)


def _device(backend) -> str:
    return "cuda" if backend.is_cuda else "cpu"


_SEEN_SIGNATURES = []


def _record_signature(specialization):
    _SEEN_SIGNATURES.append(dict(specialization.signature))
    return "fnuz_convert"


@tegula.jit(repr=_record_signature)
def fnuz_named_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(y_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("fmt", FMTS)
def test_torch_fnuz_tensors_are_arguments(backend, fmt):
    torch_dtype = FORMATS[fmt][1]
    x = torch.from_numpy(to_fnuz_inputs(fmt, 21, np.float32)[:1000]).to(_device(backend))
    n = x.numel()
    y = torch.empty(n, dtype=torch_dtype, device=x.device)
    fnuz_named_kernel[(1,)](x, y, n, BLOCK=1024)
    assert _SEEN_SIGNATURES[-1]["y_ptr"] == "*" + str(tl_dtype(fmt))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(y.view(torch.uint8).cpu().numpy(), encode(x.cpu().numpy(), fmt))
    back = torch.empty(n, dtype=torch.float32, device=x.device)
    fnuz_named_kernel[(1,)](y, back, n, BLOCK=1024)
    assert _SEEN_SIGNATURES[-1]["x_ptr"] == "*" + str(tl_dtype(fmt))
    torch.testing.assert_close(back, y.to(torch.float32), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("fmt", FMTS)
def test_ml_dtypes_arrays_are_arguments(backend, fmt):
    if backend.is_cuda:
        pytest.skip("NumPy arrays are host memory")
    codes = ALL_CODES.copy()
    out = np.zeros(256, np.float32)
    convert_kernel[(2,)](codes.view(FORMATS[fmt][2]), out, 256, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, decode(codes, fmt).astype(np.float32))
    back = np.zeros(256, FORMATS[fmt][2])
    convert_kernel[(2,)](out, back, 256, BLOCK=BLOCK)
    np.testing.assert_array_equal(back.view(np.uint8), codes)


def test_rtz_to_fnuz_is_an_error_naming_the_rule():
    @tegula.jit
    def rtz(x_ptr, y_ptr):
        tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e4b8, fp_downcast_rounding="rtz"))

    with pytest.raises(tegula.CompilationError, match="round to nearest even"):
        rtz[(1,)](np.zeros(4, np.float32), tegula.reinterpret(np.zeros(4, np.uint8), tl.float8e4b8))


def test_aot_signature_spells_them(tmp_path):
    from tegula.cli import executable

    done = subprocess.run([str(executable()), "aot", f"{__file__}::convert_kernel", "--signature",
                           "*fp8e5b16, *fp8e4b8, i32, 128", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "uint8_t* x_ptr" in (tmp_path / "out" / "convert_kernel.h").read_text()
    done = subprocess.run([str(executable()), "aot", f"{__file__}::convert_kernel", "--signature",
                           "*fp32, *fp8e4b8, fp8e4b8, 128", "-o", str(tmp_path / "bad")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "float scalar arguments are passed as fp32, not fp8e4b8" in done.stderr


# --- the CUDA backend's code, run on the host ------------------------------------------


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("fmt", FMTS)
def test_cuda_code_converts_like_the_reference(fmt, arch):
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    x = to_fnuz_inputs(fmt, 17, np.float32)[:1500]
    n = x.size - 3
    out = np.full(x.size, 0xAA, np.uint8)
    emulate(convert_kernel, (tegula.cdiv(n, BLOCK),), x, tegula.reinterpret(out, tl_dtype(fmt)), n, arch=arch,
            BLOCK=BLOCK)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out[:n], encode(x[:n], fmt))
    assert (out[n:] == 0xAA).all()
    for dst in (np.float32, np.float64, np.float16):
        wide = np.zeros(256, dst)
        emulate(convert_kernel, (2,), tegula.reinterpret(ALL_CODES.copy(), tl_dtype(fmt)), wide, 256, arch=arch,
                BLOCK=BLOCK)
        np.testing.assert_array_equal(wide.astype(np.float64), decode(ALL_CODES, fmt))


@pytest.mark.parametrize("arch", [80, 90])
def test_cuda_code_math_and_dot(arch):
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    rng = np.random.default_rng(19)
    n, fmt, dt = 200, "e5b16", tl.float8e5b16
    codes = rng.integers(0, 256, size=(2, n)).astype(np.uint8)
    a, b = decode(codes[0], fmt), decode(codes[1], fmt)
    prod, neg, absolute = np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    sum32, bits = np.zeros(n, np.float32), np.zeros(n, np.int8)
    emulate(fnuz_math_kernel, (2,), tegula.reinterpret(codes[0].copy(), dt), tegula.reinterpret(codes[1].copy(), dt),
            tegula.reinterpret(prod, dt), tegula.reinterpret(neg, dt), tegula.reinterpret(absolute, dt), sum32, bits,
            n, arch=arch, BLOCK=BLOCK)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(prod, encode(a * b, fmt))
        np.testing.assert_array_equal(sum32, a.astype(np.float32) + np.float32(1.5) * b.astype(np.float32))
    c = codes[0]
    np.testing.assert_array_equal(neg, np.where((c & 0x7F) == 0, c, c ^ 0x80))
    np.testing.assert_array_equal(absolute, np.where(c == 0x80, c, c & 0x7F))
    np.testing.assert_array_equal(bits, c.view(np.int8))
    M, N, K = 16, 16, 32
    x = encode(rng.standard_normal(M * K) * 4, "e4b8").reshape(M, K)
    y = encode(rng.standard_normal(K * N) * 4, "e5b16").reshape(K, N)
    out = np.zeros((M, N), np.float32)
    emulate(fp8_dot_kernel, (1,), tegula.reinterpret(x, tl.float8e4b8), tegula.reinterpret(y, tl.float8e5b16), out,
            arch=arch, M=M, N=N, K=K)
    np.testing.assert_allclose(out, decode(x.ravel(), "e4b8").reshape(M, K) @ decode(y.ravel(), "e5b16").reshape(K, N),
                               rtol=1e-5, atol=1e-3)
