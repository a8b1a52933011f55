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
  if (ir::is_float(s)) return {"%f", s == Scalar::F64 ? e : "(double)" + to_compute(s, e)};  // as Triton prints
  if (ir::is_signed(s)) return {"%lld", "(long long)" + e};
  return {"%llu", "(unsigned long long)" + e};
}

void append_printed_value(std::string& format, std::string& args, std::string_view prefix, int operand,
                          const ir::Type& type, const std::string& element, Dialect dialect, bool hex) {
  if (!prefix.empty()) {
    format += "%s";
    args += ", " + string_literal(prefix, dialect);
  }
  if (operand >= 0) format += "(operand " + std::to_string(operand) + ") ";
  PrintfArgument a = printf_argument(type, element, hex);
  format += a.format;
  args += ", " + a.value;
}

int index_width(int64_t size) {
  int digits = 1;
  for (int64_t largest = size - 1; largest >= 10; largest /= 10) ++digits;
  return digits;
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
