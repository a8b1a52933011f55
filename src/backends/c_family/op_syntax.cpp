#include "backends/c_family/op_syntax.h"

#include <iterator>
#include <variant>

#include "backends/c_family/spelling.h"
#include "support/diagnostic.h"

namespace tegula::backends::c_family {

using ir::OpKind;
using ir::Scalar;

namespace {

// One dialect's column group of an op_syntax.def row.
struct Forms {
  const char* on_float;
  const char* on_int;
  const char* on_bool;  // i1, read as integers modulo 2
};

struct SyntaxRow {
  OpKind kind;
  Forms cpu;
  Forms cuda;
};

constexpr SyntaxRow kSyntax[] = {
#define SYNTAX(kind, cpu_float, cpu_int, cpu_bool, cuda_float, cuda_int, cuda_bool) \
  {OpKind::kind, {cpu_float, cpu_int, cpu_bool}, {cuda_float, cuda_int, cuda_bool}},
#include "backends/c_family/op_syntax.def"
#undef SYNTAX
};

// `form` with its placeholders (op_syntax.def) filled in; `operands` are in
// the compute type of `result`.
std::string substitute(Dialect dialect, std::string_view form, const std::vector<std::string>& operands,
                       Scalar result, const ir::Op& op) {
  std::string compute = compute_type(result, dialect);
  bool single = compute == "float";
  std::string out;
  for (size_t i = 0; i < form.size(); ++i) {
    if (form[i] != '$' || i + 1 >= form.size()) {
      out.push_back(form[i]);
      continue;
    }
    char c = form[++i];
    if (c == 'T') {
      out += scalar_type(result, dialect);
    } else if (c == 'C') {
      out += compute;
    } else if (c == 'f') {
      out += single ? "f" : "";
    } else if (c == 'r') {
      out += single ? "f" : "d";
    } else if (c == 'm') {
      out += std::get<std::string>(*op.attr("rounding"));  // the verifier checked it (rule Rounded)
    } else {
      size_t k = static_cast<size_t>(c - '0');
      TEGULA_ASSERT(k < operands.size(), "operand placeholder out of range");
      out += operands[k];
    }
  }
  return out;
}

// Whether min/max propagate NaN: the optional attribute `propagate_nan`
// ("all" or a non-zero integer). Without it they return the non-NaN operand.
bool propagates_nan(const ir::Op& op) {
  const ir::Attr* a = op.attr("propagate_nan");
  if (a == nullptr) return false;
  if (std::holds_alternative<std::string>(*a)) return std::get<std::string>(*a) == "all";
  if (std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a) != 0;
  return false;
}

std::string arithmetic_expr(Dialect dialect, const ir::Op& op, Scalar s, const std::vector<std::string>& operands,
                            const char* form) {
  if (form == nullptr && ir::is_float(s) && (op.kind == OpKind::Min || op.kind == OpKind::Max) && propagates_nan(op))
    form = op.kind == OpKind::Min ? "tg_fmin_nan($0, $1)" : "tg_fmax_nan($0, $1)";
  if (form == nullptr) form = op_form(dialect, op.kind, s);
  // The verifier admits only the element types each row covers.
  TEGULA_ASSERT(form != nullptr, std::string("no C-family form for `") + ir::name(op.kind) + "` on " + ir::to_string(s));
  std::vector<std::string> computed;
  for (const std::string& e : operands) computed.push_back(to_compute(s, e));
  return from_compute(s, substitute(dialect, form, computed, s, op));
}

const char* cmp_operator(const ir::Op& op) {
  static constexpr const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static constexpr const char* kOperators[] = {"==", "!=", "<", "<=", ">", ">="};
  const ir::Attr* a = op.attr("pred");
  TEGULA_ASSERT(a != nullptr, "cmp without pred");
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == kNames[i]) return kOperators[i];
    if (std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) == static_cast<int64_t>(i)) return kOperators[i];
  }
  TEGULA_ASSERT(false, "unknown cmp predicate");
}

// Pointers compare their addresses.
std::string cmp_expr(Dialect dialect, const ir::Op& op, const ir::Type& t, const std::vector<std::string>& operands) {
  std::string a = operands[0], b = operands[1];
  if (t.is_pointer()) {
    a = "reinterpret_cast<" + address_type(dialect) + ">(" + a + ")";
    b = "reinterpret_cast<" + address_type(dialect) + ">(" + b + ")";
  } else {
    a = to_compute(t.scalar, a);
    b = to_compute(t.scalar, b);
  }
  return a + " " + cmp_operator(op) + " " + b;
}

