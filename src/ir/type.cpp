#include "ir/type.h"

namespace tegula::ir {

namespace {

constexpr ScalarInfo kScalars[] = {
#define SCALAR(name, text, bits, kind, mantissa, bias, specials, ties, tl, short_name, digits, cpu, cuda) \
  {text, bits, ScalarKind::kind, mantissa, bias, FloatSpecials::specials, FloatTies::ties, tl, short_name, digits},
#include "ir/scalar_types.def"
#undef SCALAR
};

}  // namespace

const ScalarInfo& scalar_info(Scalar s) { return kScalars[static_cast<int>(s)]; }

bool is_float(Scalar s) { return scalar_info(s).kind == ScalarKind::Float; }
bool is_narrow_float(Scalar s) { return is_float(s) && scalar_info(s).bits < 32; }
bool is_fp8(Scalar s) { return is_float(s) && scalar_info(s).bits == 8; }
bool is_integer(Scalar s) { return !is_float(s); }
bool is_signed(Scalar s) { return scalar_info(s).kind == ScalarKind::Signed; }
int bit_width(Scalar s) { return scalar_info(s).bits; }
int byte_size(Scalar s) { return (scalar_info(s).bits + 7) / 8; }
const char* to_string(Scalar s) { return scalar_info(s).name; }

bool parse_scalar(const std::string& text, Scalar* out) {
  for (int i = 0; i < static_cast<int>(std::size(kScalars)); ++i) {
    if (text == kScalars[i].name) {
      *out = static_cast<Scalar>(i);
      return true;
    }
  }
  return false;
}

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string to_string(const Type& t) {
  std::string elem = t.pointer ? std::string("ptr<") + to_string(t.scalar) + ">" : to_string(t.scalar);
  if (!t.is_tile()) return elem;
  std::string out = "tile<";
  for (int64_t d : t.shape) out += std::to_string(d) + "x";
  return out + elem + ">";
}

}  // namespace tegula::ir
