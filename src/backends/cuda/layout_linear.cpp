// Layouts given bit by bit, and the ones shape ops leave a tile in.
//
// reshape keeps every element's row-major linear index, trans permutes the
// index's bits, split drops its lowest bit (the last dim of 2) and join adds
// one. So when each thread keeps the registers it has, the result's
// distribution is the operand's with its image bits renamed: a layout no
// blocked or MMA layout describes in general (an accumulator split into
// halves along its columns has each thread's columns of one half in the
// fragment order of the whole), but one the code generator reads as well as
// any other, since it only asks distributions. Only a split whose bit sits in
// lanes or warps must move elements between threads.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/layout.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using c_family::log2_exact;
using ir::OpKind;

namespace {

std::string bits_text(const std::vector<CoordinateBit>& bits) {
  std::string s = "[";
  for (size_t i = 0; i < bits.size(); ++i) {
    s += i ? ", " : "";
    s += bits[i].dim < 0 ? "-" : std::to_string(bits[i].dim) + ":" + std::to_string(bits[i].bit);
  }
  return s + "]";
}

std::vector<int> linear_offsets(const std::vector<int64_t>& shape) {
  std::vector<int> offsets;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) offsets.push_back(linear_offset_of(shape, i));
  return offsets;
}

int index_bits(const std::vector<int64_t>& shape) {
  int bits = 0;
  for (int64_t s : shape) bits += log2_exact(s);
  return bits;
}

}  // namespace

std::string to_string(const LinearLayout& linear) {
  return "linear{reg=" + bits_text(linear.registers) + ", lane=" + bits_text(linear.lanes) +
         ", warp=" + bits_text(linear.warps) + "}";
}

Distribution distribute_linear(const Layout& layout, const std::vector<int64_t>& shape) {
  TEGULA_ASSERT(layout.linear.has_value(), "distribute_linear of another layout");
  const LinearLayout& l = *layout.linear;
  TEGULA_ASSERT(static_cast<int>(shape.size()) == layout.rank(), "layout rank differs from the tile's");
  std::vector<int> value_dim(static_cast<size_t>(l.rank), -1);
  for (int i = 0; i < layout.rank(); ++i) value_dim[static_cast<size_t>(layout.parent_dim(i))] = i;
  std::vector<int> offsets = linear_offsets(shape);
  auto image = [&](const CoordinateBit& c) {
    if (c.dim < 0) return -1;
    int i = value_dim[static_cast<size_t>(c.dim)];
    if (i < 0 || c.bit >= log2_exact(shape[static_cast<size_t>(i)])) return -1;
    return offsets[static_cast<size_t>(i)] + c.bit;
  };
  Distribution d;
  for (int64_t s : shape) d.numel *= s;
  std::vector<bool> covered(static_cast<size_t>(index_bits(shape)), false);
  auto mark = [&](int bit) {
    if (bit >= 0) covered[static_cast<size_t>(bit)] = true;
    return bit;
  };
  for (const CoordinateBit& c : l.registers)
    if (int bit = image(c); bit >= 0) d.register_bits.push_back(mark(bit));
  for (const CoordinateBit& c : l.lanes) d.lane_bits.push_back(mark(image(c)));
  for (const CoordinateBit& c : l.warps) d.warp_bits.push_back(mark(image(c)));
  for (size_t bit = 0; bit < covered.size(); ++bit)
    if (!covered[bit]) d.register_bits.push_back(static_cast<int>(bit));
  return d;
}

Layout linear_layout(const Distribution& d, const std::vector<int64_t>& shape) {
  LinearLayout l;
  l.rank = static_cast<int>(shape.size());
  auto coordinate = [&](int bit) { return bit < 0 ? CoordinateBit{} : coordinate_bit(shape, bit); };
  for (int bit : d.register_bits) l.registers.push_back(coordinate(bit));
  for (int bit : d.lane_bits) l.lanes.push_back(coordinate(bit));
  for (int bit : d.warp_bits) l.warps.push_back(coordinate(bit));
  Layout layout;
  layout.linear = std::move(l);
  return layout;
}

Distribution renamed(Distribution d, const std::vector<int>& bit_map) {
  auto rename = [&](std::vector<int>& bits) {
    for (int& b : bits)
      if (b >= 0) b = bit_map.at(static_cast<size_t>(b));
  };
  rename(d.register_bits);
  rename(d.lane_bits);
  rename(d.warp_bits);
  return d;
}

std::vector<int> trans_bit_map(const std::vector<int64_t>& from_shape, const std::vector<int64_t>& to_shape,
                               const std::vector<int64_t>& perm) {
  // Result dim k is source dim perm[k].
  std::vector<int> from_offsets = linear_offsets(from_shape), to_offsets = linear_offsets(to_shape);
  std::vector<int> bit_map(static_cast<size_t>(index_bits(from_shape)), -1);
  for (size_t k = 0; k < perm.size(); ++k) {
    size_t p = static_cast<size_t>(perm[k]);
    for (int b = 0; b < log2_exact(from_shape[p]); ++b)
      bit_map[static_cast<size_t>(from_offsets[p] + b)] = to_offsets[k] + b;
  }
  return bit_map;
}

std::optional<Distribution> split_distribution(const Distribution& d) {
  auto held = std::find(d.register_bits.begin(), d.register_bits.end(), 0);
  if (held == d.register_bits.end()) return std::nullopt;
  Distribution half = d;
  half.numel = d.numel / 2;
  half.register_bits.erase(half.register_bits.begin() + (held - d.register_bits.begin()));
  std::vector<int> down;
  for (int b = 0; (int64_t{1} << b) < d.numel; ++b) down.push_back(b - 1);
  return renamed(half, down);
}

Distribution joined_distribution(const Distribution& d) {
  std::vector<int> up;
  for (int b = 0; (int64_t{1} << b) < d.numel; ++b) up.push_back(b + 1);
  Distribution joined = renamed(d, up);
  joined.numel = d.numel * 2;
  joined.register_bits.insert(joined.register_bits.begin(), 0);
  return joined;
}

std::optional<Layout> layout_in_place(const ir::Function& fn, const ir::Op& op, const std::vector<Layout>& operands,
                                      size_t which) {
  if (which >= op.results.size() || operands.empty() || !fn.type(op.results[which]).is_tile()) return std::nullopt;
  const ir::Type& from = fn.type(op.operands[0]);
  const ir::Type& to = fn.type(op.results[which]);
  if (!from.is_tile()) return std::nullopt;
  Distribution d = distribute(operands[0], from.shape);
  switch (op.kind) {
    case OpKind::Reshape: return linear_layout(d, to.shape);
    case OpKind::Trans:
      return linear_layout(renamed(d, trans_bit_map(from.shape, to.shape, op.ints_attr("perm"))), to.shape);
    case OpKind::Split: {
      std::optional<Distribution> half = split_distribution(d);
      if (!half) return std::nullopt;
      return linear_layout(*half, to.shape);
    }
    case OpKind::Join: {
      if (operands.size() < 2 || !fn.type(op.operands[1]).is_tile() ||
          distribute(operands[1], fn.type(op.operands[1]).shape) != d)
        return std::nullopt;
      return linear_layout(joined_distribution(d), to.shape);
    }
    default: return std::nullopt;
  }
}

}  // namespace tegula::backends::cuda
