"""Host-side helpers that kernels' launch code uses (also usable inside kernels)."""

from __future__ import annotations

import operator


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of size ``b`` needed to cover ``a``."""
    return (a + b - 1) // b


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n``; 1 for ``n <= 0``."""
    n = operator.index(n)
    if n <= 1:
        return 1
    return 1 << (n - 1).bit_length()
