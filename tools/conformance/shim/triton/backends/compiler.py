"""Triton's triton.backends.compiler: GPUTarget, the (backend, arch, warp_size) triple a driver
reports, which host code imports from here."""

from tegula.runtime import GPUTarget  # noqa: F401
