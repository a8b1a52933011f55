"""A launch compiles a kernel again when a module global it read was rebound since (docs/python-api.md,
"Globals read by a kernel"): a constant folded into it, or a helper it inlined."""

import sys

import numpy as np

import tegula


SOURCE = '''
import tegula
import tegula.language as tl

SCALE = 2.0


@tegula.jit
def helper(x):
    return x + 1


@tegula.jit
def scaled_kernel(out_ptr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, helper(offs * SCALE))
'''


def _module(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE)
    sys.path.insert(0, str(tmp_path))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_a_rebound_global_compiles_the_kernel_again(tmp_path):
    module = _module(tmp_path, "rebound_globals_kernels")
    out = np.zeros(4, np.float32)
    base = np.arange(4, dtype=np.float32)
    module.scaled_kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 2 + 1)
    module.SCALE = 3.0  # a constant the kernel folded in
    module.scaled_kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 3 + 1)
    module.SCALE = 3.0  # equal again: nothing to do (the check compares by value after identity)
    module.scaled_kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 3 + 1)

    def minus_one(x):
        return x - 1
    minus_one.__module__ = module.__name__
    module.helper = tegula.jit(minus_one)  # a helper redefined, as a notebook cell does
    module.scaled_kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 3 - 1)


def test_every_compile_hands_its_globals_on(tmp_path):
    """The globals a compile read wait in one table until the launcher takes them: inspect, warmup and
    launches all take theirs, so the table does not grow."""
    import importlib

    table = importlib.import_module("tegula.jit")._GLOBAL_WATCHES
    module = _module(tmp_path, "rebound_globals_inspected")
    out = np.zeros(4, np.float32)
    before = len(table)
    module.scaled_kernel.inspect(out)
    module.scaled_kernel.warmup(out, grid=(1,))
    module.scaled_kernel[(1,)](out)
    assert len(table) == before


def test_a_changed_closure_variable_or_constexpr_compiles_the_kernel_again():
    # A kernel made in a factory reads its closure; a tl.constexpr changed in place (`c.value = ...`) rebinds
    # nothing. Either used to launch the kernel compiled with the old value.
    import tegula.language as tl

    def make(scale, offset):
        @tegula.jit
        def closure_kernel(out_ptr):
            offs = tl.arange(0, 4)
            tl.store(out_ptr + offs, offs * scale + offset)

        def rebind(new_offset):
            nonlocal offset
            offset = new_offset
        return closure_kernel, rebind

    scale = tl.constexpr(2)
    kernel, rebind = make(scale, 1)
    out = np.zeros(4, np.int32)
    base = np.arange(4, dtype=np.int32)
    kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 2 + 1)
    scale.value = 5  # in place
    kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 5 + 1)
    rebind(7)  # the closure cell rebound
    kernel[(1,)](out)
    np.testing.assert_array_equal(out, base * 5 + 7)
    kernel[(1,)](out)  # nothing changed: the kernel compiled last
    np.testing.assert_array_equal(out, base * 5 + 7)


GLOBAL_CONSTEXPR = None  # set by the test below


def test_a_global_constexpr_changed_in_place_compiles_the_kernel_again():
    import tegula.language as tl

    global GLOBAL_CONSTEXPR
    GLOBAL_CONSTEXPR = tl.constexpr(3)

    @tegula.jit
    def global_kernel(out_ptr):
        tl.store(out_ptr + tl.arange(0, 4), tl.arange(0, 4) + GLOBAL_CONSTEXPR)

    out = np.zeros(4, np.int32)
    global_kernel[(1,)](out)
    np.testing.assert_array_equal(out, np.arange(4) + 3)
    GLOBAL_CONSTEXPR.value = 10
    global_kernel[(1,)](out)
    np.testing.assert_array_equal(out, np.arange(4) + 10)
