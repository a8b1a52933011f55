#include <cmath>
#include <limits>

#include "frontend/const_value.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

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
    if (kind == Kind::Float || o.kind == Kind::Float) return as_double() == o.as_double();
    return i == o.i && is_unsigned == o.is_unsigned;
  }
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Str: return s == o.s;
    case Kind::None: return true;
    case Kind::DType:
      return type_form == o.type_form && (type_form == TypeForm::Void || type_form == TypeForm::Constexpr ||
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
      std::string element = v.pointer ? std::string("pointer<") + ir::to_string(v.dtype) + ">"
                                      : std::string("tl.") + ir::to_string(v.dtype);
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

ConstValue checked(__int128 v, const SourceLoc& loc) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
    error_at(loc, Diag::ConstantArithmetic, "constant expression overflows 64-bit integers",
             "kernel constants must fit in int64");
  return ConstValue::integer(static_cast<int64_t>(v));
}

// Python floor division and modulo on integers.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

std::optional<ConstValue> const_binary(ast::BinaryOp op, const ConstValue& a, const ConstValue& b,
                                       const SourceLoc& loc) {
  using K = ConstValue::Kind;
  using ast::BinaryOp;
  if (a.kind == K::Str && b.kind == K::Str && op == BinaryOp::Add) return ConstValue::string(a.s + b.s);
  if (!a.is_numeric() || !b.is_numeric()) return std::nullopt;
  bool both_int = a.kind != K::Float && b.kind != K::Float;
  if (both_int) {
    __int128 x = a.i, y = b.i;
    switch (op) {
      case BinaryOp::Add: return checked(x + y, loc);
      case BinaryOp::Sub: return checked(x - y, loc);
      case BinaryOp::Mul: return checked(x * y, loc);
      case BinaryOp::Div:
        if (b.i == 0) error_at(loc, Diag::ConstantArithmetic, "division by zero in a constant expression");
        return ConstValue::real(static_cast<double>(a.i) / static_cast<double>(b.i));
      case BinaryOp::FloorDiv:
        if (b.i == 0) error_at(loc, Diag::ConstantArithmetic, "integer division by zero in a constant expression");
        if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) return checked(-x, loc);
        return ConstValue::integer(floor_div(a.i, b.i));
      case BinaryOp::Mod:
        if (b.i == 0) error_at(loc, Diag::ConstantArithmetic, "integer modulo by zero in a constant expression");
        if (b.i == -1) return ConstValue::integer(0);
        return ConstValue::integer(floor_mod(a.i, b.i));
      case BinaryOp::Pow: {
        if (b.i < 0) return ConstValue::real(std::pow(static_cast<double>(a.i), static_cast<double>(b.i)));
        __int128 r = 1;
        for (int64_t k = 0; k < b.i; ++k) {
          r *= x;
          if (r > std::numeric_limits<int64_t>::max() || r < std::numeric_limits<int64_t>::min())
            return checked(r, loc);
        }
        return checked(r, loc);
      }
      case BinaryOp::LShift:
        if (b.i < 0) error_at(loc, Diag::ConstantArithmetic, "negative shift count in a constant expression");
        if (b.i >= 64) return checked(a.i == 0 ? 0 : (__int128{1} << 64), loc);
        return checked(x << b.i, loc);
      case BinaryOp::RShift:
        if (b.i < 0) error_at(loc, Diag::ConstantArithmetic, "negative shift count in a constant expression");
        return ConstValue::integer(b.i >= 64 ? (a.i < 0 ? -1 : 0) : (a.i >> b.i));
      case BinaryOp::BitAnd: {
        ConstValue r = ConstValue::integer(a.i & b.i);
        if (a.kind == K::Bool && b.kind == K::Bool) r.kind = K::Bool;
        return r;
      }
      case BinaryOp::BitOr: {
        ConstValue r = ConstValue::integer(a.i | b.i);
        if (a.kind == K::Bool && b.kind == K::Bool) r.kind = K::Bool;
        return r;
      }
      case BinaryOp::BitXor: {
        ConstValue r = ConstValue::integer(a.i ^ b.i);
        if (a.kind == K::Bool && b.kind == K::Bool) r.kind = K::Bool;
        return r;
      }
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
      return ConstValue::real(std::floor(x / y));
    case BinaryOp::Mod: {
      if (y == 0.0) error_at(loc, Diag::ConstantArithmetic, "float modulo by zero in a constant expression");
      double r = std::fmod(x, y);
      if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
      return ConstValue::real(r);
    }
    case BinaryOp::Pow: return ConstValue::real(std::pow(x, y));
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
      return checked(-static_cast<__int128>(a.i), loc);
    case ast::UnaryOp::Pos:
      if (a.kind == K::Bool) return ConstValue::integer(a.i);
      return a;
    case ast::UnaryOp::Invert:
      if (a.kind == K::Float) return std::nullopt;
      return ConstValue::integer(~a.i);
    default: return std::nullopt;
  }
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
  if (floats) return cmp(a.as_double(), b.as_double());
  return cmp(a.i, b.i);
}

}  // namespace tegula::frontend
