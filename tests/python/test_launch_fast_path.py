"""The C++ launch path (`_C.Launcher`, src/bindings/bind_launch.cpp): it must
launch exactly what the Python path (JITFunction._launch_python) would, call
back into Python only on a cache miss, and key its cache so that two launches
share an entry only when their Python keys are equal."""

import gc
import itertools
import sys
import threading
import types
import weakref

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@tegula.jit
def fill(out_ptr, value, n, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.zeros([BLOCK], dtype=tl.float32) + value
    if FLAG:
        v = -v
    tl.store(out_ptr + offs, v, mask=offs < n)


def _count_python_calls(kernel, monkeypatch):
    """Counts the launcher's calls back into Python (per instance, so other
    kernels are untouched)."""
    calls = {"python": 0, "miss": 0}
    launch_python, entry_for_launch = kernel._launch_python, kernel._entry_for_launch

    def counted_launch(*args):
        calls["python"] += 1
        return launch_python(*args)

    def counted_entry(*args):
        calls["miss"] += 1
        return entry_for_launch(*args)

    monkeypatch.setattr(kernel, "_launch_python", counted_launch, raising=False)
    monkeypatch.setattr(kernel, "_entry_for_launch", counted_entry, raising=False)
    return calls


def _fresh(kernel):
    """A new JITFunction of the same source: its own, empty caches."""
    return tegula.jit(kernel.fn)


# --- results and cache behaviour ------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 100, 1000, 1023])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_match_numpy(n, dtype):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = np.zeros(n, dtype=dtype)
    axpy[(tegula.cdiv(n, 256),)](x, y, out, 0.75, n, BLOCK=256)
    np.testing.assert_allclose(out, 0.75 * x + y, rtol=1e-6)


def test_hits_never_call_python(monkeypatch):
    kernel = _fresh(axpy)
    calls = _count_python_calls(kernel, monkeypatch)
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    first = kernel[(2,)](x, x, out, 2.0, 300, BLOCK=256)
    for alpha in (1.0, 3.0, -1.5):
        assert kernel[(2,)](x, x, out, alpha, 300, BLOCK=256) is first
        np.testing.assert_array_equal(out, alpha * x + x)
    assert calls == {"python": 0, "miss": 1}
    assert len(kernel._launcher) == 1 and len(kernel._cache) == 1


def test_keyword_arguments_and_launch_options(monkeypatch):
    kernel = _fresh(axpy)
    calls = _count_python_calls(kernel, monkeypatch)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[(1,)](y_ptr=x, x_ptr=x, out_ptr=out, alpha=1.0, n=64, BLOCK=64, num_warps=2)
    np.testing.assert_array_equal(out, 2 * x)
    kernel[(1,)](x, x, out, 2.0, 64, BLOCK=64, num_warps=2)
    kernel[(1,)](x, x, out, 3.0, 64, BLOCK=64, num_warps=8)  # another key: num_warps is part of it
    kernel[(1,)](x, x, out, 3.0, 64, BLOCK=64, num_warps=8, enable_fp_fusion=True)  # True: the default
    np.testing.assert_array_equal(out, 4 * x)
    assert calls == {"python": 0, "miss": 2}


def test_specialization_classes():
    kernel = _fresh(axpy)
    x = np.zeros(2048, dtype=np.float32)
    for n in (1000, 1001, 1003):  # i32, not 1, not divisible by 16: one entry
        kernel[(1,)](x, x, x, 1.0, n, BLOCK=16)
    assert len(kernel._launcher) == 1
    kernel[(1,)](x, x, x, 1.0, 1024, BLOCK=16)   # divisible by 16
    kernel[(1,)](x, x, x, 1.0, 1, BLOCK=16)      # the value 1
    kernel[(1,)](x[1:], x, x, 1.0, 1001, BLOCK=16)  # an address not 16-byte aligned
    kernel[(1,)](x, x, x, 1.0, 1 << 40, BLOCK=16)   # i64
    assert len(kernel._launcher) == 5 == len(kernel._cache)


def test_grid_forms_and_callable_called_once():
    x = np.arange(1000, dtype=np.float32)
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return [tegula.cdiv(meta["n"], meta["BLOCK"])]  # a list: the normalizing path

    for g in ((4,), [4], 4, (4, 1), (4, 1, 1), grid):
        out = np.zeros_like(x)
        axpy[g](x, x, out, 1.0, 1000, BLOCK=256, num_warps=4)
        np.testing.assert_array_equal(out, 2 * x)
    assert len(seen) == 1
    assert seen[0]["BLOCK"] == 256 and seen[0]["num_warps"] == 4 and seen[0]["x_ptr"] is x


def test_grid_launchers_are_reused_for_equal_int_grids_only():
    kernel = _fresh(axpy)
    x = np.arange(40, dtype=np.float32)
    first = kernel[(2,)]
    assert kernel[(2,)] is first  # equal tuple of ints: the same launch function
    assert kernel[(2, 1)] is not first and kernel[(3,)] is not kernel[(2,)]
    for grid in ((3,), (2,), (2, 1), (2, 1, 1)):
        out = np.zeros_like(x)
        kernel[grid](x, x, out, 1.0, 40, BLOCK=16)
        np.testing.assert_array_equal(out[:16 * grid[0]], 2 * x[:16 * grid[0]])
        np.testing.assert_array_equal(out[16 * grid[0]:], 0)

    class Holder:  # what a grid callable's closure might keep alive
        pass

    held = Holder()
    ref = weakref.ref(held)

    def grid(meta, held=held):
        return (1,)

    kernel[grid](x, x, np.zeros_like(x), 1.0, 40, BLOCK=16)
    del grid, held
    gc.collect()
    assert ref() is None, "a callable grid must not be kept by the launcher"


def test_backend_setting_is_read_at_every_launch(monkeypatch):
    kernel = _fresh(axpy)
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    monkeypatch.delenv("TEGULA_BACKEND", raising=False)
    kernel[(1,)](x, x, out, 1.0, 16, BLOCK=16)  # compiled and cached for the CPU
    calls = _count_python_calls(kernel, monkeypatch)
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")  # agrees with the cached kernel: still the fast path
    kernel[(1,)](x, x, out, 2.0, 16, BLOCK=16)
    np.testing.assert_array_equal(out, 3 * x)
    assert calls == {"python": 0, "miss": 0}
    monkeypatch.setenv("TEGULA_BACKEND", "cuda")  # host arrays now conflict, cached or not
    for launch in (lambda: kernel[(1,)](x, x, out, 1.0, 16, BLOCK=16),
                   lambda: kernel._launch_python((1,), (x, x, out, 1.0, 16), {"BLOCK": 16})):
        with pytest.raises(ValueError, match="TEGULA_BACKEND=cuda, but argument 'x_ptr' of kernel 'axpy' is in "
                                             "host memory"):
            launch()


@tegula.jit
def no_arrays(value, n):
    # No array arguments: TEGULA_BACKEND alone picks the backend.
    tl.static_assert(True)


def test_backend_setting_toggled_keeps_both_paths_agreeing(monkeypatch):
    kernel = _fresh(no_arrays)
    monkeypatch.delenv("TEGULA_BACKEND", raising=False)
    kernel[(1,)](1.0, 3)  # compiled for the CPU, cached by both paths
    first = kernel._entry_for_launch((1.0, 3), {})
    assert first.device is None
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")
    assert kernel._entry_for_launch((1.0, 3), {}) is first
    from tegula import _device

    if _device.cuda_status()[0]:
        monkeypatch.setenv("TEGULA_BACKEND", "cuda")
        kernel[(1,)](1.0, 3)  # a CUDA entry, kept beside the first
        forced = kernel._entry_for_launch((1.0, 3), {})
        assert forced is not first and forced.device is not None
    monkeypatch.delenv("TEGULA_BACKEND")
    # The entry of the key is still the first one: what the C++ launcher caches for it.
    assert kernel._entry_for_launch((1.0, 3), {}) is first
    kernel[(1,)](2.0, 3)


def test_parameter_named_like_the_launch_arguments():
    @tegula.jit
    def k(grid, args, kwargs, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(grid + offs, tl.load(args + offs) + kwargs)

    src, dst = np.arange(16, dtype=np.int32), np.zeros(16, dtype=np.int32)
    k[(1,)](args=src, grid=dst, kwargs=5, BLOCK=16)
    np.testing.assert_array_equal(dst, src + 5)


def test_defaults_and_constexpr_kinds(monkeypatch):
    @tegula.jit
    def k(out_ptr, value, SCALE: tl.constexpr = 2, NEG: tl.constexpr = False, T: tl.constexpr = None):
        v = value * SCALE
        if NEG:
            v = -v
        tl.store(out_ptr, v)

    calls = _count_python_calls(k, monkeypatch)
    out = np.zeros(1, dtype=np.float32)
    k[(1,)](out, 1.5)
    assert out[0] == 3.0
    k[(1,)](out, 1.5, SCALE=tl.constexpr(2))  # the same key as the default, through Python's part function
    k[(1,)](out, 1.5, NEG=True, T="tag")
    assert out[0] == -3.0
    k[(1,)](out, 1.5, SCALE=np.int32(4))
    assert out[0] == 6.0
    assert calls["python"] == 0 and len(k._cache) == 3


def test_debug_launches_take_the_python_path(monkeypatch):
    kernel = _fresh(axpy)
    calls = _count_python_calls(kernel, monkeypatch)
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    kernel.debug = True
    kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32)
    assert calls["python"] == 1 and kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32).debug
    kernel.debug = False
    assert not kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32).debug
    assert calls["python"] == 2
    np.testing.assert_array_equal(out, 2 * x)


