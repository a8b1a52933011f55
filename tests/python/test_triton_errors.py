"""Errors as Triton's tests check them: the exception class, the `__cause__`
chain of CompilationError, and the words Triton's messages use, beside
Tegula's code, location and hint. The cases that compile are run and checked
against NumPy on random data, so the limits are where Triton puts them.
"""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import rng_for


def compile_error(launch) -> tegula.CompilationError:
    with pytest.raises(tegula.CompilationError) as info:
        launch()
    return info.value


def test_compilation_error_chains_the_bare_message_as_its_cause():
    @tegula.jit
    def bad_axis(x_ptr):
        tl.store(x_ptr, tl.program_id(20))

    e = compile_error(lambda: bad_axis[(1,)](np.zeros(1, np.int32)))
    assert e.code == "E0406"
    assert isinstance(e.__cause__, ValueError) and e.__cause__.code == "E0406"
    assert str(e.__cause__) == "tl.program_id axis must be 0, 1, or 2 but got 20" == e.error_message
    # Tegula's own rendering stays: location, code and caret.
    assert re.search(r"test_triton_errors\.py:\d+:\d+: error\[E0406\]: tl\.program_id axis", str(e))
    assert "^~" in str(e)


@tegula.jit
def bitwise_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    y = tl.load(y_ptr + tl.arange(0, 16))
    if OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    else:
        z = x ^ y
    tl.store(out_ptr + tl.arange(0, 16), z)


@pytest.mark.parametrize("op", ["&", "|", "^"])
@pytest.mark.parametrize("dtype_x, dtype_y", [("float32", "int32"), ("int16", "float16"), ("float64", "float64"),
                                              ("int32", "int32")])
def test_bitwise_op_on_floats_names_invalid_operands(backend, op, dtype_x, dtype_y):
    rng = rng_for("bitwise", op, dtype_x, dtype_y)
    x = rng.integers(-1000, 1000, 16).astype(dtype_x)
    y = rng.integers(-1000, 1000, 16).astype(dtype_y)
    out = backend.zeros(16, np.int32)
    if "float" in dtype_x + dtype_y:
        e = compile_error(lambda: bitwise_kernel[(1,)](backend.array(x), backend.array(y), out, OP=op))
        assert "invalid operands of type" in str(e) and "invalid operands of type" in str(e.__cause__)
        assert isinstance(e.__cause__, TypeError) and e.code == "E0301"
    else:
        bitwise_kernel[(1,)](backend.array(x), backend.array(y), out, OP=op)
        ref = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op](x, y)
        np.testing.assert_array_equal(backend.numpy(out), ref)


