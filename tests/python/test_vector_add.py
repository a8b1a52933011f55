"""The vector-add example against NumPy over sizes (with masked tails) and dtypes."""

import numpy as np
import pytest

import tegula
from vector_add import add, add_kernel, random_array


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("n", [1, 1000, 98765, 2**24])
def test_matches_numpy(n, dtype):
    rng = np.random.default_rng(n)
    x, y = random_array(rng, n, dtype), random_array(rng, n, dtype)
    out = add(x, y, block=1024)
    assert out.dtype == x.dtype
    tegula.testing.assert_close(out, x + y)


def test_masked_tail_leaves_memory_past_n_untouched():
    x = np.arange(2000, dtype=np.float32)
    out = np.full(2000, -1.0, dtype=np.float32)
    add_kernel[(tegula.cdiv(1500, 1024),)](x, x, out, 1500, BLOCK=1024)
    np.testing.assert_array_equal(out[:1500], 2 * x[:1500])
    np.testing.assert_array_equal(out[1500:], -1.0)


def test_empty_grid_runs_nothing():
    x = np.ones(16, dtype=np.float32)
    out = np.zeros(16, dtype=np.float32)
    add_kernel[(0,)](x, x, out, 16, BLOCK=16)
    assert not out.any()


def test_int_specialization_classes_share_compiled_kernels():
    x = np.ones(4096, dtype=np.float32)
    out = np.empty_like(x)
    before = len(add_kernel._launcher)
    for n in (1000, 1001, 1003):  # same class: i32, not 1, not divisible by 16
        add_kernel[(tegula.cdiv(n, 256),)](x, x, out, n, BLOCK=256)
    assert len(add_kernel._launcher) - before <= 1
    add_kernel[(4,)](x, x, out, 1024, BLOCK=256)  # divisible by 16: a new variant
    add_kernel[(1,)](x, x, out, 1, BLOCK=256)     # the value 1: a new variant
    # n's spec in each: (width, is_one, divisibility)
    classes = {(args[3].dtype, args[3].is_one, args[3].divisibility) for args in add_kernel._launcher.specializations()}
    assert ("i32", False, 1) in classes
    assert ("i32", False, 16) in classes
    assert ("i32", True, 1) in classes
    np.testing.assert_array_equal(out[:1], 2.0)
