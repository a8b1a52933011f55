"""Exact rounding of real values to float32/float64 in each IEEE rounding
mode, for the libdevice tests: the value is a fraction, or the square root
of one, and every comparison is done on integers."""

import math
from fractions import Fraction

import numpy as np

MODES = ("rn", "rz", "rd", "ru")
# precision (bits), smallest normal exponent, largest exponent
FORMATS = {np.float32: (24, -126, 127), np.float64: (53, -1022, 1023)}


def _round(sign, floor_at, mode, dtype):
    """The float of `dtype` nearest in `mode` to a nonzero real v of `sign`
    whose magnitude `floor_at(q)` describes: (n, c), n = floor(|v| / 2**q)
    and c the comparison of the fraction left over with 1/2 (-1, 0, 1; None
    when there is none left)."""
    p, emin, emax = FORMATS[dtype]
    e = floor_at(None)  # floor(log2 |v|)
    q = max(e, emin) - (p - 1)
    n, c = floor_at(q)
    away = {"rn": None, "rz": False, "rd": sign < 0, "ru": sign > 0}[mode]
    if c is not None:
        if away is None:
            n += c > 0 or (c == 0 and n % 2 == 1)
        elif away:
            n += 1
    if n >= 2**p:  # the carry moved to the next binade
        n, q = n // 2, q + 1
    if q + p - 1 > emax:  # beyond the largest float
        magnitude = math.inf if away is not False else float(Fraction(2**p - 1) * Fraction(2) ** (emax - p + 1))
    else:
        magnitude = float(Fraction(n) * Fraction(2) ** q)
    return dtype(math.copysign(magnitude, sign))


def _log2_floor(a: Fraction) -> int:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_fraction(v: Fraction, mode, dtype):
    a = abs(v)

    def floor_at(q):
        if q is None:
            return _log2_floor(a)
        scaled = a / Fraction(2) ** q
        n = scaled.numerator // scaled.denominator
        rest = scaled - n
        return n, (None if rest == 0 else (rest > Fraction(1, 2)) - (rest < Fraction(1, 2)))

    return _round(1 if v > 0 else -1, floor_at, mode, dtype)


def round_sqrt(a: Fraction, mode, dtype):
    def floor_at(q):
        if q is None:
            return _log2_floor(a) // 2
        scaled = a / Fraction(4) ** q  # (sqrt(a) / 2**q)**2
        n = math.isqrt(scaled.numerator // scaled.denominator)
        if scaled == n * n:
            return n, None
        half = Fraction(2 * n + 1, 2) ** 2
        return n, (scaled > half) - (scaled < half)

    return _round(1, floor_at, mode, dtype)


def same_bits(actual, expected):
    """Equal bit patterns, any NaN equal to any NaN."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    both_nan = np.isnan(actual) & np.isnan(expected)
    width = {4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
    return both_nan | (actual.view(width) == expected.view(width))