@tegula.jit
def div_kernel(x_ptr, y_ptr, out_ptr, MOD: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    y = tl.load(y_ptr + tl.arange(0, 16))
    tl.store(out_ptr + tl.arange(0, 16), x % y if MOD else x // y)


@pytest.mark.parametrize("mod", [False, True])
def test_division_of_mixed_signedness_is_refused_with_tritons_words(backend, mod):
    rng = rng_for("mixed_signedness", mod)
    x = rng.integers(-1000, 1000, 16).astype(np.int32)
    y = rng.integers(1, 50, 16).astype(np.uint32)
    e = compile_error(lambda: div_kernel[(1,)](x, y, np.zeros(16, np.int32), MOD=mod))
    assert re.search("Cannot use .* because they have different signedness", str(e))
    # The same kernel on one signedness computes what C (and Triton) compute.
    yi = y.astype(np.int32)
    out = backend.zeros(16, np.int32)
    div_kernel[(1,)](backend.array(x), backend.array(yi), out, MOD=mod)
    q = np.trunc(x / yi).astype(np.int32)
    np.testing.assert_array_equal(backend.numpy(out), x - q * yi if mod else q)


@tegula.jit
def expand_dims_kernel(x_ptr, out_ptr, AXIS: tl.constexpr, PAIR: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    if PAIR == 0:
        y = tl.expand_dims(x, AXIS)
    elif PAIR == 1:
        y = tl.expand_dims(x, (0, AXIS))
    else:
        y = tl.expand_dims(x, (AXIS, 0))
    tl.store(out_ptr + tl.arange(0, N), tl.reshape(y, (N,)))


@pytest.mark.parametrize("axis, pair, words", [(-3, 0, "invalid axis -3"), (2, 0, "invalid axis 2"),
                                               (0, 1, r"duplicate axes, normalized axes = \[0, 0\]"),
                                               (-3, 1, r"duplicate axes, normalized axes = \[0, 0\]")])
def test_expand_dims_axis_errors(axis, pair, words):
    x = np.zeros(32, np.float32)
    e = compile_error(lambda: expand_dims_kernel[(1,)](x, x, AXIS=axis, PAIR=pair, N=32))
    assert re.search(words, str(e.__cause__)) and re.search(words, str(e))


@pytest.mark.parametrize("axis, pair", [(-2, 0), (-1, 0), (0, 0), (1, 0), (1, 1), (-1, 2)])
def test_expand_dims_axes_in_range_compute(backend, axis, pair):
    x = rng_for("expand_dims", axis, pair).standard_normal(32).astype(np.float32)
    out = backend.zeros(32, np.float32)
    expand_dims_kernel[(1,)](backend.array(x), out, AXIS=axis, PAIR=pair, N=32)
    np.testing.assert_array_equal(backend.numpy(out), x)


def test_expand_dims_of_a_scalar_past_rank_one():
    @tegula.jit
    def kernel(x_ptr):
        s = tl.sum(tl.load(x_ptr + tl.arange(0, 1)), axis=0)
        tl.expand_dims(s, 1)

    e = compile_error(lambda: kernel[(1,)](np.zeros(1, np.float32)))
    assert "invalid axis 1" in str(e.__cause__)


@tegula.jit
def sum_kernel(x_ptr, out_ptr, AXIS: tl.constexpr):
    offs = tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :]
    tl.store(out_ptr + tl.arange(0, 4), tl.sum(tl.load(x_ptr + offs), axis=AXIS))


def test_reduction_axis_out_of_range(backend):
    x = rng_for("sum_axis").standard_normal(32).astype(np.float32)
    e = compile_error(lambda: sum_kernel[(1,)](x, np.zeros(4, np.float32), AXIS=2))
    assert "invalid axis 2" in str(e.__cause__)
    out = backend.zeros(4, np.float32)
    sum_kernel[(1,)](backend.array(x), out, AXIS=-2)
    np.testing.assert_allclose(backend.numpy(out), x.reshape(8, 4).sum(axis=0), rtol=1e-6)


@tegula.jit
def store_value_kernel(value, out_ptr):
    tl.store(out_ptr, value)


@pytest.mark.parametrize("value, overflow", [(2**64 - 1, False), (2**64, True), (-2**63, False),
                                             (-2**63 - 1, True)])
def test_value_specialization_overflow(backend, value, overflow):
    dtype = np.uint64 if value > 0 else np.int64
    out = backend.zeros(1, dtype)
    if overflow:
        with pytest.raises(OverflowError) as info:
            store_value_kernel[(1,)](value, out)
        assert isinstance(info.value, ValueError) and isinstance(info.value, tegula.ArgumentOverflowError)
        assert info.value.code == "E0703"
    else:
        store_value_kernel[(1,)](value, out)
        assert int(backend.numpy(out)[0]) == value


def test_return_type_mismatch_uses_tritons_words():
    @tegula.jit
    def pick(a, b, choose_b):
        if choose_b:
            return b
        else:
            return a

    @tegula.jit
    def kernel(x_ptr, f_ptr, choose):
        tl.store(x_ptr, pick(tl.load(x_ptr), tl.load(f_ptr), choose))

    e = compile_error(lambda: kernel[(1,)](np.zeros(1, np.int32), np.zeros(1, np.float32), 3))
    assert "Return type mismatch" in e.error_message and e.code == "E0308"

    @tegula.jit
    def branches(x_ptr, f_ptr, choose):
        if choose:
            v = tl.load(f_ptr)
        else:
            v = tl.load(x_ptr)
        tl.store(x_ptr, v)

    e = compile_error(lambda: branches[(1,)](np.zeros(1, np.int32), np.zeros(1, np.float32), 3))
    assert "Mismatched type for v" in str(e.__cause__)


@tegula.jit
def undefined_name_helper(x):
    return x + not_defined_anywhere  # noqa: F821


@tegula.jit
def middle_helper(x):
    # a comment line: positions count it
    return undefined_name_helper(x) * 2


def test_an_error_in_called_functions_names_each_call_with_tritons_positions():
    @tegula.jit
    def caller_kernel(out_ptr):
        y = middle_helper(tl.arange(0, 16))
        tl.store(out_ptr + tl.arange(0, 16), y)

    e = compile_error(lambda: caller_kernel[(1,)](np.zeros(16, np.int32)))
    text = str(e)
    # The error where it is, then each call that led there, innermost first, each with its line quoted.
    assert re.match(r".*test_triton_errors\.py:\d+:\d+: error\[E0201\]: name `not_defined_anywhere`", text)
    lines = text.splitlines()
    notes = [line for line in lines if "note:" in line]
    assert notes[0] == "note: in `undefined_name_helper` at 2:15:"
    assert re.fullmatch(r".*test_triton_errors\.py:\d+:12: note: called from `middle_helper` at 3:11:", notes[1])
    assert re.fullmatch(r".*test_triton_errors\.py:\d+:13: note: called from `caller_kernel` at 2:8:", notes[2])
    assert "return undefined_name_helper(x) * 2" in lines[lines.index(notes[1]) + 1]
    assert "y = middle_helper(tl.arange(0, 16))" in lines[lines.index(notes[2]) + 1]
    # As Triton chains them: the error seen inside each called function, innermost last, then the bare message.
    inside_middle = e.__cause__
    inside_helper = inside_middle.__cause__
    assert isinstance(inside_middle, tegula.CompilationError) and isinstance(inside_helper, tegula.CompilationError)
    assert "called from `middle_helper` at 3:11:" in str(inside_middle)
    assert "caller_kernel" not in str(inside_middle)
    assert "at 2:15:" in str(inside_helper) and "called from" not in str(inside_helper)
    assert isinstance(inside_helper.__cause__, ValueError) and not isinstance(
        inside_helper.__cause__, tegula.CompilationError)
    assert str(inside_helper.__cause__) == e.error_message == inside_middle.error_message
    assert e.code == inside_middle.code == inside_helper.code == "E0201"


def test_a_kernel_error_gives_its_position_in_the_kernel():
    @tegula.jit
    def flat_kernel(out_ptr):
        x = tl.arange(0, 16)
        tl.store(out_ptr + x, x + "a")

    e = compile_error(lambda: flat_kernel[(1,)](np.zeros(16, np.int32)))
    assert str(e).splitlines()[-1] == "note: in `flat_kernel` at 3:26:"
    assert isinstance(e.__cause__, TypeError) and e.__cause__.__cause__ is None


def test_a_false_static_assertion_is_a_compile_time_assertion_failure():
    @tegula.jit
    def asserting_kernel(out_ptr, N: tl.constexpr):
        tl.static_assert(N % 2 == 0, "N must be even")
        tl.store(out_ptr, N)

    e = compile_error(lambda: asserting_kernel[(1,)](np.zeros(1, np.int32), N=3))
    assert type(e) is tegula.CompileTimeAssertionFailure and isinstance(e, tegula.CompilationError)
    assert e.__cause__ is None and e.code == "E0604"
    assert "N must be even" in str(e) and "note: in `asserting_kernel` at 2:4:" in str(e)
    out = np.zeros(1, np.int32)
    asserting_kernel[(1,)](out, N=4)
    assert out[0] == 4


@tegula.jit
def recursing_helper(x):
    return recursing_helper(x + 1)


def test_recursion_shows_its_repeated_call_once_with_a_count():
    @tegula.jit
    def recursing_kernel(out_ptr):
        tl.store(out_ptr, recursing_helper(1))

    e = compile_error(lambda: recursing_kernel[(1,)](np.zeros(1, np.int32)))
    text = str(e)
    assert e.code == "E0608"
    assert text.count("note: called from `recursing_helper`") == 3
    repeats = re.search(r"note: the call above repeats (\d+) more times", text)
    assert repeats and int(repeats.group(1)) > 10
    assert text.rstrip().splitlines()[-3].endswith("note: called from `recursing_kernel` at 2:22:")
    # The causes: inside the helper, inside the run of recursive calls, the bare message; not one per level.
    chain = []
    cause = e.__cause__
    while cause is not None:
        chain.append(cause)
        cause = cause.__cause__
    assert len(chain) == 3 and isinstance(chain[-1], ValueError)
    assert len(str(e)) < 2000


@tegula.jit
def fp8_dot_kernel(out_ptr, BOUND: tl.constexpr):
    a = (tl.arange(0, 64)[:, None] + tl.arange(0, 64)[None, :]).to(tl.float8e5)
    b = (tl.arange(0, 64)[:, None] - tl.arange(0, 64)[None, :]).to(tl.float8e5)
    c = tl.dot(a, b, max_num_imprecise_acc=BOUND)
    tl.store(out_ptr + tl.arange(0, 64), tl.sum(c, axis=1))


def test_fp8_dot_refuses_an_imprecise_accumulation_bound_past_k(backend):
    e = compile_error(lambda: fp8_dot_kernel[(1,)](np.zeros(64, np.float32), BOUND=128))
    assert e.code == "E0406" and e.error_message == "max_num_imprecise_acc (128) must be <= K (64)"
    # A bound within K changes nothing: Tegula's fp8 dots accumulate in float32 throughout.
    out = np.zeros(64, np.float32)
    fp8_dot_kernel[(1,)](out, BOUND=32)
    i = np.arange(64, dtype=np.float64)
    import ml_dtypes
    a = (i[:, None] + i[None, :]).astype(ml_dtypes.float8_e5m2).astype(np.float64)
    b = (i[:, None] - i[None, :]).astype(ml_dtypes.float8_e5m2).astype(np.float64)
    np.testing.assert_allclose(out, (a @ b).sum(axis=1), rtol=1e-5)


@tegula.jit
def dot_scaled_kernel(out_ptr, LHS_GROUPS: tl.constexpr):
    a = tl.full((32, 64), 0x38, tl.uint8)  # e5m2 0.5
    b = tl.full((64, 32), 0x38, tl.uint8)
    lhs_scale = tl.full((32, LHS_GROUPS), 127, tl.uint8)
    rhs_scale = tl.full((32, 2), 127, tl.uint8)
    c = tl.dot_scaled(a, lhs_scale, "e5m2", b, rhs_scale, "e5m2")
    tl.store(out_ptr + tl.arange(0, 32), tl.sum(c, axis=1))


def test_dot_scaled_refuses_scales_of_different_group_sizes(backend):
    e = compile_error(lambda: dot_scaled_kernel[(1,)](np.zeros(32, np.float32), LHS_GROUPS=4))
    assert e.code == "E0505"
    assert e.error_message == "Operands must have the same scale factor; (lhs: 16 vs rhs: 32)"
    out = np.zeros(32, np.float32)
    dot_scaled_kernel[(1,)](out, LHS_GROUPS=2)  # groups of 32 on both sides: 64 products of 0.25 a row
    np.testing.assert_array_equal(out, np.full(32, 32 * 64 * 0.25, np.float32))


@tegula.jit
def integer_mask_kernel(x_ptr, OP: tl.constexpr, MASK: tl.constexpr):
    offs = tl.arange(0, 16)
    if MASK == "int":
        m = offs
    elif MASK == "bits":
        m = offs & 1
    elif MASK == "float":
        m = offs.to(tl.float32)
    else:
        m = 1
    if OP == "load":
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0))
    elif OP == "store":
        tl.store(x_ptr + offs, offs, mask=m)
    elif OP == "atomic_add":
        tl.atomic_add(x_ptr + offs, 1, mask=m)
    else:
        tl.atomic_xchg(x_ptr + offs, 1, mask=m)


