"""``triton.runtime.jit``'s names, where libraries import them from: Tegula's JITFunction and jit, and
MockTensor (kernel.warmup's stand-in for an array)."""

from .._mock_tensor import MockTensor
from ..jit import JITFunction, KernelInterface, jit

__all__ = ["JITFunction", "KernelInterface", "jit", "MockTensor"]
