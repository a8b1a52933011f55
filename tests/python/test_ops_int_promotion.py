"""Binary operators on every pair of integer types, and of integer or float
with float types, as Triton types them.

Both operands convert to one type by C's usual arithmetic conversions
(Triton's `integer_promote_impl`): the wider type wins, and at equal width the
unsigned one; a signed type wider than the unsigned one wins. `>>` shifts in
sign bits when the *left* operand is signed, whatever the promoted type is:
`int8 >> uint64` promotes -1 to 2**64 - 1 and shifts it arithmetically (it
stays 2**64 - 1), where a logical shift by 46 would give 262143. `//` and `%`
of operands of different signedness are refused, as in Triton.

With a float operand Triton's `computation_type_impl` decides: f64, else
f32, else f16 (f32 for `/` and `%`), bf16 only against bf16 (f32 for `/`
and `%`), bf16 with anything else f32.

Each pair runs one kernel on 100 elements (blocks of 64: a masked tail) and
checks every operator against NumPy, computed in the promoted type; the
result dtype is checked at compile time.
"""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import FLOATS, INTS, c_div, c_mod, check, grid1, np_dtype, random, ref_binary, rng_for, tl_dtype

OPS = ["+", "-", "*", "&", "|", "^", "<<", ">>", "//", "%"]


def promoted(a: str, b: str) -> str:
    wa, wb = np_dtype(a).itemsize, np_dtype(b).itemsize
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if wa >= wb else b
    u, s = (a, b) if ua else (b, a)
    return u if np_dtype(u).itemsize >= np_dtype(s).itemsize else s


@tegula.jit
def int_ops_kernel(x_ptr, y_ptr, s_ptr, out_ptr, n, RESULT: tl.constexpr, SAME_SIGN: tl.constexpr,
                   BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    s = tl.load(s_ptr + offs, mask=m, other=0)  # shift amounts, y's type
    x0 = tl.load(x_ptr)  # a scalar operand
    results = (x + y, x - y, x * y, x & y, x | y, x ^ y, x << s, x >> s, x0 >> s, x >> 3)
    for i in tl.static_range(len(results)):
        tl.static_assert(results[i].dtype == RESULT or i == len(results) - 1, "unexpected result dtype")
        tl.store(out_ptr + i * n + offs, results[i].to(RESULT), mask=m)
    if SAME_SIGN:
        q = x // y
        r = x % y
        tl.static_assert(q.dtype == RESULT and r.dtype == RESULT)
        tl.store(out_ptr + 10 * n + offs, q, mask=m)
        tl.store(out_ptr + 11 * n + offs, r, mask=m)


def shift_right(x: np.ndarray, amount: np.ndarray, arithmetic: bool) -> np.ndarray:
    """x >> amount on x's bits, in sign bits when `arithmetic`."""
    width = x.dtype.itemsize
    kind = np.dtype(f"i{width}") if arithmetic else np.dtype(f"u{width}")
    return (x.view(kind) >> amount.astype(kind)).view(x.dtype)


def int_pair_case(lhs, rhs):
    """Inputs (x, y, shift amounts) and the expected rows of int_ops_kernel."""
    n = 100
    result = promoted(lhs, rhs)
    rt = np_dtype(result)
    bits = rt.itemsize * 8
    rng = rng_for("int-pair", lhs, rhs)
    x = random(rng, n, lhs)
    y = random(rng, n, rhs, nonzero=True)
    if lhs in INTS[:4] and rhs in INTS[:4]:
        y[y == -1] = 1  # INT_MIN // -1 overflows
    s = random(rng, n, rhs, low=0, high=bits)
    if not lhs.startswith("u"):
        x[0] = -1  # a negative scalar operand for x0 >> s
    a, b, amount = x.astype(rt), y.astype(rt), s.astype(rt)
    signed_lhs = not lhs.startswith("u")
    with np.errstate(all="ignore"):
        want = [a + b, a - b, a * b, a & b, a | b, a ^ b, a << amount, shift_right(a, amount, signed_lhs),
                shift_right(np.full(n, a[0]), amount, signed_lhs), shift_right(x, np.full(n, 3, x.dtype), signed_lhs)]
    if lhs.startswith("u") == rhs.startswith("u"):
        want += [c_div(a, b), c_mod(a, b)]
    return (x, y, s), [w.astype(rt) for w in want]


def check_int_pair(out, want, lhs, rhs):
    result = promoted(lhs, rhs)
    for i, w in enumerate(want):
        check(out[i], w, result, what=f"{lhs} {OPS[i] if i < 8 else '>>'} {rhs} (row {i})")


@pytest.mark.parametrize("rhs", INTS)
@pytest.mark.parametrize("lhs", INTS)
def test_int_pair(backend, lhs, rhs):
    n, block = 100, 64
    (x, y, s), want = int_pair_case(lhs, rhs)
    out = backend.zeros(12 * n, np_dtype(promoted(lhs, rhs)))
    int_ops_kernel[grid1(n, block)](backend.array(x), backend.array(y), backend.array(s), out, n,
                                    RESULT=tl_dtype(promoted(lhs, rhs)), SAME_SIGN=len(want) == 12, BLOCK=block)
    check_int_pair(backend.numpy(out).reshape(12, n), want, lhs, rhs)


@pytest.mark.parametrize("lhs,rhs", [("int8", "uint64"), ("int16", "uint16"), ("int64", "uint32"), ("uint8", "int32")])
def test_emulated_cuda_int_pair(lhs, rhs):
    # The CUDA backend's code for the same kernel, run on the host
    # (tests/python/cuda_emulator.py).
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    n, block = 100, 64
    (x, y, s), want = int_pair_case(lhs, rhs)
    out = np.zeros(12 * n, np_dtype(promoted(lhs, rhs)))
    emulate(int_ops_kernel, grid1(n, block), x, y, s, out, n, RESULT=tl_dtype(promoted(lhs, rhs)),
            SAME_SIGN=len(want) == 12, BLOCK=block, num_warps=2)
    check_int_pair(out.reshape(12, n), want, lhs, rhs)


@tegula.jit
def shift_kernel(x_ptr, y_ptr, out_ptr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) >> tl.load(y_ptr + offs))


