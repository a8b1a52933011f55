"""Types: binary-op promotion between tiles and with Python literals,
`.to(dtype)` between every pair of dtypes, rounding to f16/bf16, and
`tl.cast(..., bitcast=True)`.

Promotion follows Triton's `computation_type_impl`: f64 > f32 > f16 > bf16;
bf16 with anything but bf16 (other than f32/f64/f16) computes in f32; `/` and
`%` on f16/bf16 compute in f32; integers: the wider wins, unsigned wins at
equal or greater width; a Python literal of the same or a lower kind
(bool < int < float) than the tile adopts the tile's type. Each case
checks the result dtype at compile time (`tl.static_assert`) and the values.

Conversions: int -> int keeps the low bits (sign- or zero-extending); float
-> int truncates toward zero and is only checked where the value is in range
(elsewhere it is unspecified); anything -> float rounds once to nearest even.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import (ALL, FLOATS, INTS, check, grid1, int_range, np_dtype, random, rng_for,
                      round_to, tl_dtype, to_f64)


# --- promotion between two tiles -------------------------------------------------


@tegula.jit
def promote_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, EXPECT: tl.constexpr,
                   BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    if OP == "+":
        r = x + y
    elif OP == "*":
        r = x * y
    elif OP == "/":
        r = x / y
    else:
        r = x - y
    tl.static_assert(r.dtype == EXPECT, "unexpected result dtype")
    tl.store(out_ptr + offs, r, mask=m)


PROMOTIONS = [
    # (lhs, rhs, op, result)
    ("int8", "int32", "+", "int32"),
    ("int32", "int8", "-", "int32"),
    ("uint32", "int32", "+", "uint32"),
    ("int8", "uint8", "*", "uint8"),
    ("int16", "uint32", "-", "uint32"),
    ("int64", "uint32", "+", "int64"),
    ("uint64", "int64", "+", "uint64"),
    ("uint8", "int16", "*", "int16"),
    ("bool", "int8", "+", "int8"),
    ("bool", "uint16", "+", "uint16"),
    ("int32", "float16", "+", "float16"),
    ("int64", "float32", "*", "float32"),
    ("float16", "float32", "+", "float32"),
    ("bfloat16", "float16", "+", "float16"),
    ("bfloat16", "float32", "*", "float32"),
    ("float32", "float64", "-", "float64"),
    ("bfloat16", "bfloat16", "*", "bfloat16"),
    ("float16", "float16", "/", "float32"),
    ("bfloat16", "bfloat16", "/", "float32"),
    ("int8", "int8", "/", "float32"),
    ("int64", "int64", "/", "float32"),
    ("float16", "float64", "/", "float64"),
    # bf16 with an integer tile computes in f32 (Triton's rule 4: bf16 only
    # when both operands are bf16).
    ("bfloat16", "int32", "+", "float32"),
    ("uint8", "bfloat16", "*", "float32"),
]


def small_values(rng, n, name):
    if name in FLOATS:
        return random(rng, n, name, low=-8, high=8)
    if name == "bool":
        return random(rng, n, name)
    lo, hi = int_range(name)
    return random(rng, n, name, low=max(lo, -100), high=min(hi, 100))


@pytest.mark.parametrize("lhs,rhs,op,result", PROMOTIONS, ids=lambda v: str(v))
def test_tile_tile_promotion(backend, lhs, rhs, op, result):
    n = 100
    rng = rng_for("promote", lhs, rhs, op)
    x = small_values(rng, n, lhs)
    y = small_values(rng, n, rhs)
    y[y == 0] = 1
    out = backend.zeros(n, np_dtype(result))
    promote_kernel[grid1(n, 64)](backend.array(x), backend.array(y), out, n, OP=op, EXPECT=tl_dtype(result),
                                 BLOCK=64)
    out = backend.numpy(out)
    if result in FLOATS:
        x64, y64 = to_f64(x), to_f64(y)
        want = {"+": x64 + y64, "-": x64 - y64, "*": x64 * y64, "/": x64 / y64}[op]
        check(out, want, result, ulps=1, what=f"{lhs} {op} {rhs}")
    else:
        dt = np_dtype(result)
        a, b = x.astype(dt), y.astype(dt)
        with np.errstate(all="ignore"):
            want = {"+": a + b, "-": a - b, "*": a * b}[op]
        check(out, want, result, what=f"{lhs} {op} {rhs}")


# --- promotion with Python literals -------------------------------------------------


@tegula.jit
def literal_kernel(h_ptr, b_ptr, i8_ptr, u8_ptr, i32_ptr, i64_ptr, f64_ptr, u32_ptr, out_ptr,
                   BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    b = tl.load(b_ptr + offs)
    i8 = tl.load(i8_ptr + offs)
    u8 = tl.load(u8_ptr + offs)
    i32 = tl.load(i32_ptr + offs)
    i64 = tl.load(i64_ptr + offs)
    f64 = tl.load(f64_ptr + offs)
    u32 = tl.load(u32_ptr + offs)
    r0 = h * 2.0
    tl.static_assert(r0.dtype == tl.float16, "f16 * 2.0 stays f16")
    r1 = b * 2.0
    tl.static_assert(r1.dtype == tl.bfloat16, "bf16 * 2.0 stays bf16")
    r2 = i8 + 1
    tl.static_assert(r2.dtype == tl.int8, "i8 + 1 stays i8")
    r3 = u8 + 1
    tl.static_assert(r3.dtype == tl.uint8, "u8 + 1 stays u8 (ints are one kind, as in Triton)")
    r4 = i32 + 1.5
    tl.static_assert(r4.dtype == tl.float32, "i32 + 1.5 is f32")
    r5 = i8 * 2.5
    tl.static_assert(r5.dtype == tl.float32, "i8 * 2.5 is f32")
    r6 = h + 1
    tl.static_assert(r6.dtype == tl.float16, "f16 + 1 stays f16")
    r7 = h / 2.0
    tl.static_assert(r7.dtype == tl.float32, "f16 / 2.0 is f32")
    r8 = i32 / 2
    tl.static_assert(r8.dtype == tl.float32, "i32 / 2 is f32")
    r9 = f64 * 2.0
    tl.static_assert(r9.dtype == tl.float64, "f64 * 2.0 stays f64")
    r10 = i64 + 1
    tl.static_assert(r10.dtype == tl.int64, "i64 + 1 stays i64")
    r11 = u32 + 1
    tl.static_assert(r11.dtype == tl.uint32, "u32 + 1 is u32")
    r12 = 3 - i8
    tl.static_assert(r12.dtype == tl.int8, "3 - i8 stays i8")
    r13 = b + 1
    tl.static_assert(r13.dtype == tl.bfloat16, "bf16 + 1 stays bf16")
    r14 = i8 // 3
    tl.static_assert(r14.dtype == tl.int8, "i8 // 3 stays i8")
    r15 = h % 2.0
    tl.static_assert(r15.dtype == tl.float32, "f16 % 2.0 is f32")
    tl.store(out_ptr + 0 * BLOCK + offs, r0.to(tl.float64))
    tl.store(out_ptr + 1 * BLOCK + offs, r1.to(tl.float64))
    tl.store(out_ptr + 2 * BLOCK + offs, r2.to(tl.float64))
    tl.store(out_ptr + 3 * BLOCK + offs, r3.to(tl.float64))
    tl.store(out_ptr + 4 * BLOCK + offs, r4.to(tl.float64))
    tl.store(out_ptr + 5 * BLOCK + offs, r5.to(tl.float64))
    tl.store(out_ptr + 6 * BLOCK + offs, r6.to(tl.float64))
    tl.store(out_ptr + 7 * BLOCK + offs, r7.to(tl.float64))
    tl.store(out_ptr + 8 * BLOCK + offs, r8.to(tl.float64))
    tl.store(out_ptr + 9 * BLOCK + offs, r9)
    tl.store(out_ptr + 10 * BLOCK + offs, r10.to(tl.float64))
    tl.store(out_ptr + 11 * BLOCK + offs, r11.to(tl.float64))
    tl.store(out_ptr + 12 * BLOCK + offs, r12.to(tl.float64))
    tl.store(out_ptr + 13 * BLOCK + offs, r13.to(tl.float64))
    tl.store(out_ptr + 14 * BLOCK + offs, r14.to(tl.float64))
    tl.store(out_ptr + 15 * BLOCK + offs, r15.to(tl.float64))


def test_literal_promotion(backend):
    B = 64
    rng = rng_for("literals")
    h = random(rng, B, "float16")
    b = random(rng, B, "bfloat16")
    i8 = random(rng, B, "int8")  # full range: `i8 + 1` must wrap at 127
    i8[0] = 127
    u8 = random(rng, B, "uint8")
    u8[0] = 255  # u8 + 1 stays u8: wraps to 0
    i32 = random(rng, B, "int32", low=-1000, high=1000)
    i64 = random(rng, B, "int64")
    f64 = random(rng, B, "float64")
    u32 = random(rng, B, "uint32")
    u32[0] = 2**32 - 1
    out = backend.zeros((16, B), np.float64)
    literal_kernel[(1,)](*map(backend.array, (h, b, i8, u8, i32, i64, f64, u32)), out, BLOCK=B)
    out = backend.numpy(out)
    h64, b64 = to_f64(h), to_f64(b)
    with np.errstate(all="ignore"):
        cases = [
            ("f16 * 2.0", round_to(h64 * 2, "float16"), "float16"),
            ("bf16 * 2.0", round_to(b64 * 2, "bfloat16"), "bfloat16"),
            ("i8 + 1", i8 + np.int8(1), "int8"),
            ("u8 + 1", u8 + np.uint8(1), "uint8"),
            ("i32 + 1.5", i32.astype(np.float32) + np.float32(1.5), "float32"),
            ("i8 * 2.5", i8.astype(np.float32) * np.float32(2.5), "float32"),
            ("f16 + 1", round_to(h64 + 1, "float16"), "float16"),
            ("f16 / 2.0", h.astype(np.float32) / np.float32(2), "float32"),
            ("i32 / 2", i32.astype(np.float32) / np.float32(2), "float32"),
            ("f64 * 2.0", f64 * 2, "float64"),
            ("i64 + 1", i64 + np.int64(1), "int64"),
            ("u32 + 1", u32 + np.uint32(1), "uint32"),
            ("3 - i8", np.int8(3) - i8, "int8"),
            ("bf16 + 1", round_to(b64 + 1, "bfloat16"), "bfloat16"),
            ("i8 // 3", (np.trunc(i8 / 3)).astype(np.int8), "int8"),
            ("f16 % 2.0", np.fmod(h.astype(np.float32), np.float32(2)), "float32"),
        ]
    for k, (what, want, dtype) in enumerate(cases):
        # The kernel widened each result to f64 after checking its dtype; the
        # values must match exactly (i64 results beyond 2**53 round alike).
        check(out[k], to_f64(np.asarray(want, dtype=np_dtype(dtype))), "float64", rtol=0, atol=0,
              what=what)


@tegula.jit
def mixed_signedness_div_kernel(x_ptr, y_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr) // tl.load(y_ptr))


def test_floordiv_of_mixed_signedness_is_rejected(backend):
    # Triton: "Cannot use /, //, or % with int8 and uint8 because they have
    # different signedness".
    x = backend.full(1, 1, np.int8)
    y = backend.full(1, 1, np.uint8)
    with pytest.raises(tegula.CompilationError, match="different signedness"):
        mixed_signedness_div_kernel[(1,)](x, y, backend.zeros(1, np.int8))


# --- .to(dtype) between every pair ---------------------------------------------------


@tegula.jit
def cast_all_kernel(x_ptr, o_b, o_i8, o_i16, o_i32, o_i64, o_u8, o_u16, o_u32, o_u64, o_f16, o_bf16,
                    o_f32, o_f64, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    # Each conversion's type is asserted, so the store's own conversion to the
    # pointer's type cannot hide a missing one.
    v = x.to(tl.int1)
    tl.static_assert(v.dtype == tl.int1)
    tl.store(o_b + offs, v, mask=m)
    v = x.to(tl.int8)
    tl.static_assert(v.dtype == tl.int8)
    tl.store(o_i8 + offs, v, mask=m)
    v = x.to(tl.int16)
    tl.static_assert(v.dtype == tl.int16)
    tl.store(o_i16 + offs, v, mask=m)
    v = x.to(tl.int32)
    tl.static_assert(v.dtype == tl.int32)
    tl.store(o_i32 + offs, v, mask=m)
    v = x.to(tl.int64)
    tl.static_assert(v.dtype == tl.int64)
    tl.store(o_i64 + offs, v, mask=m)
    v = x.to(tl.uint8)
    tl.static_assert(v.dtype == tl.uint8)
    tl.store(o_u8 + offs, v, mask=m)
    v = x.to(tl.uint16)
    tl.static_assert(v.dtype == tl.uint16)
    tl.store(o_u16 + offs, v, mask=m)
    v = x.to(tl.uint32)
    tl.static_assert(v.dtype == tl.uint32)
    tl.store(o_u32 + offs, v, mask=m)
    v = x.to(tl.uint64)
    tl.static_assert(v.dtype == tl.uint64)
    tl.store(o_u64 + offs, v, mask=m)
    v = tl.cast(x, tl.float16)
    tl.static_assert(v.dtype == tl.float16)
    tl.store(o_f16 + offs, v, mask=m)
    v = x.to(tl.bfloat16)
    tl.static_assert(v.dtype == tl.bfloat16)
    tl.store(o_bf16 + offs, v, mask=m)
    v = x.to(tl.float32)
    tl.static_assert(v.dtype == tl.float32)
    tl.store(o_f32 + offs, v, mask=m)
    v = x.to(tl.float64)
    tl.static_assert(v.dtype == tl.float64)
    tl.store(o_f64 + offs, v, mask=m)


def cast_source(rng, n, name):
    if name == "bool" or name in INTS:
        return random(rng, n, name)
    # Small values (in range of every integer type, with fractions and
    # negatives) and large ones (in range of the wide types only).
    lo, hi = (-60000.0, 60000.0) if name == "float16" else (-3e9, 3e9)
    x = rng.uniform(-127.9, 127.9, n)
    x[::2] = rng.uniform(lo, hi, x[::2].shape)
    if name == "float64":
        x[1::4] = rng.standard_normal(x[1::4].shape)  # full f64 precision: f32 must round
        return x
    return x.astype(np.float32).astype(np_dtype(name))


def cast_reference(x, src, dst):
    """(expected, mask of elements where the conversion is specified)."""
    everywhere = np.ones(x.shape, dtype=bool)
    if dst == "bool":
        return x.astype(np.float64) != 0 if src in FLOATS else x != 0, everywhere
    if dst in FLOATS:
        if src in FLOATS:
            return round_to(to_f64(x), dst), everywhere
        if dst in ("float32", "float64"):
            return x.astype(np_dtype(dst)), everywhere
        return round_to(x.astype(np.float64), dst), everywhere
    if src in FLOATS:
        t = np.trunc(to_f64(x))
        lo, hi = int_range(dst)
        ok = (t >= lo) & (t <= hi)
        return np.where(ok, t, 0).astype(np_dtype(dst)), ok
    return x.astype(np_dtype(dst)), everywhere  # int/bool -> int: low bits


@pytest.mark.parametrize("src", ALL)
def test_to_every_dtype(backend, src):
    n = 1000
    rng = rng_for("cast", src)
    x = cast_source(rng, n, src)
    outs = [backend.zeros(n, np_dtype(d)) for d in ALL]
    cast_all_kernel[grid1(n, 256)](backend.array(x), *outs, n, BLOCK=256)
    for dst, got in zip(ALL, map(backend.numpy, outs)):
        want, specified = cast_reference(x, src, dst)
        check(got, want, dst, ulps=0, atol=0, where=specified, what=f"{src} -> {dst}")


def test_float_to_int_out_of_range_saturates(backend):
    # docs/language.md: out-of-range floats saturate and NaN gives 0 (Triton
    # leaves both undefined); the CUDA backend clamps the same way
    # (docs/backend-cuda.md). Same specialization as test_to_every_dtype.
    n = 1000
    x = np.zeros(n, np.float32)
    x[:8] = [np.inf, -np.inf, np.nan, 3e9, -3e9, 1e20, -1e20, -1.5]
    outs = [backend.zeros(n, np_dtype(d)) for d in ALL]
    cast_all_kernel[grid1(n, 256)](backend.array(x), *outs, n, BLOCK=256)
    for dst, got in zip(ALL, map(backend.numpy, outs)):
        if dst in FLOATS:
            continue
        if dst == "bool":
            check(got[:8], [True] * 7 + [True], "bool", what="f32 -> bool (NaN is true)")
            continue
        lo, hi = int_range(dst)
        want = [hi, lo, 0, min(3e9, hi), max(-3e9, lo), hi, lo, max(-1, lo)]
        check(got[:8], np.array([int(w) for w in want], dtype=object), dst,
              what=f"f32 -> {dst} saturates")


# Values exactly halfway between two representable neighbours (ties go to the
# even one), just beside halfway, subnormals, overflow and NaN.
ROUNDING_CASES_F32 = {
    "bfloat16": [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-8 + 2**-20, 1 + 2**-8 - 2**-20,
                 2.0**-130 * 1.5, 3.4028234e38, 3.3e38, float("inf"), float("nan"), -0.0, 1e-45],
    "float16": [1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 1 + 2**-11 + 2**-20, 2049.0, 2051.0,
                65519.0, 65520.0, 2.0**-24 * 1.5, 2.0**-25, 2.0**-25 * 1.0001, 1e-9, float("nan")],
}


@tegula.jit
def round_kernel(x_ptr, h_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(h_ptr + offs, x.to(tl.float16))
    tl.store(b_ptr + offs, x.to(tl.bfloat16))


@pytest.mark.parametrize("src", ["float32", "float64"])
def test_rounding_to_f16_and_bf16_is_to_nearest_even(backend, src):
    values = ROUNDING_CASES_F32["bfloat16"] + ROUNDING_CASES_F32["float16"]
    x = np.zeros(32, dtype=np_dtype(src))
    x[: len(values)] = np.array(values, dtype=np.float64).astype(np.float32)
    h = backend.zeros(32, np.float16)
    b = backend.zeros(32, np_dtype("bfloat16"))
    round_kernel[(1,)](backend.array(x), h, b, BLOCK=32)
    h, b = backend.numpy(h), backend.numpy(b)
    check(h, round_to(to_f64(x), "float16"), "float16", ulps=0, atol=0, what=f"{src} -> f16")
    check(b, round_to(to_f64(x), "bfloat16"), "bfloat16", ulps=0, atol=0, what=f"{src} -> bf16")


def test_f64_to_bf16_rounds_once(backend):
    # 1 + 2^-8 + 2^-30 is just above the midpoint of 1 and 1 + 2^-7: correct
    # rounding gives 1 + 2^-7. Going through f32 first drops the 2^-30 and
    # lands exactly on the midpoint, which then rounds to even (1.0).
    x = np.zeros(32, np.float64)
    x[:4] = [1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 1 + 2**-11 + 2**-40, 1 + 2**-24 + 2**-60]
    h = backend.zeros(32, np.float16)
    b = backend.zeros(32, np_dtype("bfloat16"))
    round_kernel[(1,)](backend.array(x), h, b, BLOCK=32)
    h, b = backend.numpy(h), backend.numpy(b)
    check(b[:2], [1 + 2**-7, -(1 + 2**-7)], "bfloat16", ulps=0, atol=0, what="f64 -> bf16")
    check(h[2], 1 + 2**-10, "float16", ulps=0, atol=0, what="f64 -> f16")


# --- bitcast ------------------------------------------------------------------------


@tegula.jit
def bitcast_kernel(f32_ptr, f16_ptr, f64_ptr, i8_ptr, o_i32, o_u32, o_i16, o_bf16, o_i64, o_u8,
                   o_f32, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    f = tl.load(f32_ptr + offs)
    h = tl.load(f16_ptr + offs)
    d = tl.load(f64_ptr + offs)
    b = tl.load(i8_ptr + offs)
    tl.store(o_i32 + offs, tl.cast(f, tl.int32, bitcast=True))
    tl.store(o_u32 + offs, f.to(tl.uint32, bitcast=True))
    tl.store(o_i16 + offs, tl.cast(h, tl.int16, bitcast=True))
    tl.store(o_bf16 + offs, tl.cast(h, tl.bfloat16, bitcast=True))
    tl.store(o_i64 + offs, tl.cast(d, tl.int64, bitcast=True))
    tl.store(o_u8 + offs, tl.cast(b, tl.uint8, bitcast=True))
    i = tl.cast(f, tl.int32, bitcast=True)
    tl.store(o_f32 + offs, tl.cast(i ^ -2147483648, tl.float32, bitcast=True))  # flips the sign


def test_bitcast(backend):
    B = 64
    rng = rng_for("bitcast")
    f = random(rng, B, "float32", specials=True)
    h = random(rng, B, "float16", specials=True)
    d = random(rng, B, "float64")
    b = random(rng, B, "int8")
    outs = [backend.zeros(B, dt) for dt in (np.int32, np.uint32, np.int16, np_dtype("bfloat16"), np.int64,
                                            np.uint8, np.float32)]
    bitcast_kernel[(1,)](*map(backend.array, (f, h, d, b)), *outs, BLOCK=B)
    o_i32, o_u32, o_i16, o_bf16, o_i64, o_u8, o_f32 = map(backend.numpy, outs)
    check(o_i32, f.view(np.int32), "int32", what="f32 -> i32")
    check(o_u32, f.view(np.uint32), "uint32", what="f32 -> u32")
    check(o_i16, h.view(np.int16), "int16", what="f16 -> i16")
    check(o_bf16.view(np.uint16), h.view(np.uint16), "uint16", what="f16 -> bf16")
    check(o_i64, d.view(np.int64), "int64", what="f64 -> i64")
    check(o_u8, b.view(np.uint8), "uint8", what="i8 -> u8")
    check(o_f32.view(np.uint32), (f.view(np.uint32) ^ np.uint32(0x80000000)), "uint32", what="sign flip")


@tegula.jit
def bad_bitcast_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.cast(tl.load(x_ptr), tl.int16, bitcast=True))


def test_bitcast_between_widths_is_rejected(backend):
    with pytest.raises(tegula.CompilationError, match="same width"):
        bad_bitcast_kernel[(1,)](backend.full(1, 1.0, np.float32), backend.zeros(1, np.int16))


@tegula.jit
def runtime_scalar_kernel(i_ptr, h_ptr, b_ptr, o64_ptr, o32_ptr, of_ptr, ou8_ptr, big, s, small, flag,
                          BLOCK: tl.constexpr):
    # Runtime scalars are typed values, not literals: they take part in
    # promotion like a tile of their type.
    offs = tl.arange(0, BLOCK)
    i32 = tl.load(i_ptr + offs)
    h = tl.load(h_ptr + offs)
    b = tl.load(b_ptr + offs)
    r0 = i32 + big  # i32 tile + i64 scalar
    tl.static_assert(r0.dtype == tl.int64)
    r1 = h * s  # f16 tile * f32 scalar
    tl.static_assert(r1.dtype == tl.float32)
    r2 = b.to(tl.int8) + small  # i8 tile + i32 scalar
    tl.static_assert(r2.dtype == tl.int32)
    r3 = b + flag  # u8 tile + bool scalar
    tl.static_assert(r3.dtype == tl.uint8)
    tl.store(o64_ptr + offs, r0)
    tl.store(of_ptr + offs, r1)
    tl.store(o32_ptr + offs, r2)
    tl.store(ou8_ptr + offs, r3)


def test_runtime_scalar_promotion(backend):
    B = 16
    i32 = np.arange(B, dtype=np.int32) - 3
    h = np.linspace(-2, 2, B).astype(np.float16)
    b = (np.arange(B) * 20).astype(np.uint8)
    o64, o32 = backend.zeros(B, np.int64), backend.zeros(B, np.int32)
    of, ou8 = backend.zeros(B, np.float32), backend.zeros(B, np.uint8)
    big, s, small = 2**40 + 7, 0.1, 1000
    runtime_scalar_kernel[(1,)](*map(backend.array, (i32, h, b)), o64, o32, of, ou8, big, s, small, True,
                                BLOCK=B)
    o64, o32, of, ou8 = map(backend.numpy, (o64, o32, of, ou8))
    np.testing.assert_array_equal(o64, i32.astype(np.int64) + big)
    np.testing.assert_array_equal(of, h.astype(np.float32) * np.float32(s))
    np.testing.assert_array_equal(o32, b.astype(np.int8).astype(np.int32) + small)
    np.testing.assert_array_equal(ou8, b + np.uint8(1))


@tegula.jit
def rtz_kernel(x_ptr, h_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(h_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(b_ptr + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))


def test_fp_downcast_rounding_rtz(backend):
    # Round toward zero: the magnitude never grows, so 1 + 0.75 ulp rounds down.
    B = 16
    x = np.zeros(B, np.float32)
    x[:6] = [1 + 0.75 * 2**-10, -(1 + 0.75 * 2**-10), 1 + 0.75 * 2**-7, -(1 + 0.75 * 2**-7), 70000.0, 3.0]
    h = backend.zeros(B, np.float16)
    b = backend.zeros(B, np_dtype("bfloat16"))
    rtz_kernel[(1,)](backend.array(x), h, b, BLOCK=B)
    h, b = backend.numpy(h), backend.numpy(b)
    x64 = x.astype(np.float64)

    def toward_zero(values, mant):
        m, e = np.frexp(values)
        return np.ldexp(np.trunc(np.ldexp(m, mant)), e - mant)

    want_h = toward_zero(x64, 11)
    want_h[4] = 65504.0  # rtz saturates to the largest finite value instead of inf
    check(h, want_h, "float16", ulps=0, atol=0, what="f32 -> f16 rtz")
    check(b, toward_zero(x64, 8), "bfloat16", ulps=0, atol=0, what="f32 -> bf16 rtz")
