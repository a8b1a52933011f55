"""What a kernel sees besides its arguments: module constants, tl.constexpr and
dtype globals, other @jit functions (transitively), closure variables, the
members of host modules, and triton.language under its own name."""

import math
import sys
import types

import numpy as np
import pytest

import tegula
import tegula.language as tl

SCALE = 3
OFFSET = tl.constexpr(10)
OUT_DTYPE = tl.float16
HALF = 0.5


@tegula.jit
def times_scale(x):
    return x * SCALE


@tegula.jit
def affine(x):
    return times_scale(x) + OFFSET  # a callee calling another callee


@tegula.jit
def uses_globals(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (affine(x) * HALF).to(OUT_DTYPE), mask=mask)


def test_module_constants_and_jit_callees():
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(300, dtype=np.float16)
    uses_globals[(3,)](x, out, 300, BLOCK=128)
    tegula.testing.assert_close(out, ((x * 3 + 10) * 0.5).astype(np.float16))


def make_scaler(factor):
    @tegula.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)

    return scale


def test_closure_variables():
    x = np.ones(100, dtype=np.float32)
    make_scaler(4.0)[(1,)](x, 100, BLOCK=128)
    make_scaler(0.5)[(1,)](x, 50, BLOCK=128)
    np.testing.assert_array_equal(x[:50], 2.0)
    np.testing.assert_array_equal(x[50:], 4.0)


# A stand-in for `import triton.language as tl2`: kernels written for Triton
# name that module, and the compiler must accept it as the tile language.
tl2 = types.ModuleType("triton.language")
tl2.constexpr = tl.constexpr


@tegula.jit
def triton_style(x_ptr, n, BLOCK: tl2.constexpr):
    offs = tl2.program_id(0) * BLOCK + tl2.arange(0, BLOCK)
    tl2.store(x_ptr + offs, offs.to(tl2.float32), mask=offs < n)


def test_triton_language_module_name():
    x = np.zeros(40, dtype=np.float32)
    triton_style[(1,)](x, 40, BLOCK=64)
    np.testing.assert_array_equal(x, np.arange(40, dtype=np.float32))


@tegula.jit
def uses_numpy(x_ptr):
    tl.store(x_ptr, np.float32(1.0))


def test_host_objects_are_reported_by_name():
    with pytest.raises(tegula.CompilationError, match="numpy"):
        uses_numpy[(1,)](np.zeros(1, dtype=np.float32))


# A module of helpers, as `from . import helpers` gives a kernel: its @jit
# functions, constants and modules are reached through attributes.
helpers = types.ModuleType("kernel_helpers")
helpers.SCALE = 2.5
helpers.inner = types.ModuleType("kernel_helpers.inner")
helpers.inner.OFFSET = tl.constexpr(7)


@tegula.jit
def _scaled(x):
    return x * helpers.SCALE  # a helper reading its own module's constant through the module


helpers.scaled = _scaled
helpers.inner.scaled = _scaled


@tegula.jit
def uses_module_members(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = helpers.scaled(x) + helpers.inner.OFFSET + helpers.inner.scaled(x) * math.pi
    tl.store(out_ptr + offs, y, mask=mask)


def test_module_attributes():
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    out = np.zeros(300, dtype=np.float32)
    uses_module_members[(3,)](x, out, 300, BLOCK=128)
    tegula.testing.assert_close(out, x * 2.5 + 7 + x * 2.5 * np.float32(math.pi), rtol=1e-6, atol=1e-6)


@tegula.jit
def missing_module_member(x_ptr):
    tl.store(x_ptr, helpers.not_there)


@tegula.jit
def calls_a_module(x_ptr):
    tl.store(x_ptr, helpers.inner(1.0))


def test_module_attribute_errors():
    x = np.zeros(1, dtype=np.float32)
    with pytest.raises(tegula.CompilationError, match=r"the module `helpers` has no attribute `not_there`") as e:
        missing_module_member[(1,)](x)
    assert "test_globals.py" in str(e.value)
    with pytest.raises(tegula.CompilationError, match=r"the module `helpers.inner` is not callable"):
        calls_a_module[(1,)](x)


def test_dtype_as_constexpr_argument():
    @tegula.jit
    def cast_copy(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DTYPE), mask=mask)

    x = np.linspace(-3, 3, 20).astype(np.float32)
    out = np.zeros(20, dtype=np.int32)
    cast_copy[(1,)](x, out, 20, DTYPE=tl.int32, BLOCK=32)
    np.testing.assert_array_equal(out, x.astype(np.int32))



