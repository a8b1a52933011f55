"""The launch path (`_C.Launcher`, src/bindings/launcher.h): it calls back
into Python only on a cache miss (for the kernel's sources), keys its cache
so that two launches share an entry exactly when Triton's specialization
rules say they compile alike, and reports every launch mistake with the
text and code the Python package always used."""

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
    kernels are untouched): `miss` compiles, `plan` reads the signature."""
    calls = {"miss": 0, "plan": 0}
    compile_, launch_plan = kernel._compile, kernel._launch_plan

    def counted_compile(*args):
        calls["miss"] += 1
        return compile_(*args)

    def counted_plan():
        calls["plan"] += 1
        return launch_plan()

    monkeypatch.setattr(kernel, "_compile", counted_compile, raising=False)
    monkeypatch.setattr(kernel, "_launch_plan", counted_plan, raising=False)
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
    assert calls == {"miss": 1, "plan": 1}
    assert len(kernel._launcher) == 1


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
    assert calls["miss"] == 2


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
    assert len(kernel._launcher) == 5


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
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")  # agrees with the cached kernel: a hit
    kernel[(1,)](x, x, out, 2.0, 16, BLOCK=16)
    np.testing.assert_array_equal(out, 3 * x)
    assert calls["miss"] == 0
    monkeypatch.setenv("TEGULA_BACKEND", "cuda")  # host arrays now conflict, cached or not
    for launch in (lambda: kernel[(1,)](x, x, out, 1.0, 16, BLOCK=16),
                   lambda: kernel.warmup(x, x, out, 1.0, 16, BLOCK=16)):
        with pytest.raises(ValueError, match="TEGULA_BACKEND=cuda, but argument 'x_ptr' of kernel 'axpy' is in "
                                             "host memory"):
            launch()


@tegula.jit
def no_arrays(value, n):
    # No array arguments: TEGULA_BACKEND alone picks the backend.
    tl.static_assert(True)


def test_backend_setting_toggled_keeps_one_entry_per_backend(monkeypatch):
    kernel = _fresh(no_arrays)
    calls = _count_python_calls(kernel, monkeypatch)
    monkeypatch.delenv("TEGULA_BACKEND", raising=False)
    first = kernel[(1,)](1.0, 3)  # compiled for the CPU
    assert first.backend == "cpu" and calls["miss"] == 1
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")  # the same backend: the same entry
    assert kernel[(1,)](2.0, 3) is first and calls["miss"] == 1
    from tegula import _device

    if _device.cuda_status()[0]:
        monkeypatch.setenv("TEGULA_BACKEND", "cuda")
        forced = kernel[(1,)](1.0, 3)  # a CUDA entry, kept beside the first
        assert forced is not first and forced.backend == "cuda" and calls["miss"] == 2
    monkeypatch.delenv("TEGULA_BACKEND")
    assert kernel[(1,)](2.0, 3) is first  # the CPU entry is still there
    assert len(kernel._launcher) == calls["miss"]


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
    assert calls["miss"] == 3 and len(k._launcher) == 3


def test_debug_mode_is_part_of_the_key(monkeypatch):
    kernel = _fresh(axpy)
    calls = _count_python_calls(kernel, monkeypatch)
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    kernel.debug = True
    assert kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32).debug
    assert kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32).debug and calls["miss"] == 1
    kernel.debug = False
    assert not kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32).debug
    assert calls["miss"] == 2 and len(kernel._launcher) == 2
    np.testing.assert_array_equal(out, 2 * x)
    kernel.debug = True  # the debug entry is kept
    kernel[(1,)](x, x, out, 1.0, 32, BLOCK=32)
    assert calls["miss"] == 2


def test_a_call_site_binds_its_keywords_by_index():
    """A call site passes the same tuple of keyword names every time; the
    launcher binds the launches after the first by index. The same names
    after another count of positional arguments, and keywords that name
    launch options, bind by name, and every binding mistake is still
    reported; launch options among the keywords are checked every time."""
    @tegula.jit
    def k(out_ptr, value, n, SCALE: tl.constexpr = 1, BLOCK: tl.constexpr = 16):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + value * SCALE, mask=offs < n)

    rng = np.random.default_rng(3)
    for n in (1, 7, 13):
        out = np.zeros(16, dtype=np.float32)
        for value, scale in zip(rng.standard_normal(4).astype(np.float32), (1, 2, 2, 3)):
            k[(1,)](out, value, n, SCALE=scale)  # one call site: one kwnames tuple
            np.testing.assert_array_equal(out[:n], np.float32(value * scale))
            assert np.all(out[n:] == 0)
    out = np.zeros(16, dtype=np.float32)
    for _ in range(2):  # the same names in two places: SCALE fills another parameter's slot in neither
        k[(1,)](out, 2.0, 5, SCALE=3)
        np.testing.assert_array_equal(out[:5], 6.0)
        k[(1,)](out, 2.0, n=9, SCALE=3)
        np.testing.assert_array_equal(out[:9], 6.0)
        k[(1,)](out, 1.0, 11, num_warps=2, SCALE=2)
        np.testing.assert_array_equal(out[:11], 2.0)
    before = len(k._launcher)
    for warps in (1, 4, 8, 1):  # an option among the keywords: each value is its own specialization
        k[(1,)](out, float(warps), 3, num_warps=warps, SCALE=4)
        np.testing.assert_array_equal(out[:3], 4.0 * warps)
    assert len(k._launcher) == before + 3
    for warps in (0, True, -2):  # and is checked at every launch
        with pytest.raises(ValueError, match=f"num_warps of kernel 'k' must be a positive int, got {warps}"):
            k[(1,)](out, 1.0, 3, num_warps=warps, SCALE=4)
    for warps in (3, 96):  # Triton's rule on every backend
        with pytest.raises(ValueError, match=f"num_warps of kernel 'k' must be a power of two, got {warps}"):
            k[(1,)](out, 1.0, 3, num_warps=warps, SCALE=4)
    k[(1,)](out, 5.0, 3, num_warps=128, SCALE=2)  # more than a GPU block holds: the CPU takes it, as Triton's CPU does
    np.testing.assert_array_equal(out[:3], 10.0)
    for _ in range(2):
        with pytest.raises(TypeError, match="got multiple values for argument 'SCALE'"):
            k[(1,)](out, 1.0, 4, 2, SCALE=3)
        with pytest.raises(TypeError, match=r"is missing 1 required argument: 'n'"):
            k[(1,)](out, 1.0, SCALE=3)
        with pytest.raises(TypeError, match=r"takes 5 arguments .* but 6 were given"):
            k[(1,)](out, 1.0, 4, 1, 16, 0, SCALE=3)


def test_launch_errors_keep_their_texts():
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


# --- the key: Triton's specialization rules, and nothing else ---------------------------------

_NUMPY_NAMES = {"float32": "f32", "float64": "f64", "int32": "i32", "bool": "i1", "bfloat16": "bf16",
                "uint64": "u64", "int8": "i8"}


def _expected_runtime(value, specialize=True):
    """Triton's rules, written out: (kind, dtype, divisibility, is_one) of a runtime argument."""
    if isinstance(value, np.ndarray):
        return ("Pointer", _NUMPY_NAMES[value.dtype.name], 16 if value.ctypes.data % 16 == 0 else 1, False)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return ("Bool", "i1", 1, False)
    if isinstance(value, float):
        return ("Float", "f32", 1, False)
    width = "i32" if -2**31 <= value < 2**31 else "i64" if -2**63 <= value < 2**63 else "u64"
    if not specialize:
        return ("Int", width, 1, False)
    return ("Int", width, 16 if value % 16 == 0 else 1, value == 1)