def test_errors_come_from_the_python_path():
    x = np.zeros(16, dtype=np.float32)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'BLOK'"):
        axpy[(1,)](x, x, x, 1.0, 16, BLOK=16)
    with pytest.raises(TypeError, match="argument 'alpha' of kernel 'axpy' must be an array or a scalar, got list"):
        axpy[(1,)](x, x, x, [1.0], 16, BLOCK=16)
    with pytest.raises(ValueError, match=r"must hold ints >= 0, got \(-1,\)"):
        axpy[(-1,)](x, x, x, 1.0, 16, BLOCK=16)
    with pytest.raises(ValueError, match="num_stages of kernel 'axpy' must be a positive int, got True"):
        axpy[(1,)](x, x, x, 1.0, 16, BLOCK=16, num_stages=True)


def test_launches_from_threads():
    x = np.arange(4096, dtype=np.float32)
    outs = [np.zeros_like(x) for _ in range(4)]
    errors = []

    def work(i):
        try:
            for _ in range(50):
                axpy[(16,)](x, x, outs[i], float(i), 4096, BLOCK=256)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out, i * x + x)


def test_kernels_are_garbage_collected():
    kernel = _fresh(axpy)
    x = np.zeros(16, dtype=np.float32)
    kernel[(1,)](x, x, x, 1.0, 16, BLOCK=16)
    ref = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert ref() is None


