"""Functions of the tile language imported by name at module level: called
in a kernel under any name, they mean exactly what `tl.<name>` means.

The compiler is told which language function a global holds by identity
(python/tegula/_globals.py, `language_member`), so an alias works, and a
host function that only shares a name is still a host object. Results are
compared with NumPy on random data; the same kernels are compiled by the
CUDA backend (NVRTC, no GPU needed) where NVRTC loads.
"""

import math

import numpy as np
import pytest

import tegula
import tegula.language as tl
import tegula.language.extra.libdevice as ld
from tegula import _C
from tegula.language import maximum as vmax, static_range as unrolled, sum as tsum, where
from tegula.language.extra import libdevice
from tegula.language.extra.libdevice import rsqrt
from tegula.language.math import exp as e

from cuda_compile_util import require_nvrtc
from ops_util import check, grid1, rng_for


def exp(x):
    """A host function named like tl.exp: not the language's."""
    return np.exp(x)


@tegula.jit
def imported_math_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    r = rsqrt(x) + e(y) * ld.cbrt(x) - libdevice.tanh(y) + vmax(x, y)
    tl.store(out_ptr + offs, where(x > 1.5, r, -r), mask=m)


@tegula.jit
def imported_reduction_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    x = tl.load(x_ptr + rows[:, None] * COLS + cols[None, :])
    acc = tsum(x, axis=1)
    for k in unrolled(2):
        acc += tsum(x * (k + 1), axis=1)
    tl.store(out_ptr + rows, acc)


@tegula.jit
def host_function_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, exp(tl.load(x_ptr + offs)))


def _math_inputs(n):
    rng = rng_for("imported-math", n)
    x = rng.uniform(0.5, 3.0, n).astype(np.float32)
    y = rng.uniform(-2.0, 2.0, n).astype(np.float32)
    return x, y


def test_math_functions_imported_by_name(backend):
    n, block = 1000, 256
    x, y = _math_inputs(n)
    out = backend.zeros(n, np.float32)
    imported_math_kernel[grid1(n, block)](backend.array(x), backend.array(y), out, n, BLOCK=block)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    r = 1 / np.sqrt(x64) + np.exp(y64) * np.cbrt(x64) - np.tanh(y64) + np.maximum(x64, y64)
    check(backend.numpy(out), np.where(x64 > 1.5, r, -r), "float32", ulps=64)


def test_reduction_and_static_range_imported_by_name(backend):
    rows, cols = 16, 64
    x = rng_for("imported-sum").integers(-100, 100, (rows, cols)).astype(np.int32)
    out = backend.zeros(rows, np.int32)
    imported_reduction_kernel[(1,)](backend.array(x), out, ROWS=rows, COLS=cols)
    check(backend.numpy(out), x.sum(axis=1) * (1 + 1 + 2), "int32")


def test_a_host_function_sharing_a_language_name_stays_a_host_object():
    x = np.zeros(16, np.float32)
    with pytest.raises(tegula.CompilationError, match=r"E0205.*function 'exp' \(not a @tegula.jit function\)"):
        host_function_kernel[(1,)](x, BLOCK=16)


def _no_counterpart(x):
    return x


@tegula.jit
def host_math_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if CASE == "np.exp":
        y = np.exp(x)
    elif CASE == "math.exp":
        y = math.exp(x)
    elif CASE == "np.maximum":
        y = np.maximum(x, 0.0)
    elif CASE == "np.absolute":
        y = np.absolute(x)
    elif CASE == "np.cumsum":
        y = np.cumsum(x)
    else:
        y = _no_counterpart(x)
    tl.store(x_ptr + offs, y + math.exp(0.0) + np.sqrt(4.0))  # on constants they run on the host


