"""@tegula.constexpr_function (Triton's @triton.constexpr_function): a Python
function a kernel calls on constants, run on the host while the kernel
compiles; its result is a constant of the kernel."""

import math
import re

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.constexpr_function
def log2(n):
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


@tegula.constexpr_function
def widened(dt, shape, scale=1):
    """A dtype and a tuple in, a tuple of a dtype and a tuple out."""
    return (tl.float64 if dt == tl.float32 else dt), tuple(s * scale for s in shape)


@tegula.jit
def _shifted(x_ptr, out_ptr, N: tl.constexpr):
    SHIFT: tl.constexpr = log2(N)
    tl.static_assert(SHIFT == 4 or SHIFT == 5)
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) >> SHIFT)


def test_the_result_is_a_constant_of_the_kernel():
    rng = np.random.default_rng(1)
    for n in (16, 32):
        x = rng.integers(0, 1 << 20, n, dtype=np.int32)
        out = np.zeros(n, np.int32)
        _shifted[(1,)](x, out, N=n)
        np.testing.assert_array_equal(out, x >> (n.bit_length() - 1))


@tegula.jit
def _typed(x_ptr, out_ptr):
    DT, SHAPE = widened(x_ptr.dtype.element_ty, (2, 3), scale=2)
    tl.static_assert(SHAPE == (4, 6))
    v = tl.load(x_ptr + tl.arange(0, 4)).to(DT)
    tl.store(out_ptr + tl.arange(0, 4), v * SHAPE[1])


def test_dtypes_tuples_and_keywords_cross_both_ways():
    x = np.array([1.5, -2.0, 3.25, 0.5], np.float32)
    out = np.zeros(4, np.float64)
    _typed[(1,)](x, out)
    np.testing.assert_array_equal(out, x.astype(np.float64) * 6)


@tegula.jit
def _helper(n: tl.constexpr):
    return log2(n) + 1


@tegula.jit
def _through_a_helper(out_ptr, N: tl.constexpr):
    tl.store(out_ptr, _helper(N))


def test_called_from_a_jit_helper():
    out = np.zeros(1, np.int32)
    _through_a_helper[(1,)](out, N=1024)
    assert out[0] == 11


def test_host_code_calls_the_plain_function():
    assert log2(8) == 3
    assert log2(tl.constexpr(64)) == 6  # a constexpr argument is its value, as in Triton
    assert "log2" in repr(log2)


def test_an_exception_is_a_located_error():
    out = np.zeros(12, np.int32)
    with pytest.raises(tegula.CompilationError, match=r"E0208.*`log2` raised ValueError: 12 is not a power of two"):
        _shifted[(1,)](np.zeros(12, np.int32), out, N=12)


def test_a_runtime_argument_is_a_located_error():
    @tegula.jit
    def runtime_arg(out_ptr, n):
        tl.store(out_ptr, log2(n))

    # Triton hands a constexpr function the tensor itself: it may read its type, not compute with its value.
    with pytest.raises(tegula.CompilationError, match=re.escape(
            "`log2` raised TypeError: <stand-in for a kernel value of type tegula.language.int32> is known only "
            "when the kernel runs")):
        runtime_arg[(1,)](np.zeros(1, np.int32), 8)


@tegula.constexpr_function
def _returns_a_list(n):
    return [n]


def test_a_result_kernels_cannot_use_is_a_located_error():
    @tegula.jit
    def uses_list(out_ptr):
        tl.store(out_ptr, _returns_a_list(3)[0])

    with pytest.raises(tegula.CompilationError, match=r"E0208.*returned list .*which a kernel cannot use"):
        uses_list[(1,)](np.zeros(1, np.int32))


def test_the_function_is_part_of_the_cache_key():
    @tegula.constexpr_function
    def one():
        return 1

    @tegula.constexpr_function
    def two():
        return 2

    global _chosen
    _chosen = one

    @tegula.jit
    def stores_chosen(out_ptr):
        tl.store(out_ptr, _chosen())

    out = np.zeros(1, np.int32)
    stores_chosen[(1,)](out)
    key_one = stores_chosen.inspect(out).key
    _chosen = two
    fresh = tegula.jit(stores_chosen.fn)
    fresh[(1,)](out)
    assert out[0] == 2
    assert fresh.inspect(out).key != key_one


