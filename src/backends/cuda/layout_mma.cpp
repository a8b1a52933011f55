// The tensor-core accumulator layout: its distribution, which dots use it,
// and which values should stay in it.
//
// mma.sync.m16n8k* gives lane l of a warp the accumulator elements
//   (l / 4, 2 * (l % 4) + {0, 1}) and (l / 4 + 8, 2 * (l % 4) + {0, 1})
// of its 16x8 tile, so as a linear map over bits (layout.h):
//   register bit 0 -> column bit 0, lane bits 0-1 -> column bits 1-2,
//   lane bits 2-4 -> row bits 0-2, register bit 1 -> row bit 3.
// A warp covers 16 rows and `warp_n` columns (several 8-column tiles, one
// more register bit each), warps are tiled warps_m x warps_n with m fastest,
// and the pattern repeats over the tile, columns first, then rows.
#include <algorithm>
#include <array>
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/layout.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;
using ir::Scalar;

std::string to_string(const MmaLayout& mma) {
  return std::string(mma.warpgroup ? "wgmma" : "mma") + "{wpc=[" + std::to_string(mma.warps_m) + ", " +
         std::to_string(mma.warps_n) + "], warp_n=" + std::to_string(mma.warp_n) + "}";
}

Distribution distribute_mma(const Layout& layout, const std::vector<int64_t>& shape) {
  TEGULA_ASSERT(layout.mma.has_value(), "distribute_mma of a blocked layout");
  const MmaLayout& mma = *layout.mma;
  TEGULA_ASSERT(static_cast<int>(shape.size()) == layout.rank(), "layout rank differs from the tile's");
  // Value dim and linear offset of parent dims 0 (rows) and 1 (columns).
  std::array<int, 2> value_dim = {-1, -1};
  for (int i = 0; i < layout.rank(); ++i) value_dim[static_cast<size_t>(layout.parent_dim(i))] = i;
  std::vector<int> shape_bits, linear_offset(shape.size(), 0);
  for (int64_t s : shape) shape_bits.push_back(c_family::log2_ceil(s));
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    linear_offset[static_cast<size_t>(i)] = linear_offset[static_cast<size_t>(i + 1)] + shape_bits[static_cast<size_t>(i + 1)];
  auto dim_bits = [&](int parent) {
    int i = value_dim[static_cast<size_t>(parent)];
    return i < 0 ? 0 : shape_bits[static_cast<size_t>(i)];
  };
  // Where coordinate bit `bit` of parent dim `parent` lands in the linear index (-1: outside the tile).
  auto image = [&](int parent, int bit) {
    int i = value_dim[static_cast<size_t>(parent)];
    if (i < 0 || bit >= shape_bits[static_cast<size_t>(i)]) return -1;
    return linear_offset[static_cast<size_t>(i)] + bit;
  };

  int warp_n_bits = c_family::log2_ceil(mma.warp_n);
  int row_cta_bits = 4 + c_family::log2_ceil(mma.warps_m), col_cta_bits = warp_n_bits + c_family::log2_ceil(mma.warps_n);
  std::vector<std::array<int, 2>> registers = {{1, 0}, {0, 3}};
  for (int b = 3; b < warp_n_bits; ++b) registers.push_back({1, b});
  for (int b = col_cta_bits; b < dim_bits(1); ++b) registers.push_back({1, b});
  for (int b = row_cta_bits; b < dim_bits(0); ++b) registers.push_back({0, b});

  Distribution d;
  for (int64_t s : shape) d.numel *= s;
  for (const auto& [parent, bit] : registers)
    if (int to = image(parent, bit); to >= 0) d.register_bits.push_back(to);
  for (const auto& [parent, bit] : std::vector<std::array<int, 2>>{{1, 1}, {1, 2}, {0, 0}, {0, 1}, {0, 2}})
    d.lane_bits.push_back(image(parent, bit));
  for (int b = 0; b < c_family::log2_ceil(mma.warps_m); ++b) d.warp_bits.push_back(image(0, 4 + b));
  for (int b = 0; b < c_family::log2_ceil(mma.warps_n); ++b) d.warp_bits.push_back(image(1, warp_n_bits + b));
  return d;
}

