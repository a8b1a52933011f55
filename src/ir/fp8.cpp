#include "ir/fp8.h"

namespace tegula::ir {

bool uses_fp8(const Function& fn) {
  for (size_t i = 0; i < fn.num_values(); ++i)
    if (is_fp8(fn.type(ValueId{static_cast<uint32_t>(i)}).scalar)) return true;
  return false;
}

bool uses_scalar(const Function& fn, Scalar s) {
  for (size_t i = 0; i < fn.num_values(); ++i)
    if (fn.type(ValueId{static_cast<uint32_t>(i)}).scalar == s) return true;
  return false;
}

}  // namespace tegula::ir
