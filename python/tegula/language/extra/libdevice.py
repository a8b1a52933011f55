"""``tl.extra.libdevice``: extra elementwise math functions.

Markers, as in the rest of ``tegula.language``: the compiler decides which of
them it implements (an unsupported one is a compile error naming it). Kernels
written against ``triton.language.extra.libdevice`` resolve to the same names.
"""

from ..core import only_in_kernel as _only_in_kernel
from ..math import (  # noqa: F401  (libdevice also has the tl.math names)
    abs, ceil, cos, erf, exp, exp2, floor, fma, log, log2, rsqrt, sin, sqrt,
)


def acos(x):
    """Arc cosine."""
    _only_in_kernel("extra.libdevice.acos")


def acosh(x):
    """Inverse hyperbolic cosine."""
    _only_in_kernel("extra.libdevice.acosh")


def asin(x):
    """Arc sine."""
    _only_in_kernel("extra.libdevice.asin")


def asinh(x):
    """Inverse hyperbolic sine."""
    _only_in_kernel("extra.libdevice.asinh")


def atan(x):
    """Arc tangent."""
    _only_in_kernel("extra.libdevice.atan")


def atan2(y, x):
    """Arc tangent of y / x, in the right quadrant."""
    _only_in_kernel("extra.libdevice.atan2")


def atanh(x):
    """Inverse hyperbolic tangent."""
    _only_in_kernel("extra.libdevice.atanh")


def cbrt(x):
    """Cube root."""
    _only_in_kernel("extra.libdevice.cbrt")


def cosh(x):
    """Hyperbolic cosine."""
    _only_in_kernel("extra.libdevice.cosh")


def erfc(x):
    """Complementary error function."""
    _only_in_kernel("extra.libdevice.erfc")


def erfinv(x):
    """Inverse error function."""
    _only_in_kernel("extra.libdevice.erfinv")


def exp10(x):
    """``10 ** x``."""
    _only_in_kernel("extra.libdevice.exp10")


def expm1(x):
    """``exp(x) - 1``, accurate near 0."""
    _only_in_kernel("extra.libdevice.expm1")


def fmod(x, y):
    """Float remainder with the sign of ``x``."""
    _only_in_kernel("extra.libdevice.fmod")


def hypot(x, y):
    """``sqrt(x*x + y*y)`` without overflow."""
    _only_in_kernel("extra.libdevice.hypot")


def isinf(x):
    """True where ``x`` is infinite."""
    _only_in_kernel("extra.libdevice.isinf")


def isnan(x):
    """True where ``x`` is NaN."""
    _only_in_kernel("extra.libdevice.isnan")


def lgamma(x):
    """Natural logarithm of the absolute value of the gamma function."""
    _only_in_kernel("extra.libdevice.lgamma")


def log10(x):
    """Base-10 logarithm."""
    _only_in_kernel("extra.libdevice.log10")


def log1p(x):
    """``log(1 + x)``, accurate near 0."""
    _only_in_kernel("extra.libdevice.log1p")


def pow(x, y):
    """``x ** y``."""
    _only_in_kernel("extra.libdevice.pow")


def rint(x):
    """Rounds to the nearest integer, ties to even."""
    _only_in_kernel("extra.libdevice.rint")


def round(x):
    """Rounds to the nearest integer, ties away from zero."""
    _only_in_kernel("extra.libdevice.round")


def signbit(x):
    """True where the sign bit of ``x`` is set."""
    _only_in_kernel("extra.libdevice.signbit")


def sinh(x):
    """Hyperbolic sine."""
    _only_in_kernel("extra.libdevice.sinh")


def tan(x):
    """Tangent."""
    _only_in_kernel("extra.libdevice.tan")


def tanh(x):
    """Hyperbolic tangent."""
    _only_in_kernel("extra.libdevice.tanh")


def trunc(x):
    """Rounds toward zero."""
    _only_in_kernel("extra.libdevice.trunc")


def copysign(x, y):
    """The magnitude of ``x`` with the sign of ``y``."""
    _only_in_kernel("extra.libdevice.copysign")


def nextafter(x, y):
    """The next float after ``x`` toward ``y`` (float32 and float64)."""
    _only_in_kernel("extra.libdevice.nextafter")


def nearbyint(x):
    """Rounds to the nearest integer, ties to even (as ``rint``)."""
    _only_in_kernel("extra.libdevice.nearbyint")


def isfinite(x):
    """True where ``x`` is neither infinite nor NaN."""
    _only_in_kernel("extra.libdevice.isfinite")


def finitef(x):
    """libdevice's name of ``isfinite`` for float32."""
    _only_in_kernel("extra.libdevice.finitef")


def isfinited(x):
    """libdevice's name of ``isfinite`` for float64."""
    _only_in_kernel("extra.libdevice.isfinited")
