"""``triton.errors``: TritonError, the base of the errors a kernel's compile, tuning and debug checks
raise (CompilationError, OutOfResources, AutotuneError, DeviceError)."""

from ._C import TritonError

__all__ = ["TritonError"]
