"""``tl.math``: elementwise math on tiles and scalars.

Markers for IDEs and docs, as in the rest of ``tegula.language``: the
compiler gives these names their meaning inside ``@tegula.jit`` kernels.
Floating-point functions compute in the input's precision (fp16/bf16 inputs
are computed in fp32 and rounded back).
"""

from .core import only_in_kernel as _only_in_kernel

__all__ = [
    "abs", "cdiv", "ceil", "clamp", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma",
    "log", "log2", "maximum", "minimum", "rsqrt", "sigmoid", "sin", "softmax", "sqrt", "sqrt_rn",
    "umulhi",
]


def abs(x):
    """Absolute value, elementwise."""
    _only_in_kernel("abs")


def cdiv(x, div):
    """Ceiling division ``(x + div - 1) // div``."""
    _only_in_kernel("cdiv")


def ceil(x):
    """Smallest integer value not less than ``x``."""
    _only_in_kernel("ceil")


def clamp(x, min, max, propagate_nan=None):
    """``x`` limited to ``[min, max]``."""
    _only_in_kernel("clamp")


def cos(x):
    """Cosine."""
    _only_in_kernel("cos")


def div_rn(x, y):
    """Float division rounded to nearest even."""
    _only_in_kernel("div_rn")


def erf(x):
    """The error function."""
    _only_in_kernel("erf")


def exp(x):
    """``e ** x``."""
    _only_in_kernel("exp")


def exp2(x):
    """``2 ** x``."""
    _only_in_kernel("exp2")


def fdiv(x, y, ieee_rounding=False):
    """Float division (fast unless ``ieee_rounding``)."""
    _only_in_kernel("fdiv")


def floor(x):
    """Largest integer value not greater than ``x``."""
    _only_in_kernel("floor")


def fma(x, y, z):
    """``x * y + z`` with one rounding."""
    _only_in_kernel("fma")


def log(x):
    """Natural logarithm."""
    _only_in_kernel("log")


def log2(x):
    """Base-2 logarithm."""
    _only_in_kernel("log2")


def maximum(x, y, propagate_nan=None):
    """Elementwise maximum."""
    _only_in_kernel("maximum")


def minimum(x, y, propagate_nan=None):
    """Elementwise minimum."""
    _only_in_kernel("minimum")


def rsqrt(x):
    """``1 / sqrt(x)``."""
    _only_in_kernel("rsqrt")


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    _only_in_kernel("sigmoid")


def sin(x):
    """Sine."""
    _only_in_kernel("sin")


def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """Softmax along ``dim`` (the last axis by default)."""
    _only_in_kernel("softmax")


def sqrt(x):
    """Square root."""
    _only_in_kernel("sqrt")


def sqrt_rn(x):
    """Square root rounded to nearest even."""
    _only_in_kernel("sqrt_rn")


def umulhi(x, y):
    """High 32 bits of the 64-bit product of two unsigned 32-bit integers."""
    _only_in_kernel("umulhi")
