"""Shared setup for the Python tests.

Kernels compiled by one test run are reused by the next through a repo-local
disk cache (unless TEGULA_CACHE_DIR says otherwise), the examples are
importable so tests exercise the very kernels the examples show, and so is
the benchmark application (`tegula_bench`, under benchmarks/).
"""

import os
import pathlib
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BENCHMARKS = REPO / "benchmarks"

os.environ.setdefault("TEGULA_CACHE_DIR", str(REPO / ".cache" / "tegula"))
# Parametrized tests compile one kernel for many dtypes and sizes on purpose; test_recompile_warning.py
# turns the check back on where it is the subject.
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")


def _torch_ops_digest() -> str:
    """A digest of the sources of tegula.torch: torch's compile caches key a compiled graph by the
    graph, not by the schema or autograd formula of the custom ops it calls, so a graph compiled
    before an op changed would be reused after (and call the op with its old arguments)."""
    import hashlib
    digest = hashlib.sha256()
    for path in sorted((REPO / "python" / "tegula" / "torch").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(REPO / ".cache" / f"torchinductor-{_torch_ops_digest()}"))
for folder in (BENCHMARKS, EXAMPLES):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


# --- the backend under test ---------------------------------------------------------------
#
# `pytest --backend cuda` (or TEGULA_TEST_BACKEND=cuda) runs the suite against
# the CUDA backend; the default is the CPU. Tests that take the `backend`
# fixture allocate their arrays through it, so the same test body runs on
# both: NumPy arrays on the CPU, torch CUDA tensors on the GPU (a launch runs
# where its arrays live).

BACKENDS = ("cpu", "cuda")


def pytest_addoption(parser):
    parser.addoption("--backend", choices=BACKENDS, default=None,
                     help="backend the tests run on (default: $TEGULA_TEST_BACKEND, else cpu)")
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (or TEGULA_SLOW_TESTS=1); `make check` does")


def pytest_collection_modifyitems(config, items):
    # Tests marked slow (long host emulations) stay out of `make py-test`.
    if config.getoption("--slow") or os.environ.get("TEGULA_SLOW_TESTS", "") not in ("", "0"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow or TEGULA_SLOW_TESTS=1 (make py-test-slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def selected_backend(config) -> str:
    name = config.getoption("--backend") or os.environ.get("TEGULA_TEST_BACKEND", "").strip() or "cpu"
    if name not in BACKENDS:
        raise pytest.UsageError(f"TEGULA_TEST_BACKEND must be one of {', '.join(BACKENDS)}, got {name!r}")
    return name


def pytest_configure(config):
    if selected_backend(config) != "cuda":
        return
    # Asked for the GPU: a machine without one is a setup error, not a pass.
    import tegula._device

    available, why = tegula._device.cuda_status()
    if not available:
        raise pytest.UsageError(f"--backend cuda, but no usable CUDA GPU: {why}")
    try:
        import torch  # noqa: F401  (the CUDA tests allocate through torch)
    except ImportError:
        raise pytest.UsageError("--backend cuda needs torch to allocate device arrays") from None


def pytest_report_header(config):
    return f"tegula backend: {selected_backend(config)}"


class Backend:
    """How a test allocates arrays for the backend under test.

    ``array(a)`` takes a NumPy array (the reference data) and returns what the
    kernel should get: the array itself on the CPU, a torch CUDA tensor with
    the same dtype, shape and bytes on the GPU. ``numpy(x)`` brings a result
    back as NumPy (waiting for the device). Every NumPy dtype the op tests use
    works, bfloat16 (ml_dtypes) and uint16/32/64 included: the bytes travel
    as same-size integers and are reinterpreted on each side. Strides of
    non-contiguous inputs are not kept: take strides from the returned array.
    """

    def __init__(self, name: str):
        self.name = name
        self.is_cuda = name == "cuda"

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"

    def array(self, a):
        a = np.asarray(a)
        if not self.is_cuda:
            return a
        import torch

        bits = np.ascontiguousarray(a).view(_SAME_SIZE_INT[a.dtype.itemsize])
        return torch.from_numpy(bits).to("cuda").view(_torch_dtype(a.dtype))

    def empty(self, shape, dtype):
        return self.array(np.empty(shape, dtype=dtype))

    def zeros(self, shape, dtype):
        return self.array(np.zeros(shape, dtype=dtype))

    def full(self, shape, value, dtype):
        return self.array(np.full(shape, value, dtype=dtype))

    def numpy(self, x) -> np.ndarray:
        if isinstance(x, np.ndarray):
            return x
        import torch

        dtype = _numpy_dtype(x.dtype)
        same_size_int = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
        torch.cuda.synchronize()
        return x.detach().view(same_size_int).cpu().numpy().view(dtype)

    def synchronize(self) -> None:
        if self.is_cuda:
            import torch

            torch.cuda.synchronize()

    # Views of arrays made here (``backend.array(base)[1:, ::2]``) are NumPy
    # views or torch views; these two read what a kernel needs from either.

    def strides(self, x) -> tuple:
        """The strides of `x` in elements (NumPy counts bytes, torch elements)."""
        if isinstance(x, np.ndarray):
            return tuple(s // x.itemsize for s in x.strides)
        return tuple(x.stride())

    def address(self, x) -> int:
        """The address of `x`'s first element, in host or device memory."""
        if isinstance(x, np.ndarray):
            return x.ctypes.data
        return x.data_ptr()


_SAME_SIZE_INT = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32),
                  8: np.dtype(np.int64)}
# NumPy dtype names that torch spells the same way (ml_dtypes' bfloat16 included).
_TORCH_DTYPE_NAMES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                      "float16", "bfloat16", "float32", "float64"}


def _torch_dtype(dtype: np.dtype):
    # Imported here: torch costs seconds to import, and CPU runs never need it.
    import torch

    name = np.dtype(dtype).name
    if name not in _TORCH_DTYPE_NAMES:
        raise TypeError(f"no torch dtype for {dtype}")
    return getattr(torch, name)


def _numpy_dtype(torch_dtype) -> np.dtype:
    name = str(torch_dtype).removeprefix("torch.")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@pytest.fixture(scope="session")
def backend(request) -> Backend:
    """The backend under test and how to allocate arrays for it (see Backend)."""
    return Backend(selected_backend(request.config))


@pytest.fixture
def no_matplotlib(monkeypatch):
    """Makes `import matplotlib...` fail for the test, as on a machine without it."""
    import builtins
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)

