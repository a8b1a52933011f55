"""Triton's triton.backends: `backends`, its table of the compiler backends this Triton was built with, by
Triton's name for each ("cpu", "nvidia"), each a Backend record of the backend's compiler class and driver
class. Host code reads the table to learn what Triton can compile for: torch's has_triton(include_cpu=True)
asks whether "cpu" is in it, Inductor's set_driver_to_cpu / set_driver_to_gpu take an entry's driver class
(its is_active() and an instance for triton.runtime.driver.set_active).

Tegula's backends are not Triton plugins, so tegula.backends.backends is empty. Here every backend this
build of Tegula has (tegula._C.backends(): "cpu", and "cuda" under Triton's name "nvidia") gets an entry
whose driver is Tegula's driver for that device. Tegula has no per-backend compiler class (Triton's
BaseBackend: parse_options, add_stages, ...), so `compiler` is None."""

import dataclasses

import tegula._C
from tegula.runtime.driver import _CpuDriver, _CudaDriver

from . import compiler  # noqa: F401


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str
    compiler: type | None
    driver: type


_TRITON_NAMES = {"cpu": ("cpu", _CpuDriver), "cuda": ("nvidia", _CudaDriver)}

backends = {_TRITON_NAMES[b][0]: Backend(_TRITON_NAMES[b][0], None, _TRITON_NAMES[b][1])
            for b in tegula._C.backends() if b in _TRITON_NAMES}
