"""Shared helpers of the op tests (tests/python/test_ops_*.py).

The op tests compare Tegula kernels with NumPy references. This module holds
what they share: the dtype table (NumPy dtype, tl dtype, short name), seeded
random data per dtype, exact references for the parts NumPy does not model
the way Tegula specifies them (C-style integer division, correctly rounded
narrowing to f16/bf16), and per-dtype tolerances.

Tolerances are in units of the result type's precision: ``ulps`` steps of
``eps(dtype) = 2**-(mantissa bits)`` relative, plus an absolute floor for
results near zero. Integer and bool results always compare exactly.

Every op test runs on the backend under test (the `backend` fixture of
conftest.py): inputs are made here as NumPy arrays and moved with
`backend.array`, outputs are allocated with `backend.zeros`/`empty`/`full`
and read back with `backend.numpy`; references and `check` work on NumPy.
"""

from __future__ import annotations

import math
import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np

import tegula
import tegula.language as tl

_TESTS_DIR = pathlib.Path(__file__).resolve().parent

# name -> (NumPy dtype, tl dtype). The order is the order tests report.
DTYPES = {
    "bool": (np.dtype(np.bool_), tl.int1),
    "int8": (np.dtype(np.int8), tl.int8),
    "int16": (np.dtype(np.int16), tl.int16),
    "int32": (np.dtype(np.int32), tl.int32),
    "int64": (np.dtype(np.int64), tl.int64),
    "uint8": (np.dtype(np.uint8), tl.uint8),
    "uint16": (np.dtype(np.uint16), tl.uint16),
    "uint32": (np.dtype(np.uint32), tl.uint32),
    "uint64": (np.dtype(np.uint64), tl.uint64),
    "float16": (np.dtype(np.float16), tl.float16),
    "bfloat16": (np.dtype(ml_dtypes.bfloat16), tl.bfloat16),
    "float32": (np.dtype(np.float32), tl.float32),
    "float64": (np.dtype(np.float64), tl.float64),
}

