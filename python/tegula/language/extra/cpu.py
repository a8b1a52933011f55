"""``tl.extra.cpu``: the CPU fork of Triton's module path for the same extra
math, ``from triton.language.extra.cpu import libdevice``; Tegula's
``libdevice`` serves every backend."""

from . import libdevice  # noqa: F401

__all__ = ["libdevice"]