def _expected_constexpr(value):
    """(kind of the constant, its value) of a constexpr argument."""
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, tl.dtype):
        return ("DType", value.canonical_name)
    kind = {bool: "Bool", int: "Int", float: "Float", str: "Str", type(None): "None_"}[type(value)]
    return (kind, repr(value) if kind == "Float" else value)


def _spec_of(spec):
    kinds = tegula._C.ArgSpec.Kind
    if spec.kind == kinds.Constexpr:
        v = spec.value
        kind = v.kind.name
        payload = {"Bool": bool(v.int_value), "Int": v.int_value, "Float": repr(v.float_value), "Str": v.text,
                   "DType": v.text, "None_": None}[kind]
        return (kind, payload)
    return (spec.kind.name, spec.dtype, spec.divisibility, spec.is_one)


def test_keys_follow_tritons_rules():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    base = np.zeros(64, dtype=np.float32)
    pointers = [base, base[1:], base[::2], np.zeros(8, np.float64), np.zeros(8, np.int32),
                np.zeros(8, np.bool_), np.zeros(8, ml_dtypes.bfloat16), np.zeros(8, np.uint64)]
    values = [0, 1, 2, 16, 17, -16, -1, 2**31, -2**31 - 1, 2**40, 2**63, np.int64(16), np.int8(1),
              1.5, -0.0, np.float32(2.0), True, False, np.bool_(True)]
    flags = [True, False, 1, 0, None, "a", "b", 1.5, -0.0, tl.float32, tl.int8,
             tl.constexpr(3), np.int32(3), 3, np.float64(1.5)]
    options = [{}, {"num_warps": 2}, {"num_warps": 2, "num_stages": 3}, {"enable_fp_fusion": False},
               {"enable_fp_fusion": True}]
    cases = []
    for p, v, f in itertools.product(pointers, values[:8], flags[:6]):
        cases.append(((p, v, 8), {"FLAG": f, "BLOCK": 16}))
    for v, f, o in itertools.product(values, flags, options):
        cases.append(((base, v, 8), {"FLAG": f, "BLOCK": 16, **o}))
    by_key = {}
    for args, kwargs in cases:
        request, options_ = fill._launcher.request(*args, **kwargs)
        specs = [_spec_of(s) for s in request.args]
        out_ptr, value, n = args
        expected = [_expected_runtime(out_ptr), _expected_runtime(value), _expected_runtime(n),
                    _expected_constexpr(kwargs["FLAG"]), _expected_constexpr(kwargs["BLOCK"])]
        assert specs == expected, (args, kwargs)
        compiled = (tuple(specs), options_.num_warps, options_.num_stages, options_.fp_fusion, options_.backend)
        by_key.setdefault(fill._launcher.specialization(*args, **kwargs), set()).add(compiled)
    # One key per compile and one compile per key: equal keys exactly when the request is equal.
    assert all(len(compiles) == 1 for compiles in by_key.values())
    assert len(by_key) == len(set().union(*by_key.values()))
    # and not finer than the rules: arguments of the same classes share a key
    assert fill._launcher.specialization(base, 5, 8, FLAG=1, BLOCK=16) == \
        fill._launcher.specialization(base[16:], 7, 9, FLAG=1, BLOCK=16)


