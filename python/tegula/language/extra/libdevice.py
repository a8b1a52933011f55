"""``tl.extra.libdevice``: extra elementwise math functions.

Markers, as in the rest of ``tegula.language``: the compiler decides which of
them it implements (an unsupported one is a compile error naming it). Kernels
written against ``triton.language.extra.libdevice`` resolve to the same names.
"""

from ..core import only_in_kernel as _only_in_kernel
from ..math import (  # noqa: F401  (libdevice also has the tl.math names)
    abs, ceil, cos, div_rn, erf, exp2, floor, fma, log, log2, rsqrt, sin, sqrt, sqrt_rn,
)


def exp(x):
    """``e**x``, accurate (CUDA's ``expf``): ``tl.exp`` may approximate on f32."""
    _only_in_kernel("extra.libdevice.exp")


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


# --- directed rounding (float32 and float64) -------------------------------------


def add_rn(x, y):
    """``x + y`` rounded once to nearest even."""
    _only_in_kernel("extra.libdevice.add_rn")


def add_rz(x, y):
    """``x + y`` rounded once toward zero."""
    _only_in_kernel("extra.libdevice.add_rz")


def add_rd(x, y):
    """``x + y`` rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.add_rd")


def add_ru(x, y):
    """``x + y`` rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.add_ru")


def sub_rn(x, y):
    """``x - y`` rounded once to nearest even."""
    _only_in_kernel("extra.libdevice.sub_rn")


def sub_rz(x, y):
    """``x - y`` rounded once toward zero."""
    _only_in_kernel("extra.libdevice.sub_rz")


def sub_rd(x, y):
    """``x - y`` rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.sub_rd")


def sub_ru(x, y):
    """``x - y`` rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.sub_ru")


def mul_rn(x, y):
    """``x * y`` rounded once to nearest even."""
    _only_in_kernel("extra.libdevice.mul_rn")


def mul_rz(x, y):
    """``x * y`` rounded once toward zero."""
    _only_in_kernel("extra.libdevice.mul_rz")


def mul_rd(x, y):
    """``x * y`` rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.mul_rd")


def mul_ru(x, y):
    """``x * y`` rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.mul_ru")


def div_rz(x, y):
    """``x / y`` rounded once toward zero."""
    _only_in_kernel("extra.libdevice.div_rz")


def div_rd(x, y):
    """``x / y`` rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.div_rd")


def div_ru(x, y):
    """``x / y`` rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.div_ru")


def fma_rn(x, y, z):
    """``x * y + z`` rounded once to nearest even."""
    _only_in_kernel("extra.libdevice.fma_rn")


def fma_rz(x, y, z):
    """``x * y + z`` rounded once toward zero."""
    _only_in_kernel("extra.libdevice.fma_rz")


def fma_rd(x, y, z):
    """``x * y + z`` rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.fma_rd")


def fma_ru(x, y, z):
    """``x * y + z`` rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.fma_ru")


def rcp_rn(x):
    """``1 / x`` rounded once to nearest even."""
    _only_in_kernel("extra.libdevice.rcp_rn")


def rcp_rz(x):
    """``1 / x`` rounded once toward zero."""
    _only_in_kernel("extra.libdevice.rcp_rz")


def rcp_rd(x):
    """``1 / x`` rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.rcp_rd")


def rcp_ru(x):
    """``1 / x`` rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.rcp_ru")


def sqrt_rz(x):
    """The square root rounded once toward zero."""
    _only_in_kernel("extra.libdevice.sqrt_rz")


def sqrt_rd(x):
    """The square root rounded once down (toward -inf)."""
    _only_in_kernel("extra.libdevice.sqrt_rd")


def sqrt_ru(x):
    """The square root rounded once up (toward +inf)."""
    _only_in_kernel("extra.libdevice.sqrt_ru")


# --- conversions: Triton types unsigned results as the signed integer of their width


def float2int_rn(x):
    """float32 to int32, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2int_rn")


def float2int_rz(x):
    """float32 to int32, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2int_rz")


def float2int_rd(x):
    """float32 to int32, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2int_rd")


def float2int_ru(x):
    """float32 to int32, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2int_ru")


def float2uint_rn(x):
    """float32 to uint32, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2uint_rn")


def float2uint_rz(x):
    """float32 to uint32, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2uint_rz")


def float2uint_rd(x):
    """float32 to uint32, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2uint_rd")


def float2uint_ru(x):
    """float32 to uint32, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2uint_ru")


def float2ll_rn(x):
    """float32 to int64, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ll_rn")


def float2ll_rz(x):
    """float32 to int64, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ll_rz")


