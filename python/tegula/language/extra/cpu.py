"""``tl.extra.cpu``: the CPU fork of Triton's module path for the same extra
math, ``from triton.language.extra.cpu import libdevice``; Tegula's
``libdevice`` serves every backend."""

import sys as _sys

from . import libdevice  # noqa: F401

# Importable by its path too (importlib.import_module("...extra.cpu.libdevice")), as Triton's is.
_sys.modules[__name__ + ".libdevice"] = libdevice

__all__ = ["libdevice"]
