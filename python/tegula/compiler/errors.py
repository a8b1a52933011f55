"""``triton.compiler.errors``' names, where host code imports them from to catch a kernel's compile
errors: Tegula's CompilationError and CompileTimeAssertionFailure (both TritonErrors)."""

from .._C import CompilationError, CompileTimeAssertionFailure

__all__ = ["CompilationError", "CompileTimeAssertionFailure"]