_chosen = None


# --- @must_use_result (Triton's): a dropped result is a compile error ---


@tegula.must_use_result("Assign it.")
@tegula.jit
def _cube(x):
    return x * x * x


@tegula.must_use_result
@tegula.jit
def _square(x):
    return x * x


def test_a_dropped_result_is_a_located_error_with_the_note():
    @tegula.jit
    def drops(out_ptr):
        a = tl.full((4,), 2.0, tl.float32)
        _cube(a)

    with pytest.raises(tegula.CompilationError, match=r"E0410.*The result of _cube is not being used\. Assign it\."):
        drops[(1,)](np.zeros(4, np.float32))

    @tegula.jit
    def drops_plain(out_ptr):
        _square(1.0)

    with pytest.raises(tegula.CompilationError, match=r"The result of _square is not being used\.\n"):
        drops_plain[(1,)](np.zeros(4, np.float32))


def test_a_used_result_compiles_and_runs():
    @tegula.jit
    def uses(out_ptr):
        a = _cube(tl.full((4,), 2.0, tl.float32)) + _square(1.0)
        tl.store(out_ptr + tl.arange(0, 4), a)

    out = np.zeros(4, np.float32)
    uses[(1,)](out)
    np.testing.assert_array_equal(out, 9.0)


def test_tl_advance_as_a_statement_is_refused():
    @tegula.jit
    def advance_dropped(x_ptr):
        bp = tl.make_block_ptr(x_ptr, (16,), (1,), (0,), (8,), (0,))
        tl.advance(bp, (8,))
        tl.store(bp, tl.full((8,), 1.0, tl.float32))

    with pytest.raises(tegula.CompilationError, match="tl.advance does not have any side effects"):
        advance_dropped[(1,)](np.zeros(16, np.float32))



def test_a_statement_call_on_a_call_result_runs_once():
    # `f(x).method()` as a statement: the check for dropped results must not lower f(x) twice.
    @tegula.jit
    def bump(counter_ptr):
        return tl.atomic_add(counter_ptr, 1)

    @tegula.jit
    def once(counter_ptr):
        bump(counter_ptr).to(tl.int64)

    counter = np.zeros(1, np.int32)
    once[(1,)](counter)
    assert counter[0] == 1


# Triton's tl.constexpr calls what it wraps: libraries write `@tl.constexpr` above a function of dtypes
# and call it from kernels, which run it while they compile.
@tl.constexpr
def accumulator_type(dt):
    if dt.is_fp16() or dt.is_bf16():
        return tl.float32
    return dt


@tegula.jit
def _sum_in_accumulator(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.sum(x.to(accumulator_type(x.dtype)), axis=0))


@pytest.mark.parametrize("dtype, out_dtype", [(np.float16, np.float32), (np.int32, np.int32)])
def test_a_function_tl_constexpr_wraps_runs_while_the_kernel_compiles(backend, dtype, out_dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(64) * 100).astype(dtype)
    out = backend.zeros(1, out_dtype)
    _sum_in_accumulator[(1,)](backend.array(x), out, N=64)
    want = x.astype(np.float32).sum() if dtype == np.float16 else x.sum()
    np.testing.assert_allclose(backend.numpy(out)[0], want, rtol=1e-5)
    assert accumulator_type(tl.float16) == tl.float32  # and host code calls it too


LIMIT = tl.constexpr(2**63 - 1)


def test_constexpr_globals_compute_on_the_host():
    assert 123 <= LIMIT and LIMIT >= 123 and 123 < LIMIT and not (LIMIT < 5)
    product = tl.constexpr(4) * 2
    assert isinstance(product, tl.constexpr) and product == 8 and 2 * tl.constexpr(4) == 8
    assert -tl.constexpr(3) == -3 and 2 ** tl.constexpr(3) == 8 and tl.constexpr(7) // 2 == 3
    assert tl.constexpr(6) % tl.constexpr(4) == 2 and (tl.constexpr(1) << 4) == 16
    assert not tl.constexpr(0) and tl.constexpr(3) != 4


# --- plain Python functions on constants, as Triton calls them ---------------------------------------------

def _twice_plus(n, extra=0):
    return 2 * n + extra


