"""``tl.random``: Triton's module of the Philox random functions, the same
markers as ``tl.randint``, ``tl.rand`` and the rest (docs/language.md,
"Random numbers"), so ``tl.random.uint_to_uniform_float(x)`` in a kernel is
``tl.uint_to_uniform_float(x)``."""

from .ops import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x,  # noqa: F401
                  randn, randn4x, uint_to_uniform_float)

__all__ = ["pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x", "randint", "randint4x", "randn",
           "randn4x", "uint_to_uniform_float"]
