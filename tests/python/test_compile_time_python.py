"""The Python builtins a kernel evaluates at compile time, as Triton's code
generator does: getattr (a language function picked by a constexpr name,
an attribute of a tile), hasattr, isinstance, list, and len, min, max, int,
float and bool of constants. Every other Python builtin is a located error
that says what to write instead.

Results are compared with NumPy on random data; the kernels are compiled by
the CUDA backend too (NVRTC, no GPU needed) where NVRTC loads.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C

from cuda_compile_util import require_nvrtc
from ops_util import check, rng_for


@tegula.jit
def picked_by_name_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr, FUNC: tl.constexpr, PROPAGATE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    if FUNC == "clamp":
        r = getattr(tl, FUNC)(a, -tl.abs(b), tl.abs(b), propagate_nan=getattr(tl.PropagateNan, PROPAGATE))
    else:
        r = getattr(tl, FUNC)(a, b, propagate_nan=getattr(tl.PropagateNan, PROPAGATE))
    tl.store(c_ptr + offs, r)


@tegula.jit
def introspection_kernel(x_ptr, out_ptr, N: tl.constexpr, SCALE: tl.constexpr, NAME: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    dt = getattr(x, "dtype")
    y = x.to(dt)
    if hasattr(x, NAME):
        y = y * 2
    if hasattr(x, "no_such_attribute"):
        y = y * 1000
    if isinstance(SCALE, float):
        y = y * SCALE
    if isinstance(SCALE, int):
        y = y + 1000
    if isinstance(x, tl.tensor) and not isinstance(x, tl.constexpr) and isinstance(N, (tl.constexpr, str)):
        y = y + 1
    if isinstance(dt, tl.dtype) and isinstance((N, 1), tuple):
        y = y + len(list((1, 2, 3)))
    y = y + getattr(x, "missing", 5) + max(N, 3) - min(N, 3) + int(2.7) + float(1) + bool(N)
    tl.store(out_ptr + offs, y)


@tegula.jit
def zip_kernel(x_ptr):
    pairs = zip((1, 2), (3, 4))
    tl.store(x_ptr, len(pairs))


@tegula.jit
def type_kernel(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x + (type(x) is int))


@tegula.jit
def sum_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, sum(x))


def _propagation_inputs(func, dtype):
    rng = rng_for("picked-by-name", func, dtype)
    a = rng.normal(0, 2, 128).astype(dtype)
    b = rng.normal(0, 2, 128).astype(dtype)
    a[rng.random(128) < 0.2] = np.nan
    b[rng.random(128) < 0.2] = np.nan
    return a, b


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("propagate", ["NONE", "ALL"])
@pytest.mark.parametrize("func", ["minimum", "maximum", "clamp"])
def test_getattr_picks_a_language_function_by_constexpr_name(backend, func, propagate, dtype):
    a, b = _propagation_inputs(func, dtype)
    c = backend.zeros(128, dtype)
    picked_by_name_kernel[(1,)](backend.array(a), backend.array(b), c, BLOCK=128, FUNC=func, PROPAGATE=propagate)
    got = backend.numpy(c)
    if func == "clamp":
        lo, hi = -np.abs(b), np.abs(b)
        defined = ~np.isnan(a) & ~np.isnan(b)
        check(got, np.minimum(np.maximum(a, lo), hi), dtype, where=defined)
        if propagate == "ALL":
            assert np.isnan(got[np.isnan(a)]).all()
        return
    if propagate == "ALL":
        ref = np.minimum(a, b) if func == "minimum" else np.maximum(a, b)
    else:  # only where both are NaN is the result NaN
        ref = np.fmin(a, b) if func == "minimum" else np.fmax(a, b)
    check(got, ref, dtype)


@pytest.mark.parametrize("scale", [0.5, 3])
def test_isinstance_hasattr_and_constant_builtins(backend, scale):
    x = rng_for("introspection", scale).normal(0, 3, 64).astype(np.float32)
    out = backend.zeros(64, np.float32)
    introspection_kernel[(1,)](backend.array(x), out, N=64, SCALE=scale, NAME="shape")
    ref = x.astype(np.float64) * 2
    ref = ref * scale if isinstance(scale, float) else ref + 1000
    ref = ref + 1 + 3 + 5 + 64 - 3 + 2 + 1.0 + 1
    check(backend.numpy(out), ref, "float32", ulps=4)


@pytest.mark.parametrize("kernel, line, name, hint", [
    (zip_kernel, "zip_kernel", "zip", "tl.static_range"),
    (type_kernel, "type_kernel", "type", "isinstance"),
    (sum_kernel, "sum_kernel", "sum", "tl.sum"),
])
def test_other_python_builtins_are_located_errors_that_name_the_fix(kernel, line, name, hint):
    x = np.zeros(16, np.float32)
    with pytest.raises(tegula.CompilationError) as info:
        if kernel is sum_kernel:
            kernel[(1,)](x, BLOCK=16)
        else:
            kernel[(1,)](x)
    text = str(info.value)
    assert f"error[E0204]: the Python builtin `{name}` cannot be used inside a kernel" in text, text
    assert "test_compile_time_python.py:" in text.splitlines()[0]
    assert hint in text, text


@pytest.mark.parametrize("arch", [90, 80])
def test_compile_time_python_kernels_compile_for_cuda(tmp_path, arch):
    require_nvrtc(arch)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch, cache_dir=str(tmp_path), keep_stages=True)
    f16, f32 = np.zeros(128, np.float16), np.zeros(128, np.float32)
    for kernel, args, constexprs in [
        (picked_by_name_kernel, (f16, f16, f16), dict(BLOCK=128, FUNC="clamp", PROPAGATE="ALL")),
        (picked_by_name_kernel, (f32, f32, f32), dict(BLOCK=128, FUNC="minimum", PROPAGATE="NONE")),
        (introspection_kernel, (f32, f32), dict(N=64, SCALE=0.5, NAME="shape")),
    ]:
        request, _ = kernel._request_for(*args, **constexprs)
        _C.compile(request, options)


@tegula.jit
def constexpr_min_max_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr):
    tl.store(out_ptr + 0, min(A, B))
    tl.store(out_ptr + 1, max(A, B, 0.5))


@pytest.mark.parametrize("a, b", [(1.0, 2.5), (-3.0, 0.0), (2, -7), (0.0, 0.0)])
def test_min_max_of_constexprs(a, b):
    out = np.zeros(2, np.float64)
    constexpr_min_max_kernel[(1,)](out, a, b)
    assert out.tolist() == [min(a, b), max(a, b, 0.5)]


@pytest.mark.parametrize("a, b, what", [(1.0, float("nan"), "NaN"), (float("nan"), 1.0, "NaN"),
                                        (1.0, -0.0, "negative zero"), (-0.0, 0.0, "negative zero")])
def test_min_max_of_constexprs_refuse_order_dependent_answers(a, b, what):
    # Python's min(1.0, nan) is 1.0 and min(nan, 1.0) is nan: refused, as in Triton.
    with pytest.raises(tegula.CompilationError, match=rf"E0603.*min\(\) of compile-time numbers does not take {what}"):
        constexpr_min_max_kernel[(1,)](np.zeros(2, np.float64), a, b)