@pytest.mark.parametrize("mask, kind", [("int", "a tile of type tile<16xi32>"), ("bits", "a tile of type tile<16xi32>"),
                                        ("float", "a tile of type tile<16xf32>"), ("one", "the constant 1")])
@pytest.mark.parametrize("op", ["load", "store", "atomic_add", "atomic_xchg"])
def test_a_mask_that_is_not_boolean_is_refused_with_tritons_words(op, mask, kind):
    """`mask=offs` (for `mask=offs < n`) selected the nonzero offsets, silently; Triton refuses any
    mask that is not boolean ("Mask must have boolean scalar type"), and so does Tegula now."""
    e = compile_error(lambda: integer_mask_kernel[(1,)](np.zeros(16, np.int32), OP=op, MASK=mask))
    assert e.code == "E0310"
    assert e.error_message == f"Mask must have boolean scalar type, but the mask of tl.{op} is {kind}"
    assert "hint: compare it, e.g. `offs < n`, or `m != 0` for an integer mask" in str(e)


@tegula.jit
def integer_condition_kernel(x_ptr, n):
    offs = tl.arange(0, 16)
    bits = offs & 1
    tl.store(x_ptr + offs, tl.where(bits != 0, 1, 2), mask=True)
    tl.store(x_ptr + 16 + offs, offs, mask=(offs & n) != 0)
    if n & 1:  # `if` tests an integer against 0, as Triton does
        tl.store(x_ptr + 32, n)


def test_boolean_masks_and_integer_conditions_still_compile(backend):
    x = backend.zeros(33, np.int32)
    integer_condition_kernel[(1,)](x, 3)
    offs = np.arange(16)
    want = np.concatenate([np.where(offs & 1, 1, 2), np.where(offs & 3, offs, 0), [3]])
    np.testing.assert_array_equal(backend.numpy(x), want)
