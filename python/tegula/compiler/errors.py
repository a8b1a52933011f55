"""``triton.compiler.errors``' names, where host code imports them from to catch a kernel's compile
errors: Tegula's CompilationError, CompileTimeAssertionFailure and UnsupportedLanguageConstruct (all
TritonErrors)."""

from .._C import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct

__all__ = ["CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"]
