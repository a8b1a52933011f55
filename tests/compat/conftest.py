"""Setup of the Triton compatibility suite (tests/compat).

The kernels in ``compat_kernels/`` are written in Triton's style and run
unchanged under two runtimes:

    pytest tests/compat                              Tegula, CPU backend (CI)
    pytest tests/compat --backend cuda               Tegula, CUDA backend (GPU machine)
    pytest tests/compat --compat-runtime=triton      real Triton (GPU machine)

The runtime is chosen before any kernel module is imported: ``pytest_configure``
exports it as ``TEGULA_COMPAT_RUNTIME``, which each kernel module reads to
decide whether ``triton`` / ``tl`` name Tegula (the default) or Triton.

Every test takes the ``rt`` fixture and allocates through it, so one test
body runs everywhere: NumPy arrays for Tegula's CPU backend, torch CUDA
tensors for Tegula's CUDA backend and for Triton.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
RUNTIMES = ("tegula", "triton")
BACKENDS = ("cpu", "cuda")
RUNTIME_ENV = "TEGULA_COMPAT_RUNTIME"

os.environ.setdefault("TEGULA_CACHE_DIR", str(REPO / ".cache" / "tegula"))


def pytest_addoption(parser):
    parser.addoption("--compat-runtime", choices=RUNTIMES, default=None,
                     help=f"what compiles the compat kernels (default: ${RUNTIME_ENV}, else tegula)")
    parser.addoption("--compat-cuda-archs", default=None, metavar="90,80",
                     help="Tegula on the CPU only: also compile every kernel specialization the suite "
                          "launches for these CUDA architectures (NVRTC to PTX; no GPU needed)")
    # tests/python/conftest.py defines --backend too; when both folders run in
    # one session (`make py-test`) it is registered first and means the same.
    try:
        parser.addoption("--backend", choices=BACKENDS, default=None,
                         help="backend the tests run on (default: $TEGULA_TEST_BACKEND, else cpu)")
    except ValueError:
        pass


def selected_runtime(config) -> str:
    name = config.getoption("--compat-runtime") or os.environ.get(RUNTIME_ENV, "").strip() or "tegula"
    if name not in RUNTIMES:
        raise pytest.UsageError(f"{RUNTIME_ENV} must be one of {', '.join(RUNTIMES)}, got {name!r}")
    return name


def selected_backend(config) -> str:
    """Tegula's backend; Triton always runs on the GPU."""
    name = config.getoption("--backend") or os.environ.get("TEGULA_TEST_BACKEND", "").strip()
    if selected_runtime(config) == "triton":
        if name == "cpu":
            raise pytest.UsageError("--compat-runtime=triton runs on the GPU; drop --backend cpu")
        return "cuda"
    name = name or "cpu"
    if name not in BACKENDS:
        raise pytest.UsageError(f"TEGULA_TEST_BACKEND must be one of {', '.join(BACKENDS)}, got {name!r}")
    return name


def pytest_configure(config):
    runtime = selected_runtime(config)
    os.environ[RUNTIME_ENV] = runtime  # read by compat_kernels/* when they are imported
    if selected_backend(config) != "cuda":
        return
    # Asked for the GPU: a machine without one is a setup error, not a pass.
    try:
        import torch
    except ImportError:
        raise pytest.UsageError("the compat suite on the GPU needs torch to allocate device arrays") from None
    if runtime == "triton":
        try:
            import triton  # noqa: F401
        except ImportError:
            raise pytest.UsageError("--compat-runtime=triton, but Triton is not installed") from None
        if not torch.cuda.is_available():
            raise pytest.UsageError("--compat-runtime=triton, but torch sees no CUDA GPU")
    else:
        import tegula._device

        available, why = tegula._device.cuda_status()
        if not available:
            raise pytest.UsageError(f"--backend cuda, but no usable CUDA GPU: {why}")


def pytest_report_header(config):
    return f"compat runtime: {selected_runtime(config)}, backend: {selected_backend(config)}"


class Runtime:
    """What a compat test needs to know about where its kernels run.

    ``array(a, dtype=None)`` takes NumPy reference data and returns what the
    kernel should get (optionally converted to ``dtype``, a NumPy dtype name
    such as ``"float16"`` or ``"bfloat16"``); ``numpy(x)`` brings a result
    back as NumPy (bfloat16 comes back as float32, which holds it exactly).
    """

    def __init__(self, runtime: str, backend: str):
        self.runtime = runtime
        self.backend = backend
        self.is_triton = runtime == "triton"
        self.is_cuda = backend == "cuda"
        self.name = "triton" if self.is_triton else f"tegula-{backend}"

    def __repr__(self) -> str:
        return f"Runtime({self.name})"

    def array(self, a, dtype=None):
        a = np.asarray(a)
        name = np.dtype(dtype).name if dtype not in (None, "bfloat16") else dtype
        if not self.is_cuda:
            if name == "bfloat16":
                import ml_dtypes

                return a.astype(ml_dtypes.bfloat16)
            return a.astype(name) if name else a.copy()  # a copy, like the device copy on the GPU
        import torch

        if name == "bfloat16":  # NumPy has no bfloat16 of its own: convert on the device
            return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to("cuda").to(torch.bfloat16)
        if name:
            a = a.astype(name)
        return torch.from_numpy(np.ascontiguousarray(a)).to("cuda")

    def empty(self, shape, dtype):
        return self.array(np.zeros(shape, dtype=np.float32 if dtype == "bfloat16" else dtype), dtype)

    def zeros(self, shape, dtype):
        return self.empty(shape, dtype)

    def numpy(self, x) -> np.ndarray:
        if isinstance(x, np.ndarray):
            if x.dtype.name == "bfloat16":
                return x.astype(np.float32)
            return x
        import torch

        torch.cuda.synchronize()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.detach().cpu().numpy()


@pytest.fixture(scope="session")
def rt(request) -> Runtime:
    """The runtime and backend under test, and how to allocate for them."""
    return Runtime(selected_runtime(request.config), selected_backend(request.config))


@pytest.fixture(scope="session", autouse=True)
def compile_for_cuda_too(request):
    """With --compat-cuda-archs, every kernel compiled for a CPU launch is also
    compiled by the CUDA backend for each listed architecture, so a CUDA
    code-generation error shows up here, at the launch that needs it, before
    a GPU runs the suite."""
    archs = request.config.getoption("--compat-cuda-archs")
    if not archs or selected_runtime(request.config) != "tegula" or selected_backend(request.config) != "cpu":
        yield
        return
    from tegula import _C
    from tegula.jit import JITFunction

    archs = [int(a) for a in archs.split(",") if a.strip()]
    try:
        for arch in archs:
            _C.cuda_target(arch=arch)
    except RuntimeError as e:
        raise pytest.UsageError(f"--compat-cuda-archs: NVRTC cannot be used here: {e}") from None
    compile_for_cpu = JITFunction._compile

    def compile_for_both(self, request, options):
        kernel = compile_for_cpu(self, request, options)  # fills request.functions
        for arch in archs:
            cuda_options = _C.CompileOptions(backend="cuda", cuda_arch=arch, debug=options.debug,
                                             num_warps=options.num_warps, num_stages=options.num_stages,
                                             fp_fusion=options.fp_fusion)
            _C.compile(request, cuda_options)
        return kernel

    JITFunction._compile = compile_for_both
    try:
        yield
    finally:
        JITFunction._compile = compile_for_cpu