namespace {

// wgmma (sm_90, f16/bf16): warpgroups take 64-row slabs while there are
// rows left, then split the columns; each issues m64 x warp_n instructions
// with warp_n = the columns it owns (at most 256, at least 16).
std::optional<MmaLayout> warpgroup_layout(int64_t m, int64_t n, int64_t k_step, int num_warps, int arch) {
  if (arch < 90 || k_step != 16 || num_warps % 4 != 0 || m % 64 != 0) return std::nullopt;
  int groups = num_warps / 4, groups_m = 1;
  while (groups_m < groups && m / (64 * groups_m) >= 2) groups_m *= 2;
  int groups_n = groups / groups_m;
  if (n % (16 * groups_n) != 0) return std::nullopt;
  int64_t per_group = n / groups_n;
  MmaLayout layout;
  layout.warps_m = 4 * groups_m;
  layout.warps_n = groups_n;
  layout.warp_n = static_cast<int>(std::min<int64_t>(per_group, 256));
  layout.warpgroup = true;
  return layout;
}

// Whether `dot` is one link of a chain whose rows stay with their warps:
// its result flows through elementwise ops into a row reduction or into
// operand a of another dot, or its operand a flows from another dot's
// result (attention: scores, their row max and sum, then P @ V). Such dots
// put warps along M, so row reductions stay inside a warp and P's registers
// are already the A fragments of the next dot.
bool rows_stay_in_warps(const ir::Function& fn, const ir::Op& dot) {
  // By value index: the dot whose result the value is computed from
  // elementwise (program order suffices: loops are not followed).
  std::vector<const ir::Op*> origin(fn.num_values(), nullptr);
  bool chained = false;
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    if (op.kind == OpKind::Dot && !op.results.empty()) {
      origin[op.results[0].index] = &op;
      const ir::Op* from = origin[op.operands[0].index];
      chained = chained || (from && (from == &dot || &op == &dot));
    } else if (op.kind == OpKind::Reduce && !op.operands.empty()) {
      const ir::Op* from = origin[op.operands[0].index];
      chained = chained || (from == &dot && op.int_attr("axis") == 1);
    } else if (ir::is_elementwise(op.kind) && op.results.size() == 1) {
      for (ir::ValueId v : op.operands)
        if (!origin[op.results[0].index] && fn.type(v).shape == fn.type(op.results[0]).shape)
          origin[op.results[0].index] = origin[v.index];
    }
  });
  return chained;
}

}  // namespace

// Warps go to the dim with more 16-wide tiles left per warp (rows on ties),
// keeping at least 16 columns per warp so B fragments load in pairs of 8
// columns; warps beyond the tiles replicate along the rows. A dot in a
// chain (rows_stay_in_warps) gives the rows every warp they have room for.
DotPrecision dot_precision(const ir::Function& fn, const ir::Op& dot) {
  if (fn.type(dot.operands[0]).scalar != Scalar::F32) return DotPrecision::Native;
  const ir::Attr* precision = dot.attr("precision");
  std::string name = precision && std::holds_alternative<std::string>(*precision) ? std::get<std::string>(*precision) : "";
  if (name == "tf32") return DotPrecision::Tf32;
  if (name == "tf32x3") return DotPrecision::Tf32x3;
  if (name == "bf16x3") return DotPrecision::Bf16x3;
  if (name == "bf16x6") return DotPrecision::Bf16x6;
  return DotPrecision::Native;  // ieee: the FMA path
}

bool accumulates_in_f16(const ir::Function& fn, const ir::Op& dot) {
  return fn.type(dot.operands[0]).scalar == Scalar::F16 && fn.type(dot.results[0]).scalar == Scalar::F16;
}

std::optional<MmaLayout> tensor_core_layout(const ir::Function& fn, const ir::Op& dot, int num_warps, int arch) {
  if (arch < 80 || dot.kind != OpKind::Dot || dot.operands.size() != 3 || dot.results.size() != 1) return std::nullopt;
  const ir::Type& a = fn.type(dot.operands[0]);
  const ir::Type& r = fn.type(dot.results[0]);
  if (a.rank() != 2 || r.rank() != 2) return std::nullopt;
  int64_t m = r.shape[0], n = r.shape[1], k = a.shape[1];
  int64_t k_step = 0;
  Scalar in = a.scalar, out = r.scalar;
  DotPrecision precision = dot_precision(fn, dot);
  bool half = in == Scalar::F16 || in == Scalar::BF16;
  if (half && (out == Scalar::F32 || out == Scalar::F16 || out == Scalar::BF16))
    k_step = 16;
  else if (in == Scalar::F32 && out == Scalar::F32 && (precision == DotPrecision::Tf32 || precision == DotPrecision::Tf32x3))
    k_step = 8;
  else if (in == Scalar::F32 && out == Scalar::F32 && precision != DotPrecision::Native)
    k_step = 16;  // bf16 splits: m16n8k16
  else if (in == Scalar::I8 && out == Scalar::I32)
    k_step = 32;
  if (k_step == 0 || m % 16 != 0 || n % 16 != 0 || k % k_step != 0) return std::nullopt;
  // wgmma here takes 16-bit operands into f32 accumulators only.
  if (half && !accumulates_in_f16(fn, dot))
    if (std::optional<MmaLayout> hopper = warpgroup_layout(m, n, k_step, num_warps, arch)) return hopper;

  MmaLayout layout;
  if (rows_stay_in_warps(fn, dot))
    while (layout.warps_m < num_warps && m / (16 * layout.warps_m) >= 2) layout.warps_m *= 2;
  while (layout.warps_m * layout.warps_n < num_warps) {
    int64_t rows_left = m / (16 * layout.warps_m), cols_left = n / (16 * layout.warps_n);
    if (rows_left >= 2 && rows_left >= cols_left)
      layout.warps_m *= 2;
    else if (cols_left >= 2)
      layout.warps_n *= 2;
    else
      layout.warps_m *= 2;
  }
  return layout;
}

