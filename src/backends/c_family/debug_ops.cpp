#include "backends/c_family/debug_ops.h"

#include "backends/c_family/text.h"
#include "support/diagnostic.h"

namespace tegula::backends::c_family {

using ir::Scalar;

PrintfArgument printf_argument(const ir::Type& t, const std::string& e) {
  if (t.is_pointer()) return {"%p", "(const void*)" + e};
  switch (t.scalar) {
    case Scalar::I1: return {"%d", "(int)" + e};
    case Scalar::F16: return {"%.5g", "(double)tg_f16_to_f32(" + e + ")"};
    case Scalar::BF16: return {"%.4g", "(double)tg_bf16_to_f32(" + e + ")"};
    case Scalar::F8E4M3: return {"%.3g", "(double)tg_f8e4m3_to_f32(" + e + ")"};
    case Scalar::F8E5M2: return {"%.3g", "(double)tg_f8e5m2_to_f32(" + e + ")"};
    case Scalar::F32: return {"%.9g", "(double)" + e};
    case Scalar::F64: return {"%.17g", e};
    default:
      if (ir::is_signed(t.scalar)) return {"%lld", "(long long)" + e};
      return {"%llu", "(unsigned long long)" + e};
  }
}

void append_printed_values(std::string& format, std::string& args, std::string_view prefix,
                           const std::vector<ir::Type>& types, const std::vector<std::string>& elements,
                           Dialect dialect) {
  TEGULA_ASSERT(types.size() == elements.size(), "one element per printed operand");
  if (!prefix.empty()) {
    format += " %s";
    args += ", " + string_literal(prefix, dialect);
  }
  for (size_t k = 0; k < types.size(); ++k) {
    PrintfArgument a = printf_argument(types[k], elements[k]);
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
