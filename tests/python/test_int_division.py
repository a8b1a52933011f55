"""Integer `//` and `%`, and float `%`, against NumPy references of the rules
Tegula shares with Triton (docs/language.md):

* on integer tiles and runtime scalars, C semantics: `//` truncates toward
  zero and `%` takes the sign of the dividend (x == (x // y) * y + x % y);
* on constants (literals, constexprs), Python semantics: `//` floors and `%`
  takes the sign of the divisor, since Python computes them;
* `%` on floats is C's fmod (the sign of the dividend); f16/bf16 compute in
  f32 and give f32, as Triton; `//` on floats is an error, as in Triton;
* a literal next to an integer tile takes the tile's type, signed or not
  (`x_u32 % 3` is uint32), and must fit it;
* division by zero (Tegula's rule): x // 0 == 0, x % 0 == x; MIN // -1 wraps
  to MIN and MIN % -1 == 0.

Every sign combination of dividend and divisor is covered for int8, int16,
int32, int64 and the unsigned types.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import check, grid1, int_range, random, rng_for, to_f64

SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]


def c_divmod(a, b, name):
    """Truncating quotient and remainder, as Python ints wrapped to `name`, with x // 0 == 0, x % 0 == x."""
    lo, hi = int_range(name)
    span = hi - lo + 1
    q_out, r_out = [], []
    for x, y in zip(np.asarray(a).tolist(), np.asarray(b).tolist()):
        if y == 0:
            q, r = 0, x
        else:
            q = abs(x) // abs(y) * (-1 if (x < 0) != (y < 0) else 1)
            r = x - q * y
        q_out.append((q - lo) % span + lo)
        r_out.append((r - lo) % span + lo)
    dtype = np.asarray(a).dtype
    return np.array(q_out, dtype=dtype), np.array(r_out, dtype=dtype)


