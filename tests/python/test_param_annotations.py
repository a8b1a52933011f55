"""A runtime scalar parameter's annotation declares its type (python/tegula/_param_types.py), as in
Triton: `stride: tl.int64` computes in 64 bits whatever value a launch passes, `u: tl.uint8` takes 300
as 44, `f: tl.float16` rounds to the nearest half. A CompiledKernel launched as `compiled[grid](...)`
takes its scalar arguments as it was compiled, through the same declared types."""

import importlib.util
import math
import struct
import warnings
from fractions import Fraction

import ml_dtypes

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C
from tegula.jit import Specialization

# --- helpers ---------------------------------------------------------------------------------


def load_kernel(tmp_path, name, text):
    """A module written to `tmp_path` and imported: its kernels' sources live in a real file."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _round_binary(x: float, mantissa: int, min_exponent: int) -> float:
    """`x` rounded to nearest, ties to even, to a binary float of `mantissa` explicit bits whose smallest
    normal exponent is `min_exponent`, exactly (no detour through another format); no overflow check."""
    if x == 0 or math.isinf(x) or math.isnan(x):
        return x
    exact = Fraction(x)
    exponent = math.floor(math.log2(abs(x)))
    if Fraction(2) ** exponent > abs(exact):  # log2 rounded up near a power of two
        exponent -= 1
    exponent = max(exponent, min_exponent)  # subnormals share the smallest normal binade's step
    step = Fraction(2) ** (exponent - mantissa)
    steps = exact / step
    low = math.floor(steps)
    rest = steps - low
    chosen = low + 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and low % 2 == 1) else low
    return float(chosen * step)


def f16_of(x: float) -> float:
    return _round_binary(x, 10, -14)


def bf16_of(x: float) -> float:
    return _round_binary(x, 7, -126)


# The values where rounding through f32 first (double rounding) gives another answer than rounding once:
# just above a tie of the narrow type, by less than half an f32 step.
F16_TRAP = 1 + 2.0 ** -11 + 2.0 ** -30
BF16_TRAP = 1 + 2.0 ** -8 + 2.0 ** -30

# --- every integer width -----------------------------------------------------------------------

INT_TYPES = [("int8", np.int8), ("int16", np.int16), ("int32", np.int32), ("int64", np.int64),
             ("uint8", np.uint8), ("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64)]


@tegula.jit(do_not_specialize=("a", "b", "c", "d", "e", "f", "g", "h"))
def int_kernel(o8, o16, o32, o64, ou8, ou16, ou32, ou64,
               a: tl.int8, b: tl.int16, c: tl.int32, d: tl.int64,
               e: tl.uint8, f: tl.uint16, g: tl.uint32, h: tl.uint64):
    tl.static_assert(a.dtype == tl.int8)
    tl.static_assert(b.dtype == tl.int16)
    tl.static_assert(c.dtype == tl.int32)
    tl.static_assert(d.dtype == tl.int64)
    tl.static_assert(e.dtype == tl.uint8)
    tl.static_assert(f.dtype == tl.uint16)
    tl.static_assert(g.dtype == tl.uint32)
    tl.static_assert(h.dtype == tl.uint64)
    # Arithmetic in each parameter's own type: it wraps at that width.
    tl.store(o8, a * 3 + 1)
    tl.store(o16, b * 3 + 1)
    tl.store(o32, c * 3 + 1)
    tl.store(o64, d * 3 + 1)
    tl.store(ou8, e * 3 + 1)
    tl.store(ou16, f * 3 + 1)
    tl.store(ou32, g * 3 + 1)
    tl.store(ou64, h * 3 + 1)


def _int_outputs():
    return [np.zeros(1, dtype) for _, dtype in INT_TYPES]


def _expected_int(dtype, value: int):
    """`value` as `dtype` holds it (its low bits, as Triton passes it), times 3 plus 1 in that type."""
    bits = np.dtype(dtype).itemsize * 8
    low = value % 2 ** bits
    held = dtype(low if np.dtype(dtype).kind == "u" or low < 2 ** (bits - 1) else low - 2 ** bits)
    with np.errstate(over="ignore"):
        return held * dtype(3) + dtype(1)


def test_every_int_width_computes_in_its_annotated_type_on_random_values():
    rng = np.random.default_rng(7)
    for _ in range(5):
        values = [int(rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, endpoint=True, dtype=dtype))
                  for _, dtype in INT_TYPES]
        outs = _int_outputs()
        int_kernel[(1,)](*outs, *values)
        for (name, dtype), out, value in zip(INT_TYPES, outs, values):
            assert out[0] == _expected_int(dtype, value), (name, value, out[0])


def test_small_values_keep_the_annotated_type():
    """Values that fit in i32 still get the declared type: 2**62 * 3 wraps as an i64, 200 * 3 as a u8."""
    outs = _int_outputs()
    int_kernel[(1,)](*outs, -100, 30000, 2**30, 2**62, 200, 60000, 2**31 + 5, 2**63 + 7)
    for (name, dtype), out, value in zip(INT_TYPES, outs, (-100, 30000, 2**30, 2**62, 200, 60000, 2**31 + 5,
                                                           2**63 + 7)):
        assert out[0] == _expected_int(dtype, value), name
    kernel = int_kernel.warmup(*outs, 1, 1, 1, 1, 1, 1, 1, 1, grid=(1,))
    assert [t for _, t, _ in kernel.params][8:] == ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("value", [300, 2**16 + 7, 2**40 + 3, 2**64 - 1, 77])
def test_unsigned_values_keep_their_low_bits(value):
    """Triton's launcher reads an int for an unsigned parameter as a C unsigned long and keeps the bits
    the parameter holds: 300 is a u8's 44. A RuntimeWarning says so where the value changes."""
    outs = _int_outputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        int_kernel[(1,)](*outs, 0, 0, 0, 0, value, value, value, value)
    for (name, dtype), out in list(zip(INT_TYPES, outs))[4:]:
        assert out[0] == _expected_int(dtype, value), (name, value)
    narrowed = [p for p, (_, dtype) in zip("efgh", INT_TYPES[4:]) if value >= 2 ** (np.dtype(dtype).itemsize * 8)]
    told = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(told) == len(narrowed), told
    for param, text in zip(narrowed, told):
        assert f"argument '{param}' of kernel 'int_kernel' is annotated tl.uint" in text, text
        assert f"and got {value}, which it holds as " in text and "as Triton passes it" in text, text


