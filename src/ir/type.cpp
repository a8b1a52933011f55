#include "ir/type.h"

namespace tegula::ir {

namespace {
struct ScalarInfo {
  const char* name;
  int bits;
  bool is_float;
  bool is_signed;
};
constexpr ScalarInfo kScalars[] = {
    {"i1", 1, false, false},   {"i8", 8, false, true},    {"i16", 16, false, true},
    {"i32", 32, false, true},  {"i64", 64, false, true},  {"u8", 8, false, false},
    {"u16", 16, false, false}, {"u32", 32, false, false}, {"u64", 64, false, false},
    {"f16", 16, true, true},   {"bf16", 16, true, true},  {"f32", 32, true, true},
    {"f64", 64, true, true},   {"f8e4m3", 8, true, true}, {"f8e5m2", 8, true, true},
};
const ScalarInfo& scalar_info(Scalar s) { return kScalars[static_cast<int>(s)]; }
}  // namespace

bool is_float(Scalar s) { return scalar_info(s).is_float; }
bool is_fp8(Scalar s) { return s == Scalar::F8E4M3 || s == Scalar::F8E5M2; }
bool is_integer(Scalar s) { return !scalar_info(s).is_float; }
bool is_signed(Scalar s) { return !scalar_info(s).is_float && scalar_info(s).is_signed; }
int bit_width(Scalar s) { return scalar_info(s).bits; }
int byte_size(Scalar s) { return s == Scalar::I1 ? 1 : scalar_info(s).bits / 8; }
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
