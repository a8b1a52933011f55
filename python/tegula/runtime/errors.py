"""``triton.runtime.errors``' names, for the ``except`` clauses of host code and autotuners written for
Triton. Tegula raises AutotunerError (its AutotuneError) when tuning finds no config to launch; the
others name failures of Triton's own machinery (ptxas run as a tool, the interpreter, a kernel past the
device's resources: Tegula reports that as E07xx when it launches), and Tegula never raises them."""

from __future__ import annotations

from .._C import TritonError
from ..autotune import AutotuneError as AutotunerError


class OutOfResources(TritonError):
    """A kernel asking more shared memory or registers than the device has, in Triton's words."""

    def __init__(self, required=None, limit=None, name="shared memory"):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, required: {required}, hardware limit: {limit}")

    def __reduce__(self):
        return type(self), (self.required, self.limit, self.name)


class PTXASError(TritonError):
    """Triton's ptxas failing on its PTX."""


class InterpreterError(TritonError):
    """An error inside Triton's interpreter (TRITON_INTERPRET=1)."""


__all__ = ["OutOfResources", "PTXASError", "InterpreterError", "AutotunerError"]
