#include "frontend/ast.h"

#include <charconv>
#include <cstdio>

namespace tegula::ast {

const char* to_string(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "**";
    case BinaryOp::MatMul: return "@";
    case BinaryOp::LShift: return "<<";
    case BinaryOp::RShift: return ">>";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::BitXor: return "^";
  }
  return "?";
}

const char* to_string(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Pos: return "+";
    case UnaryOp::Invert: return "~";
    case UnaryOp::Not: return "not";
  }
  return "?";
}

const char* to_string(CmpOp op) {
  switch (op) {
    case CmpOp::Eq: return "==";
    case CmpOp::NotEq: return "!=";
    case CmpOp::Lt: return "<";
    case CmpOp::LtE: return "<=";
    case CmpOp::Gt: return ">";
    case CmpOp::GtE: return ">=";
    case CmpOp::Is: return "is";
    case CmpOp::IsNot: return "is not";
    case CmpOp::In: return "in";
    case CmpOp::NotIn: return "not in";
  }
  return "?";
}

namespace {

// The dump is one node per line: `<label: >Kind details @line:col`, children
// indented two spaces under their parent. Labels name a child's role where the
// kind alone does not tell it (a Call's callee, an If's test...).
class Dumper {
 public:
  std::string take() { return std::move(out_); }

  void function(const FunctionDef& fn) {
    line(0, "", "FunctionDef " + fn.name, fn.loc);
    for (const ExprPtr& d : fn.decorators) expr(1, "decorator", *d);
    for (const Param& p : fn.params) {
      line(1, "", "Param " + p.name, p.loc);
      if (p.annotation) expr(2, "annotation", *p.annotation);
      if (p.default_value) expr(2, "default", *p.default_value);
    }
    if (fn.returns) expr(1, "returns", *fn.returns);
    if (!fn.docstring.empty()) out_ += "  docstring: " + quoted(fn.docstring) + "\n";
    body(1, "body", fn.body);
  }

 private:
  static std::string location(const SourceLoc& loc) {
    if (!loc.valid()) return "";
    return " @" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }

  void line(int depth, std::string_view label, const std::string& text, const SourceLoc& loc) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    if (!label.empty()) out_ += std::string(label) + ": ";
    out_ += text + location(loc) + "\n";
  }

