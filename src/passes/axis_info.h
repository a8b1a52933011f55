// Axis-info analysis: for every integer or pointer value, per dimension,
//  * contiguity: the length of runs of consecutive elements along the dim that
//    increase by exactly 1 (pointers: by one element);
//  * divisibility: the largest power of two dividing the first element of each
//    such run (pointers: in bytes);
//  * constancy: the length of runs of equal elements along the dim.
// Scalars are treated as rank-0 (one entry each, contiguity 1).
//
// Example: offs = pid * 1024 + arange(0, 1024) has contiguity 1024,
// divisibility 1024 (pid * 1024 is a multiple of 1024 and arange starts at 0),
// constancy 1. A backend may then load 4 consecutive f32 as one 16-byte access.
//
// The analysis is a forward dataflow over the structured IR. Values carried
// by `for` loops start at the facts of their init and are narrowed to what
// the body yields until a fixed point (a pointer tile advanced by a uniform
// stride keeps its contiguity); `if`/`while` results start at the most
// conservative fact (1, 1, 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

struct AxisInfo {
  std::vector<int64_t> contiguity;    // one per dim (one entry for scalars)
  std::vector<int64_t> divisibility;
  std::vector<int64_t> constancy;
};

// Whether the facts take in what `hint` ops promise (tl.multiple_of,
// tl.max_contiguous, tl.max_constancy); Ignore gives what the program itself
// shows, for a backend that checks a promise at run time before relying on it.
enum class Hints { Trust, Ignore };

class AxisInfoAnalysis {
 public:
  explicit AxisInfoAnalysis(const ir::Function& fn, Hints hints = Hints::Trust);
  // Facts for `v`; every entry is 1 for values the analysis knows nothing about
  // (floats included).
  const AxisInfo& get(ir::ValueId v) const;
  // "contig=[1024] div=[1024] const=[1]"
  std::string describe(ir::ValueId v) const;

 private:
  std::vector<AxisInfo> info_;
};

}  // namespace tegula::passes