std::vector<std::optional<Layout>> tensor_core_affinity(const ir::Function& fn, int num_warps, int arch) {
  std::vector<std::optional<Layout>> affinity(fn.num_values());
  if (arch < 80) return affinity;
  bool changed = true;
  auto take = [&](ir::ValueId v, const std::optional<Layout>& layout) {
    if (!layout || affinity[v.index] || !fn.type(v).is_tile()) return;
    affinity[v.index] = layout;
    changed = true;
  };
  auto first_of = [&](const std::vector<ir::ValueId>& values, size_t from, const std::vector<int64_t>& shape) {
    for (size_t i = from; i < values.size(); ++i)
      if (affinity[values[i].index] && fn.type(values[i]).shape == shape) return affinity[values[i].index];
    return std::optional<Layout>{};
  };
  auto yielded = [&](ir::BlockId block, size_t index) {
    const ir::Op& term = fn.op(fn.block(block).ops.back());
    return index < term.operands.size() ? affinity[term.operands[index].index] : std::nullopt;
  };
  // Loops feed results back into their bodies: repeat until nothing changes.
  while (changed) {
    changed = false;
    fn.walk([&](ir::OpId id) {
      const ir::Op& op = fn.op(id);
      if (op.kind == OpKind::Dot) {
        if (std::optional<MmaLayout> mma = tensor_core_layout(fn, op, num_warps, arch))
          take(op.results[0], Layout{{}, {}, mma});
      } else if (ir::is_elementwise(op.kind) && op.results.size() == 1 && fn.type(op.results[0]).is_tile()) {
        take(op.results[0], first_of(op.operands, 0, fn.type(op.results[0]).shape));
      } else if (op.kind == OpKind::Reduce && !op.operands.empty()) {
        // A row max or sum of an accumulator stays in the slice of its layout:
        // it reduces within threads and across the lanes sharing a row, and
        // `m[:, None]` back to the tile is a register copy. Without this the
        // loop-carried statistics of an online softmax would sit in a blocked
        // layout, converted through shared memory every iteration.
        const std::optional<Layout>& source = affinity[op.operands[0].index];
        if (source && source->mma && source->sliced.empty()) {
          int axis = static_cast<int>(op.int_attr("axis"));
          for (ir::ValueId r : op.results) take(r, slice(*source, axis));
        }
      } else if (op.kind == OpKind::Reshape || op.kind == OpKind::Trans || op.kind == OpKind::Split ||
                 op.kind == OpKind::Join) {
        // An accumulator reshaped, split or joined stays in its threads
        // (layout_linear.cpp): rotary's halves of a gradient. A transpose
        // does too once reshaped (reshape, trans, split is how halves are
        // taken apart); an accumulator transposed as it is heads for a dot,
        // a store or atomics, which stage or vectorize it along its new rows.
        std::vector<Layout> operands;
        for (ir::ValueId v : op.operands)
          if (fn.type(v).is_tile()) {
            if (!affinity[v.index] || (op.kind == OpKind::Trans && !affinity[v.index]->linear)) return;
            operands.push_back(*affinity[v.index]);
          }
        for (size_t which = 0; which < op.results.size(); ++which)
          take(op.results[which], layout_in_place(fn, op, operands, which));
      } else if (op.kind == OpKind::For && op.regions.size() == 1) {
        const std::vector<ir::ValueId>& args = fn.block(op.regions[0]).args;
        for (size_t i = 0; i < op.results.size() && i + 1 < args.size(); ++i) {
          std::optional<Layout> l = affinity[op.operands[3 + i].index];
          if (!l) l = yielded(op.regions[0], i);
          if (!l) l = affinity[args[i + 1].index];
          take(args[i + 1], l);
          take(op.results[i], l);
        }
      } else if (op.kind == OpKind::If) {
        for (size_t i = 0; i < op.results.size(); ++i)
          for (ir::BlockId region : op.regions) take(op.results[i], yielded(region, i));
      }
    });
  }
  return affinity;
}

}  // namespace tegula::backends::cuda