// Through the address; CUDA spells out the sign extension of a signed integer.
std::string pointer_cast(Dialect dialect, const ir::Type& from, const ir::Type& to, const std::string& x) {
  std::string address = address_type(dialect);
  if (to.is_pointer() && from.is_pointer()) return "reinterpret_cast<" + element_type(to, dialect) + ">(" + x + ")";
  if (to.is_pointer()) {
    std::string extend = dialect == Dialect::Cuda && ir::is_signed(from.scalar) ? "(long long)" : "";
    return "reinterpret_cast<" + element_type(to, dialect) + ">((" + address + ")(" + extend + x + "))";
  }
  if (to.scalar == Scalar::I1) return x + " != nullptr";
  return "(" + scalar_type(to.scalar, dialect) + ")reinterpret_cast<" + address + ">(" + x + ")";
}

}  // namespace

const char* op_form(Dialect dialect, OpKind kind, Scalar result) {
  for (const SyntaxRow& row : kSyntax) {
    if (row.kind != kind) continue;
    const Forms& forms = dialect == Dialect::Cpu ? row.cpu : row.cuda;
    return result == Scalar::I1 ? forms.on_bool : ir::is_float(result) ? forms.on_float : forms.on_int;
  }
  return nullptr;
}

std::string elementwise_expr(Dialect dialect, const ir::Function& fn, const ir::Op& op,
                             const std::vector<std::string>& operands, const char* form) {
  Scalar s = fn.type(op.results[0]).scalar;
  switch (op.kind) {
    case OpKind::Cmp: return cmp_expr(dialect, op, fn.type(op.operands[0]), operands);
    case OpKind::Select: return operands[0] + " ? " + operands[1] + " : " + operands[2];
    // Its facts were used by the analyses before code generation.
    case OpKind::Hint: return operands[0];
    default: return arithmetic_expr(dialect, op, s, operands, form);
  }
}

std::optional<std::string> common_cast(Dialect dialect, const ir::Type& from, const ir::Type& to,
                                       const std::string& x) {
  if (to.is_pointer() || from.is_pointer()) return pointer_cast(dialect, from, to, x);
  Scalar s = from.scalar, d = to.scalar;
  std::string dt = scalar_type(d, dialect);
  if (s == d) return x;
  if (d == Scalar::I1) return to_compute(s, x) + " != 0";
  if (!ir::is_integer(s)) return std::nullopt;
  if (ir::is_integer(d) || d == Scalar::F32 || d == Scalar::F64) return "(" + dt + ")" + x;
  // Integers beyond float's 24 bits are far beyond fp8's range: one float rounding is enough.
  if (ir::is_fp8(d)) return from_compute(d, "(float)" + x);
  // Every integer below 65520 is exact in float and every larger one
  // overflows f16, so one rounding through float is exact.
  if (d == Scalar::F16) return "tg_f32_to_f16((float)" + x + ")";
  // bf16: through double (exact up to 32 bits), or through float rounding to odd.
  if (ir::bit_width(s) <= 32) return "tg_f64_to_bf16((double)" + x + ")";
  return ir::is_signed(s) ? "tg_f32_to_bf16(tg_i64_to_f32_odd(" + x + "))"
                          : "tg_f32_to_bf16(tg_u64_to_f32_odd(" + x + "))";
}

bool rounds_toward_zero(const ir::Op& cast) {
  const ir::Attr* a = cast.attr("rounding");
  return a != nullptr && std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == "rtz";
}

std::string directed_conversion(const ir::Op& cast, const ir::Type& from, const ir::Type& to) {
  const ir::Attr* a = cast.attr("rounding");
  const std::string* mode = a ? std::get_if<std::string>(a) : nullptr;
  if (mode == nullptr || from.is_pointer() || to.is_pointer()) return "";
  if (to.scalar != Scalar::F32 && to.scalar != Scalar::F64) return "";
  bool source = ir::is_integer(from.scalar) && from.scalar != Scalar::I1;
  if (!source && !(from.scalar == Scalar::F64 && to.scalar == Scalar::F32)) return "";
  // Exact conversions need no mode (and CUDA has no __int2double_rd).
  if (source && ir::bit_width(from.scalar) <= (to.scalar == Scalar::F32 ? 16 : 32)) return "";
  // Float narrowing toward zero is rounds_toward_zero's (fp_downcast_rounding="rtz").
  if (*mode == "rtz") return source ? "rz" : "";
  return *mode == "rd" || *mode == "ru" ? *mode : "";
}

bool uses_libdevice(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    found = found || ir::uses_libdevice(op.kind) ||
            (op.kind == OpKind::Cast &&
             !directed_conversion(op, fn.type(op.operands[0]).element(), fn.type(op.results[0]).element()).empty());
  });
  return found;
}

int64_t integer_constant(const ir::Op& constant) {
  const ir::Attr* a = constant.attr("value");
  TEGULA_ASSERT(a != nullptr, "constant without value");
  return std::holds_alternative<int64_t>(*a) ? std::get<int64_t>(*a)
                                              : static_cast<int64_t>(constant.float_attr("value"));
}

}  // namespace tegula::backends::c_family
