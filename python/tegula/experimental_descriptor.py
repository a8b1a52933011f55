"""Triton 3.2/3.3's host TMA descriptors (``triton.tools.experimental_descriptor``, removed from Triton in
April 2025, #6488), for kernels of that era that read them with ``tl._experimental_descriptor_load`` /
``_store`` (docs/language.md, "Triton 3.2/3.3's experimental descriptors")::

    desc = create_2d_tma_descriptor(a.data_ptr(), M, K, BLOCK_M, BLOCK_K, a.element_size())
    kernel[grid](desc, ...)

A descriptor is 128 bytes (Triton's TMA_SIZE) in Tegula's own layout, not a CUtensorMap: the int64 words
below, which the kernel reads at run time (src/frontend/legacy_descriptor_layout.h holds the same layout).
``TmaDescKernelParam`` is those bytes as a NumPy uint8 array. A launch passes them by value, as Triton's
does (its signature type is ``nvTmaDesc``): on the CUDA backend the kernel receives the bytes as its
parameter, so the launch needs no device copy and CUDA graph capture keeps the bytes of the capture; on
the CPU backend it receives their host address. The launch runs on the device that owns the descriptor's
base address. A device array holding a descriptor's bytes (the in-kernel creates' workspaces, or a host
descriptor copied there) passes as the pointer it is.

The kernel writes through the address in the descriptor, which the launcher cannot see: the array behind
``ptr`` must be writable by the caller's own account, as with any address passed as an integer.
"""
from __future__ import annotations

import ctypes
import operator

import numpy as np

from ._errors import coded

TMA_DESC_SIZE = 128
MAGIC = 0x3143534544474C54  # "TLGDESC1"
_BASE, _RANK, _ELEMENT_SIZE, _SHAPE, _STRIDE, _BLOCK = 1, 2, 3, 4, 8, 12
_MAX_BOX = 256  # a TMA box dimension, as cuTensorMapEncodeTiled takes it


def _int(what: str, value) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise coded(TypeError, "E0711", f"{what} of a TMA descriptor must be an int, got {value!r}") from None