@pytest.mark.parametrize("value", [-1, -(2**70) + 3, 2**64, 2**100 + 2**33 + 9])
def test_unsigned_values_no_uint64_holds_are_errors(value):
    outs = _int_outputs()
    with pytest.raises(OverflowError) as info:
        int_kernel[(1,)](*outs, 0, 0, 0, 0, value, 0, 0, 0)
    text = str(info.value)
    assert info.value.code == "E0703"
    assert f"argument 'e' of kernel 'int_kernel' is annotated tl.uint8 but got {value}, which no uint64 holds" in text
    for out in outs:
        assert out[0] == 0, "a refused launch ran"


@pytest.mark.parametrize("index,value", [
    (0, 128), (0, -129), (0, 1000), (1, 2**15), (1, -(2**20) - 3), (2, 2**31), (2, -(2**31) - 1),
    (2, 0x1234567890AB), (2, 2**63 - 1), (2, -(2**63)),
])
def test_signed_values_keep_their_low_bits(index, value):
    """A 64-bit value for a narrower signed parameter keeps its low bits, sign-extended, as Triton's
    launcher passes it (a 64-bit random seed for `seed: tl.int32`), with a RuntimeWarning."""
    outs = _int_outputs()
    values = [0] * 8
    values[index] = value
    name, dtype = INT_TYPES[index]
    with pytest.warns(RuntimeWarning) as caught:
        int_kernel[(1,)](*outs, *values)
    assert outs[index][0] == _expected_int(dtype, value)
    text = str(caught[0].message)
    bits = np.dtype(dtype).itemsize * 8
    held = (value + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
    assert f"which it holds as {held} (its low {bits} bits, as Triton passes it)" in text, text
    assert f"argument '{'abcd'[index]}' of kernel 'int_kernel' is annotated tl.{name} and got {value}" in text, text
    assert "annotate the parameter with a wider type such as tl.int64" in text, text


@pytest.mark.parametrize("index,value", [(3, 2**63), (3, -(2**63) - 1), (3, 2**80), (2, 2**63), (0, -(2**64))])
def test_signed_values_no_int64_holds_are_errors(index, value):
    outs = _int_outputs()
    values = [0] * 8
    values[index] = value
    name, _ = INT_TYPES[index]
    with pytest.raises(OverflowError) as info:
        int_kernel[(1,)](*outs, *values)
    text = str(info.value)
    assert info.value.code == "E0703"
    assert f"argument '{'abcd'[index]}' of kernel 'int_kernel' is annotated tl.{name} but got {value}, " \
           "which no int64 holds" in text, text
    assert isinstance(info.value, ValueError)  # tegula.ArgumentOverflowError is both
    for out in outs:
        assert out[0] == 0, "a refused launch ran"


def test_ints_take_bools_and_numpy_integers():
    outs = _int_outputs()
    with pytest.warns(RuntimeWarning, match=r"'g' of kernel 'int_kernel' is annotated tl.uint32 and got "
                                            r"18446744073709551615, which it holds as 4294967295"):
        int_kernel[(1,)](*outs, True, np.int16(-7), np.uint8(200), np.int64(2**40), np.int64(200),
                         np.bool_(True), np.uint64(2**64 - 1), np.uint16(65535))
    for (name, dtype), out, value in zip(INT_TYPES, outs, (1, -7, 200, 2**40, 200, 1, 2**64 - 1, 65535)):
        assert out[0] == _expected_int(dtype, value), name


@pytest.mark.parametrize("value,kind", [(2.0, "the float 2.0"), (np.float32(2.5), "the float"),
                                        (np.zeros(3, np.int32), "an instance of ndarray"),
                                        ((1, 2), "an instance of tuple"), ("3", "an instance of str")])
def test_a_value_of_the_wrong_kind_is_an_error_naming_the_parameter(value, kind):
    outs = _int_outputs()
    with pytest.raises(TypeError) as info:
        int_kernel[(1,)](*outs, 0, 0, value, 0, 0, 0, 0, 0)
    text = str(info.value)
    assert info.value.code == "E0702"
    assert "argument 'c' of kernel 'int_kernel' is annotated tl.int32" in text, text
    assert kind in text, text
    assert "pass an int or bool" in text, text


# --- specialization ---------------------------------------------------------------------------


@tegula.jit
def spec_kernel(o, s: tl.int64, u: tl.uint8, n):
    tl.store(o, s * 3000000000)
    tl.store(o + 1, u + 255)  # a u8 1 plus 255 wraps to 0
    tl.store(o + 2, n + 255)  # an unannotated 1 is Python's 1: 256


def test_annotated_ints_still_specialize_on_one_and_divisibility():
    o = np.zeros(3, np.int64)
    request, _ = spec_kernel._request_for(o, 1, 32, 1)
    s, u, n = request.args[1:]
    assert (s.dtype, s.is_one, s.typed_one) == ("i64", True, True)
    assert (u.dtype, u.is_one, u.divisibility) == ("u8", False, 16)
    assert (n.dtype, n.is_one, n.typed_one) == ("i32", True, False)
    spec_kernel[(1,)](o, 1, 1, 1)
    np.testing.assert_array_equal(o, [3000000000, 0, 256])
    spec_kernel[(1,)](o, 2, 3, 4)
    np.testing.assert_array_equal(o, [6000000000, 2, 259])
    assert len(spec_kernel._launcher) == 2
    signature = Specialization(spec_kernel, request).signature
    assert signature == {"o": "*i64", "s": "i64", "u": "u8", "n": "constexpr"}


@tegula.jit(do_not_specialize=("s",), do_not_specialize_on_alignment=("u",))
def unspecialized_kernel(o, s: tl.int64, u: tl.uint16):
    tl.store(o, s + u)


def test_do_not_specialize_applies_to_annotated_ints():
    request, _ = unspecialized_kernel._request_for(np.zeros(1, np.int64), 1, 32)
    s, u = request.args[1:]
    assert (s.dtype, s.is_one, s.divisibility) == ("i64", False, 1)
    assert (u.dtype, u.is_one, u.divisibility) == ("u16", False, 1)


def test_cache_keys_tell_the_declared_types_apart():
    o = np.zeros(3, np.int64)
    request, options = spec_kernel._request_for(o, 1, 3, 5)
    typed = _C.cache_key(request, options)
    specs = request.args
    specs[1].typed_one = False  # the untyped constant 1 is another kernel
    request.args = specs
    assert _C.cache_key(request, options) != typed
    specs[1].typed_one, specs[2].dtype = True, "u16"
    request.args = specs
    assert _C.cache_key(request, options) != typed


# --- floats ----------------------------------------------------------------------------------


@tegula.jit
def float_kernel(o16, obf, o32, o64, a: tl.float16, b: tl.bfloat16, c: tl.float32, d: tl.float64):
    tl.static_assert(a.dtype == tl.float16)
    tl.static_assert(b.dtype == tl.bfloat16)
    tl.static_assert(c.dtype == tl.float32)
    tl.static_assert(d.dtype == tl.float64)
    tl.store(o16, a)
    tl.store(obf, b)
    tl.store(o32, c)
    tl.store(o64, d)


def _float_outputs():
    return [np.zeros(1, np.float16), np.zeros(1, ml_dtypes.bfloat16), np.zeros(1, np.float32),
            np.zeros(1, np.float64)]


def test_floats_are_rounded_once_to_the_annotated_type():
    rng = np.random.default_rng(11)
    values = [F16_TRAP, BF16_TRAP, 0.1, -1234.5678, 2.7] + list(rng.standard_normal(6) * 10.0 ** rng.integers(-6, 4, 6))
    for x in values:
        x = float(x)
        outs = _float_outputs()
        float_kernel[(1,)](*outs, x, x, x, x)
        assert float(outs[0][0]) == f16_of(x), x
        assert float(outs[1][0]) == bf16_of(x), x
        assert outs[2][0] == np.float32(x), x
        assert outs[3][0] == x, x  # an f64 is not rounded through f32
    # Rounding through f32 first would give 1.0 for both.
    outs = _float_outputs()
    float_kernel[(1,)](*outs, F16_TRAP, BF16_TRAP, 0.0, 0.0)
    assert outs[0].view(np.uint16)[0] == 0x3C01 and outs[1].view(np.uint16)[0] == 0x3F81


def test_float_specials_ints_and_numpy_scalars():
    outs = _float_outputs()
    float_kernel[(1,)](*outs, float("inf"), float("-inf"), float("nan"), -0.0)
    assert np.isposinf(outs[0][0]) and np.isneginf(float(outs[1][0])) and np.isnan(outs[2][0])
    assert outs[3][0] == 0 and math.copysign(1, outs[3][0]) == -1
    float_kernel[(1,)](*outs, 1e6, 3, True, 2**60 + 1)  # past f16's largest value: inf
    assert np.isposinf(outs[0][0]) and float(outs[1][0]) == 3 and outs[2][0] == 1 and outs[3][0] == 2.0**60
    float_kernel[(1,)](*outs, np.float64(2.7), np.float32(0.1), np.int64(7), np.float16(1.5))
    assert float(outs[0][0]) == f16_of(2.7) and float(outs[1][0]) == bf16_of(float(np.float32(0.1)))
    assert outs[2][0] == 7 and outs[3][0] == 1.5
    with pytest.raises(OverflowError, match=r"E0703.*'d' of kernel 'float_kernel' is annotated tl.float64"):
        float_kernel[(1,)](*outs, 0.0, 0.0, 0.0, 10**400)
    with pytest.raises(TypeError, match=r"E0702.*'c' of kernel 'float_kernel' is annotated tl.float32.*ndarray"):
        float_kernel[(1,)](*outs, 0.0, 0.0, np.ones(1, np.float32), 0.0)


@tegula.jit
def fp8_kernel(o, a: tl.float8e5, b: tl.float8e4nv):
    tl.store(o, a.to(tl.float32))
    tl.store(o + 1, b.to(tl.float32))


def test_fp8_annotations():
    rng = np.random.default_rng(3)
    o = np.zeros(2, np.float32)
    for x in rng.standard_normal(8) * 4:
        fp8_kernel[(1,)](o, float(x), float(x))
        assert o[0] == float(ml_dtypes.float8_e5m2(np.float32(x))), x
        assert o[1] == float(ml_dtypes.float8_e4m3fn(np.float32(x))), x


# --- bools --------------------------------------------------------------------------------------


@tegula.jit
def bool_kernel(o, f: tl.int1, g: "u1", h: bool):
    tl.static_assert(f.dtype == tl.int1)
    tl.static_assert(g.dtype == tl.int1)
    tl.static_assert(h.dtype == tl.int1)
    tl.store(o, tl.where(f, 7, 3))
    tl.store(o + 1, tl.where(g, 7, 3))
    tl.store(o + 2, tl.where(h, 7, 3))


def test_bool_annotations():
    o = np.zeros(3, np.int32)
    bool_kernel[(1,)](o, True, np.bool_(False), 5)  # an int: nonzero is True
    np.testing.assert_array_equal(o, [7, 3, 7])
    bool_kernel[(1,)](o, 0, np.int32(1), False)
    np.testing.assert_array_equal(o, [3, 7, 3])
    with pytest.raises(TypeError, match=r"E0702.*'f' of kernel 'bool_kernel' is annotated tl.int1.*float"):
        bool_kernel[(1,)](o, 1.0, 0, 0)


# --- where annotations come from -------------------------------------------------------------------

FUTURE_MODULE = '''from __future__ import annotations
import tegula
import tegula.language as tl


@tegula.jit
def future_kernel(o, of, s: tl.int64, u: u8, w: tl.uint16, f: fp16, g: bf16, h: fp32, b: i1, c: u1,
                  n: int, x: float, t: torch.Tensor, p: "*fp32", k: i8, m: int64_t, q: whatever, r: "i64",
                  BLOCK: tl.constexpr):
    tl.static_assert(s.dtype == tl.int64)
    tl.static_assert(u.dtype == tl.uint8)
    tl.static_assert(w.dtype == tl.uint16)
    tl.static_assert(f.dtype == tl.float16)
    tl.static_assert(g.dtype == tl.bfloat16)
    tl.static_assert(h.dtype == tl.float32)
    tl.static_assert(b.dtype == tl.int1)
    tl.static_assert(c.dtype == tl.int1)
    tl.static_assert(n.dtype == tl.int32)
    tl.static_assert(x.dtype == tl.float32)
    tl.static_assert(k.dtype == tl.int8)
    tl.static_assert(m.dtype == tl.int64)
    tl.store(o, s * 1500000000)
    tl.store(o + 1, u + 0)
    tl.store(o + 2, w + 0)
    tl.store(o + 3, tl.where(b, 1, 0) + tl.where(c, 10, 0))
    tl.store(o + 4, n + k + m)
    tl.store(o + 5, q + tl.load(t) + r)
    tl.store(of, f)
    tl.store(of + 1, g)
    tl.store(of + 2, h)
    tl.store(of + 3, x)
    tl.store(of + 4, tl.load(p))
'''


def test_string_annotations_under_future_import(tmp_path):
    """`from __future__ import annotations` makes every annotation a string: "tl.int64", Triton's short
    names and dtype names declare types; "torch.Tensor", "*fp32" and unknown names declare none."""
    module = load_kernel(tmp_path, "future_annotations", FUTURE_MODULE)
    o = np.zeros(6, np.int64)
    of = np.zeros(5, np.float64)
    t = np.array([2**40], np.int64)
    p = np.array([0.25], np.float32)
    module.future_kernel[(1,)](o, of, 3, 300, 70000, 2.7, 2.7, 0.1, True, 1, 5, 7, t, p, -3, 2**40, 2**40, 1,
                               BLOCK=4)
    np.testing.assert_array_equal(o, [4500000000, 44, 70000 % 2**16, 11, 5 - 3 + 2**40, 2**41 + 1])
    np.testing.assert_array_equal(of, [f16_of(2.7), bf16_of(2.7), float(np.float32(0.1)), 7.0, 0.25])
    # `q: whatever` is typed by its value (i64 for 2**40): no error, no truncation. So is `r: "i64"`, whose
    # annotation is the string "'i64'" under the future import, which Triton does not read either.
    with pytest.raises(OverflowError, match=r"'k' of kernel 'future_kernel' is annotated tl.int8 but got "
                                            r"9223372036854775808, which no int64 holds"):
        module.future_kernel[(1,)](o, of, 3, 300, 7, 2.7, 2.7, 0.1, True, 1, 5, 7, t, p, 2**63, 0, 0, 0, BLOCK=4)
    request, _ = module.future_kernel._request_for(o, of, 3, 300, 7, 2.7, 2.7, 0.1, True, 1, 5, 7, t, p, 2, 0, 0,
                                                   5, BLOCK=4)
    assert request.args[-2].dtype == "i32"  # r: by its value


class NotAType:
    """An annotation Tegula does not know: ignored."""


def annotate(**types):
    """Sets annotations as a host decorator would (Triton's tests annotate kernels this way)."""
    def set_annotations(fn):
        fn.__annotations__ = dict(types)
        return fn
    return set_annotations


@tegula.jit
@annotate(s=tl.int64, u="tl.uint8", z=NotAType)
def decorated_kernel(o, s, u, z):
    tl.store(o, s * 1500000000)
    tl.store(o + 1, u + 0)
    tl.store(o + 2, z)


@tegula.jit
def unknown_kernel(x: NotAType, n: NotAType(), m: "tl.pointer_type(tl.float32)", k: tl.tensor, v: "void"):
    tl.store(x, n + m + k + v)


def test_annotations_a_decorator_sets_count_and_unknown_ones_are_ignored():
    o = np.zeros(3, np.int64)
    decorated_kernel[(1,)](o, 3, 300, 2**40)
    np.testing.assert_array_equal(o, [4500000000, 44, 2**40])
    x = np.zeros(1, np.int64)
    unknown_kernel[(1,)](x, 2**40, 1, 2, 3)  # value-typed: i64, i32, i32, i32
    assert x[0] == 2**40 + 6


def test_annotation_reading_follows_triton():
    from tegula._param_types import declared_scalar

    cases = {tl.int64: "i64", "tl.int64": "i64", " tl.uint8 ": "u8", "i64": "i64", "u8": "u8", "fp16": "f16",
             "fp32": "f32", "bf16": "bf16", "i1": "i1", "u1": "i1", "bool": "i1", "int": "i32", "float": "f32",
             int: "i32", float: "f32", bool: "i1", "float16": "f16", "int64_t": "i64", tl.float8e5: "f8e5m2",
             "fp8e4nv": "f8e4m3", tl.bfloat16: "bf16", tl.int1: "i1",
             # declare nothing
             "*fp32": None, "fp32*": None, "const *fp16": None, tl.pointer_type(tl.float32): None,
             tl.constexpr: None, "tl.constexpr": None, tl.tensor: None, "torch.Tensor": None, NotAType: None,
             "f32": None, "triton.language.int64": None, str: None, None: None}
    for annotation, scalar in cases.items():
        assert declared_scalar(annotation) == scalar, annotation


# --- the i64 stride idiom ----------------------------------------------------------------------------


@tegula.jit
def strided_kernel(x_ptr, out_ptr, offsets_ptr, row, stride: tl.int64, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    offsets = row * stride + cols  # past 2**31 for a large stride: 64-bit, since stride is
    tl.store(offsets_ptr + cols, offsets)
    # A program of a huge tensor would load x_ptr + offsets; here the row is addressed back from its start.
    tl.store(out_ptr + cols, tl.load(x_ptr + (offsets - row * stride)))


@tegula.jit
def strided_unannotated(offsets_ptr, row, stride, BLOCK: tl.constexpr):
    tl.store(offsets_ptr + tl.arange(0, BLOCK), row * stride + tl.arange(0, BLOCK))


def test_i64_stride_computes_offsets_past_2_to_the_31():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    offsets = np.zeros(8, np.int64)
    row, stride = 3, 2**30 + 5
    strided_kernel[(1,)](x, out, offsets, row, stride, BLOCK=8)
    np.testing.assert_array_equal(offsets, row * stride + np.arange(8))
    np.testing.assert_array_equal(out, x)
    # Without the annotation the value (it fits) makes stride an i32 and the product wraps, as in Triton.
    strided_unannotated[(1,)](offsets, row, stride, BLOCK=8)
    wrapped = (np.int64(row) * stride + np.arange(8) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(offsets, wrapped)


# --- compiled kernels ---------------------------------------------------------------------------------


@tegula.jit
def plain_kernel(o, of, s, u, f):
    tl.store(o, s * 1500000000)
    tl.store(o + 1, u + 0)
    tl.store(of, f)


def test_compiled_kernel_takes_its_arguments_as_compiled():
    """tegula.compile(ASTSource(...)) fixes the scalar types; compiled[grid] converts its arguments to
    them (i64 arithmetic, a u8's wrap, an f16's rounding) instead of typing them by value."""
    signature = {"o": "*i64", "of": "*fp64", "s": "i64", "u": "u8", "f": "fp16"}
    compiled = tegula.compile(tegula.compiler.ASTSource(plain_kernel, signature))
    assert [t for _, t, _ in compiled.params] == ["ptr<i64>", "ptr<f64>", "i64", "u8", "f16"]
    o, of = np.zeros(2, np.int64), np.zeros(1, np.float64)
    compiled[(1,)](o, of, 3, 300, 2.7)
    np.testing.assert_array_equal(o, [4500000000, 44])
    assert of[0] == f16_of(2.7)
    compiled[(1,)](o, of, 1, 1, 0.5)  # a 1 specializes as a typed 1
    np.testing.assert_array_equal(o, [1500000000, 1])
    # The kernel's own launch still types its unannotated arguments by value.
    plain_kernel[(1,)](o, of, 3, 300, 2.7)
    np.testing.assert_array_equal(o, [(4500000000 + 2**31) % 2**32 - 2**31, 300])
    with pytest.raises(OverflowError) as info:
        compiled[(1,)](o, of, 2**63, 0, 0.0)
    assert "argument 's' of kernel 'plain_kernel' was compiled as tl.int64" in str(info.value)
    assert "which no int64 holds; pass a value from -2**63 to 2**63 - 1" in str(info.value)
    with pytest.raises(TypeError, match=r"E0702.*'u' of kernel 'plain_kernel' was compiled as tl.uint8"):
        compiled[(1,)](o, of, 0, 1.5, 0.0)


def test_warmup_compiled_kernel_keeps_its_types():
    o, of = np.zeros(2, np.int64), np.zeros(1, np.float64)
    compiled = plain_kernel.warmup(o, of, 3, 5, 2.5, grid=(1,))
    assert [t for _, t, _ in compiled.params][2:] == ["i32", "i32", "f32"]
    compiled[(1,)](o, of, 7, 9, 0.1)
    np.testing.assert_array_equal(o, [(7 * 1500000000 + 2**31) % 2**32 - 2**31, 9])
    assert of[0] == float(np.float32(0.1))
    # A value past the compiled i32 keeps its low bits, as Triton's launcher passes it.
    with pytest.warns(RuntimeWarning, match=r"'s' of kernel 'plain_kernel' was compiled as tl.int32 and got "
                                            r"1099511627783, which it holds as 7 .*compile the kernel for a wider"):
        compiled[(1,)](o, of, 2**40 + 7, 9, 0.1)
    np.testing.assert_array_equal(o, [(7 * 1500000000 + 2**31) % 2**32 - 2**31, 9])


@tegula.jit
def optional_kernel(o, scale: tl.float32 = None):
    if scale is not None:
        tl.store(o, scale * 2)
    else:
        tl.store(o, -1.0)


def test_none_keeps_its_meaning_for_an_annotated_parameter():
    o = np.zeros(1, np.float32)
    optional_kernel[(1,)](o)
    assert o[0] == -1
    optional_kernel[(1,)](o, 3)
    assert o[0] == 6


# --- the CUDA backend -------------------------------------------------------------------------------


def test_cuda_source_declares_the_annotated_parameter_types():
    """No GPU needed: the generated CUDA kernel's parameters have the declared C types."""
    request, _ = spec_kernel._request_for(np.zeros(3, np.int64), 3, 5, 7)
    request_f, _ = float_kernel._request_for(*_float_outputs(), 1.5, 1.5, 1.5, 1.5)
    options = _C.CompileOptions(backend="cuda", cuda_arch=90, num_warps=4)
    source, _ = _C.generate_source(request, options)
    entry = next(line for line in source.splitlines() if "tegula_kernel(" in line)
    assert "long long" in entry and "unsigned char" in entry and ", int " in entry, entry
    source, _ = _C.generate_source(request_f, options)
    entry = next(line for line in source.splitlines() if "tegula_kernel(" in line)
    assert "tg_f16" in entry and "tg_bf16" in entry and "float" in entry and "double" in entry, entry


def test_the_narrowing_warning_points_at_the_launch_and_can_be_an_error():
    outs = _int_outputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        int_kernel[(1,)](*outs, 0, 0, 2**40 + 5, 0, 0, 0, 0, 0)
        int_kernel.run(*outs, 0, 0, 2**40 + 6, 0, 0, 0, 0, 0, grid=(1,))
    assert [w.filename for w in caught] == [__file__] * 2, [(w.filename, w.lineno) for w in caught]
    assert outs[2][0] == 6 * 3 + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        outs = _int_outputs()
        with pytest.raises(RuntimeWarning, match="which it holds as 7"):
            int_kernel[(1,)](*outs, 0, 0, 2**40 + 7, 0, 0, 0, 0, 0)
        assert all(out[0] == 0 for out in outs), "a refused launch ran"


@tegula.jit
def _bool_offset(x_ptr, v: "tl.uint1", w: "tl.int1"):  # as Triton's tests annotate them
    tl.store(x_ptr + v, v)
    tl.store(x_ptr + 2 + w, w + 5)


def test_a_boolean_offsets_a_pointer_by_zero_or_one():
    for v, w in [(0, 0), (1, 1), (True, False), (0, 1)]:
        x = np.full(4, -1.0, np.float32)
        _bool_offset[(1,)](x, v, w)
        bv, bw = int(v), int(w)
        expected = np.full(4, -1.0, np.float32)
        expected[bv] = bv
        expected[2 + bw] = bw + 5
        np.testing.assert_array_equal(x, expected)
