#include "backends/c_family/debug_ops.h"

#include "backends/c_family/spelling.h"
#include "backends/c_family/text.h"
#include "support/diagnostic.h"

namespace tegula::backends::c_family {

using ir::Scalar;

PrintfArgument printf_argument(const ir::Type& t, const std::string& e, bool hex) {
  if (t.is_pointer()) return {"%p", "(const void*)" + e};
  Scalar s = t.scalar;
  if (hex) {  // the front end gives hex printing each value's bits as an unsigned integer of its width
    TEGULA_ASSERT(ir::scalar_info(s).kind == ir::ScalarKind::Unsigned, "hex printing of a value that is not bits");
    return {"0x%0" + std::to_string(ir::scalar_info(s).bits / 4) + "llx", "(unsigned long long)" + e};
  }
  if (s == Scalar::I1) return {"%d", "(int)" + e};
  if (ir::is_float(s)) {
    // As many digits as tell every two values of the type apart (scalar_types.def).
    std::string format = "%." + std::to_string(ir::scalar_info(s).digits) + "g";
    return {format, s == Scalar::F64 ? e : "(double)" + to_compute(s, e)};
  }
  if (ir::is_signed(s)) return {"%lld", "(long long)" + e};
  return {"%llu", "(unsigned long long)" + e};
}

void append_printed_values(std::string& format, std::string& args, std::string_view prefix,
                           const std::vector<ir::Type>& types, const std::vector<std::string>& elements,
                           Dialect dialect, bool hex) {
  TEGULA_ASSERT(types.size() == elements.size(), "one element per printed operand");
  if (!prefix.empty()) {
    format += " %s";
    args += ", " + string_literal(prefix, dialect);
  }
  for (size_t k = 0; k < types.size(); ++k) {
    PrintfArgument a = printf_argument(types[k], elements[k], hex);
    format += (k ? ", " : " ") + a.format;
    args += ", " + a.value;
  }
}

bool emit_assert_start(Printer& p, const ir::Op& op, bool debug,
                       const std::function<std::string(const std::string&)>& failure) {
  if (!debug) {
    p.out.line("// (assert compiled only in debug mode)");
    return false;
  }
  ir::ValueId cond = op.operands.at(0);
  if (p.fn.type(cond).is_tile()) return true;
  p.out.line("if (!" + p.name(cond) + ") " + failure("0"));
  return false;
}

}  // namespace tegula::backends::c_family
