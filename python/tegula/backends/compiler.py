"""``triton.backends.compiler``' GPUTarget, the (backend, arch, warp_size) a kernel is compiled for."""

from ..runtime.driver import GPUTarget

__all__ = ["GPUTarget"]