  static std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
            out += buf;
          } else {
            out += c;
          }
      }
    }
    return out + "\"";
  }

  static std::string number(double v) {
    char buf[32];
    auto result = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
    std::string text(buf, result.ptr);
    if (text.find_first_of(".en") == std::string::npos) text += ".0";  // keep 0.0 apart from Int 0
    return text;
  }

  void expr(int depth, std::string_view label, const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name: line(depth, label, "Name " + e.name, e.loc); return;
      case ExprKind::Int:
        line(depth, label,
             e.is_unsigned ? "Int " + std::to_string(static_cast<uint64_t>(e.int_value)) + " (unsigned)"
                           : "Int " + std::to_string(e.int_value),
             e.loc);
        return;
      case ExprKind::Float: line(depth, label, "Float " + number(e.float_value), e.loc); return;
      case ExprKind::Bool: line(depth, label, e.bool_value ? "Bool True" : "Bool False", e.loc); return;
      case ExprKind::None: line(depth, label, "None", e.loc); return;
      case ExprKind::Str: line(depth, label, "Str " + quoted(e.name), e.loc); return;
      case ExprKind::JoinedStr: line(depth, label, "JoinedStr", e.loc); break;
      case ExprKind::FormattedValue:
        line(depth, label, e.name.empty() ? "FormattedValue" : "FormattedValue !" + e.name, e.loc);
        expr(depth + 1, "value", *e.children[0]);
        if (e.children[1]) expr(depth + 1, "spec", *e.children[1]);
        return;
      case ExprKind::Attribute:
        line(depth, label, "Attribute ." + e.name, e.loc);
        children(depth + 1, e);
        return;
      case ExprKind::Subscript: line(depth, label, "Subscript", e.loc); break;
      case ExprKind::Slice: {
        line(depth, label, "Slice", e.loc);
        static constexpr const char* kParts[] = {"lower", "upper", "step"};
        for (size_t i = 0; i < e.children.size() && i < 3; ++i)
          if (e.children[i]) expr(depth + 1, kParts[i], *e.children[i]);
        return;
      }
      case ExprKind::Call: {
        line(depth, label, "Call", e.loc);
        expr(depth + 1, "func", *e.children[0]);
        for (size_t i = 1; i < e.children.size(); ++i) expr(depth + 1, "arg", *e.children[i]);
        for (const Keyword& k : e.keywords) {
          line(depth + 1, "", "Keyword " + k.name, k.loc);
          expr(depth + 2, "", *k.value);
        }
        return;
      }
      case ExprKind::Binary: line(depth, label, std::string("Binary ") + to_string(e.binary_op), e.loc); break;
      case ExprKind::Unary: line(depth, label, std::string("Unary ") + to_string(e.unary_op), e.loc); break;
      case ExprKind::BoolOp:
        line(depth, label, e.bool_op == BoolOpKind::And ? "BoolOp and" : "BoolOp or", e.loc);
        break;
      case ExprKind::Compare: {
        std::string text = "Compare";
        for (CmpOp op : e.cmp_ops) text += std::string(" ") + to_string(op);
        line(depth, label, text, e.loc);
        break;
      }
      case ExprKind::IfExp:
        line(depth, label, "IfExp", e.loc);
        expr(depth + 1, "test", *e.children[0]);
        expr(depth + 1, "then", *e.children[1]);
        expr(depth + 1, "else", *e.children[2]);
        return;
      case ExprKind::Tuple: line(depth, label, "Tuple", e.loc); break;
      case ExprKind::List: line(depth, label, "List", e.loc); break;
      case ExprKind::Comprehension: line(depth, label, "Comprehension", e.loc); break;
      case ExprKind::Starred: line(depth, label, "Starred", e.loc); break;
      case ExprKind::Lambda: {
        std::string text = "Lambda";
        for (const Keyword& k : e.keywords) text += " " + k.name;
        line(depth, label, text, e.loc);
        for (const Keyword& k : e.keywords)
          if (k.value) expr(depth + 1, "default " + k.name, *k.value);
        break;
      }
      case ExprKind::NamedExpr: line(depth, label, "NamedExpr", e.loc); break;
    }
    children(depth + 1, e);
  }

  void children(int depth, const Expr& e) {
    for (const ExprPtr& child : e.children)
      if (child) expr(depth, "", *child);
  }

  void body(int depth, std::string_view label, const std::vector<StmtPtr>& stmts) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += std::string(label) + ":" + (stmts.empty() ? " (empty)" : "") + "\n";
    for (const StmtPtr& s : stmts) stmt(depth + 1, *s);
  }

  void stmt(int depth, const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Expr:
        line(depth, "", "Expr", s.loc);
        expr(depth + 1, "", *s.value);
        return;
      case StmtKind::Assign:
        line(depth, "", "Assign", s.loc);
        for (const ExprPtr& t : s.targets) expr(depth + 1, "target", *t);
        expr(depth + 1, "value", *s.value);
        return;
      case StmtKind::AugAssign:
        line(depth, "", std::string("AugAssign ") + to_string(s.aug_op) + "=", s.loc);
        expr(depth + 1, "target", *s.targets[0]);
        expr(depth + 1, "value", *s.value);
        return;
      case StmtKind::AnnAssign:
        line(depth, "", "AnnAssign", s.loc);
        expr(depth + 1, "target", *s.targets[0]);
        expr(depth + 1, "annotation", *s.annotation);
        if (s.value) expr(depth + 1, "value", *s.value);
        return;
      case StmtKind::If:
        line(depth, "", "If", s.loc);
        expr(depth + 1, "test", *s.test);
        body(depth + 1, "body", s.body);
        if (!s.orelse.empty()) body(depth + 1, "orelse", s.orelse);
        return;
      case StmtKind::For:
        line(depth, "", "For", s.loc);
        expr(depth + 1, "target", *s.targets[0]);
        expr(depth + 1, "iter", *s.value);
        body(depth + 1, "body", s.body);
        if (!s.orelse.empty()) body(depth + 1, "orelse", s.orelse);
        return;
      case StmtKind::While:
        line(depth, "", "While", s.loc);
        expr(depth + 1, "test", *s.test);
        body(depth + 1, "body", s.body);
        if (!s.orelse.empty()) body(depth + 1, "orelse", s.orelse);
        return;
      case StmtKind::With:
        line(depth, "", "With", s.loc);
        expr(depth + 1, "context", *s.value);
        body(depth + 1, "body", s.body);
        return;
      case StmtKind::Return:
        line(depth, "", "Return", s.loc);
        if (s.value) expr(depth + 1, "value", *s.value);
        return;
      case StmtKind::Assert:
        line(depth, "", "Assert", s.loc);
        expr(depth + 1, "test", *s.test);
        if (s.msg) expr(depth + 1, "msg", *s.msg);
        return;
      case StmtKind::Pass: line(depth, "", "Pass", s.loc); return;
      case StmtKind::Break: line(depth, "", "Break", s.loc); return;
      case StmtKind::Continue: line(depth, "", "Continue", s.loc); return;
      case StmtKind::Unsupported: line(depth, "", "Unsupported " + s.name, s.loc); return;
    }
  }

  std::string out_;
};

}  // namespace

std::string dump(const FunctionDef& fn) {
  Dumper dumper;
  dumper.function(fn);
  return dumper.take();
}

}  // namespace tegula::ast