@tegula.jit
def plain_functions_kernel(out_ptr, BLOCK: tl.constexpr):
    LOG2E: tl.constexpr = math.log2(math.e)
    offs = tl.arange(0, BLOCK)
    # A module's function, a NumPy ufunc and a helper of this file without a decorator, on constants.
    value = offs * LOG2E + np.sqrt(BLOCK) + _twice_plus(BLOCK, extra=1)
    tl.store(out_ptr + offs, value)


def test_plain_python_functions_run_on_constants_while_the_kernel_compiles():
    out = np.zeros(16, np.float32)
    plain_functions_kernel[(1,)](out, BLOCK=16)
    want = np.arange(16) * math.log2(math.e) + 4.0 + 33
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-6)


@tegula.jit
def plain_function_on_a_tile_kernel(x_ptr):
    tl.store(x_ptr, _twice_plus(tl.load(x_ptr)))


@tegula.jit
def plain_function_raising_kernel(x_ptr):
    tl.store(x_ptr, math.log(-1.0))


def test_a_plain_function_on_a_tile_or_raising_is_a_located_error():
    x = np.zeros(4, np.float32)
    with pytest.raises(tegula.CompilationError,
                       match=r"E0205.*function '_twice_plus' \(not a @tegula.jit function\)` is a host object and "
                             r"cannot be called inside a kernel on a scalar"):
        plain_function_on_a_tile_kernel[(1,)](x)
    with pytest.raises(tegula.CompilationError, match=r"E0208.*the host function `log` raised ValueError"):
        plain_function_raising_kernel[(1,)](x)


def _next_power_of_2_builtin(n, *, _builder=None):
    """A host function in the form Triton's builtins take (libraries mark such helpers with
    __triton_builtin__): compile-time arguments come wrapped in tl.constexpr, and it may return one."""
    if not isinstance(n, tl.constexpr):
        raise AssertionError(f"Expected tl.constexpr, got {type(n)}")
    return tl.constexpr(1 << (n.value - 1).bit_length())


_next_power_of_2_builtin.__triton_builtin__ = True


@tegula.jit
def _scaled_by_power_of_2(x_ptr, out_ptr, n, BLOCK: tl.constexpr, K: tl.constexpr):
    P: tl.constexpr = _next_power_of_2_builtin(K + 3)
    tl.static_assert(P == 32)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * P, mask=offs < n)


def test_a_triton_builtin_host_function_gets_and_returns_constexprs():
    x = np.random.default_rng(7).standard_normal(50).astype(np.float32)
    out = np.zeros(50, np.float32)
    _scaled_by_power_of_2[(1,)](x, out, 50, BLOCK=64, K=20)
    np.testing.assert_array_equal(out, x * 32)


def _triton_builtin(fn):
    fn.__triton_builtin__ = True
    return fn


@_triton_builtin
def _if_mask(mask, val, *, _builder=None):
    """torch Inductor's triton_helpers.if_mask: `other` only where there is a mask."""
    if isinstance(mask, tl.constexpr) and mask.value is None:
        return tl.constexpr(None)
    return val


@_triton_builtin
def _kind_of(x, *, _builder=None):
    return str(x.dtype), tuple(x.shape), isinstance(x, tl.tensor)


@_triton_builtin
def _second_of(pair, *, _builder=None):
    return pair[1]


