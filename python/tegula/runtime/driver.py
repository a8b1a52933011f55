"""``driver.active``: the device host code sizes its launches for, as Triton's
driver describes it. The CUDA driver when a GPU is usable in this process
(``tegula._device.cuda_status``), else the CPU backend's machine. Properties
come from Tegula's own calls (cuDeviceGetAttribute, the CPU thread count),
so they need no torch; only ``get_active_torch_device`` and the benchmark
cache buffer are torch objects, as in Triton."""

from __future__ import annotations

import dataclasses
import os
import platform

from .. import _C, _device
from .errors import OutOfResources  # noqa: F401  (where this module's readers found it)
from .. import experimental_descriptor as _experimental_descriptor

# CUdevice_attribute numbers (cuda.h) of the properties Triton's get_device_properties reports.
_WARP_SIZE = 10
_MAX_REGISTERS_PER_BLOCK = 12
_CLOCK_RATE = 13
_MULTIPROCESSOR_COUNT = 16
_MEMORY_CLOCK_RATE = 36
_GLOBAL_MEMORY_BUS_WIDTH = 37
_COMPUTE_CAPABILITY_MAJOR = 75
_COMPUTE_CAPABILITY_MINOR = 76
_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


@dataclasses.dataclass(frozen=True)
class GPUTarget:
    """What a kernel is compiled for: ``backend`` ("cuda" or "cpu"), ``arch`` (compute capability x 10 on
    CUDA, the CPU's architecture name on the CPU) and ``warp_size`` (32; 1 on the CPU, where a program is
    one thread: host code dividing by it keeps working)."""

    backend: str
    arch: int | str
    warp_size: int


class CudaUtils:
    """``driver.active.utils`` on a GPU."""

    def get_device_properties(self, device: int = 0) -> dict:
        """Triton's keys: ``max_shared_mem`` (opt-in bytes per block), ``max_num_regs`` (per block),
        ``multiprocessor_count``, ``warpSize``, ``sm_clock_rate`` and ``mem_clock_rate`` (kHz),
        ``mem_bus_width`` (bits)."""
        get = lambda attribute: int(_C.cuda_device_attribute(int(device), attribute))  # noqa: E731
        return {"max_shared_mem": get(_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), "max_num_regs": get(_MAX_REGISTERS_PER_BLOCK),
                "multiprocessor_count": get(_MULTIPROCESSOR_COUNT), "warpSize": get(_WARP_SIZE),
                "sm_clock_rate": get(_CLOCK_RATE), "mem_clock_rate": get(_MEMORY_CLOCK_RATE),
                "mem_bus_width": get(_GLOBAL_MEMORY_BUS_WIDTH)}

    def get_current_device(self) -> int:
        return _device.current_device()

    # Triton 3.0 to 3.3's host TMA descriptor fills (tegula.experimental_descriptor's: Tegula's own 128 bytes)
    fill_1d_tma_descriptor = staticmethod(_experimental_descriptor.fill_1d_tma_descriptor)
    fill_2d_tma_descriptor = staticmethod(_experimental_descriptor.fill_2d_tma_descriptor)



def _l2_bytes() -> int:
    try:
        size = os.sysconf("SC_LEVEL2_CACHE_SIZE")
    except (AttributeError, ValueError, OSError):
        size = 0
    return int(size) if size and size > 0 else 1 << 20


class CpuUtils:
    """``driver.active.utils`` on the CPU backend. ``multiprocessor_count`` is the number of threads a launch
    runs on (TEGULA_NUM_THREADS, else the usable cores), so a persistent grid of that many programs keeps
    every thread busy. A program runs on one thread (``warpSize`` 1). It has no shared memory of a fixed
    size: ``max_shared_mem`` is one core's L2 cache, what a program's tiles can hold and stay fast, so host
    code that checks a tile plan against it keeps working."""

    def get_device_properties(self, device: int = 0) -> dict:
        return {"max_shared_mem": _l2_bytes(), "multiprocessor_count": int(_C.cpu_thread_count()), "warpSize": 1}

    def get_current_device(self) -> int:
        return 0

    # Triton 3.0 to 3.3's host TMA descriptor fills (tegula.experimental_descriptor's: Tegula's own 128 bytes)
    fill_1d_tma_descriptor = staticmethod(_experimental_descriptor.fill_1d_tma_descriptor)
    fill_2d_tma_descriptor = staticmethod(_experimental_descriptor.fill_2d_tma_descriptor)



