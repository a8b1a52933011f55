"""``tl.standard``: the module path of Triton's standard library
(``from triton.language.standard import zeros_like, _log2``). Its functions
are Tegula's ``tl`` functions under this path; ``_log2`` and
``_is_power_of_two``, which libraries import from here, are the constexpr
helpers of the same name, run while a kernel compiles."""

from ..constexpr_function import constexpr_function
from . import (  # noqa: F401  (the standard library's names, as tl has them)
    argmax, argmin, bitonic_merge, cdiv, cumprod, cumsum, flip, interleave, max, min, ravel, reduce_or, sigmoid,
    softmax, sort, squeeze, sum, swizzle2d, topk, unsqueeze, xor_sum, zeros, zeros_like,
)


@constexpr_function
def _log2(i):
    """The base-2 logarithm of a power of two (of the bits below its highest, for others)."""
    log2, n = 0, i
    while n > 1:
        n >>= 1
        log2 += 1
    return log2


@constexpr_function
def _is_power_of_two(i):
    return (i & (i - 1)) == 0 and i != 0
