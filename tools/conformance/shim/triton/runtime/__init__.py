import os

from tegula.runtime import driver as _driver
from tegula.runtime.driver import _CpuDriver, _CudaDriver

from tegula.runtime import Autotuner, Config, GPUTarget, Heuristics, OutOfResources  # noqa: F401

from . import autotuner, cache, errors, jit  # noqa: F401
from .jit import JITFunction  # noqa: F401

# Tegula's own triton.runtime.driver, on the device the conformance run names: a CPU run on a machine
# with a GPU describes the CPU backend, as the tests' inputs (device="cpu") run there.
_driver.set_active(_CudaDriver() if os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu") == "cuda" else _CpuDriver())
driver = _driver