def _words(ptr, dims, block_dims, element_size) -> np.ndarray:
    """The 16 words of a descriptor of `dims` (outer first, row-major) at address `ptr`, checked as
    Triton's fill_1d/2d_tma_descriptor and cuTensorMapEncodeTiled check them."""
    ptr = _int("the address", ptr)
    element_size = _int("element_size", element_size)
    dims = [_int("a dimension", d) for d in dims]
    block_dims = [_int("a block dimension", b) for b in block_dims]
    if element_size not in (1, 2, 4):
        raise coded(ValueError, "E0711", f"elementSize must be 1, 2, or 4, not {element_size} (as Triton's)")
    if any(d < 0 for d in dims):
        raise coded(ValueError, "E0711", f"the dimensions {dims} of a TMA descriptor must be >= 0")
    if any(not 1 <= b <= _MAX_BOX for b in block_dims):
        raise coded(ValueError, "E0711",
                    f"the block dimensions {block_dims} of a TMA descriptor must be 1 to {_MAX_BOX} "
                    f"(a TMA box dimension)")
    if len(dims) == 1 and element_size * block_dims[0] < 32:
        raise coded(ValueError, "E0711",
                    f"a 1-D TMA block of {block_dims[0]} elements of {element_size} bytes is under 32 bytes: "
                    f"block size too small (as Triton's fill_1d_tma_descriptor)")
    if ptr <= 0 or ptr % 16:
        raise coded(ValueError, "E0711", f"a TMA descriptor's address must be 16-byte aligned, got {ptr:#x}")
    if len(dims) == 2 and (dims[1] * element_size) % 16:
        raise coded(ValueError, "E0711",
                    f"the rows of a 2-D TMA descriptor ({dims[1]} elements of {element_size} bytes) must be a "
                    f"multiple of 16 bytes (a TMA global stride)")
    words = np.zeros(TMA_DESC_SIZE // 8, dtype=np.int64)
    words[0] = MAGIC
    words[_BASE], words[_RANK], words[_ELEMENT_SIZE] = ptr, len(dims), element_size
    strides = [dims[1], 1] if len(dims) == 2 else [1]
    for d, (n, s, b) in enumerate(zip(dims, strides, block_dims)):
        words[_SHAPE + d], words[_STRIDE + d], words[_BLOCK + d] = n, s, b
    return words


class TmaDescKernelParam(np.ndarray):
    """A descriptor's 128 bytes (uint8, 64-byte aligned as Triton's), passed to a kernel as the pointer
    `desc_ptr` that tl._experimental_descriptor_load / _store read."""

    TMA_DESC_SIZE = TMA_DESC_SIZE

    def __new__(cls):
        raw = np.zeros(TMA_DESC_SIZE + 64, dtype=np.uint8)
        start = -raw.ctypes.data % 64
        return raw[start:start + TMA_DESC_SIZE].view(cls)

    def fill_(self, ptr, dims, block_dims, element_size):
        """Triton's fill_: `dims` and `block_dims` outer first, one or two of each."""
        if len(dims) != len(block_dims) or not 1 <= len(dims) <= 2:
            raise coded(ValueError, "E0711",
                        f"a TMA descriptor has one or two dimensions and a block size each, got dims {list(dims)} "
                        f"and block_dims {list(block_dims)}")
        self.view(np.int64)[:] = _words(ptr, dims, block_dims, element_size)

    def tma_desc_cpu_ptr(self) -> int:
        """The host address of the 128 bytes (Triton's: the CUtensorMap in host memory)."""
        return self.ctypes.data

    def __array_finalize__(self, obj):  # slices and views of it are plain bytes
        pass


def create_1d_tma_descriptor(ptr, dim, block_dim, element_size) -> TmaDescKernelParam:
    """A descriptor of `dim` contiguous elements of `element_size` bytes at address `ptr`, read in blocks of
    `block_dim`."""
    desc = TmaDescKernelParam()
    desc.fill_(ptr, [dim], [block_dim], element_size)
    return desc


def create_2d_tma_descriptor(ptr, dim1, dim0, block_dim1, block_dim0, element_size) -> TmaDescKernelParam:
    """A descriptor of a row-major [dim1, dim0] matrix (dim1 the outer dimension, rows of dim0 elements) at
    address `ptr`, read in [block_dim1, block_dim0] blocks."""
    desc = TmaDescKernelParam()
    desc.fill_(ptr, [dim1, dim0], [block_dim1, block_dim0], element_size)
    return desc


def fill_1d_tma_descriptor(ptr, dim, block_dim, element_size, desc) -> None:
    """Triton's driver.active.utils.fill_1d_tma_descriptor: the descriptor written to `desc`, the host address
    of 128 bytes the caller holds (Triton 3.1 to 3.3) or a writable buffer of at least 128 bytes such as a
    NumPy array (Triton 3.0, ``np.empty(TMA_SIZE, dtype=np.int8)``)."""
    _write(desc, _words(ptr, [dim], [block_dim], element_size))


def fill_2d_tma_descriptor(ptr, dim1, dim0, block_dim1, block_dim0, element_size, desc) -> None:
    """Triton's driver.active.utils.fill_2d_tma_descriptor (dim1 outer) into `desc`: a host address or a
    writable buffer, as fill_1d_tma_descriptor's."""
    _write(desc, _words(ptr, [dim1, dim0], [block_dim1, block_dim0], element_size))


def _write(desc, words: np.ndarray) -> None:
    if isinstance(desc, int) or not _is_buffer(desc):
        address = _int("desc_address", desc)
        if address <= 0:
            raise coded(ValueError, "E0711", f"desc_address must be a host address, got {address:#x}")
        ctypes.memmove(address, words.ctypes.data, TMA_DESC_SIZE)
        return
    try:
        view = memoryview(desc).cast("B")
    except TypeError:  # not C-contiguous
        view = None
    if view is None or view.readonly or view.nbytes < TMA_DESC_SIZE:
        why = ("is read-only" if view is not None and view.readonly else
               f"holds {view.nbytes} bytes" if view is not None else "is not contiguous")
        raise coded(ValueError, "E0711",
                    f"a TMA descriptor is written into a writable, contiguous buffer of at least {TMA_DESC_SIZE} "
                    f"bytes (or a host address); this {type(desc).__name__} {why}")
    view[:TMA_DESC_SIZE] = words.view(np.uint8)


def _is_buffer(value) -> bool:
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


def kernel_param_bytes(value, kernel: str, param: str) -> np.ndarray:
    """The launcher's view of an argument with ``tma_desc_cpu_ptr()`` (Triton 3.2/3.3's TmaDescKernelParam and
    its duck types, such as FBGEMM's TmaAutoTuneHelper.KernelParamWrapper): the 128 bytes at that host address,
    as a uint8 array, which the launch passes by value (a device receives the bytes, the CPU their address).
    Their owner keeps them alive across the launch, as in Triton."""
    address = value.tma_desc_cpu_ptr()
    if isinstance(address, bool) or not isinstance(address, int) or address <= 0:
        raise coded(TypeError, "E0711",
                    f"argument '{param}' of kernel '{kernel}': {type(value).__name__}.tma_desc_cpu_ptr() must give "
                    f"the host address of a TMA descriptor's {TMA_DESC_SIZE} bytes, got {address!r}")
    return np.ctypeslib.as_array((ctypes.c_uint8 * TMA_DESC_SIZE).from_address(address))
