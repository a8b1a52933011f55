#include "backends/c_family/type_spelling.h"

#include <iterator>

namespace tegula::backends::c_family {

namespace {

struct Spellings {
  const char* cpu;
  const char* cuda;
};

constexpr Spellings kSpellings[] = {
#define SCALAR(name, text, bits, kind, mantissa, inf, tl, short_name, digits, cpu, cuda) {cpu, cuda},
#include "ir/scalar_types.def"
#undef SCALAR
};
static_assert(std::size(kSpellings) == ir::kNumScalars);

}  // namespace

const char* c_scalar(Dialect dialect, ir::Scalar s) {
  const Spellings& row = kSpellings[static_cast<int>(s)];
  return dialect == Dialect::Cpu ? row.cpu : row.cuda;
}

std::string c_pointer(Dialect dialect, ir::Scalar pointee) {
  return std::string(c_scalar(dialect, pointee == ir::Scalar::I1 ? ir::Scalar::U8 : pointee)) + "*";
}

const char* c_address(Dialect dialect) { return dialect == Dialect::Cpu ? "uintptr_t" : "unsigned long long"; }

std::string c_compute(Dialect dialect, ir::Scalar s) { return ir::is_narrow_float(s) ? "float" : c_scalar(dialect, s); }

std::string to_compute(ir::Scalar s, const std::string& expr) {
  if (!ir::is_narrow_float(s)) return expr;
  return std::string("tg_") + ir::to_string(s) + "_to_f32(" + expr + ")";
}

std::string from_compute(ir::Scalar s, const std::string& expr) {
  if (!ir::is_narrow_float(s)) return expr;
  return std::string("tg_f32_to_") + ir::to_string(s) + "(" + expr + ")";
}

}  // namespace tegula::backends::c_family