# --- the key: equal bytes only for equal Python keys ---------------------------------------------


def _python_key(kernel, args, kwargs):
    sig = kernel._signature or kernel._load_signature()
    kwargs = dict(kwargs)
    options = kernel._pop_launch_options(sig, kwargs) if kwargs else None
    return kernel._specialize(sig, kernel._bind(sig, args, kwargs), options)[0]


def test_key_bytes_follow_python_keys():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    base = np.zeros(64, dtype=np.float32)
    pointers = [base, base[1:], base[::2], np.zeros(8, np.float64), np.zeros(8, np.int32),
                np.zeros(8, np.bool_), np.zeros(8, ml_dtypes.bfloat16), np.zeros(8, np.uint64)]
    values = [0, 1, 2, 16, 17, -16, -1, 2**31, -2**31 - 1, 2**40, 2**63, np.int64(16), np.int8(1),
              1.5, -0.0, np.float32(2.0), True, False, np.bool_(True)]
    flags = [True, False, 1, 0, None, "a", "b", 1.5, -0.0, float("nan"), tl.float32, tl.int8,
             tl.constexpr(3), np.int32(3), 3, np.float64(1.5)]
    options = [{}, {"num_warps": 2}, {"num_warps": 2, "num_stages": 3}, {"enable_fp_fusion": False},
               {"enable_fp_fusion": True}]
    cases = []
    for p, v, f in itertools.product(pointers[:3] + pointers[3:], values[:8], flags[:6]):
        cases.append(((p, v, 8), {"FLAG": f, "BLOCK": 16}))
    for v, f, o in itertools.product(values, flags, options):
        cases.append(((base, v, 8), {"FLAG": f, "BLOCK": 16, **o}))
    keys = []
    for args, kwargs in cases:
        data = fill._launcher.specialization(*args, **kwargs)
        assert data is not None, (args, kwargs)
        keys.append((data, _python_key(fill, args, kwargs)))
    by_bytes = {}
    for data, key in keys:
        by_bytes.setdefault(data, set()).add(key)
    assert all(len(python_keys) == 1 for python_keys in by_bytes.values())
    # and not coarser than needed: arguments of the same types and classes share bytes
    assert fill._launcher.specialization(base, 5, 8, FLAG=1, BLOCK=16) == \
        fill._launcher.specialization(base[16:], 7, 9, FLAG=1, BLOCK=16)


