#include <cmath>
#include <limits>

#include "frontend/const_value.h"
#include "frontend/value_bounds.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

// A number as Python compares an int with a float: exactly. A double holds
// neither 2**63 - 1 nor most other ints above 2**53, so comparing in double
// made `2**63 - 1 == 2.0**63` true; long double holds every int64, uint64
// and double (64 mantissa bits on x86-64, 113 on AArch64).
static_assert(std::numeric_limits<long double>::digits >= 64, "long double must hold every 64-bit integer");
long double exact_value(const ConstValue& v) {
  if (v.kind == ConstValue::Kind::Float) return v.f;
  return v.is_unsigned ? static_cast<long double>(static_cast<uint64_t>(v.i)) : static_cast<long double>(v.i);
}

}  // namespace

bool ConstValue::truthy() const {
  switch (kind) {
    case Kind::Int:
    case Kind::Bool: return i != 0;
    case Kind::Float: return f != 0.0;
    case Kind::Str: return !s.empty();
    case Kind::None: return false;
    case Kind::DType: return true;
  }
  return false;
}

bool ConstValue::operator==(const ConstValue& o) const {
  if (is_numeric() && o.is_numeric()) {
    if (kind == Kind::Float || o.kind == Kind::Float) return exact_value(*this) == exact_value(o);
    return i == o.i && is_unsigned == o.is_unsigned;
  }
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Str: return s == o.s;
    case Kind::None: return true;
    case Kind::DType:
      if (type_form == TypeForm::Constexpr) return o.type_form == TypeForm::Constexpr && constexpr_of == o.constexpr_of;
      return type_form == o.type_form && (type_form == TypeForm::Void ||
                                          (dtype == o.dtype && pointer == o.pointer && shape == o.shape));
    default: return false;
  }
}