@tegula.jit
def divmod_kernel(x_ptr, y_ptr, out_ptr, n, SIGNED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(out_ptr + 0 * n + offs, x // y, mask=m)
    tl.store(out_ptr + 1 * n + offs, x % y, mask=m)
    q = x // 3
    tl.static_assert(q.dtype == x.dtype, "a literal divisor takes the tile's type")
    tl.store(out_ptr + 2 * n + offs, q, mask=m)
    tl.store(out_ptr + 3 * n + offs, x % 3, mask=m)
    tl.store(out_ptr + 4 * n + offs, 7 // y, mask=m)
    tl.store(out_ptr + 5 * n + offs, 100 % y, mask=m)
    if SIGNED:
        tl.store(out_ptr + 6 * n + offs, x // -3, mask=m)
        tl.store(out_ptr + 7 * n + offs, x % -3, mask=m)
        tl.store(out_ptr + 8 * n + offs, -7 // y, mask=m)
        tl.store(out_ptr + 9 * n + offs, -100 % y, mask=m)


def operands(name, n):
    rng = rng_for("int_division", name)
    lo, hi = int_range(name)
    x = random(rng, n, name)
    y = random(rng, n, name)
    small = random(rng, n, name, low=max(lo, -9), high=10)  # small divisors: every sign, zero included
    y[: n // 2] = small[: n // 2]
    # Edge pairs: every sign combination of exact and inexact division, MIN // -1, zeros.
    edges = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (6, -3), (-6, -3), (lo, -1), (lo, 1),
             (hi, -1), (hi, hi), (lo, lo), (0, 5), (0, -5), (5, 0), (-5, 0), (lo, 0), (1, lo), (-1, hi)]
    k = 0
    for a, b in edges:
        if lo <= a <= hi and lo <= b <= hi:
            x[k], y[k] = a, b
            k += 1
    return x, y


@pytest.mark.parametrize("name", SIGNED + UNSIGNED)
def test_integer_floordiv_and_mod_truncate(backend, name):
    n = 1000  # a masked tail
    x, y = operands(name, n)
    signed = name in SIGNED
    out = backend.zeros((10, n), x.dtype)
    divmod_kernel[grid1(n, 256)](backend.array(x), backend.array(y), out, n, SIGNED=signed, BLOCK=256)
    out = backend.numpy(out)
    dtype = x.dtype
    full = lambda v: np.full(n, v, dtype=dtype)  # noqa: E731
    cases = [("x // y", "x % y", x, y), ("x // 3", "x % 3", x, full(3)), ("7 // y", None, full(7), y),
             (None, "100 % y", full(100), y)]
    if signed:
        cases += [("x // -3", "x % -3", x, full(-3)), ("-7 // y", None, full(-7), y), (None, "-100 % y", full(-100), y)]
    rows = {"x // y": 0, "x % y": 1, "x // 3": 2, "x % 3": 3, "7 // y": 4, "100 % y": 5, "x // -3": 6, "x % -3": 7,
            "-7 // y": 8, "-100 % y": 9}
    for div_name, mod_name, a, b in cases:
        q, r = c_divmod(a, b, name)
        if div_name:
            check(out[rows[div_name]], q, name, what=f"{name} {div_name}")
        if mod_name:
            check(out[rows[mod_name]], r, name, what=f"{name} {mod_name}")
    # The identity C division keeps (and Python's would too): x == (x // y) * y + x % y.
    with np.errstate(over="ignore"):
        nz = y != 0
        back = (out[0].astype(np.int64) * y.astype(np.int64) + out[1].astype(np.int64)).astype(dtype)
    assert (back[nz] == x[nz]).all()


@tegula.jit
def scalar_divmod_kernel(out_ptr, a, b, A: tl.constexpr, B: tl.constexpr):
    tl.store(out_ptr + 0, a // b)   # runtime scalars: C
    tl.store(out_ptr + 1, a % b)
    tl.store(out_ptr + 2, A // B)   # constants: Python
    tl.store(out_ptr + 3, A % B)
    tl.store(out_ptr + 4, a // B)   # a runtime value and a constant: C
    tl.store(out_ptr + 5, a % B)


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (-(2**40) - 5, 3)])
def test_scalars_and_constants(backend, a, b):
    out = backend.zeros(6, np.int64)
    scalar_divmod_kernel[(1,)](out, a, b, A=a, B=b)
    q, r = c_divmod(np.array([a], np.int64), np.array([b], np.int64), "int64")
    assert backend.numpy(out).tolist() == [q[0], r[0], a // b, a % b, q[0], r[0]]


@tegula.jit
def float_mod_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    r = x % y
    tl.static_assert(r.dtype == tl.float64 if x.dtype == tl.float64 else r.dtype == tl.float32,
                     "f16/bf16 % computes in f32")
    tl.store(out_ptr + offs, r.to(tl.float64), mask=m)
    tl.store(out_ptr + n + offs, (x % 2.5).to(tl.float64), mask=m)
    tl.store(out_ptr + 2 * n + offs, (-3.0 % y).to(tl.float64), mask=m)


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_float_mod_is_fmod(backend, name):
    n = 500
    rng = rng_for("float_mod", name)
    x = random(rng, n, name, low=-20.0, high=20.0)
    y = random(rng, n, name, low=-6.0, high=6.0, specials=True)
    for i, (a, b) in enumerate([(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (1.0, 0.0), (-0.0, 3.0)]):
        x[20 + i], y[20 + i] = a, b
    out = backend.zeros((3, n), np.float64)
    float_mod_kernel[grid1(n, 128)](backend.array(x), backend.array(y), out, n, BLOCK=128)
    out = backend.numpy(out)
    compute = np.float64 if name == "float64" else np.float32
    xc, yc = x.astype(compute), y.astype(compute)
    with np.errstate(all="ignore"):
        for k, want in enumerate([np.fmod(xc, yc), np.fmod(xc, compute(2.5)), np.fmod(compute(-3.0), yc)]):
            check(out[k], to_f64(want), "float64", ulps=0, atol=0, what=f"{name} row {k}")
        assert np.signbit(out[0][25]), "-0.0 % 3 keeps the dividend's sign"


# --- errors -------------------------------------------------------------------------------


@tegula.jit
def float_floordiv_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, x // 2.0)


@tegula.jit
def unsigned_negative_literal_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr) % -3)


@tegula.jit
def literal_out_of_range_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr) // 300)


def test_errors(backend):
    with pytest.raises(tegula.CompilationError, match="`//` is defined for integer tiles only") as info:
        float_floordiv_kernel[(1,)](backend.zeros(1, np.float32), backend.zeros(1, np.float32))
    assert "test_int_division.py:" in str(info.value) and "tl.floor(a / b)" in str(info.value)
    with pytest.raises(tegula.CompilationError,
                       match="the negative constant -3 cannot be combined with an unsigned uint32 value"):
        unsigned_negative_literal_kernel[(1,)](backend.zeros(1, np.uint32), backend.zeros(1, np.uint32))
    with pytest.raises(tegula.CompilationError, match=r"the constant 300 is out of range for int8 \(in `//`\)"):
        literal_out_of_range_kernel[(1,)](backend.zeros(1, np.int8), backend.zeros(1, np.int8))


def test_cuda_compiles_division_kernels_for_sm80_and_sm90(tmp_path):
    from cuda_compile_util import compile_for_cuda

    for arch in (80, 90):
        for t in ("i8", "i64", "u32"):
            signed = "False" if t.startswith("u") else "True"
            compile_for_cuda(divmod_kernel, f"*{t}:16, *{t}:16, *{t}:16, i32, {signed}, 256", arch, tmp_path)
        compile_for_cuda(float_mod_kernel, "*bf16:16, *bf16:16, *fp64:16, i32, 128", arch, tmp_path)