class _CudaDriver:
    backend = "cuda"

    def __init__(self):
        self.utils = CudaUtils()

    @staticmethod
    def is_active() -> bool:
        """Whether a GPU is usable in this process (Triton's DriverBase.is_active)."""
        return bool(_device.cuda_status()[0])

    def get_current_device(self) -> int:
        return _device.current_device()

    def set_current_device(self, device: int) -> None:
        import torch

        torch.cuda.set_device(device)

    def get_device_capability(self, device: int | None = None) -> tuple:
        device = self.get_current_device() if device is None else int(device)
        return (int(_C.cuda_device_attribute(device, _COMPUTE_CAPABILITY_MAJOR)),
                int(_C.cuda_device_attribute(device, _COMPUTE_CAPABILITY_MINOR)))

    def get_current_target(self) -> GPUTarget:
        major, minor = self.get_device_capability()
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_current_stream(self, device: int | None = None) -> int:
        """The handle of the caller's current stream on `device`: the stream Tegula launches on."""
        return _device.current_stream(self.get_current_device() if device is None else int(device))

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_benchmarker(self):
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self):
        """A 256 MB buffer whose clearing evicts the L2 cache between timed runs (``clear_cache``)."""
        import torch

        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache) -> None:
        cache.zero_()


class _CpuDriver:
    backend = "cpu"

    def __init__(self):
        self.utils = CpuUtils()

    @staticmethod
    def is_active() -> bool:
        """The CPU backend runs wherever Tegula does."""
        return True

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        if int(device) != 0:
            raise ValueError(f"the CPU backend has one device, 0; got {device}")

    def get_device_capability(self, device: int | None = None) -> tuple:
        return (0, 0)

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cpu", platform.machine() or "cpu", 1)

    def get_current_stream(self, device: int | None = None) -> int:
        return 0  # host kernels run on the caller's thread and its pool, not a stream

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_device_interface(self):
        return None

    def get_benchmarker(self):
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self):
        """A buffer larger than the last-level caches of today's server CPUs (512 MB)."""
        import torch

        return torch.empty(512 * 1024 * 1024 // 4, dtype=torch.int, device="cpu")

    def clear_cache(self, cache) -> None:
        cache.zero_()


class DriverConfig:
    """``triton.runtime.driver``: ``active`` is the CUDA driver when a GPU is usable here, else the CPU's;
    chosen at first use. ``set_active`` replaces it, ``set_active_to_cpu`` / ``set_active_to_gpu`` choose
    one (Triton-CPU's names), ``reset_active`` chooses again."""

    def __init__(self):
        self._active = None

    @property
    def active(self):
        if self._active is None:
            self._active = _CudaDriver() if _device.cuda_status()[0] else _CpuDriver()
        return self._active

    def set_active(self, driver) -> None:
        self._active = driver

    def get_active_gpus(self) -> list:
        """Triton-CPU's question: the GPU drivers usable here (one CUDA driver, or none)."""
        return [_CudaDriver()] if _device.cuda_status()[0] else []

    def set_active_to_cpu(self) -> None:
        """Triton-CPU's switch: ``active`` describes the CPU backend. Where a launch runs stays decided by
        where its arrays live."""
        self._active = _CpuDriver()

    def set_active_to_gpu(self) -> None:
        """Triton-CPU's switch back: ``active`` describes the GPU (RuntimeError when none is usable)."""
        usable, why = _device.cuda_status()
        if not usable:
            raise RuntimeError(f"no usable CUDA GPU for driver.active: {why}")
        self._active = _CudaDriver()

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()
