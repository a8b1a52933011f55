"""Debug mode on the Python side (docs/debug-mode.md).

``@tegula.jit(debug=True)`` (or ``TEGULA_DEBUG=1``) compiles kernels in which
every load, store and atomic is checked against the array its pointer was
derived from. The launcher passes, per array argument, the memory the array
object can address (``extent``); a kernel that leaves it, or fails a
``tl.device_assert``, stops the launch with a :class:`DeviceError`.
"""

from __future__ import annotations

import numpy as np

from . import _C

_data_address = _C.data_address


class DeviceError(RuntimeError):
    """A debug-mode kernel accessed memory out of bounds or failed a device assert.

    ``str(e)`` is the report::

        kernel `add` at add.py:12:5: load out of bounds in program (3, 0, 0): element offset 1027 of `x_ptr` (1024 elements, float32)
        hint: a mask missing? the offsets reach past the end of the array

    Attributes: ``kernel`` (name), ``kind`` (``"load"``, ``"store"``,
    ``"atomic"`` or ``"assert"``), ``file``, ``line``, ``col`` (the op's
    source location), ``program_id`` (``(x, y, z)``). Bounds errors also
    carry ``offset`` (the element offset from the array's first byte, in
    elements of the accessed type, negative before the start), ``size`` (the
    array's size in those elements), ``arg`` (the parameter the pointer came
    from) and ``dtype``; asserts carry ``message`` and ``index`` (the failing
    element's position in the tile, ``()`` for a scalar condition). The other
    fields are None.
    """

    def __init__(self, text, *, kernel=None, kind=None, file=None, line=None, col=None, program_id=None,
                 offset=None, size=None, arg=None, dtype=None, message=None, index=None):
        super().__init__(text)
        self.kernel = kernel
        self.kind = kind
        self.file = file
        self.line = line
        self.col = col
        self.program_id = program_id
        self.offset = offset
        self.size = size
        self.arg = arg
        self.dtype = dtype
        self.message = message
        self.index = index


def _span(address: int, shape, strides, itemsize: int) -> tuple:
    """(lowest byte, byte count) of the elements a strided array addresses."""
    if any(n == 0 for n in shape):
        return (address, 0)
    low = high = 0
    for n, stride in zip(shape, strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return (address + low, high - low + itemsize)


def extent(value):
    """The memory an array argument may be accessed in, as (first byte, byte
    count), or None for scalars.

    It is the array object's own extent, from its shape and strides: a view
    into a larger buffer (``x[10:20]``, a torch slice) is checked against the
    view, not the whole allocation, since reaching into its neighbours is the
    bug debug mode is for. Non-contiguous arrays cover the span from their
    lowest to their highest element.
    """
    if isinstance(value, np.ndarray):
        return _span(_data_address(value), value.shape, value.strides, value.itemsize)
    if hasattr(value, "data_ptr") and hasattr(value, "stride") and hasattr(value, "element_size"):
        size = value.element_size()
        return _span(value.data_ptr(), tuple(value.shape), [s * size for s in value.stride()], size)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        itemsize = np.dtype(interface["typestr"]).itemsize
        shape = tuple(interface["shape"])
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            strides, step = [], itemsize
            for n in reversed(shape):
                strides.insert(0, step)
                step *= n
        return _span(int(interface["data"][0]), shape, strides, itemsize)
    if hasattr(value, "__dlpack__") and not isinstance(value, (int, float, bool)):
        try:
            return extent(np.from_dlpack(value))
        except (BufferError, TypeError, ValueError, RuntimeError):
            return None
    return None


def extents(values) -> list:
    """extent() of every launch argument."""
    return [extent(v) for v in values]
