"""Debug mode on the Python side (docs/debug-mode.md).

``@tegula.jit(debug=True)`` (or ``TEGULA_DEBUG=1``) compiles kernels in which
every load, store and atomic is checked against the array its pointer was
derived from. The launcher (src/bindings/launch_arguments.h) passes, per
array argument, the memory the array object can address: a view is checked
against the view, not the buffer it comes from; non-contiguous arrays cover
the span from their lowest to their highest element. A kernel that leaves
it, or fails a ``tl.device_assert``, stops the launch with a
:class:`DeviceError`.
"""

from __future__ import annotations

from . import _C


class DeviceError(RuntimeError, _C.TritonError):
    """A debug-mode kernel accessed memory out of bounds or failed a device assert, or a CPU kernel
    touched memory outside the process's (``kind`` ``"memory"``, E0909: the segmentation fault caught).

    ``str(e)`` is the report::

        kernel `add` at add.py:12:5: load out of bounds in program (3, 0, 0): element offset 1027 of `x_ptr` (1024 elements, float32)
        hint: a mask missing? the offsets reach past the end of the array

    Attributes: ``kernel`` (name), ``kind`` (``"load"``, ``"store"``,
    ``"atomic"``, ``"assert"`` or ``"memory"``), ``file``, ``line``, ``col`` (the op's
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