@tegula.jit
def _masked_or_not(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n if MASKED else None
    x = tl.load(x_ptr + offs, mask=mask, other=_if_mask(mask, -1.0))
    tl.static_assert(_kind_of(x)[0] == "fp32" and _kind_of(x)[1] == (BLOCK,) and _kind_of(x)[2])
    tl.static_assert(_kind_of(n)[1] == ())
    y = _second_of((offs, x * 2))  # a tuple of tiles in, one of them back
    tl.store(out_ptr + offs, y, mask=offs < n)


def test_a_triton_builtin_is_given_tiles_as_stand_ins_and_returns_them():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(128, np.float32)
    _masked_or_not[(1,)](x, out, 100, BLOCK=128, MASKED=True)
    np.testing.assert_array_equal(out[:100], x * 2)
    assert not out[100:].any()
    x = rng.standard_normal(128).astype(np.float32)
    _masked_or_not[(1,)](x, out, 128, BLOCK=128, MASKED=False)
    np.testing.assert_array_equal(out, x * 2)


_KEPT = []


@_triton_builtin
def _computes(x, *, _builder=None):
    return x + 1


@_triton_builtin
def _tests_truth(x, *, _builder=None):
    return 1 if x else 0


@_triton_builtin
def _returns_the_first_kept(x, *, _builder=None):
    _KEPT.append(x)
    return _KEPT[0]


@pytest.mark.parametrize("builtin, message", [
    (_computes, "is known only when the kernel runs: while it compiles, a host function may read its dtype and "
                "shape or return it, and compute with it only in a @jit function"),
    (_tests_truth, "is known only when the kernel runs"),
    (_returns_the_first_kept, "returned a tile it was given by another call; return one of this call's arguments"),
])
def test_a_triton_builtin_cannot_compute_on_a_tile_or_keep_one(builtin, message):
    _KEPT.clear()

    @tegula.jit
    def kernel(out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = builtin(offs)
        b = builtin(offs * 2)
        tl.store(out_ptr + offs, a + b)

    with pytest.raises(tegula.CompilationError, match=re.escape(message)) as caught:
        kernel[(1,)](np.zeros(8, np.int32), BLOCK=8)
    assert "E0208" in str(caught.value)


@tegula.constexpr_function
def _element_type(t):
    """Triton's constexpr functions are given the tensor itself (triton_kernels's get_dtype)."""
    return t.dtype.element_ty if isinstance(t, tl.tensor) and isinstance(t.dtype, tl.pointer_type) else t.dtype


@tegula.constexpr_function
def _width(t):
    return t.shape[0] if t.shape else 1


@tegula.jit
def _converted_by_element_type(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    dt: tl.constexpr = _element_type(out_ptr)
    tl.static_assert(dt == tl.float64)
    tl.static_assert(_width(offs) == BLOCK and _width(x_ptr) == 1)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(_element_type(y_ptr)).to(dt) + 1)


def test_a_constexpr_function_reads_the_type_and_shape_of_what_it_is_given():
    x = np.random.default_rng(5).standard_normal(16).astype(np.float32) * 1000
    out = np.zeros(16, np.float64)
    _converted_by_element_type[(1,)](x, np.zeros(1, np.float16), out, BLOCK=16)
    np.testing.assert_array_equal(out, x.astype(np.float16).astype(np.float64) + 1)


def test_a_constexpr_function_computing_on_a_tile_says_it_is_known_only_at_run_time():
    @tegula.jit
    def kernel(out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, log2(offs))

    with pytest.raises(tegula.CompilationError, match=re.escape(
            "the constexpr function `log2` raised TypeError: <stand-in for a kernel value of type "
            "tl.block_type(tegula.language.int32, [8])> is known only when the kernel runs")):
        kernel[(1,)](np.zeros(8, np.int32), BLOCK=8)


def test_a_plain_python_function_given_a_tile_says_to_make_it_jit():
    @tegula.jit
    def kernel(out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, math.floor(offs))

    with pytest.raises(tegula.CompilationError, match="E0205"):
        kernel[(1,)](np.zeros(8, np.int32), BLOCK=8)


@tegula.constexpr_function
def _descriptor_dtype(t):
    return t.dtype.element_ty if isinstance(t, tl.tensor) else t.dtype


@tegula.constexpr_function
def _block_shape(t):
    return tuple(t.block_shape) if isinstance(t, tl.tensor_descriptor) else ()


@tegula.jit
def _doubled_through_a_descriptor(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dt: tl.constexpr = _descriptor_dtype(desc)  # triton_kernels's get_dtype(desc)
    tl.static_assert(dt == tl.float32 and _block_shape(desc) == (BM, BN) and _block_shape(x_ptr) == ())
    block = desc.load([tl.program_id(0) * BM, 0])
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    tl.store(out_ptr + rows * N + cols, block.to(_descriptor_dtype(out_ptr)) * 2, mask=(rows < M) & (cols < N))


def test_a_constexpr_function_reads_a_tensor_descriptors_dtype_and_block_shape():
    x = np.random.default_rng(9).standard_normal((13, 16)).astype(np.float32)
    out = np.zeros((13, 16), np.float64)
    _doubled_through_a_descriptor[(2,)](x, out, 13, 16, BM=8, BN=16)
    np.testing.assert_array_equal(out, x.astype(np.float64) * 2)