std::string to_string(const ConstValue& v) {
  switch (v.kind) {
    case ConstValue::Kind::Int:
      return v.is_unsigned ? std::to_string(static_cast<uint64_t>(v.i)) : std::to_string(v.i);
    case ConstValue::Kind::Bool: return v.i ? "True" : "False";
    case ConstValue::Kind::Float: {
      if (std::isnan(v.f)) return "nan";
      if (std::isinf(v.f)) return v.f > 0 ? "inf" : "-inf";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v.f);
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case ConstValue::Kind::Str: return "'" + v.s + "'";
    case ConstValue::Kind::None: return "None";
    case ConstValue::Kind::DType: {
      if (v.type_form == ConstValue::TypeForm::Void) return "tl.void";
      if (v.type_form == ConstValue::TypeForm::Constexpr) return "tl.constexpr_type";
      // As the program names them: tl.float32, and Triton's pointer<fp32>.
      std::string element = v.pointer ? std::string("pointer<") + ir::scalar_info(v.dtype).short_name + ">"
                                      : std::string("tl.") + ir::scalar_info(v.dtype).tl_name;
      if (v.type_form == ConstValue::TypeForm::Scalar) return element;
      std::string dims;
      for (int64_t d : v.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      return "tl.block_type(" + element + ", [" + dims + "])";
    }
  }
  return "?";
}

const char* kind_name(const ConstValue& v) {
  switch (v.kind) {
    case ConstValue::Kind::Int: return "int";
    case ConstValue::Kind::Float: return "float";
    case ConstValue::Kind::Bool: return "bool";
    case ConstValue::Kind::Str: return "str";
    case ConstValue::Kind::None: return "NoneType";
    case ConstValue::Kind::DType: return "dtype";
  }
  return "?";
}

namespace {

// Integer constants are Python ints within int64 or uint64 (Triton types
// those above INT64_MAX uint64): arithmetic runs exactly in 128 bits and the
// result must land back in that range.
constexpr __int128 kUint64Max = static_cast<__int128>(std::numeric_limits<uint64_t>::max());

__int128 wide(const ConstValue& v) {
  return v.is_unsigned ? static_cast<__int128>(static_cast<uint64_t>(v.i)) : static_cast<__int128>(v.i);
}

ConstValue checked(__int128 v, const SourceLoc& loc) {
  if (v > kUint64Max || v < std::numeric_limits<int64_t>::min())
    error_at(loc, Diag::ConstantArithmetic, "constant expression overflows 64-bit integers",
             "kernel constants must fit in int64 (or, above it, in uint64)");
  ConstValue c = ConstValue::integer(static_cast<int64_t>(static_cast<uint64_t>(v)));
  c.is_unsigned = v > std::numeric_limits<int64_t>::max();
  return c;
}

// Python floor division and modulo on integers.
__int128 floor_div(__int128 a, __int128 b) {
  __int128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
__int128 floor_mod(__int128 a, __int128 b) {
  __int128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's float `//` (float_floor_div in CPython's floatobject.c): from
// fmod, so 1.0 // 0.1 is 9.0, not floor(1.0 / 0.1) = 10.0.
double python_float_floordiv(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0 && ((y < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, x / y);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

}  // namespace

std::optional<ConstValue> const_binary(ast::BinaryOp op, const ConstValue& a, const ConstValue& b,
                                       const SourceLoc& loc) {
  using K = ConstValue::Kind;
  using ast::BinaryOp;
  if (a.kind == K::Str && b.kind == K::Str && op == BinaryOp::Add) {
    check_string_length(a.s.size() + b.s.size(), loc);
    return ConstValue::string(a.s + b.s);
  }
  if (!a.is_numeric() || !b.is_numeric()) return std::nullopt;
  bool both_int = a.kind != K::Float && b.kind != K::Float;
  if (both_int) {
    __int128 x = wide(a), y = wide(b);
    auto bits = [&](__int128 r) {  // & | ^ of two bools stay bool
      ConstValue c = checked(r, loc);
      if (a.kind == K::Bool && b.kind == K::Bool) c.kind = K::Bool;
      return c;
    };
    switch (op) {
      case BinaryOp::Add: return checked(x + y, loc);
      case BinaryOp::Sub: return checked(x - y, loc);
      case BinaryOp::Mul: return checked(x * y, loc);
      case BinaryOp::Div:
        if (y == 0) error_at(loc, Diag::ConstantArithmetic, "division by zero in a constant expression");
        return ConstValue::real(static_cast<double>(x) / static_cast<double>(y));
      case BinaryOp::FloorDiv:
        if (y == 0) error_at(loc, Diag::ConstantArithmetic, "integer division by zero in a constant expression");
        return checked(floor_div(x, y), loc);
      case BinaryOp::Mod:
        if (y == 0) error_at(loc, Diag::ConstantArithmetic, "integer modulo by zero in a constant expression");
        return checked(floor_mod(x, y), loc);
      case BinaryOp::Pow: {
        if (y < 0 && x == 0)
          error_at(loc, Diag::ConstantArithmetic, "0 cannot be raised to a negative power in a constant expression");
        if (y < 0) return ConstValue::real(std::pow(static_cast<double>(x), static_cast<double>(y)));
        __int128 r = 1;
        for (__int128 k = 0; k < y; ++k) {
          r *= x;
          if (r > kUint64Max || r < std::numeric_limits<int64_t>::min()) return checked(r, loc);
          if (r == 0 || r == 1) break;  // 0 and 1 stay; -1 alternates (handled below)
          if (r == -1) return checked((y - k - 1) % 2 == 0 ? -1 : 1, loc);
        }
        return checked(r, loc);
      }
      case BinaryOp::LShift:
        if (y < 0) error_at(loc, Diag::ConstantArithmetic, "negative shift count in a constant expression");
        if (y >= 64) return checked(x == 0 ? 0 : (__int128{1} << 64), loc);
        return checked(x * (__int128{1} << static_cast<int>(y)), loc);
      case BinaryOp::RShift:
        if (y < 0) error_at(loc, Diag::ConstantArithmetic, "negative shift count in a constant expression");
        return checked(y >= 127 ? (x < 0 ? -1 : 0) : (x >> static_cast<int>(y)), loc);
      case BinaryOp::BitAnd: return bits(x & y);
      case BinaryOp::BitOr: return bits(x | y);
      case BinaryOp::BitXor: return bits(x ^ y);
      case BinaryOp::MatMul: return std::nullopt;
    }
    return std::nullopt;
  }
  double x = a.as_double(), y = b.as_double();
  switch (op) {
    case BinaryOp::Add: return ConstValue::real(x + y);
    case BinaryOp::Sub: return ConstValue::real(x - y);
    case BinaryOp::Mul: return ConstValue::real(x * y);
    case BinaryOp::Div:
      if (y == 0.0) error_at(loc, Diag::ConstantArithmetic, "float division by zero in a constant expression");
      return ConstValue::real(x / y);
    case BinaryOp::FloorDiv:
      if (y == 0.0) error_at(loc, Diag::ConstantArithmetic, "float floor division by zero in a constant expression");
      return ConstValue::real(python_float_floordiv(x, y));
    case BinaryOp::Mod: {
      if (y == 0.0) error_at(loc, Diag::ConstantArithmetic, "float modulo by zero in a constant expression");
      double r = std::fmod(x, y);
      if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
      if (r == 0.0) r = std::copysign(0.0, y);  // Python's zero takes the divisor's sign: -1 % 0.5 is 0.0
      return ConstValue::real(r);
    }
    case BinaryOp::Pow: {
      // Where Python raises, so does the kernel (as Triton's constexpr
      // arithmetic, which is Python's): no inf, NaN or complex stands in.
      if (x == 0.0 && y < 0.0)
        error_at(loc, Diag::ConstantArithmetic, "0.0 cannot be raised to a negative power in a constant expression");
      if (x < 0.0 && std::isfinite(x) && std::isfinite(y) && y != std::trunc(y))
        error_at(loc, Diag::ConstantArithmetic,
                 "a negative number raised to a fractional power is a complex number, which a kernel cannot hold");
      double r = std::pow(x, y);
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
        error_at(loc, Diag::ConstantArithmetic, "the constant expression overflows a float (Python: OverflowError)");
      return ConstValue::real(r);
    }
    default: return std::nullopt;
  }
}

std::optional<ConstValue> const_unary(ast::UnaryOp op, const ConstValue& a, const SourceLoc& loc) {
  using K = ConstValue::Kind;
  if (op == ast::UnaryOp::Not) return ConstValue::boolean(!a.truthy());
  if (!a.is_numeric()) return std::nullopt;
  switch (op) {
    case ast::UnaryOp::Neg:
      if (a.kind == K::Float) return ConstValue::real(-a.f);
      return checked(-wide(a), loc);
    case ast::UnaryOp::Pos:
      if (a.kind == K::Bool) return ConstValue::integer(a.i);
      return a;
    case ast::UnaryOp::Invert:
      if (a.kind == K::Float) return std::nullopt;
      return checked(~wide(a), loc);
    default: return std::nullopt;
  }
}

ConstValue const_to_int(const ConstValue& a, const SourceLoc& loc) {
  if (a.kind != ConstValue::Kind::Float) {  // an int as it is, a bool as 0 or 1
    ConstValue c = a;
    c.kind = ConstValue::Kind::Int;
    return c;
  }
  // Python's words: OverflowError for the infinities, ValueError for NaN.
  if (std::isnan(a.f))
    error_at(loc, Diag::ConstantArithmetic, "cannot convert float NaN to integer",
             "test for NaN first: `x != x` is true only for NaN");
  if (std::isinf(a.f)) error_at(loc, Diag::ConstantArithmetic, "cannot convert float infinity to integer");
  double t = std::trunc(a.f);
  if (t < -0x1p63 || t >= 0x1p64)
    error_at(loc, Diag::ConstantArithmetic, "cannot convert " + to_string(a) + " to an integer: it does not fit in 64 bits",
             "kernel constants must fit in int64 (or, above it, in uint64)");
  return checked(t >= 0x1p63 ? static_cast<__int128>(static_cast<uint64_t>(t)) : static_cast<__int128>(t), loc);
}

ConstValue const_abs(const ConstValue& a, const SourceLoc& loc) {
  if (a.kind == ConstValue::Kind::Float) return ConstValue::real(std::fabs(a.f));
  __int128 x = wide(a);
  return checked(x < 0 ? -x : x, loc);  // a bool becomes an int, as in Python
}

std::optional<ConstValue> const_compare(ast::CmpOp op, const ConstValue& a, const ConstValue& b) {
  using ast::CmpOp;
  switch (op) {
    case CmpOp::Eq: return ConstValue::boolean(a == b);
    case CmpOp::NotEq: return ConstValue::boolean(!(a == b));
    case CmpOp::Is: return ConstValue::boolean(a.kind == b.kind && a == b);
    case CmpOp::IsNot: return ConstValue::boolean(!(a.kind == b.kind && a == b));
    default: break;
  }
  if (a.kind == ConstValue::Kind::Str && b.kind == ConstValue::Kind::Str) {
    int c = a.s.compare(b.s);
    switch (op) {
      case CmpOp::Lt: return ConstValue::boolean(c < 0);
      case CmpOp::LtE: return ConstValue::boolean(c <= 0);
      case CmpOp::Gt: return ConstValue::boolean(c > 0);
      case CmpOp::GtE: return ConstValue::boolean(c >= 0);
      default: return std::nullopt;
    }
  }
  if (!a.is_numeric() || !b.is_numeric()) return std::nullopt;
  bool floats = a.kind == ConstValue::Kind::Float || b.kind == ConstValue::Kind::Float;
  auto cmp = [&](auto x, auto y) -> std::optional<ConstValue> {
    switch (op) {
      case CmpOp::Lt: return ConstValue::boolean(x < y);
      case CmpOp::LtE: return ConstValue::boolean(x <= y);
      case CmpOp::Gt: return ConstValue::boolean(x > y);
      case CmpOp::GtE: return ConstValue::boolean(x >= y);
      default: return std::nullopt;
    }
  };
  if (floats) return cmp(exact_value(a), exact_value(b));
  return cmp(wide(a), wide(b));
}

}  // namespace tegula::frontend