@pytest.mark.parametrize("case, name, hint", [
    ("np.exp", "`np.exp`", "use `tl.exp` inside a kernel: `np.exp` runs on the host while the kernel compiles"),
    ("math.exp", "`math.exp`", "use `tl.exp` inside a kernel: `math.exp` runs on the host while the kernel compiles"),
    ("np.maximum", "`np.maximum`", "use `tl.maximum` inside a kernel"),
    ("np.absolute", "`np.absolute`", "use `tl.abs` inside a kernel"),
    ("np.cumsum", "`np.cumsum`", "use `tl.cumsum` inside a kernel"),
    ("plain", "`function '_no_counterpart' (not a @tegula.jit function)`", "a Python function that is not @tegula.jit runs"),
])
def test_a_numpy_or_math_function_on_a_tile_names_its_tl_function(case, name, hint):
    """np.exp(tile) said "`ufunc 'exp'` is a host object" and to make it @jit: NumPy's and math's functions
    are named as the program writes them, and the hint names the tl function where the language has one."""
    with pytest.raises(tegula.CompilationError) as info:
        host_math_kernel[(1,)](np.zeros(16, np.float32), CASE=case)
    text = str(info.value)
    assert "error[E0205]: " + name + " is a host object" in text, text
    assert "\nhint: " + hint in text, text


@pytest.mark.parametrize("arch", [90, 80])
def test_imported_functions_compile_for_cuda(tmp_path, arch):
    require_nvrtc(arch)
    x, y = _math_inputs(1000)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch, cache_dir=str(tmp_path), keep_stages=True)
    request, _ = imported_math_kernel._request_for(x, y, x, 1000, BLOCK=256)
    assert "rsqrt" in _C.compile(request, options).source.lower()
    ints = np.zeros((16, 64), np.int32)
    request, _ = imported_reduction_kernel._request_for(ints, ints, ROWS=16, COLS=64)
    _C.compile(request, options)


from tegula.language.extra.cpu import libdevice as cpu_libdevice  # noqa: E402  (Triton-CPU's path)


@tegula.jit
def cpu_libdevice_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(y_ptr + offs, tl.extra.cpu.libdevice.pow(x, 2.0), mask=m)
    tl.store(z_ptr + offs, cpu_libdevice.tanh(x), mask=m)


def test_triton_cpus_libdevice_path_is_the_same_libdevice(backend):
    import importlib

    assert cpu_libdevice is libdevice
    for path in ("tegula.language.extra.cpu.libdevice", "tegula.language.extra.cuda.libdevice"):
        assert importlib.import_module(path) is libdevice  # by path, as libraries pick their vendor's
    n = 37
    x = rng_for("cpu libdevice").standard_normal(n).astype(np.float32)
    y, z = backend.zeros(n, np.float32), backend.zeros(n, np.float32)
    cpu_libdevice_kernel[(1,)](backend.array(x), y, z, n, BLOCK=64)
    np.testing.assert_allclose(backend.numpy(y), x * x, rtol=1e-6)
    np.testing.assert_allclose(backend.numpy(z), np.tanh(x), rtol=2e-6, atol=1e-7)


from tegula.language.standard import _log2, zeros_like as standard_zeros_like  # noqa: E402


@tegula.jit
def standard_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    n_dims: tl.constexpr = _log2(x.shape[0])  # Triton's constexpr helper, as sorting networks use it
    total = tl.standard.sum(x, axis=0) + tl.sum(standard_zeros_like(x), axis=0)
    tl.store(out_ptr, total * n_dims)


def test_triton_standard_module_path(backend):
    x = rng_for("standard").standard_normal(64).astype(np.float32)
    out = backend.zeros(1, np.float32)
    standard_kernel[(1,)](backend.array(x), out, N=64)
    np.testing.assert_allclose(backend.numpy(out)[0], x.astype(np.float64).sum() * 6, rtol=1e-5, atol=3e-5)


def _libdevice_executed_again():
    """libdevice run a second time from its import spec, as xformers's libdevice_find gets its functions:
    a module whose functions are new objects with the original's module and name."""
    import importlib.util

    spec = importlib.util.find_spec("tegula.language.extra.libdevice")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_fresh_libdevice = _libdevice_executed_again()
fresh_pow = _fresh_libdevice.pow


@tegula.jit
def fresh_pow_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.store(out_ptr + offs, fresh_pow(x, 2.5) + _fresh_libdevice.exp2(x), mask=offs < n)


