"""``tegula.reinterpret``: pass an array's memory to a kernel as another dtype.

NumPy has no fp8 types, so fp8 data on the host lives in ``uint8`` arrays;
``tegula.reinterpret(codes, tl.float8e5)`` hands such an array to a kernel as
a pointer to ``float8e5``, like Triton's ``triton.reinterpret``. It works for
any array or tensor a kernel accepts, whenever the element sizes match.
"""

from __future__ import annotations

from .language.core import dtype, pointer_type
from ._errors import coded


class ReinterpretedArray:
    """An array or tensor whose elements a kernel reads as ``dtype``."""

    __slots__ = ("base", "dtype")

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype

    def data_ptr(self) -> int:
        """The address of the first element, as the base array's."""
        if hasattr(self.base, "data_ptr"):
            return self.base.data_ptr()
        from . import _C

        return _C.data_address(self.base)

    def __repr__(self) -> str:
        return f"tegula.reinterpret({type(self.base).__name__}, {self.dtype!r})"


def _item_size(array) -> int | None:
    size = getattr(array, "itemsize", None)  # NumPy, CuPy, recent torch
    if size is None and hasattr(array, "element_size"):
        size = array.element_size()
    return size if isinstance(size, int) else None


def reinterpret(array, dtype_: dtype) -> ReinterpretedArray:
    """``array`` (a NumPy array, torch tensor, ...) seen by a kernel as elements
    of ``dtype_``, which must have the same size: ``reinterpret(u8, tl.float8e4nv)``."""
    if isinstance(array, ReinterpretedArray):
        array = array.base
    if not isinstance(dtype_, dtype) or isinstance(dtype_, pointer_type):
        raise coded(TypeError, "E0712",
                    f"tegula.reinterpret needs a scalar tl dtype such as tl.float8e5, got {dtype_!r}")
    size = _item_size(array)
    if size is None:
        raise coded(TypeError, "E0712", f"tegula.reinterpret needs an array or tensor, got {type(array).__name__}")
    if size * 8 != dtype_.primitive_bitwidth:
        raise coded(ValueError, "E0712",
                    f"tegula.reinterpret: the array's elements are {size} bytes but tl.{dtype_.canonical_name} needs "
                    f"{max(dtype_.primitive_bitwidth // 8, 1)}; view the array as a dtype of that size first "
                    f"(e.g. array.view(np.uint8))")
    return ReinterpretedArray(array, dtype_)
