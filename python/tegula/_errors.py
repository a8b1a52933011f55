"""Coded errors raised by the Python side of Tegula.

The compiler's errors carry a stable code (docs/diagnostics.md,
src/support/diagnostic_codes.def) as their ``code`` attribute and read
``error[E0704]: ...``. Mistakes that only the Python package can see
(binding launch arguments, decorators, autotune configs, TensorDescriptor,
``tegula.reinterpret``) are reported the same way, so a caller can branch on
``e.code`` whichever layer found the mistake, and ``tegula explain CODE``
works for all of them.

The exception keeps its built-in type (TypeError for a value of the wrong
kind, ValueError for a value out of range; ArgumentOverflowError, both an
OverflowError and a ValueError, for an integer argument past 64 bits): code
written for Triton or for older Tegula that catches those types keeps
working.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"E\d{4}")


class CompileWarning(UserWarning):
    """What the compiler warns of in a kernel that compiles (a `tl.where` on a
    non-boolean condition): the rendered text, located like an error's.
    Issued when the kernel is built, not when it is loaded from the disk
    cache (as Triton's warnings)."""


class ArgumentOverflowError(OverflowError, ValueError):
    """An integer launch argument does not fit in 64 bits (E0703).

    An OverflowError, as Triton raises for such a value, and a ValueError, as
    Tegula raised before, so handlers written for either keep working. The
    launcher (src/bindings/launch_arguments.cpp) raises it."""


def coded(kind: type, code: str, message: str) -> Exception:
    """``kind("error[CODE]: message")`` with ``.code = CODE``, to be raised:
    ``raise coded(TypeError, "E0701", f"kernel '{name}' takes ...")``."""
    assert _CODE.fullmatch(code), code  # a typo here would publish a code the catalogue lacks
    error = kind(f"error[{code}]: {message}")
    error.code = code
    return error