def test_signed_shifted_by_unsigned_shifts_in_sign_bits(backend):
    x = np.array([-1, -1, -128, 64], np.int8)
    y = np.array([46, 63, 1, 1], np.uint64)
    out = backend.zeros(4, np.uint64)
    shift_kernel[(1,)](backend.array(x), backend.array(y), out)
    want = np.array([2**64 - 1, 2**64 - 1, 2**64 - 64, 32], np.uint64)
    assert (backend.numpy(out) == want).all(), backend.numpy(out)


@tegula.jit
def literal_shift_kernel(y_ptr, out_ptr):
    offs = tl.arange(0, 4)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, 200 >> y)


@pytest.mark.parametrize("name", ["int32", "uint32"])
def test_constant_shifted_by_a_tile(backend, name):
    # 200 >> y is y.__rrshift__(200): the tile's signedness decides, and the
    # constant takes its type.
    y = np.array([0, 1, 3, 7], np_dtype(name))
    out = backend.zeros(4, np_dtype(name))
    literal_shift_kernel[(1,)](backend.array(y), out)
    assert (backend.numpy(out) == 200 >> y).all()


@tegula.jit
def literal_type_kernel(x_ptr, out_ptr, BIG: tl.constexpr, TINY: tl.constexpr):
    b = tl.load(x_ptr + tl.arange(0, 4)) != 0
    big = b + BIG  # 3e9 is a uint32 constant, which wins against a bool tile
    tl.static_assert(big.dtype == tl.uint32)
    tiny = b * TINY  # 1e-300 leaves float32's range: a float64 constant
    tl.static_assert(tiny.dtype == tl.float64)
    tl.store(out_ptr + tl.arange(0, 4), big.to(tl.float64) + tiny)


def test_constant_types_follow_their_value(backend):
    x = np.array([0, 1, 1, 0], np.int32)
    out = backend.zeros(4, np.float64)
    literal_type_kernel[(1,)](backend.array(x), out, BIG=3_000_000_000, TINY=1e-300)
    want = (x != 0) + 3_000_000_000 + (x != 0) * 1e-300
    assert (backend.numpy(out) == want).all()


def computed(a: str, b: str, div_or_mod: bool) -> str:
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if "bfloat16" in (a, b):
        return "bfloat16" if a == b and not div_or_mod else "float32"
    return promoted(a, b)