def test_a_reexecuted_language_module_means_the_language(backend):
    """A function of a second execution of a language module is the language function its __module__ and
    name say, as Triton resolves a global by its module."""
    assert fresh_pow is not ld.pow
    x = rng_for("fresh_pow").uniform(0.5, 2.0, 37).astype(np.float32)
    out = backend.zeros(37, np.float32)
    fresh_pow_kernel[(1,)](backend.array(x), out, 37, BLOCK=64)
    np.testing.assert_allclose(backend.numpy(out), x.astype(np.float64) ** 2.5 + np.exp2(x.astype(np.float64)),
                               rtol=2e-6)


from tegula.language.core import get_int_dtype  # noqa: E402


@tegula.jit
def core_names_kernel(x_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    # Triton's tl.core defines most tl names; kernels reach them there too (LightLLM's grouped top-k).
    offs = tl.core.arange(0, BLOCK)
    width: tl.core.constexpr = BLOCK
    x = tl.core.load(x_ptr + offs, mask=offs < n, other=0.0)
    as_int = x.to(tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True), bitcast=True)
    unsigned = x.to(get_int_dtype(32, False), bitcast=True)
    tl.static_assert(as_int.dtype == tl.int32 and unsigned.dtype == tl.uint32 and width == BLOCK)
    tl.store(bits_ptr + offs, as_int ^ (unsigned >> 31).to(tl.int32), mask=offs < n)


def test_tl_core_and_get_int_dtype_in_kernels(backend):
    x = rng_for("tl_core").standard_normal(23).astype(np.float32)
    bits = backend.zeros(23, np.int32)
    core_names_kernel[(1,)](backend.array(x), bits, 23, BLOCK=32)
    i = x.view(np.int32)
    np.testing.assert_array_equal(backend.numpy(bits), i ^ (x.view(np.uint32) >> 31).astype(np.int32))
    assert get_int_dtype(16, False) == tl.uint16 and get_int_dtype(1, True) == tl.int1


@tegula.jit
def bad_int_dtype_kernel(x_ptr, BITS: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr).to(tl.core.get_int_dtype(BITS, True), bitcast=True))


def test_get_int_dtype_of_an_odd_width_is_a_located_error():
    with pytest.raises(tegula.CompilationError, match=r"get_int_dtype has no integer type of 24 bits"):
        bad_int_dtype_kernel[(1,)](np.zeros(1, np.float32), BITS=24)


from tegula.language.core import _unwrap_if_constexpr  # noqa: E402


@tegula.jit
def unwrap_pack_kernel(x_ptr, out_ptr, n, AS_UINT: tl.constexpr, PACK: tl.constexpr, BLOCK: tl.constexpr):
    # A helper's way of packing a value and a flag into one wider word (a scan's decoupled look-back
    # does it): the dtypes come as constexpr parameters and go through tl.core._unwrap_if_constexpr.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    as_uint = tl.core._unwrap_if_constexpr(AS_UINT)
    pack = tl.core._unwrap_if_constexpr(PACK)
    word = x.to(as_uint, bitcast=True).to(pack)
    packed = (word << as_uint.primitive_bitwidth) | 1
    tl.store(out_ptr + offs, packed, mask=offs < n)


def test_tl_core_unwrap_if_constexpr_in_kernels(backend):
    x = rng_for("unwrap_if_constexpr").standard_normal(45).astype(np.float32)
    out = backend.zeros(45, np.uint64)
    unwrap_pack_kernel[(1,)](backend.array(x), out, 45, AS_UINT=tl.uint32, PACK=tl.uint64, BLOCK=64)
    want = (x.view(np.uint32).astype(np.uint64) << np.uint64(32)) | np.uint64(1)
    np.testing.assert_array_equal(backend.numpy(out), want)
    assert _unwrap_if_constexpr(tl.constexpr(7)) == 7 and _unwrap_if_constexpr(tl.float16) is tl.float16


def test_tl_core_holds_the_language_functions_for_host_code():
    # Host code inspects Triton's builtins where Triton defines them, tl.core (the parameters of
    # tl.core.view tell a Triton release's calling convention apart).
    import inspect

    import tegula.language.core as core

    assert core.view is tl.view and core.reduce is tl.reduce and core.exp is tl.exp
    assert "_semantic" not in inspect.signature(core.view).parameters
    with pytest.raises(AttributeError, match="no_such_name"):
        core.no_such_name  # noqa: B018
