// Triton's tensor operator methods (see builtins_operators.h).
#include "frontend/builtins_operators.h"

#include <map>

#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

using ast::BinaryOp;
using ast::CmpOp;
using ast::UnaryOp;

const std::map<std::string, BinaryOp>& binary_methods() {
  static const std::map<std::string, BinaryOp> m = {
      {"add", BinaryOp::Add},         {"sub", BinaryOp::Sub},       {"mul", BinaryOp::Mul},
      {"truediv", BinaryOp::Div},     {"floordiv", BinaryOp::FloorDiv}, {"mod", BinaryOp::Mod},
      {"and", BinaryOp::BitAnd},      {"or", BinaryOp::BitOr},      {"xor", BinaryOp::BitXor},
      {"lshift", BinaryOp::LShift},   {"rshift", BinaryOp::RShift},
  };
  return m;
}

const std::map<std::string, CmpOp>& compare_methods() {
  static const std::map<std::string, CmpOp> m = {
      {"eq", CmpOp::Eq}, {"ne", CmpOp::NotEq}, {"lt", CmpOp::Lt},
      {"le", CmpOp::LtE}, {"gt", CmpOp::Gt},   {"ge", CmpOp::GtE},
  };
  return m;
}

Symbol truth(Lowerer& l, const Symbol& s, const SourceLoc& loc) {
  ir::ValueId v = l.to_value(s, loc, "an operand of logical_and/logical_or");
  return Symbol::of(l.cast(v, ir::Scalar::I1, loc));
}

}  // namespace

Symbol lower_operator_method(Lowerer& l, const CallArgs& c, const std::string& n) {
  const Symbol& self = c.positional.at(0);
  if (n == "__neg__" || n == "__invert__" || n == "__not__" || n == "__pos__") {
    BoundArgs a(n, {"self"}, c);
    UnaryOp op = n == "__neg__" ? UnaryOp::Neg : n == "__invert__" ? UnaryOp::Invert
                 : n == "__not__" ? UnaryOp::Not : UnaryOp::Pos;
    return l.unary(op, self, c.loc);
  }
  BoundArgs a(n, {"self", "other"}, c);
  const Symbol& other = a.get("other");
  if (n == "logical_and" || n == "logical_or")
    return l.binary(n == "logical_and" ? BinaryOp::BitAnd : BinaryOp::BitOr, truth(l, self, c.loc),
                    truth(l, other, a.loc("other")), c.loc);
  // "__radd__" -> ("add", reflected)
  bool reflected = n.size() > 5 && n[2] == 'r' && !binary_methods().count(n.substr(2, n.size() - 4));
  std::string base = n.substr(reflected ? 3 : 2, n.size() - (reflected ? 5 : 4));
  if (auto it = binary_methods().find(base); it != binary_methods().end())
    return reflected ? l.binary(it->second, other, self, c.loc) : l.binary(it->second, self, other, c.loc);
  if (auto it = compare_methods().find(base); it != compare_methods().end())
    return reflected ? l.compare(it->second, other, self, c.loc) : l.compare(it->second, self, other, c.loc);
  TEGULA_ASSERT(false, "an operator method without a meaning: " + n);
}

}  // namespace tegula::frontend