ALL = list(DTYPES)
SIGNED = ["int8", "int16", "int32", "int64"]
INTS = SIGNED + ["uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# Significand bits (the implicit one included), the exponent of the smallest
# subnormal, and the largest finite value of each float format.
_FLOAT_FORMATS = {
    "float16": (11, -24, 65504.0),
    "bfloat16": (8, -133, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    "float32": (24, -149, float(np.finfo(np.float32).max)),
    "float64": (53, -1074, float(np.finfo(np.float64).max)),
}


def np_dtype(name: str) -> np.dtype:
    return DTYPES[name][0]


def tl_dtype(name: str):
    return DTYPES[name][1]


def name_of(dtype) -> str:
    """The table name of a NumPy dtype."""
    dtype = np.dtype(dtype)
    for name, (d, _) in DTYPES.items():
        if d == dtype:
            return name
    raise KeyError(dtype)


def eps(name: str) -> float:
    """The relative spacing of the float format: 2**-(significand bits - 1)."""
    return 2.0 ** -(_FLOAT_FORMATS[name][0] - 1)


def int_range(name: str) -> tuple[int, int]:
    info = np.iinfo(np_dtype(name))
    return int(info.min), int(info.max)


# --- random data ----------------------------------------------------------------


def rng_for(*key) -> np.random.Generator:
    """A generator seeded by the test's parameters, so every case is reproducible."""
    seed = 0
    for part in key:
        for ch in str(part):
            seed = (seed * 131 + ord(ch)) % (1 << 61)
    return np.random.default_rng(seed)


def random(rng: np.random.Generator, shape, name: str, *, low=None, high=None,
           nonzero=False, specials=False) -> np.ndarray:
    """Random data of dtype `name`.

    Integers cover the whole range of the type unless `low`/`high` narrow it
    (high exclusive); floats are normal(0, 2) unless `low`/`high` ask for a
    uniform range. `nonzero` replaces zeros by ones (divisors). `specials`
    plants inf, -inf, NaN, -0.0 and 0.0 in float data (needs at least 5
    elements; fewer plants fewer).
    """
    dtype = np_dtype(name)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if name == "bool":
        return rng.random(shape) < 0.5
    if name in INTS:
        lo, hi = int_range(name)
        lo = lo if low is None else max(lo, low)
        hi = hi if high is None else min(hi, high - 1)
        out = rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)
        if nonzero:
            out[out == 0] = 1
        return out
    if low is None:
        values = rng.standard_normal(shape) * 2.0
    else:
        values = rng.uniform(low, high, size=shape)
    # Round through f32 first so f64 data is exactly representable in f32
    # too (a conversion then rounds once, whatever path it takes).
    out = values.astype(np.float32).astype(dtype)
    if nonzero:
        out[out == 0] = 1
    if specials:
        flat = out.reshape(-1)
        for i, v in enumerate([np.inf, -np.inf, np.nan, -0.0, 0.0][: flat.size]):
            flat[(i * 7919) % flat.size] = v
    return out


# --- exact references -------------------------------------------------------------


def round_to(x, name: str) -> np.ndarray:
    """float64 values rounded to the float format `name` with round to nearest
    even (subnormals and overflow to inf included), returned as that dtype.

    NumPy's own f64->f16 rounds once, but ml_dtypes' f64->bf16 goes through
    f32 and can round twice (1 + 2**-8 + 2**-30 becomes 1.0, not 1 + 2**-7).
    """
    x = np.asarray(x, dtype=np.float64)
    mant, min_exp, max_val = _FLOAT_FORMATS[name]
    with np.errstate(over="ignore", invalid="ignore"):
        _, e = np.frexp(x)
        quantum = np.maximum(e - mant, min_exp)  # exponent of the last kept bit
        r = np.ldexp(np.rint(np.ldexp(x, -quantum)), quantum)
        r = np.where(np.abs(r) > max_val, np.copysign(np.inf, x), r)
        r = np.where(np.isfinite(x), r, x)
    return r.astype(np_dtype(name))


def to_f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C, and Triton's `//`), wrapping."""
    q = a // b  # floors
    r = a - q * b
    fix = (r != 0) & ((a < 0) != (b < 0))
    return np.where(fix, q + 1, q).astype(a.dtype)


def c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the sign of the dividend (C, and Triton's `%`)."""
    return (a - c_div(a, b) * b).astype(a.dtype)


def umulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high half of the product of a and b read as unsigned, as a's dtype."""
    dtype = a.dtype
    width = dtype.itemsize * 8
    ua = a.view(np.dtype(f"u{dtype.itemsize}"))
    ub = b.view(np.dtype(f"u{dtype.itemsize}"))
    hi = [(int(x) * int(y)) >> width for x, y in zip(ua.reshape(-1), ub.reshape(-1))]
    out = np.array(hi, dtype=ua.dtype).reshape(a.shape)
    return out.view(dtype)


erf = np.vectorize(math.erf, otypes=[np.float64])


# --- comparison -------------------------------------------------------------------


def tolerance(name: str, ulps: float = 2.0) -> tuple[float, float]:
    """(atol, rtol) for a float result of dtype `name`: `ulps` relative steps,
    and an absolute floor that matters only for results near zero."""
    floor = {"float16": 1e-5, "bfloat16": 1e-5, "float32": 1e-30, "float64": 1e-300}[name]
    return floor * ulps, ulps * eps(name)


def check(actual, expected, name: str | None = None, *, ulps: float = 2.0, atol=None, rtol=None,
          where=None, what: str = ""):
    """Asserts `actual` equals `expected` exactly (ints, bools) or within
    tolerance (floats: `ulps` steps of the result dtype `name`, NaN matching
    NaN). `where` restricts the comparison to a boolean mask of elements."""
    actual = np.asarray(actual)
    expected = np.broadcast_to(np.asarray(expected), actual.shape)
    if where is not None:
        where = np.broadcast_to(where, actual.shape)
        actual, expected = actual[where], expected[where]
    name = name or name_of(actual.dtype)
    prefix = f"{what}: " if what else ""
    if name in FLOATS:
        a0, r0 = tolerance(name, ulps)
        try:
            tegula.testing.assert_close(to_f64(actual), to_f64(expected),
                                        atol=a0 if atol is None else atol,
                                        rtol=r0 if rtol is None else rtol)
        except AssertionError as e:
            raise AssertionError(prefix + str(e)) from None
        return
    # Exact: compare as Python ints so no cast can hide a difference.
    a = actual.astype(object).reshape(-1)
    e = expected.astype(object).reshape(-1)
    bad = [i for i in range(a.size) if int(a[i]) != int(e[i])]
    if bad:
        shown = ", ".join(f"[{np.unravel_index(i, actual.shape) if actual.ndim > 1 else i}] "
                          f"{a[i]!r} != {e[i]!r}" for i in bad[:6])
        raise AssertionError(f"{prefix}{len(bad)} of {a.size} elements differ ({name}): {shown}")


def ref_binary(op, a: np.ndarray, b: np.ndarray, result: str) -> np.ndarray:
    """`op(a, b)` computed as docs/ir.md specifies: operands converted to the
    result type; f16/bf16 computed in f32, the result rounded back."""
    if result in ("float16", "bfloat16"):
        with np.errstate(all="ignore"):
            return round_to(op(a.astype(np.float32), b.astype(np.float32)).astype(np.float64), result)
    dtype = np_dtype(result)
    with np.errstate(all="ignore"):
        return np.asarray(op(a.astype(dtype), b.astype(dtype))).astype(dtype)


def grid1(n: int, block: int) -> tuple:
    return (tegula.cdiv(n, block),)


def run_isolated(tmp_path, source: str, backend, timeout: float = 120.0) -> str:
    """Runs `source` (a script that prints "ok" at the end) in a fresh Python
    process, for kernels that would take the test process down if the
    compiler got them wrong (a fault on a masked lane, a SIGFPE, a sticky CUDA
    error). The script finds `backend` (tests/python/conftest.py's Backend
    for the backend under test) defined, to allocate its arrays through.
    Returns its stdout; fails with its exit status and output otherwise."""
    preamble = (f"import sys\n"
                f"sys.path.insert(0, {str(_TESTS_DIR)!r})\n"
                f"from conftest import Backend\n"
                f"backend = Backend({backend.name!r})\n")
    script = tmp_path / "isolated.py"
    script.write_text(preamble + source)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0 and "ok" in result.stdout, (
        f"exit status {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result.stdout
