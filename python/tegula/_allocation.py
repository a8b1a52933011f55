"""Triton's hook for memory a launch allocates (``triton.set_allocator``).

Triton calls the allocator at launch time for the kernels that need scratch
memory on the device (a tensor descriptor made inside a kernel, a profiling
buffer): ``allocator(size, alignment, stream)`` returns an object with
``data_ptr()``. No Tegula kernel needs such memory (a descriptor made in a
kernel is addresses and bounds in registers), so the allocator set here is
kept for the code that sets and restores it and is never called.
"""

from __future__ import annotations

from contextvars import ContextVar


class NullAllocator:
    """The allocator in place until one is set: a call says how to set one."""

    def __call__(self, size: int, alignment: int, stream):
        raise RuntimeError("this launch needs memory allocated at launch time, and no allocator was set: "
                           "call tegula.set_allocator(fn), fn(size, alignment, stream) returning a buffer "
                           "with data_ptr()")


_allocator: ContextVar = ContextVar("tegula_allocator", default=NullAllocator())


def set_allocator(allocator) -> None:
    """Sets the allocator of launch-time memory for this context (Triton's
    ``triton.set_allocator``); see the module's docstring for when it is
    called."""
    if not callable(allocator):
        raise TypeError(f"set_allocator takes a callable (size, alignment, stream) -> buffer, "
                        f"got {type(allocator).__name__}")
    _allocator.set(allocator)


def get_allocator():
    """The allocator set for this context (a NullAllocator until one is set)."""
    return _allocator.get()
