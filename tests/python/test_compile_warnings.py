"""Warnings of the compiler (tegula.CompileWarning): a kernel that compiles
but does something Triton deprecates is built, runs as Triton runs it, and
warns with the located, rendered text of an error, attributed to the launch
line. Only a build warns; a kernel loaded from the disk cache does not, as
in Triton. Each test compiles into a cache of its own, so the build happens
whatever ran before.
"""

import textwrap
import warnings

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cache_util import seed_precompiled_prelude
from ops_util import run_isolated


@tegula.jit
def where_kernel(c_ptr, x_ptr, out_ptr, N, BLOCK: tl.constexpr, COMPARE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    c = tl.load(c_ptr + offs, mask=mask, other=0)
    x = tl.load(x_ptr + offs, mask=mask)
    if COMPARE:
        y = tl.where(c != 0, x, -1.0)
    else:
        y = tl.where(c, x, -1.0)
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEGULA_CACHE_DIR", str(seed_precompiled_prelude(tmp_path / "cache")))


def run_where(backend, dtype, compare):
    rng = np.random.default_rng(hash((str(dtype), compare)) % 2**32)
    N = 37
    c = rng.integers(0, 3, N).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        c[::5] = np.nan  # nonzero: selects x, as Triton's cast of the condition to int1
        c[1::7] = -0.0  # zero
    x = rng.standard_normal(N).astype(np.float32)
    out = backend.zeros(N, np.float32)
    where_kernel[(1,)](backend.array(c), backend.array(x), out, N, BLOCK=64, COMPARE=compare)
    np.testing.assert_array_equal(backend.numpy(out), np.where(c != 0, x, np.float32(-1.0)))


@pytest.mark.parametrize("dtype", [np.uint32, np.int8, np.int64, np.float32, np.float16])
def test_where_on_a_non_boolean_condition_warns_and_selects_nonzero(backend, fresh_cache, dtype):
    with pytest.warns(tegula.CompileWarning) as caught:
        run_where(backend, dtype, compare=False)
    [warning] = caught
    assert issubclass(warning.category, UserWarning)
    assert warning.filename == __file__  # the launch, in run_where
    text = str(warning.message)
    assert "test_compile_warnings.py:" in text and ": warning: tl.where with a non-boolean condition" in text
    assert "y = tl.where(c, x, -1.0)" in text and "^" in text and "hint: compare explicitly" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_where(backend, dtype, compare=False)  # the same kernel again: nothing built, nothing said


def test_a_boolean_condition_does_not_warn(backend, fresh_cache):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_where(backend, np.int32, compare=True)


DISK_CACHE = textwrap.dedent("""
    import warnings
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def where_kernel(c_ptr, out_ptr):
        offs = tl.arange(0, 16)
        tl.store(out_ptr + offs, tl.where(tl.load(c_ptr + offs), 1.0, 2.0))

    c = np.array([0, 3] * 8, np.int32)
    out = backend.zeros(16, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        where_kernel[(1,)](backend.array(c), out)
    np.testing.assert_array_equal(backend.numpy(out), np.where(c != 0, 1.0, 2.0))
    print(sum(issubclass(w.category, tegula.CompileWarning) for w in caught))
    print("ok")
""")


def test_a_kernel_loaded_from_the_disk_cache_does_not_warn_again(backend, fresh_cache, tmp_path):
    # The same script file both times (the kernel's file is part of its cache key).
    assert run_isolated(tmp_path, DISK_CACHE, backend).splitlines()[0] == "1"  # built: warns
    assert run_isolated(tmp_path, DISK_CACHE, backend).splitlines()[0] == "0"  # loaded: silent


NP_FLOAT32 = np.dtype("float32")


@tegula.jit
def dtype_against_host_objects(x_ptr):
    ty = x_ptr.dtype.element_ty
    if ty == np.float32:  # tl.dtype.__eq__: a dtype equals only a dtype, so this is False
        tl.store(x_ptr, 1.0)
    else:
        tl.store(x_ptr + 1, 2.0)
    if (ty != NP_FLOAT32) & (ty == tl.float32):
        tl.store(x_ptr + 2, 3.0)


def test_a_dtype_never_equals_a_host_object_and_says_so(fresh_cache):
    """`ptr.dtype.element_ty == torch.float16` (LMDeploy's fused_lora) is False under Triton, and `!=` True,
    as tl.dtype.__eq__ says; Tegula computes the same and warns at each, since a kernel's dtypes are tl
    dtypes and such a test is almost always a slip for tl.float16."""
    x = np.full(3, 5.0, dtype=np.float32)
    with pytest.warns(tegula.CompileWarning) as caught:
        dtype_against_host_objects[(1,)](x)
    np.testing.assert_array_equal(x, [5.0, 2.0, 3.0])
    texts = [str(w.message) for w in caught]
    assert len(texts) == 2
    assert any("`==` between tl.float32 and a host object (class 'numpy.float32') is always False: a kernel's "
               "dtypes are tl dtypes" in t for t in texts)
    assert any("`!=` between tl.float32 and a host object" in t and "is always True" in t for t in texts)
    assert all("hint: compare with the tl dtype (tl.float16 for torch.float16" in t for t in texts)