def float2ll_rd(x):
    """float32 to int64, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ll_rd")


def float2ll_ru(x):
    """float32 to int64, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ll_ru")


def float2ull_rn(x):
    """float32 to uint64, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ull_rn")


def float2ull_rz(x):
    """float32 to uint64, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ull_rz")


def float2ull_rd(x):
    """float32 to uint64, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ull_rd")


def float2ull_ru(x):
    """float32 to uint64, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.float2ull_ru")


def double2float_rn(x):
    """float64 to float32, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.double2float_rn")


def double2float_rz(x):
    """float64 to float32, rounded toward zero."""
    _only_in_kernel("extra.libdevice.double2float_rz")


def double2float_rd(x):
    """float64 to float32, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.double2float_rd")


def double2float_ru(x):
    """float64 to float32, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.double2float_ru")


def double2int_rn(x):
    """float64 to int32, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2int_rn")


def double2int_rz(x):
    """float64 to int32, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2int_rz")


def double2int_rd(x):
    """float64 to int32, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2int_rd")


def double2int_ru(x):
    """float64 to int32, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2int_ru")


def double2uint_rn(x):
    """float64 to uint32, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2uint_rn")


def double2uint_rz(x):
    """float64 to uint32, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2uint_rz")


def double2uint_rd(x):
    """float64 to uint32, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2uint_rd")


def double2uint_ru(x):
    """float64 to uint32, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2uint_ru")


def double2ll_rn(x):
    """float64 to int64, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ll_rn")


def double2ll_rz(x):
    """float64 to int64, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ll_rz")


def double2ll_rd(x):
    """float64 to int64, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ll_rd")


