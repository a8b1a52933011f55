#include "ir/ops.h"

namespace tegula::ir {

namespace {
constexpr OpInfo kOpInfo[] = {
#define OP(name, text, flags) {text, flags},
#include "ir/ops.def"
#undef OP
};
}  // namespace

const OpInfo& info(OpKind kind) { return kOpInfo[static_cast<int>(kind)]; }

bool parse_op_kind(std::string_view text, OpKind* out) {
  for (int i = 0; i < static_cast<int>(std::size(kOpInfo)); ++i) {
    if (text == kOpInfo[i].name) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

}  // namespace tegula::ir
