"""What only Python frameworks can say about CUDA: whether a GPU is usable
here, the caller's current device and stream (torch's or CuPy's), and where
pip's NVIDIA wheels put NVRTC.

Which backend and device a launch runs on is the C++ launcher's decision
(src/bindings/launch_placement.h): where its arrays live, and
TEGULA_BACKEND. CUDA kernels are queued on the caller's current stream of
that device: torch's current stream when torch is imported (so they order
with torch's own work), CuPy's when CuPy is, else the default stream
(handle 0).
"""

from __future__ import annotations

import os
import sys

from . import _C


def _set_nvrtc_search_path() -> None:
    """Tells the C++ loader which folders may hold pip's NVIDIA wheels
    (``<site-packages>/nvidia/cu13/lib/libnvrtc.so.13`` and the like): the
    sys.path entries with an ``nvidia`` package. Must run before the first
    CUDA compile loads NVRTC; an explicit TEGULA_NVRTC_SEARCH wins."""
    if "TEGULA_NVRTC_SEARCH" in os.environ:
        return
    folders = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))]
    if folders:
        os.environ["TEGULA_NVRTC_SEARCH"] = os.pathsep.join(folders)


_set_nvrtc_search_path()


_status = None
_driver_status = None


def driver_status() -> tuple[bool, str]:
    """(available, reason) from Tegula's runtime alone, a driver with a
    device, whatever torch says: the same answer whether or not torch was
    imported first. Asked once: the first call loads libcuda."""
    global _driver_status
    if _driver_status is None:
        _driver_status = tuple(_C.cuda_status())
    return _driver_status


def cuda_status() -> tuple[bool, str]:
    """(available, reason): whether CUDA kernels can run in this process, and
    why not. Asked once: the first call loads libcuda."""
    global _status
    if _status is None:
        torch = sys.modules.get("torch")
        if torch is not None and not torch.cuda.is_available():
            _status = (False, "torch.cuda.is_available() is False")
        else:
            _status = driver_status()
    return _status


def is_available() -> bool:
    """Whether a CUDA GPU can run Tegula kernels here (a driver with a device)."""
    return cuda_status()[0]


def current_device() -> int:
    """The caller's current CUDA device: torch's (or CuPy's) when imported, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return cupy.cuda.runtime.getDevice()
    return 0


def _torch_stream_getter(torch):
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:  # a plain int, without building a Stream object
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


_torch_stream = None


def current_stream(device: int) -> int:
    """The handle (a CUstream as an int) of the caller's current stream on `device`."""
    global _torch_stream
    torch = sys.modules.get("torch")
    if torch is not None:
        if _torch_stream is None:
            _torch_stream = _torch_stream_getter(torch)
        return _torch_stream(device)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with cupy.cuda.Device(device):
            return cupy.cuda.get_current_stream().ptr
    return 0
