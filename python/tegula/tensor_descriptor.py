"""Host-side tensor descriptors: a tensor plus the block shape a kernel reads
and writes it in (``docs/language.md``, "Block pointers and tensor descriptors").

    desc = tegula.TensorDescriptor.from_tensor(x, [64, 32])
    kernel[grid](desc, ...)          # in the kernel: desc.load([i, j]), desc.store([i, j], tile)

The class has the fields of ``triton.tools.tensor_descriptor.TensorDescriptor``
(``base``, ``shape``, ``strides``, ``block_shape``, ``padding``), and a
Triton descriptor object is accepted as a kernel argument too. A descriptor
argument specializes the kernel on its element type, base alignment, block
shape and padding; its shape and strides are runtime integers (specialized
like int arguments: 1 and divisibility by 16). The kernel receives it as the
parameters ``NAME__base``, ``NAME__shape<d>`` and ``NAME__stride<d>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List
from ._errors import coded

MAX_RANK = 5


def _element_strides(tensor) -> List[int]:
    """Strides in elements: torch's ``stride()``, or NumPy/CuPy ``strides`` in bytes."""
    stride = getattr(tensor, "stride", None)
    if callable(stride):
        return [int(s) for s in stride()]
    strides = getattr(tensor, "strides", None)
    itemsize = getattr(getattr(tensor, "dtype", None), "itemsize", None)
    if strides is None or not itemsize:
        raise coded(TypeError, "E0711",
                    f"TensorDescriptor.from_tensor needs an array or tensor, got {type(tensor).__name__}")
    if any(s % itemsize for s in strides):
        raise coded(ValueError, "E0711",
                    f"the strides {tuple(strides)} (bytes) of the tensor are not whole elements of "
                    f"{itemsize} bytes")
    return [int(s) // itemsize for s in strides]


def _is_floating(tensor) -> bool:
    dtype = getattr(tensor, "dtype", None)
    if getattr(dtype, "is_floating_point", None) is not None:  # torch
        return bool(dtype.is_floating_point)
    kind = getattr(dtype, "kind", None)  # NumPy; ml_dtypes' bfloat16 has kind 'V'
    return kind == "f" or str(dtype) == "bfloat16"


@dataclass
class TensorDescriptor:
    """A tensor (``base``: a NumPy array, torch tensor or other array the kernel
    launcher accepts) seen as blocks of ``block_shape``; loads outside ``shape``
    read ``padding`` ("zero" or "nan"), stores there are dropped."""

    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = field(default="zero")

    def __post_init__(self):
        self.shape = _integers("shape", self.shape)
        self.strides = _integers("strides", self.strides)
        self.block_shape = _integers("block_shape", self.block_shape)
        rank = len(self.shape)
        if not 1 <= rank <= MAX_RANK:
            raise coded(ValueError, "E0711", f"a TensorDescriptor has 1 to {MAX_RANK} dimensions, not {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise coded(ValueError, "E0711",
                        f"a TensorDescriptor needs one stride and one block size per dimension: shape "
                        f"{self.shape}, strides {self.strides}, block_shape {self.block_shape}")
        for b in self.block_shape:
            if b < 1 or b & (b - 1):
                raise coded(ValueError, "E0711",
                            f"block_shape {self.block_shape} of a TensorDescriptor must hold powers of two "
                            f"(tile dimensions are powers of two; the edge blocks are padded)")
        if self.strides[-1] != 1:
            raise coded(ValueError, "E0711",
                        f"the last stride of a TensorDescriptor must be 1 (a contiguous innermost dimension), "
                        f"got strides {self.strides}")
        if self.padding not in ("zero", "nan"):
            raise coded(ValueError, "E0711",
                        f"padding of a TensorDescriptor must be 'zero' or 'nan', not {self.padding!r}")
        if self.padding == "nan" and not _is_floating(self.base):
            raise coded(ValueError, "E0711", "padding='nan' needs a floating-point tensor")
        if any(n < 0 for n in self.shape):
            raise coded(ValueError, "E0711", f"the shape {self.shape} of a TensorDescriptor must hold sizes >= 0")
        _check_inside_base(self)

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of a whole tensor: its shape and element strides."""
        shape = getattr(tensor, "shape", None)
        if shape is None:
            raise coded(TypeError, "E0711",
                        f"TensorDescriptor.from_tensor needs an array or tensor, got {type(tensor).__name__}")
        shape = list(shape)
        strides = _element_strides(tensor)
        if 0 in shape:  # an empty tensor's strides say nothing (NumPy may give 0): those of a contiguous one
            strides = _contiguous_strides(shape)
        return TensorDescriptor(tensor, shape, strides, list(block_shape), padding)


def _integers(what: str, values) -> List[int]:
    """`values` as a list of ints; anything else (a float, a string) is the caller's error, not truncated."""
    import operator

    try:
        return [operator.index(v) for v in values]
    except TypeError:
        raise coded(TypeError, "E0711", f"the {what} of a TensorDescriptor must be a list of ints, got "
                                        f"{values!r}") from None


def _contiguous_strides(shape: List[int]) -> List[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def _span(shape: List[int], strides: List[int]):
    """(lowest, highest) element offset of a strided view from its first element; None when empty."""
    if any(n == 0 for n in shape):
        return None
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return low, high


def _check_inside_base(desc: "TensorDescriptor") -> None:
    """The elements the descriptor's shape and strides reach must be elements of its base: a load there
    would read, and a store write, memory the base does not hold."""
    reach = _span(desc.shape, desc.strides)
    base_shape = getattr(desc.base, "shape", None)
    if reach is None or base_shape is None:
        return
    try:
        held = _span([int(n) for n in base_shape], _element_strides(desc.base))
    except (TypeError, ValueError):
        return  # a base the launcher describes (or refuses) itself
    if held is None or reach[0] < held[0] or reach[1] > held[1]:
        raise coded(ValueError, "E0711",
                    f"a TensorDescriptor of shape {desc.shape} and strides {desc.strides} reaches elements "
                    f"{reach[0]} to {reach[1]} from its base's first, but its base (shape "
                    f"{list(base_shape)}) holds elements {held[0] if held else 0} to {held[1] if held else -1}")


def is_descriptor(value) -> bool:
    """A Tegula TensorDescriptor, or an object that looks like one (Triton's)."""
    if isinstance(value, TensorDescriptor):
        return True
    return type(value).__name__ == "TensorDescriptor" and all(
        hasattr(value, name) for name in ("base", "shape", "strides", "block_shape"))


def flatten_launch_values(values: list) -> list:
    """Launch values with each TensorDescriptor's tuple (address, *shape,
    *strides) spread into its kernel parameters."""
    out = []
    for v in values:
        if type(v) is tuple:
            out.extend(v)
        else:
            out.append(v)
    return out


def debug_arguments(values: list) -> list:
    """The object behind each kernel parameter, for debug-mode extents: a
    descriptor is its base array, then one int per shape and stride entry."""
    out = []
    for v in values:
        if is_descriptor(v):
            out.append(v.base)
            out.extend([0] * (2 * len(v.shape)))
        else:
            out.append(v)
    return out
