#include "ir/ops.h"

#include <iterator>

namespace tegula::ir {

namespace {

constexpr int ANY = kAnyCount;  // the spelling of ops.def

constexpr OpInfo kOpInfo[] = {
#define OP(name, text, flags, operands, max_operands, results, regions, rule, fold_int, fold_float) \
  {text, flags, operands, max_operands, results, regions, TypeRule::rule},
#include "ir/ops.def"
#undef OP
};
static_assert(std::size(kOpInfo) == kNumOpKinds);

}  // namespace

const OpInfo& info(OpKind kind) { return kOpInfo[static_cast<int>(kind)]; }

bool parse_op_kind(std::string_view text, OpKind* out) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    if (text == kOpInfo[i].name) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

}  // namespace tegula::ir
