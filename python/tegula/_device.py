"""Where a launch runs: the backend its arguments ask for, the CUDA device and
the stream.

A launch runs where its array arguments live: NumPy arrays and CPU tensors
on the CPU backend; torch CUDA tensors and ``__cuda_array_interface__``
objects (CuPy, Numba) on the CUDA backend, on the device that holds them.
Arguments on different devices are an error that names them.
``TEGULA_BACKEND=cpu|cuda`` picks the backend for kernels without array
arguments and makes a conflicting launch an error; it is read when a
specialization is first compiled.

CUDA kernels are queued on the caller's current stream of that device:
torch's current stream when torch is imported (so they order with torch's own
work), CuPy's when CuPy is, else the default stream (handle 0).
"""

from __future__ import annotations

import os
import sys

from . import _C
from ._errors import coded

BACKENDS = ("cpu", "cuda")


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


def forced_backend() -> str | None:
    """The backend TEGULA_BACKEND asks for, or None when unset."""
    value = os.environ.get("TEGULA_BACKEND", "").strip().lower()
    if not value:
        return None
    if value not in BACKENDS:
        raise coded(ValueError, "E0705", f"TEGULA_BACKEND must be 'cpu' or 'cuda', got {value!r}")
    return value


_status = None


def cuda_status() -> tuple[bool, str]:
    """(available, reason): whether CUDA kernels can run in this process, and
    why not. Asked once: the first call loads libcuda."""
    global _status
    if _status is None:
        torch = sys.modules.get("torch")
        if torch is not None and not torch.cuda.is_available():
            _status = (False, "torch.cuda.is_available() is False")
        else:
            _status = tuple(_C.cuda_status())
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


def pointer_device(address: int) -> int:
    """The CUDA device that owns a device address."""
    return _C.cuda_pointer_device(address)


def describe(device) -> str:
    """'the CPU' or 'cuda:N', for messages."""
    return "the CPU" if device is None else f"cuda:{device}"


def choose(kernel: str, places: dict) -> tuple[str, int | None]:
    """(backend, device) of a launch from where its array arguments live.

    `places` maps parameter names to None (host memory) or a CUDA device
    ordinal. Raises ValueError for arguments on different devices, and for a
    conflict with TEGULA_BACKEND.
    """
    forced = forced_backend()
    devices = set(places.values())
    if len(devices) > 1:
        groups = {}
        for name, device in places.items():
            groups.setdefault(device, []).append(f"'{name}'")
        listed = "; ".join(f"{', '.join(names)} on {describe(device)}" for device, names in groups.items())
        raise coded(ValueError, "E0709", f"kernel '{kernel}' got arguments on different devices ({listed}): "
                                         f"move them to one device")
    if not devices:
        if forced == "cuda":
            return "cuda", current_device()
        return "cpu", None
    device = devices.pop()
    if forced == "cpu" and device is not None:
        name = next(iter(places))
        raise coded(ValueError, "E0709", f"TEGULA_BACKEND=cpu, but argument '{name}' of kernel '{kernel}' is on "
                                         f"cuda:{device}")
    if forced == "cuda" and device is None:
        name = next(iter(places))
        raise coded(ValueError, "E0709", f"TEGULA_BACKEND=cuda, but argument '{name}' of kernel '{kernel}' is in host "
                                         f"memory; pass CUDA tensors (torch, CuPy) or unset TEGULA_BACKEND")
    return ("cpu", None) if device is None else ("cuda", device)
