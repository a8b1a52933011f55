#include "backends/c_family/tile_index.h"

#include "support/diagnostic.h"

namespace tegula::backends::c_family {

AxisView view_around(const ir::Type& tile, int64_t axis) {
  TEGULA_ASSERT(axis >= 0 && axis < tile.rank(), "axis out of range");
  AxisView v;
  for (int64_t d = 0; d < tile.rank(); ++d) {
    int64_t n = tile.shape[static_cast<size_t>(d)];
    if (d < axis) v.outer *= n;
    else if (d == axis) v.length = n;
    else v.inner *= n;
  }
  return v;
}

std::string gather_source_index(const std::string& e, const std::string& wrapped_index, int64_t src_length,
                                int64_t length, int64_t inner) {
  std::string from = "(" + e + " >> " + std::to_string(log2_exact(length * inner)) + ") * " +
                     std::to_string(src_length * inner) + " + " + wrapped_index;
  if (inner > 1) from += " * " + std::to_string(inner) + " + (" + e + " & " + std::to_string(inner - 1) + ")";
  return from;
}

int log2_exact(int64_t v) {
  TEGULA_ASSERT(v > 0 && (v & (v - 1)) == 0, "tile extents are powers of two");
  return log2_ceil(v);
}

int log2_ceil(int64_t v) {
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

}  // namespace tegula::backends::c_family