def double2ll_ru(x):
    """float64 to int64, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ll_ru")


def double2ull_rn(x):
    """float64 to uint64, rounded to nearest even (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ull_rn")


def double2ull_rz(x):
    """float64 to uint64, rounded toward zero (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ull_rz")


def double2ull_rd(x):
    """float64 to uint64, rounded down (toward -inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ull_rd")


def double2ull_ru(x):
    """float64 to uint64, rounded up (toward +inf) (saturating, NaN -> 0)."""
    _only_in_kernel("extra.libdevice.double2ull_ru")


def int2float_rn(x):
    """int32 to float32, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.int2float_rn")


def int2float_rz(x):
    """int32 to float32, rounded toward zero."""
    _only_in_kernel("extra.libdevice.int2float_rz")


def int2float_rd(x):
    """int32 to float32, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.int2float_rd")


def int2float_ru(x):
    """int32 to float32, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.int2float_ru")


def uint2float_rn(x):
    """uint32 to float32, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.uint2float_rn")


def uint2float_rz(x):
    """uint32 to float32, rounded toward zero."""
    _only_in_kernel("extra.libdevice.uint2float_rz")


def uint2float_rd(x):
    """uint32 to float32, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.uint2float_rd")


def uint2float_ru(x):
    """uint32 to float32, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.uint2float_ru")


def ll2float_rn(x):
    """int64 to float32, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.ll2float_rn")


def ll2float_rz(x):
    """int64 to float32, rounded toward zero."""
    _only_in_kernel("extra.libdevice.ll2float_rz")


def ll2float_rd(x):
    """int64 to float32, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.ll2float_rd")


def ll2float_ru(x):
    """int64 to float32, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.ll2float_ru")


def ll2double_rn(x):
    """int64 to float64, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.ll2double_rn")


def ll2double_rz(x):
    """int64 to float64, rounded toward zero."""
    _only_in_kernel("extra.libdevice.ll2double_rz")


def ll2double_rd(x):
    """int64 to float64, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.ll2double_rd")


def ll2double_ru(x):
    """int64 to float64, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.ll2double_ru")


def ull2float_rn(x):
    """uint64 to float32, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.ull2float_rn")


def ull2float_rz(x):
    """uint64 to float32, rounded toward zero."""
    _only_in_kernel("extra.libdevice.ull2float_rz")


def ull2float_rd(x):
    """uint64 to float32, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.ull2float_rd")


def ull2float_ru(x):
    """uint64 to float32, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.ull2float_ru")


def ull2double_rn(x):
    """uint64 to float64, rounded to nearest even."""
    _only_in_kernel("extra.libdevice.ull2double_rn")


def ull2double_rz(x):
    """uint64 to float64, rounded toward zero."""
    _only_in_kernel("extra.libdevice.ull2double_rz")


def ull2double_rd(x):
    """uint64 to float64, rounded down (toward -inf)."""
    _only_in_kernel("extra.libdevice.ull2double_rd")


def ull2double_ru(x):
    """uint64 to float64, rounded up (toward +inf)."""
    _only_in_kernel("extra.libdevice.ull2double_ru")


def int2double_rn(x):
    """int32 to float64 (exact)."""
    _only_in_kernel("extra.libdevice.int2double_rn")


def uint2double_rn(x):
    """uint32 to float64 (exact)."""
    _only_in_kernel("extra.libdevice.uint2double_rn")


# --- integer bits ------------------------------------------------------------------


def clz(x):
    """Leading zero bits of an int32/int64, as int32."""
    _only_in_kernel("extra.libdevice.clz")


def popc(x):
    """Set bits of an int32/int64, as int32."""
    _only_in_kernel("extra.libdevice.popc")


def brev(x):
    """The bits of an int32/int64 in reverse order."""
    _only_in_kernel("extra.libdevice.brev")


def ffs(x):
    """The position (from 1) of the lowest set bit; 0 for 0."""
    _only_in_kernel("extra.libdevice.ffs")


def byte_perm(x, y, s):
    """Byte i of the result is byte ``(s >> 4i) & 7`` of the eight bytes ``y:x``."""
    _only_in_kernel("extra.libdevice.byte_perm")


def mulhi(x, y):
    """The high half of the full product."""
    _only_in_kernel("extra.libdevice.mulhi")


def mul24(x, y):
    """The low 32 bits of the product of the low 24 bits."""
    _only_in_kernel("extra.libdevice.mul24")


def hadd(x, y):
    """``(x + y) >> 1`` without overflow."""
    _only_in_kernel("extra.libdevice.hadd")


def rhadd(x, y):
    """``(x + y + 1) >> 1`` without overflow."""
    _only_in_kernel("extra.libdevice.rhadd")


def sad(x, y, z):
    """``|x - y| + z``."""
    _only_in_kernel("extra.libdevice.sad")


# --- bits of floats --------------------------------------------------------------


def float_as_int(x):
    """The bits of a float32 as an int32."""
    _only_in_kernel("extra.libdevice.float_as_int")


def float_as_uint(x):
    """The bits of a float32 (typed int32, as Triton)."""
    _only_in_kernel("extra.libdevice.float_as_uint")


def int_as_float(x):
    """An int32's bits as a float32."""
    _only_in_kernel("extra.libdevice.int_as_float")


def uint_as_float(x):
    """A uint32's bits as a float32."""
    _only_in_kernel("extra.libdevice.uint_as_float")


def double_as_longlong(x):
    """The bits of a float64 as an int64."""
    _only_in_kernel("extra.libdevice.double_as_longlong")


def longlong_as_double(x):
    """An int64's bits as a float64."""
    _only_in_kernel("extra.libdevice.longlong_as_double")


def double2hiint(x):
    """The high 32 bits of a float64."""
    _only_in_kernel("extra.libdevice.double2hiint")


def double2loint(x):
    """The low 32 bits of a float64."""
    _only_in_kernel("extra.libdevice.double2loint")


def hiloint2double(hi, lo):
    """The float64 of high and low 32-bit words."""
    _only_in_kernel("extra.libdevice.hiloint2double")


def llrint(x):
    """Rounded to nearest even, as an int64."""
    _only_in_kernel("extra.libdevice.llrint")


def llround(x):
    """Rounded half away from zero, as an int64."""
    _only_in_kernel("extra.libdevice.llround")


def ilogb(x):
    """The binary exponent as an int32 (0 and NaN: INT_MIN, inf: INT_MAX)."""
    _only_in_kernel("extra.libdevice.ilogb")


def logb(x):
    """The binary exponent as a float."""
    _only_in_kernel("extra.libdevice.logb")


def ldexp(x, n):
    """``x * 2**n``, rounded once."""
    _only_in_kernel("extra.libdevice.ldexp")


def scalbn(x, n):
    """``x * 2**n`` (as ldexp)."""
    _only_in_kernel("extra.libdevice.scalbn")


def fdim(x, y):
    """``x - y`` where positive, else +0."""
    _only_in_kernel("extra.libdevice.fdim")


def remainder(x, y):
    """``x - n y`` with n the integer nearest ``x / y`` (IEEE remainder)."""
    _only_in_kernel("extra.libdevice.remainder")


def saturatef(x):
    """``x`` clamped to [0, 1]; NaN -> 0 (float32)."""
    _only_in_kernel("extra.libdevice.saturatef")


def rcp64h(x):
    """An approximate ``1 / x`` (float64, about 20 bits on CUDA)."""
    _only_in_kernel("extra.libdevice.rcp64h")


# --- special functions -----------------------------------------------------------


def rsqrt_rn(x):
    """``1 / sqrt(x)`` rounded once (float32)."""
    _only_in_kernel("extra.libdevice.rsqrt_rn")


def sinpi(x):
    """``sin(pi x)``."""
    _only_in_kernel("extra.libdevice.sinpi")


def cospi(x):
    """``cos(pi x)``."""
    _only_in_kernel("extra.libdevice.cospi")


def erfinv(x):
    """Inverse error function."""
    _only_in_kernel("extra.libdevice.erfinv")


def erfcinv(x):
    """Inverse complementary error function."""
    _only_in_kernel("extra.libdevice.erfcinv")


def erfcx(x):
    """Scaled complementary error function ``exp(x**2) erfc(x)``."""
    _only_in_kernel("extra.libdevice.erfcx")


def normcdf(x):
    """Standard normal cumulative distribution function."""
    _only_in_kernel("extra.libdevice.normcdf")


def normcdfinv(x):
    """Inverse of ``normcdf``."""
    _only_in_kernel("extra.libdevice.normcdfinv")


def tgamma(x):
    """The gamma function."""
    _only_in_kernel("extra.libdevice.tgamma")


def j0(x):
    """Bessel function of the first kind, order 0."""
    _only_in_kernel("extra.libdevice.j0")


def j1(x):
    """Bessel function of the first kind, order 1."""
    _only_in_kernel("extra.libdevice.j1")


def jn(n, x):
    """Bessel function of the first kind, order n."""
    _only_in_kernel("extra.libdevice.jn")


def y0(x):
    """Bessel function of the second kind, order 0."""
    _only_in_kernel("extra.libdevice.y0")


def y1(x):
    """Bessel function of the second kind, order 1."""
    _only_in_kernel("extra.libdevice.y1")


def yn(n, x):
    """Bessel function of the second kind, order n."""
    _only_in_kernel("extra.libdevice.yn")


def cyl_bessel_i0(x):
    """Modified Bessel function of the first kind, order 0."""
    _only_in_kernel("extra.libdevice.cyl_bessel_i0")


def cyl_bessel_i1(x):
    """Modified Bessel function of the first kind, order 1."""
    _only_in_kernel("extra.libdevice.cyl_bessel_i1")


def rcbrt(x):
    """``1 / cbrt(x)``."""
    _only_in_kernel("extra.libdevice.rcbrt")


def rhypot(x, y):
    """``1 / hypot(x, y)``."""
    _only_in_kernel("extra.libdevice.rhypot")


def norm3d(x, y, z):
    """``sqrt(x**2 + y**2 + z**2)`` without overflow."""
    _only_in_kernel("extra.libdevice.norm3d")


def rnorm3d(x, y, z):
    """``1 / norm3d(x, y, z)``."""
    _only_in_kernel("extra.libdevice.rnorm3d")


def norm4d(x, y, z, w):
    """The norm of four values without overflow."""
    _only_in_kernel("extra.libdevice.norm4d")


def rnorm4d(x, y, z, w):
    """``1 / norm4d(x, y, z, w)``."""
    _only_in_kernel("extra.libdevice.rnorm4d")


# --- fast approximations (float32): CUDA's intrinsics; the accurate function on the CPU


def fast_expf(x):
    """Fast ``exp``."""
    _only_in_kernel("extra.libdevice.fast_expf")


def fast_exp10f(x):
    """Fast ``10 ** x``."""
    _only_in_kernel("extra.libdevice.fast_exp10f")


def fast_logf(x):
    """Fast ``log``."""
    _only_in_kernel("extra.libdevice.fast_logf")


def fast_log2f(x):
    """Fast ``log2``."""
    _only_in_kernel("extra.libdevice.fast_log2f")


def fast_log10f(x):
    """Fast ``log10``."""
    _only_in_kernel("extra.libdevice.fast_log10f")


def fast_sinf(x):
    """Fast ``sin``."""
    _only_in_kernel("extra.libdevice.fast_sinf")


def fast_cosf(x):
    """Fast ``cos``."""
    _only_in_kernel("extra.libdevice.fast_cosf")


def fast_tanf(x):
    """Fast ``tan``."""
    _only_in_kernel("extra.libdevice.fast_tanf")


def fast_powf(x, y):
    """Fast ``x ** y``."""
    _only_in_kernel("extra.libdevice.fast_powf")


def fast_dividef(x, y):
    """Fast ``x / y`` (within 2 ulp)."""
    _only_in_kernel("extra.libdevice.fast_dividef")
