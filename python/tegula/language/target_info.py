"""``tl.target_info``: questions a kernel asks of its target at compile time.

Inside a ``@tegula.jit`` kernel each call is a constant of the target the
kernel is compiled for (``if tl.target_info.cuda_capability_geq(9, 0):``
picks a branch at compile time). Tegula has no HIP backend: the ``is_hip*``
questions are always false there.

Called from ordinary Python (host code, or a ``@constexpr_function`` that
runs while a kernel compiles), each answers for
``triton.runtime.driver.active``'s target (``current_target()``), as
Triton's constexpr functions of the same names do: Triton's own libraries
call them from host code (triton_kernels's ``is_cuda()`` test markers, its
``get_cdna_version`` constexpr function).
"""

__all__ = ["current_target", "is_cuda", "cuda_capability_geq", "is_hip", "is_hip_cdna3", "is_hip_cdna4",
           "is_hip_gfx1250"]


def current_target():
    """``triton.runtime.driver.active.get_current_target()`` (a ``GPUTarget``), None when no driver is
    active. A host-side question, as in Triton."""
    from ..runtime import driver

    try:
        active = driver.active
    except RuntimeError:
        return None
    return active.get_current_target()


def is_cuda():
    """Whether the kernel is compiled for the CUDA backend (from host code: whether the active driver's
    target is a CUDA GPU)."""
    target = current_target()
    return target is not None and target.backend == "cuda"


def cuda_capability_geq(major, minor=0):
    """Whether the kernel is compiled for a CUDA GPU of compute capability (major, minor) or newer (from host
    code: the active driver's target)."""
    target = current_target()
    if target is None or target.backend != "cuda":
        return False
    return int(target.arch) >= int(major) * 10 + int(minor)


def _hip_arch(arch=None):
    target = current_target()
    return target is not None and target.backend == "hip" and (arch is None or target.arch == arch)


def is_hip():
    """False inside kernels: Tegula has no HIP backend (from host code: whether the active driver's target
    is HIP, which Tegula's drivers never are)."""
    return _hip_arch()


def is_hip_cdna3():
    """False inside kernels: Tegula has no HIP backend."""
    return _hip_arch("gfx942")


def is_hip_cdna4():
    """False inside kernels: Tegula has no HIP backend."""
    return _hip_arch("gfx950")


def is_hip_gfx1250():
    """False inside kernels: Tegula has no HIP backend."""
    return _hip_arch("gfx1250")
