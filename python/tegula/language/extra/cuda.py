"""``tl.extra.cuda``: what a program knows of the CUDA machine it runs on,
and programmatic dependent launch. Each has a defined meaning on the CPU
backend too (docs/language.md, "tl.extra.cuda")."""

from ..core import only_in_kernel as _only_in_kernel
import sys as _sys

from . import libdevice  # noqa: F401  (Triton's tl.extra.cuda.libdevice)

# Importable by its path too (importlib.import_module("...extra.cuda.libdevice")), as Triton's is.
_sys.modules[__name__ + ".libdevice"] = libdevice


def globaltimer():
    """A nanosecond clock (int64): CUDA's %globaltimer; on the CPU a monotonic clock."""
    _only_in_kernel("extra.cuda.globaltimer")


def smid():
    """The multiprocessor running the program (int32); on the CPU the core."""
    _only_in_kernel("extra.cuda.smid")


def num_threads():
    """The threads of a program, 32 * num_warps (a constexpr)."""
    _only_in_kernel("extra.cuda.num_threads")


def num_warps():
    """The launch's num_warps (a constexpr)."""
    _only_in_kernel("extra.cuda.num_warps")


def gdc_wait():
    """Waits until the grids this one depends on have finished (PDL); a no-op where there are none."""
    _only_in_kernel("extra.cuda.gdc_wait")


def gdc_launch_dependents():
    """Lets the grids that depend on this one start (PDL); a no-op where there are none."""
    _only_in_kernel("extra.cuda.gdc_launch_dependents")


def experimental_device_tensormap_create1d(desc_ptr, global_address, load_size, global_size, element_ty):
    """Triton 3.2/3.3: writes a 1-D descriptor of `global_address` into the 128 bytes at `desc_ptr`
    (read by tl._experimental_descriptor_load / _store; docs/language.md)."""
    _only_in_kernel("extra.cuda.experimental_device_tensormap_create1d")


def experimental_device_tensormap_create2d(desc_ptr, global_address, load_size, global_size, element_ty):
    """Triton 3.2/3.3: writes a 2-D row-major descriptor (global_size and load_size outer first)."""
    _only_in_kernel("extra.cuda.experimental_device_tensormap_create2d")


def experimental_tensormap_fenceproxy_acquire(desc_ptr):
    """Triton 3.2/3.3's TMA proxy fence: accepted, nothing to fence (docs/language.md)."""
    _only_in_kernel("extra.cuda.experimental_tensormap_fenceproxy_acquire")
