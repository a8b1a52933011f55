// The combiner region of reduce and scan as scalar code. Both ops carry the
// same region shape (2N block arguments, accumulated values then new ones,
// yielding N), and every dialect applies it the same way, wherever its
// algorithm puts the two sides (CPU element loops, CUDA registers, shuffles
// and shared memory).
#pragma once

#include <string>
#include <vector>

#include "backends/c_family/printer.h"

namespace tegula::backends::c_family {

// One application of `op`'s combiner: binds its 2N arguments to `lhs` and
// `rhs` (element expressions), emits its ops and assigns the N yielded values
// to `dest`. With `own_block` the application gets a C++ block of its own, so
// repeated applications do not redeclare names.
void emit_combine(Printer& p, const ir::Op& op, const std::vector<std::string>& lhs,
                  const std::vector<std::string>& rhs, const std::vector<std::string>& dest, bool own_block = true);

// "a[index]" for each array a.
std::vector<std::string> indexed(const std::vector<std::string>& arrays, const std::string& index);

}  // namespace tegula::backends::c_family