@tegula.jit
def float_ops_kernel(x_ptr, y_ptr, out_ptr, n, RESULT: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    results = (x + y, x - y, x * y)
    for i in tl.static_range(3):
        tl.static_assert(results[i].dtype == RESULT, "unexpected result dtype")
        tl.store(out_ptr + i * n + offs, results[i].to(tl.float64), mask=m)
    q = x / y
    r = x % y
    tl.static_assert(q.dtype == WIDE and r.dtype == WIDE, "unexpected / or % dtype")
    tl.store(out_ptr + 3 * n + offs, q.to(tl.float64), mask=m)
    tl.store(out_ptr + 4 * n + offs, r.to(tl.float64), mask=m)


FLOAT_PAIRS = [(a, b) for a in INTS + FLOATS for b in FLOATS] + [(a, b) for a in FLOATS for b in INTS]


@pytest.mark.parametrize("lhs,rhs", FLOAT_PAIRS, ids=lambda v: str(v))
def test_float_pair(backend, lhs, rhs):
    n, block = 100, 64
    result, wide = computed(lhs, rhs, False), computed(lhs, rhs, True)
    rng = rng_for("float-pair", lhs, rhs)

    def values(name):  # small enough for f16 and exact in every type here
        if name in INTS:
            return random(rng, n, name, low=-100 if not name.startswith("u") else 0, high=100, nonzero=True)
        return random(rng, n, name, low=-8, high=8, nonzero=True)

    x, y = values(lhs), values(rhs)
    out = backend.zeros(5 * n, np.float64)
    float_ops_kernel[grid1(n, block)](backend.array(x), backend.array(y), out, n, RESULT=tl_dtype(result),
                                      WIDE=tl_dtype(wide), BLOCK=block)
    out = backend.numpy(out).reshape(5, n)
    ops = [np.add, np.subtract, np.multiply, np.divide, np.fmod]
    for i, op in enumerate(ops):
        name = result if i < 3 else wide
        check(out[i], ref_binary(op, x, y, name), name, ulps=1, what=f"{lhs} {'+-*/%'[i]} {rhs}")


@tegula.jit
def uint64_constants_kernel(z_ptr, y_ptr, c_ptr, BLOCK: tl.constexpr):
    # Constant arithmetic is Python's, within int64 or uint64: 1 << 63 is a uint64 constant, as in Triton
    # (test_interpreter_ashr_does_not_mutate_uint64_rhs).
    off = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + off)
    tl.store(z_ptr + off, y + (1 << 63))
    top = (1 << 63) + ((1 << 63) - 1)             # the largest uint64 (every step within 64 bits)
    tl.store(c_ptr + 0, top)
    tl.store(c_ptr + 1, top // 3)                 # floor division above INT64_MAX
    tl.store(c_ptr + 2, (1 << 63) % 1000003)
    tl.store(c_ptr + 3, (1 << 63) >> 3)
    tl.store(c_ptr + 4, top ^ (1 << 63))          # back in int64's range
    tl.store(c_ptr + 5, -(1 << 63) + (1 << 63) + 7)


def test_constant_arithmetic_reaches_uint64(backend):
    y = np.array([0, 1, 63, 2**62 + 5], dtype=np.uint64)
    z = backend.zeros(4, np.uint64)
    c = backend.zeros(6, np.uint64)
    uint64_constants_kernel[(1,)](z, backend.array(y), c, BLOCK=4)
    np.testing.assert_array_equal(backend.numpy(z), y + np.uint64(1 << 63))
    want = [2**64 - 1, (2**64 - 1) // 3, (1 << 63) % 1000003, (1 << 63) >> 3, (2**64 - 1) ^ (1 << 63), 7]
    assert [int(v) for v in backend.numpy(c)] == want


@tegula.jit
def constant_overflow_kernel(out_ptr, CASE: tl.constexpr):
    if CASE == 0:
        tl.store(out_ptr, (1 << 63) * 2)
    elif CASE == 1:
        tl.store(out_ptr, -(1 << 63) - 1)
    else:
        tl.store(out_ptr, ~(1 << 63))


@pytest.mark.parametrize("case", [0, 1, 2])
def test_constants_past_uint64_or_below_int64_are_errors(case):
    with pytest.raises(tegula.CompilationError, match=r"E0603.*overflows 64-bit integers"):
        constant_overflow_kernel[(1,)](np.zeros(1, np.int64), CASE=case)


@tegula.jit
def float_to_int_kernel(out_ptr, V: tl.constexpr, CASE: tl.constexpr):
    if CASE == 0:
        tl.store(out_ptr, int(V))
    else:
        tl.store(out_ptr + tl.arange(0, 2), tl.full((2,), V, tl.int32))


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("value, message", [
    (1e300, "cannot convert 1.0000000000000001e+300 to an integer: it does not fit in 64 bits"),
    (-1e19, "cannot convert -1e+19 to an integer: it does not fit in 64 bits"),
    (float("inf"), "cannot convert float infinity to integer"),
    (float("-inf"), "cannot convert float infinity to integer"),
    (float("nan"), "cannot convert float NaN to integer"),
])
def test_a_float_constant_without_an_integer_value_is_an_error(case, value, message):
    """int() of a float constant (and a float constant made an integer tile) that is NaN, infinite
    or out of the 64-bit range is Python's error, located; it was INT64_MIN (undefined in C++)."""
    with pytest.raises(tegula.CompilationError, match=r"error\[E0603\]: " + re.escape(message)):
        float_to_int_kernel[(1,)](np.zeros(2, np.int64), V=value, CASE=case)


@tegula.jit
def int_of_float_kernel(out_ptr):
    tl.static_assert(int(1e19) == 10000000000000000000)  # above INT64_MAX: a uint64, as the literal
    tl.static_assert(int(-3.9) == -3 and int(True) == 1)
    tl.static_assert(abs(-2**63) == 2**63 and abs(-2**63) == -(-2**63) and abs(-2**63) > 0)
    tl.static_assert(abs(True) == 1 and abs(-7) == 7 and abs(-2.5) == 2.5)
    tl.store(out_ptr, abs(-2**63))


def test_int_and_abs_of_constants_follow_python():
    out = np.zeros(1, np.uint64)
    int_of_float_kernel[(1,)](out)
    assert int(out[0]) == 2**63
