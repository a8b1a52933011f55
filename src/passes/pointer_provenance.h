// Pointer provenance: for every pointer value of a kernel (scalar or tile),
// the pointer parameters whose arrays it may point into. Debug mode checks
// every load, store and atomic against the arrays of its pointer's sources
// (docs/debug-mode.md); nothing else uses it.
//
// A pointer parameter is its own source. An op computing pointers from
// pointers (addptr, splat, broadcast, expand_dims, reshape, trans, join,
// split, bitcast, select, and any op added later) has the union of its
// pointer operands' sources; `select(c, a, b)` so gets both `a`'s and `b`'s.
// Values flowing through control flow take the union of everything that can
// reach them: a `for` body argument and result the init and every yield, an
// `if` result both branches, `while` arguments and results the inits, the
// yields and the `condition` values. Loops make this a fixed point, found by
// repeating the walk until nothing grows (sets only grow and are bounded by
// the parameter count).
//
// A pointer made from an integer (`cast`), read from memory (a load or an
// atomic of a pointer-typed element), or with no pointer operand to come
// from has UNKNOWN provenance: it may point into memory no parameter covers
// (an address table of arrays the kernel was never handed), so checking it
// against the parameters' arrays would report correct accesses as out of
// bounds. Unknown absorbs: anything that may come from an unknown pointer is
// unknown too, and debug mode does not check accesses through it.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

class PointerProvenance {
 public:
  explicit PointerProvenance(const ir::Function& fn);

  // Indices into fn.params, ascending and distinct; empty for non-pointer
  // values, for pointers of unknown provenance and for kernels without
  // pointer parameters.
  const std::vector<int32_t>& sources(ir::ValueId v) const { return sources_.at(v.index); }
  // True for a pointer that may have been made from an integer or read from
  // memory (see above).
  bool unknown(ir::ValueId v) const { return unknown_.at(v.index); }

 private:
  std::vector<std::vector<int32_t>> sources_;
  std::vector<bool> unknown_;
};

}  // namespace tegula::passes
