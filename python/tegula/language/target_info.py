"""``tl.target_info``: questions a kernel asks of its target at compile time.

Inside a ``@tegula.jit`` kernel each call is a constant of the target the
kernel is compiled for (``if tl.target_info.cuda_capability_geq(9, 0):``
picks a branch at compile time). Tegula has no HIP backend: the ``is_hip*``
questions are always false. Called from ordinary Python they raise, like the
other markers of ``tegula.language``.
"""

from .core import only_in_kernel as _only_in_kernel

__all__ = ["is_cuda", "cuda_capability_geq", "is_hip", "is_hip_cdna3", "is_hip_cdna4", "is_hip_gfx1250"]


def is_cuda():
    """Whether the kernel is compiled for the CUDA backend."""
    _only_in_kernel("target_info.is_cuda")


def cuda_capability_geq(major, minor=0):
    """Whether the kernel is compiled for a CUDA GPU of compute capability (major, minor) or newer."""
    _only_in_kernel("target_info.cuda_capability_geq")


def is_hip():
    """False: Tegula has no HIP backend."""
    _only_in_kernel("target_info.is_hip")


def is_hip_cdna3():
    """False: Tegula has no HIP backend."""
    _only_in_kernel("target_info.is_hip_cdna3")


def is_hip_cdna4():
    """False: Tegula has no HIP backend."""
    _only_in_kernel("target_info.is_hip_cdna4")


def is_hip_gfx1250():
    """False: Tegula has no HIP backend."""
    _only_in_kernel("target_info.is_hip_gfx1250")
