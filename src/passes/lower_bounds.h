// Lower-bound analysis: for an integer scalar, a value it is never below in
// any run of the kernel, where the IR shows one. Known: constants; grid
// indices (>= 0) and their counts (>= 1); parameters the caller names as
// at least 1 (a backend's launcher may refuse smaller ones, as the CUDA
// launcher refuses a tensor map's dimension below 1); unsigned values
// (>= 0); `hint` ops' `at_least` (tl.assume(x >= c)); and from those, sums,
// differences with a constant, products and quotients of non-negative
// values, remainders of a non-negative dividend (C's `%`), minima, maxima,
// selects, widening casts, and a `for` loop's index counting up from its
// start. The kernel's integer arithmetic is taken not to wrap, as its index
// arithmetic must not anyway.
//
// Used where a backend needs an offset proven >= 0 (backends/cuda/tma_plan.h:
// a TMA store must start inside its tensor).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

class LowerBounds {
 public:
  // `at_least_one`: parameter positions known to be >= 1 in every run.
  LowerBounds(const ir::Function& fn, std::vector<int> at_least_one);

  // The least value of scalar `v`, or nullopt when none is known. Memoized:
  // offsets share their subexpressions.
  std::optional<int64_t> of(ir::ValueId v);

 private:
  std::optional<int64_t> prove(ir::ValueId v);
  std::optional<int64_t> constant(ir::ValueId v) const;

  const ir::Function& fn_;
  std::vector<int> at_least_one_;
  std::unordered_map<uint32_t, std::optional<int64_t>> known_;
};

}  // namespace tegula::passes
