"""Triton's ``triton.runtime`` as host code reads it: ``driver.active`` (the
device, its properties, the current target and stream) for the tutorials and
libraries that size their grids by the machine, and the names kernels'
modules import from it (``JITFunction``, ``Autotuner``, ``Config``,
``OutOfResources``; ``errors``, as ``triton.runtime.errors``).

``driver.active`` describes the GPU when one is usable (CUDA, through
Tegula's own driver calls) and this machine's CPU otherwise: the backend a
launch of host arrays runs on. docs/triton-compat.md, "Host-side names".
"""

from __future__ import annotations

from ..autotune import Autotuner, Config, Heuristics
from .._mock_tensor import MockTensor
from ..jit import JITFunction
from . import errors
from .driver import CpuUtils, CudaUtils, GPUTarget, driver
from .errors import InterpreterError, OutOfResources, PTXASError

__all__ = ["driver", "errors", "GPUTarget", "CudaUtils", "CpuUtils", "OutOfResources", "PTXASError",
           "InterpreterError", "JITFunction", "Autotuner", "Config", "Heuristics", "MockTensor"]
