// The verifier rule of `hint` (see hint.h).
#include "ir/hint.h"

#include <bit>
#include <cstdint>
#include <variant>

namespace tegula::ir {

std::string hint_problem(const Function& fn, const Op& op) {
  const Type& x = fn.type(op.operands[0]);
  if (!(fn.type(op.results[0]) == x))
    return "the result (" + to_string(fn.type(op.results[0])) + ") must have the operand type (" + to_string(x) + ")";
  size_t entries = x.is_tile() ? x.shape.size() : 1;
  for (const char* name : {kHintDivisibility, kHintContiguity, kHintConstancy}) {
    const Attr* a = op.attr(name);
    if (a == nullptr) continue;
    const auto* values = std::get_if<std::vector<int64_t>>(a);
    if (values == nullptr) return std::string("attribute `") + name + "` must be a list of integers";
    if (values->size() != entries)
      return std::string("attribute `") + name + "` needs " + std::to_string(entries) + " entries (one per dimension), got " +
             std::to_string(values->size());
    for (int64_t v : *values)
      if (v <= 0 || !std::has_single_bit(static_cast<uint64_t>(v)))
        return std::string("attribute `") + name + "` holds " + std::to_string(v) + ", not a power of two";
  }
  if (const Attr* a = op.attr(kHintAtLeast)) {
    const auto* values = std::get_if<std::vector<int64_t>>(a);
    if (x.is_tile() || x.is_pointer() || !is_integer(x.scalar)) return "attribute `at_least` describes integer scalars";
    if (values == nullptr || values->size() != 1 || (*values)[0] < 0)
      return "attribute `at_least` must be one integer >= 0";
  }
  return "";
}

}  // namespace tegula::ir