def test_key_bytes_none_where_python_decides():
    x = np.zeros(16, dtype=np.float32)
    assert fill._launcher.specialization(x, 1.0, 16, FLAG=True, BLOCK=16, BLOK=3) is None  # unknown keyword
    assert fill._launcher.specialization(x, 1.0, 16, True, 16, 5) is None  # too many arguments
    assert fill._launcher.specialization(x, 1.0, 16, FLAG=True) is None  # missing BLOCK


# --- torch tensors, without torch --------------------------------------------------------------


class _FakeDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


def _fake_torch():
    torch = types.ModuleType("torch")
    torch.float32 = _FakeDtype("float32")
    torch.int32 = _FakeDtype("int32")

    class Tensor:
        """A CPU tensor over a NumPy array, with the attributes launches read."""

        def __init__(self, array):
            self.array = array
            self.dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.int32): torch.int32}[array.dtype]
            self.is_cuda, self.is_cpu = False, True
            self.device = types.SimpleNamespace(type="cpu", index=None)
            self.reads = 0

        def data_ptr(self):
            self.reads += 1
            return self.array.ctypes.data

    Tensor.__module__ = "torch"
    torch.Tensor = Tensor
    return torch


def test_torch_like_tensors_take_the_fast_path(monkeypatch):
    torch = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    kernel = _fresh(axpy)
    calls = _count_python_calls(kernel, monkeypatch)
    x = torch.Tensor(np.arange(100, dtype=np.float32))
    out = torch.Tensor(np.zeros(100, dtype=np.float32))
    for alpha in (1.0, 2.0, 3.0):
        kernel[(1,)](x, x, out, alpha, 100, BLOCK=128)
        np.testing.assert_array_equal(out.array, alpha * x.array + x.array)
    assert calls == {"python": 0, "miss": 1}
    assert x.reads >= 6  # every launch reads the address again
    with pytest.raises(TypeError, match="argument 'out_ptr' of kernel 'axpy' must be an array or a scalar, "
                                        "got object"):
        kernel[(1,)](x, x, object(), 1.0, 100, BLOCK=128)