def test_do_not_specialize_keeps_ints_generic():
    @tegula.jit(do_not_specialize=["n", 0])
    def k(m, n, out_ptr):
        tl.store(out_ptr, m + n)

    out = np.zeros(1, np.int32)
    for m, n in ((1, 1), (16, 32), (5, 7)):
        request, _ = k._launcher.request(m, n, out)
        assert [_spec_of(s) for s in request.args[:2]] == [("Int", "i32", 1, False)] * 2
        k[(1,)](m, n, out)
        assert out[0] == m + n
    assert len(k._launcher) == 1


def test_key_errors_are_the_launch_errors():
    x = np.zeros(16, dtype=np.float32)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'BLOK'"):
        fill._launcher.specialization(x, 1.0, 16, FLAG=True, BLOCK=16, BLOK=3)
    with pytest.raises(TypeError, match=r"takes 5 arguments \(out_ptr, value, n, FLAG, BLOCK\) but 6 were given"):
        fill._launcher.specialization(x, 1.0, 16, True, 16, 5)
    with pytest.raises(TypeError, match="is missing 1 required argument: 'BLOCK'"):
        fill._launcher.specialization(x, 1.0, 16, FLAG=True)


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
    assert calls["miss"] == 1
    assert x.reads >= 6  # every launch reads the address again
    with pytest.raises(TypeError, match="argument 'out_ptr' of kernel 'axpy' must be an array or a scalar, "
                                        "got object"):
        kernel[(1,)](x, x, object(), 1.0, 100, BLOCK=128)


# --- the DLPack C exchange table (torch 2.10+), without torch ------------------------------------

import ctypes  # noqa: E402


class _DLDevice(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_FROM_PY_OBJECT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(_DLTensor))
_CURRENT_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class _ExchangeApi(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("previous", ctypes.c_void_p),
                ("allocator", ctypes.c_void_p), ("managed_from", ctypes.c_void_p), ("managed_to", ctypes.c_void_p),
                ("from_py_object", _FROM_PY_OBJECT), ("current_work_stream", _CURRENT_STREAM)]