# Classes of @jit static methods reached through a module, as kakaobrain/trident's kernels call them
# (`language.Sum.forward(...)`, `language.math.GELU.backward(...)`): Triton reads `module.Class.attr` with
# getattr while it compiles, so the class's @jit functions and constants are the kernel's too.
class _Ops:
    SHIFT = tl.constexpr(1.5)

    @staticmethod
    @tegula.jit
    def forward(x):
        return tl.where(x > 0, x, 0.25 * x) + helpers.Ops.SHIFT  # through the module, as Triton allows

    @staticmethod
    @tegula.jit
    def backward(g, x):
        return tl.where(x > 0, g, 0.25 * g)

    class Inner:
        SCALE = 3.0

        @staticmethod
        @tegula.jit
        def times(x):
            return x * helpers.Ops.Inner.SCALE


helpers.Ops = _Ops
helpers.inner.Ops = _Ops


@tegula.jit
def uses_class_members(x_ptr, g_ptr, y_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    y = helpers.Ops.forward(x) + helpers.inner.Ops.Inner.times(x) + helpers.Ops.SHIFT
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(dx_ptr + offs, helpers.inner.Ops.backward(g, x), mask=mask)


def test_class_members_through_a_module():
    rng = np.random.default_rng(1)
    n = 300  # three blocks of 128, the last one masked
    x = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    y = np.full(n + 8, -7.0, dtype=np.float32)  # the elements past n must stay untouched
    dx = np.full(n + 8, -7.0, dtype=np.float32)
    uses_class_members[(3,)](x, g, y, dx, n, BLOCK=128)
    want = np.where(x > 0, x, np.float32(0.25) * x) + np.float32(1.5) + x * np.float32(3.0) + np.float32(1.5)
    tegula.testing.assert_close(y[:n], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(dx[:n], np.where(x > 0, g, np.float32(0.25) * g))
    np.testing.assert_array_equal(y[n:], -7.0)
    np.testing.assert_array_equal(dx[n:], -7.0)


@tegula.jit
def uses_a_global_class(x_ptr):
    tl.store(x_ptr, _Ops.forward(tl.load(x_ptr)))


@tegula.jit
def missing_class_member(x_ptr):
    tl.store(x_ptr, helpers.Ops.not_there(tl.load(x_ptr)))


def test_class_member_errors():
    x = np.zeros(1, dtype=np.float32)
    # A class that is itself a global is a host object (Triton refuses such a global, NameError).
    with pytest.raises(tegula.CompilationError, match=r"class '.*_Ops'"):
        uses_a_global_class[(1,)](x)
    with pytest.raises(tegula.CompilationError, match=r"`helpers.Ops` has no attribute `not_there`"):
        missing_class_member[(1,)](x)


def test_a_kernel_whose_code_object_names_nothing_reads_its_text(tmp_path):
    """A function given an empty code object and the text of a file of its own (Triton's tests build kernels
    so, with _testcapi.code_newempty): the globals it reads come from its text."""
    _testcapi = pytest.importorskip("_testcapi")
    source = tmp_path / "kernel_text.py"
    source.write_text("\ndef kernel(X, Y, BLOCK: tl.constexpr):\n"
                      "    offs = tl.arange(0, BLOCK)\n"
                      "    tl.store(Y + offs, tl.sin(tl.load(X + offs, mask=offs < 50)), mask=offs < 50)\n")

    def kernel(X, Y, BLOCK):
        pass

    kernel.__code__ = _testcapi.code_newempty(str(source), "kernel", 1)
    kernel = tegula.jit(kernel)
    x = np.random.default_rng(3).standard_normal(50).astype(np.float32)
    y = np.zeros_like(x)
    kernel[(1,)](x, y, BLOCK=64)
    np.testing.assert_allclose(y, np.sin(x), rtol=1e-6, atol=1e-6)
