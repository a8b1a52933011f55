"""Integer binary operators on every pair of integer types, as Triton types them.

Both operands convert to one type by C's usual arithmetic conversions
(Triton's `integer_promote_impl`): the wider type wins, and at equal width the
unsigned one; a signed type wider than the unsigned one wins. `>>` shifts in
sign bits when the *left* operand is signed, whatever the promoted type is:
`int8 >> uint64` promotes -1 to 2**64 - 1 and shifts it arithmetically (it
stays 2**64 - 1), where a logical shift by 46 would give 262143. `//` and `%`
of operands of different signedness are refused, as in Triton.

Each pair runs one kernel on 100 elements (blocks of 64: a masked tail) and
checks every operator against NumPy, computed in the promoted type; the
result dtype is checked at compile time.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import INTS, c_div, c_mod, check, grid1, np_dtype, random, rng_for, tl_dtype

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


@pytest.mark.parametrize("rhs", INTS)
@pytest.mark.parametrize("lhs", INTS)
def test_int_pair(backend, lhs, rhs):
    n, block = 100, 64
    result = promoted(lhs, rhs)
    rt = np_dtype(result)
    bits = rt.itemsize * 8
    rng = rng_for("int-pair", lhs, rhs)
    x = random(rng, n, lhs)
    y = random(rng, n, rhs, nonzero=True)
    if lhs in INTS[:4] and rhs in INTS[:4]:
        y[y == -1] = 1  # INT_MIN // -1 overflows
    s = random(rng, n, rhs, low=0, high=bits)
    x[0] = -1 if not lhs.startswith("u") else x[0]  # a negative scalar operand for x0 >> s
    same_sign = lhs.startswith("u") == rhs.startswith("u")
    out = backend.zeros(12 * n, rt)
    int_ops_kernel[grid1(n, block)](backend.array(x), backend.array(y), backend.array(s), out, n,
                                    RESULT=tl_dtype(result), SAME_SIGN=same_sign, BLOCK=block)
    out = backend.numpy(out).reshape(12, n)
    a, b, amount = x.astype(rt), y.astype(rt), s.astype(rt)
    signed_lhs = not lhs.startswith("u")
    with np.errstate(all="ignore"):
        want = [a + b, a - b, a * b, a & b, a | b, a ^ b, a << amount, shift_right(a, amount, signed_lhs),
                shift_right(np.full(n, a[0]), amount, signed_lhs), shift_right(x, np.full(n, 3, x.dtype), signed_lhs)]
    if same_sign:
        want += [c_div(a, b), c_mod(a, b)]
    for i, w in enumerate(want):
        check(out[i], w.astype(rt), result, what=f"{lhs} {OPS[i] if i < 8 else '>>'} {rhs} (row {i})")


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