_CAPSULE_NAME = ctypes.c_char_p(b"dlpack_exchange_api")
_DL_CODES = {np.dtype(np.float32): (2, 32), np.dtype(np.int32): (0, 32)}


def _fake_torch_with_exchange(code_override=None, fail=False):
    """The fake torch above, whose Tensor type publishes a DLPack exchange
    table made of ctypes callbacks. Each description puts the address in
    `data` minus 16 plus `byte_offset` 16, so a reader that ignores the
    offset reads the wrong memory."""
    torch = _fake_torch()
    described = []

    def from_py_object(tensor, out):
        described.append(tensor)
        if fail:
            return -1
        code, bits = _DL_CODES[tensor.array.dtype] if code_override is None else code_override
        out[0].data = tensor.array.ctypes.data - 16
        out[0].byte_offset = 16
        out[0].device = _DLDevice(1, 0)
        out[0].ndim = tensor.array.ndim
        out[0].dtype = _DLDataType(code, bits, 1)
        return 0

    def current_work_stream(device_type, device_id, out):
        out[0] = None
        return 0

    api = _ExchangeApi(1, 3, None, None, None, None, _FROM_PY_OBJECT(from_py_object),
                       _CURRENT_STREAM(current_work_stream))
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    torch.Tensor.__dlpack_c_exchange_api__ = new_capsule(ctypes.addressof(api), _CAPSULE_NAME, None)
    torch._keep_alive = api  # the capsule borrows the table
    return torch, described


def test_torch_exchange_table_describes_plain_tensors(monkeypatch):
    torch, described = _fake_torch_with_exchange()
    monkeypatch.setitem(sys.modules, "torch", torch)
    kernel = _fresh(axpy)
    rng = np.random.default_rng(7)
    x = torch.Tensor(rng.standard_normal(100).astype(np.float32))
    y = torch.Tensor(rng.standard_normal(100).astype(np.float32))
    out = torch.Tensor(np.zeros(100, dtype=np.float32))
    kernel[(1,)](x, y, out, 1.0, 97, BLOCK=128)  # the first tensor of a new type teaches it, through the getters
    described.clear()
    reads = (x.reads, y.reads, out.reads)
    for alpha in (0.5, -2.0):
        kernel[(1,)](x, y, out, alpha, 97, BLOCK=128)
        np.testing.assert_allclose(out.array[:97], alpha * x.array[:97] + y.array[:97], rtol=1e-6)
        assert np.all(out.array[97:] == 0)
    assert len(described) == 6  # one description per tensor argument and launch
    assert (x.reads, y.reads, out.reads) == reads  # no getter was called
    # The key is the one the getters give: a subclass (never exchanged) shares the compiled kernel.
    sub = type("Sub", (torch.Tensor,), {})
    xs, ys, outs = sub(x.array), sub(y.array), sub(out.array)
    assert kernel._launcher.specialization(xs, ys, outs, 1.0, 97, BLOCK=128) == \
        kernel._launcher.specialization(x, y, out, 1.0, 97, BLOCK=128)
    calls, sub_reads = len(described), xs.reads
    kernel[(1,)](xs, ys, outs, 3.0, 97, BLOCK=128)
    assert len(described) == calls and xs.reads == sub_reads + 1  # subclasses go through the getters
    np.testing.assert_allclose(out.array[:97], 3.0 * x.array[:97] + y.array[:97], rtol=1e-6)


@pytest.mark.parametrize("broken", ["unknown dtype", "call fails"])
def test_torch_exchange_table_falls_back_to_the_getters(monkeypatch, broken):
    torch, described = _fake_torch_with_exchange(code_override=(5, 64) if broken == "unknown dtype" else None,
                                                 fail=broken == "call fails")
    monkeypatch.setitem(sys.modules, "torch", torch)
    kernel = _fresh(axpy)
    rng = np.random.default_rng(8)
    x = torch.Tensor(rng.standard_normal(40).astype(np.float32))
    out = torch.Tensor(np.zeros(40, dtype=np.float32))
    kernel[(1,)](x, x, out, 2.0, 40, BLOCK=64)  # teaches the type
    described.clear()
    reads = (x.reads, out.reads)
    kernel[(1,)](x, x, out, 2.0, 40, BLOCK=64)
    np.testing.assert_allclose(out.array, 3.0 * x.array, rtol=1e-6)
    assert len(described) == 3 and (x.reads, out.reads) == (reads[0] + 2, reads[1] + 1)
