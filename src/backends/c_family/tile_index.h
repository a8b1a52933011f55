// Index arithmetic over tiles that every dialect shares: a tile viewed as
// [outer, length, inner] around one of its dims (reduce, scan, sort,
// gather), and the log2 of extents. Tile extents are powers of two, so
// index math is shifts and masks.
#pragma once

#include <cstdint>
#include <string>

#include "ir/type.h"

namespace tegula::backends::c_family {

struct AxisView {
  int64_t outer = 1;   // product of the dims before the axis
  int64_t length = 1;  // the axis
  int64_t inner = 1;   // product of the dims after it
};

AxisView view_around(const ir::Type& tile, int64_t axis);

// The flat index of the source element that element `e` of a gather reads
// (semantics: ir/scan_ops.h). With the result viewed as [outer, K, inner]
// around the axis, e = (o, k, x) reads src, of extent `src_length` on the
// axis, at (o, index mod src_length, x): o = e >> log2(K * inner) and
// x = e & (inner - 1), so the index is shifts, masks and
// `wrapped_index` (index[e] mod src_length, as an expression).
std::string gather_source_index(const std::string& e, const std::string& wrapped_index, int64_t src_length,
                                int64_t length, int64_t inner);

// log2 of `v`, a power of two.
int log2_exact(int64_t v);
// The smallest b with 2^b >= v (0 for v <= 1).
int log2_ceil(int64_t v);

}  // namespace tegula::backends::c_family
