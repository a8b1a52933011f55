"""@tegula.jit on a function whose module imported Triton: `triton.language`
is the tile language, `triton.cdiv` works inside kernels, and Triton's own host
objects the module holds (`tl.constexpr(...)` globals, dtypes, helpers
decorated with `@triton.jit`) mean what they mean to Triton.

Where Triton is installed the real package is used; elsewhere the test writes
a stand-in `triton` package (just the host objects, with Triton's module and
class names) into tmp_path and removes it from sys.modules afterwards.
"""

import importlib
import importlib.util
import sys
import textwrap

import numpy as np
import pytest

from compat_util import assert_close, randn

STUB = {
    "triton/__init__.py": """
        '''A stand-in for Triton written by the test: the host objects a kernel module touches.'''
        from . import language
        from .runtime.jit import JITFunction


        def jit(fn=None, **options):
            return JITFunction(fn) if fn is not None else JITFunction


        def cdiv(a, b):
            return (a + b - 1) // b
    """,
    "triton/runtime/__init__.py": "",
    "triton/runtime/jit.py": """
        class JITFunction:
            def __init__(self, fn):
                self.fn = fn
    """,
    "triton/language/__init__.py": """
        from . import extra, math
        from .core import constexpr, dtype, float8e4b8, float16, float32
        from .math import exp
        from .standard import sum
    """,
    "triton/language/math.py": """
        def exp(x, _semantic=None):
            raise RuntimeError("only in kernels")
    """,
    "triton/language/standard.py": """
        def sum(input, axis=None, keep_dims=False, dtype=None):
            raise RuntimeError("only in kernels")
    """,
    "triton/language/core.py": """
        class constexpr:
            def __init__(self, value):
                self.value = value


        class dtype:
            def __init__(self, name):
                self.name = name


        float16, float32, float8e4b8 = dtype("fp16"), dtype("fp32"), dtype("fp8e4b8")
    """,
    "triton/language/extra/__init__.py": "from . import libdevice",
    "triton/language/extra/libdevice.py": """
        def rsqrt(arg0, _semantic=None):
            raise RuntimeError("only in kernels")
    """,
}

KERNEL_MODULE = '''
import tegula
import triton
import triton.language as tl
from triton.language.extra import libdevice

SCALE = tl.constexpr(2.0)
OUT_DTYPE = tl.float16
WIDE_DTYPE = tl.float8e4b8  # AMD's fp8 e4m3fnuz


@triton.jit
def shifted_tanh(x):
    return libdevice.tanh(x) + 1.0


@tegula.jit
def triton_module_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = shifted_tanh(x) * SCALE + triton.cdiv(n, BLOCK)
    tl.store(y_ptr + offs, y.to(OUT_DTYPE), mask=mask)


@tegula.jit
def fp8_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(WIDE_DTYPE))


from triton.language import sum as tsum
from triton.language.extra.libdevice import rsqrt as fast_rsqrt
from triton.language.math import exp


@tegula.jit
def imported_names_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    total = tsum(exp(x), axis=0)
    tl.store(y_ptr + offs, fast_rsqrt(x) * total)
'''


@pytest.fixture
def triton_module(tmp_path, monkeypatch):
    """The kernel module above, imported with `triton` resolving to the real
    Triton when it is installed and to the stand-in otherwise."""
    stand_in = importlib.util.find_spec("triton") is None
    if stand_in:
        for path, text in STUB.items():
            file = tmp_path / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(textwrap.dedent(text))
    (tmp_path / "triton_style_kernels.py").write_text(KERNEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    try:
        yield importlib.import_module("triton_style_kernels")
    finally:
        # The stand-in must not outlive the test. The real Triton stays: its
        # extension module cannot be imported twice in one process (its
        # submodules are registered only when it is first loaded).
        for name in set(sys.modules) - before:
            if name == "triton_style_kernels" or (stand_in and (name == "triton" or name.startswith("triton."))):
                del sys.modules[name]


def test_kernel_module_written_for_triton(rt, triton_module):
    n, block = 300, 128
    x = randn(90, n)
    y = rt.zeros(n, "float16")
    triton_module.triton_module_kernel[(3,)](rt.array(x), y, n, BLOCK=block)
    ref = (np.tanh(x.astype(np.float64)) + 1) * 2 + 3
    assert_close(rt.numpy(y).astype(np.float64), ref, atol=4e-3, rtol=2e-3)


def test_a_triton_fp8_dtype_maps_to_tegulas_by_name(rt, triton_module):
    # Triton's dtype object maps to Tegula's by its short name, AMD's fnuz fp8 formats included: x rounds to
    # e4m3fnuz (to nearest even, saturating at 240) and back to f32 in the store.
    x = np.tile(np.array([0.3, -1.75, 1000.0, 2.0**-12], np.float32), 4)
    y = rt.zeros(16, "float32")
    triton_module.fp8_kernel[(1,)](rt.array(x), y, BLOCK=16)
    np.testing.assert_array_equal(rt.numpy(y), np.tile(np.array([0.3125, -1.75, 240.0, 0.0], np.float32), 4))


def test_triton_language_functions_imported_by_name(rt, triton_module):
    """`from triton.language... import f as g`: g(x) in a kernel is f(x), the
    function found by identity in Triton's (or the stand-in's) namespaces."""
    x = np.random.default_rng(7).uniform(0.25, 2.0, 64).astype(np.float32)
    y = rt.zeros(64, "float32")
    triton_module.imported_names_kernel[(1,)](rt.array(x), y, BLOCK=64)
    x64 = x.astype(np.float64)
    assert_close(rt.numpy(y).astype(np.float64), np.exp(x64).sum() / np.sqrt(x64), rtol=1e-5, atol=1e-5)
