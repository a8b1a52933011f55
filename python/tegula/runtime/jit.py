"""``triton.runtime.jit``'s names, where libraries import them from: Tegula's JITFunction and jit."""

from ..jit import JITFunction, jit

__all__ = ["JITFunction", "jit"]
