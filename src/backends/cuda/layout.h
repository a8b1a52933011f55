// Distributed layouts of the CUDA backend: which thread of a block holds which
// elements of a tile, and the choice of one layout per tile value.
//
// A *blocked* layout splits each dimension d of a tile into
//   size_per_thread[d] consecutive elements held by one thread,
//   threads_per_warp[d] threads of a warp side by side,
//   warps_per_cta[d] warps side by side,
// and repeats that pattern ("CTA tile") when the tile is larger. `order`
// lists the dims fastest first: register and lane numbering walk order[0]
// first. A tile smaller than the CTA tile along d is *replicated*: several
// threads hold the same elements. A *slice* layout is a blocked parent with
// some dims removed: the layout of a reduction result, whose elements every
// thread along the reduced dims holds.
//
// Every dim is a power of two, so a layout applied to a shape is a linear map
// over bits (a Distribution): each bit of the register index, of the lane id
// and of the warp id selects one bit of the element's row-major linear index,
// or nothing (replication). Two layouts that give the same Distribution for a
// shape are interchangeable; reductions find their shuffles and cross-warp
// steps by asking which lane and warp bits map into the reduced dim.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/axis_info.h"

namespace tegula::backends::cuda {

struct BlockedLayout {
  std::vector<int> size_per_thread;
  std::vector<int> threads_per_warp;  // product 32
  std::vector<int> warps_per_cta;     // product num_warps
  std::vector<int> order;             // dims, fastest first
  bool operator==(const BlockedLayout&) const = default;
};

// The accumulator layout of tensor-core dots (layout_mma.cpp). A warp holds
// tiles of 16 rows x 8 columns in mma.sync's fragment order: lane l has
// (l / 4, 2 * (l % 4) + {0, 1}) and the same two elements 8 rows below.
// Warp w sits at (w % warps_m, w / warps_m) of a warps_m x warps_n grid;
// each warp covers 16 rows and `warp_n` columns (8 for mma.sync; wgmma's
// instruction N for Hopper warpgroups, whose warps hold the same fragments),
// and the pattern repeats over the tile, columns first.
// With `warpgroup`, the dot runs as Hopper wgmma: each 4 warps (a
// warpgroup, warps_m a multiple of 4) compute m64 x warp_n tiles.
struct MmaLayout {
  int warps_m = 1;
  int warps_n = 1;
  int warp_n = 8;
  bool warpgroup = false;
  bool operator==(const MmaLayout&) const = default;
};

// One coordinate bit of one dim (dim -1: none).
struct CoordinateBit {
  int dim = -1;
  int bit = 0;
  bool operator==(const CoordinateBit&) const = default;
};

// A layout given bit by bit (layout_linear.cpp): the one reshape, trans,
// split and join leave a tile in when no thread gives another any element,
// such as an accumulator's halves split apart. Each bit of the register
// index, the lane id and the warp id selects one coordinate bit of one parent
// dim, or none (lanes or warps that hold the same elements). Coordinate bits
// that no entry selects (a larger tile) repeat in registers, as a blocked
// layout's CTA tile does.
struct LinearLayout {
  int rank = 0;
  std::vector<CoordinateBit> registers, lanes, warps;
  bool operator==(const LinearLayout&) const = default;
};

struct Layout {
  BlockedLayout parent;
  std::vector<int> sliced;  // parent dims removed, ascending
  // Set for an MMA accumulator layout (rank-2 parent); `parent` is then unused.
  std::optional<MmaLayout> mma = std::nullopt;
  // Set for a layout given bit by bit; `parent` is then unused.
  std::optional<LinearLayout> linear = std::nullopt;

  int parent_rank() const {
    return mma ? 2 : linear ? linear->rank : static_cast<int>(parent.order.size());
  }
  int rank() const { return static_cast<int>(parent_rank() - static_cast<int>(sliced.size())); }
  // The parent dim that value dim `value_dim` stands for.
  int parent_dim(int value_dim) const;
  bool operator==(const Layout&) const = default;
};

// "blocked{spt=[4], tpw=[32], wpc=[4], order=[0]}", or
// "slice{dim=1, parent=blocked{...}}" (dims of the parent, several if sliced twice).
std::string to_string(const Layout& layout);

// The layout of `layout` with value dim `value_dim` removed (a reduce result).
Layout slice(const Layout& layout, int value_dim);
// The layout whose slice at `value_dim` is `layout`: exists when the parent
// dim re-inserted at that position is one `layout` sliced away.
std::optional<Layout> unslice(const Layout& layout, int value_dim);

// A layout applied to a shape, as a linear map over bits. Element indices are
// row-major linear indices into the tile; -1 means "no bit" (the lanes or
// warps differing in that bit hold the same elements).
struct Distribution {
  int64_t numel = 1;
  std::vector<int> register_bits;  // image of bit k of the register index
  std::vector<int> lane_bits;      // 5 entries
  std::vector<int> warp_bits;      // log2(num_warps) entries

  int registers() const { return 1 << register_bits.size(); }
  // Linear index of register `r`'s element, minus the thread's own offset.
  int64_t register_offset(int r) const;
  // Whether lanes/warps differing only in replicated bits all exist (some do).
  bool replicated() const;
  bool operator==(const Distribution&) const = default;
};

Distribution distribute(const Layout& layout, const std::vector<int64_t>& shape);

// --- layouts given bit by bit (layout_linear.cpp) -------------------------------

// "linear{reg=[1:0, 0:3], lane=[1:1, 1:2, 0:0, 0:1, 0:2], warp=[0:4]}" (dim:bit, "-" for none)
std::string to_string(const LinearLayout& linear);
Distribution distribute_linear(const Layout& layout, const std::vector<int64_t>& shape);
// The linear layout whose distribution on `shape` is `d`.
Layout linear_layout(const Distribution& d, const std::vector<int64_t>& shape);
// `d` with every image bit renamed through `bit_map` (-1 stays -1).
Distribution renamed(Distribution d, const std::vector<int>& bit_map);
// Source linear bit -> result linear bit of trans(`perm`) from a tile of `from_shape`.
std::vector<int> trans_bit_map(const std::vector<int64_t>& from_shape, const std::vector<int64_t>& to_shape,
                               const std::vector<int64_t>& perm);
// split's halves of a tile held in `d` (its last dim of 2 is linear bit 0):
// each thread keeps its registers of either half when a register bit holds
// that bit; nothing when lanes or warps split it.
std::optional<Distribution> split_distribution(const Distribution& d);
// join of two tiles both held in `d`: the new last dim in register bit 0.
Distribution joined_distribution(const Distribution& d);
// The layout of `op`'s result `which` (reshape, trans, split, join) that
// needs no element to move between threads when its tile operands are in
// `operands`: nothing when there is none (a split of a dim across lanes, a
// join of tiles in different layouts) or for any other op.
std::optional<Layout> layout_in_place(const ir::Function& fn, const ir::Op& op, const std::vector<Layout>& operands,
                                      size_t which);

// --- tensor cores (layout_mma.cpp) ----------------------------------------------

// "mma{wpc=[2, 2], warp_n=8}", "wgmma{wpc=[4, 1], warp_n=128}"
std::string to_string(const MmaLayout& mma);
// The distribution of an MMA layout (possibly sliced) on `shape`.
Distribution distribute_mma(const Layout& layout, const std::vector<int64_t>& shape);
// The accumulator layout of `dot` when it runs on tensor cores for `arch`
// (compute capability * 10) with `num_warps` warps, or nothing when it takes
// the FMA path: f16/bf16 operands with an f32/f16/bf16 result, f32 operands
// at precision "tf32", "tf32x3", "bf16x3" or "bf16x6" (DotPrecision), i8
// operands with an i32 result; rank 2, M and N multiples of 16, K a
// multiple of the instruction's K; sm_80 and newer. On sm_90 with warps in
// whole warpgroups, f16/bf16 dots with M a multiple of 64 and an f32 (or
// bf16) accumulator take wgmma.
std::optional<MmaLayout> tensor_core_layout(const ir::Function& fn, const ir::Op& dot, int num_warps, int arch);

// Whether `op` is an atomic sm_90 can send as vector `red`s
// (codegen_atomic.cpp): a relaxed or release float32 add. Such atomics vote
// for their shape's vector width like stores; the emitter still needs its
// old values unused and consecutive, aligned registers.
bool vector_reduction(const ir::Function& fn, const ir::Op& op, int arch);
// How a tensor-core dot of f32 operands multiplies: one tf32 product, or
// the operands split into 2 tf32 (3 products) or 2 or 3 bf16 (3 or 6
// products), Triton's input precisions "tf32x3", "bf16x3", "bf16x6".
enum class DotPrecision { Native, Tf32, Tf32x3, Bf16x3, Bf16x6 };
DotPrecision dot_precision(const ir::Function& fn, const ir::Op& dot);
// Whether `dot` accumulates in f16 (f16 operands, f16 result: Triton's
// mma .f16.f16.f16.f16) rather than in f32 rounded once at the end.
bool accumulates_in_f16(const ir::Function& fn, const ir::Op& dot);
// By value index: the accumulator layout a value should keep because it is
// computed from a tensor-core dot's result (elementwise epilogues, loop-
// carried accumulators), or the linear layout a reshape, trans, split or
// join of such a value leaves it in without moving it; or nothing.
std::vector<std::optional<Layout>> tensor_core_affinity(const ir::Function& fn, int num_warps, int arch);

// Which value dim, and which bit of its coordinate, bit `linear_bit` of the
// row-major linear index of a tile of `shape` is (dim -1 when out of range).
CoordinateBit coordinate_bit(const std::vector<int64_t>& shape, int linear_bit);
// Where value dim `dim`'s coordinate bits start in the row-major linear index of a tile of `shape`.
int linear_offset_of(const std::vector<int64_t>& shape, int dim);

// How many consecutive registers (from any multiple of the result) hold
// consecutive elements along value dim `dim`: register bit k maps to
// coordinate bit k of `dim` for every k below log2 of the result.
int contiguous_registers(const Distribution& d, const std::vector<int64_t>& shape, int dim);

// The value dim that register bit 0 walks (-1 if one register per thread).
int fastest_register_dim(const Distribution& d, const std::vector<int64_t>& shape);

// The names the IR printer gives values ("x_ptr", "7"), by ValueId index.
std::vector<std::string> printed_names(const ir::Function& fn);

// --- assignment --------------------------------------------------------------

// The layouts of one function: a primary layout per tile value (the one its
// definition produces), the other layouts its uses ask for (made once, right
// after the definition, by recomputing or converting), and the layout each op
// reads each tile operand in.
class LayoutPlan {
 public:
  // `arch` (compute capability * 10) enables tensor-core layouts for dots
  // (sm_80 and newer); 0 plans every dot for the FMA path.
  LayoutPlan(const ir::Function& fn, const passes::AxisInfoAnalysis& info, int num_warps, int arch = 0);

  const Layout& primary(ir::ValueId v) const;
  const std::vector<Layout>& extras(ir::ValueId v) const { return extras_.at(v.index); }
  // The layout `op` reads operand `k` in (a tile operand), or the operand's primary.
  const Layout& request(ir::OpId op, size_t k) const;
  // The blocked layout chosen for tiles of `shape` when nothing asks otherwise.
  Layout default_layout(const std::vector<int64_t>& shape) const;
  // The blocked layout in which load or store `op` alone would vectorize
  // widest: its own contiguity (up to 16 bytes) along its own fastest dim;
  // the default layout of its shape for any other op.
  Layout access_layout(ir::OpId op) const;
  int num_warps() const { return num_warps_; }
  // One line per tile value: "%7 tile<1024xf32>: blocked{...}" (+ extras).
  std::string describe() const;

 private:
  struct Want {
    Layout layout;
    int weight = 0;
  };
  friend class LayoutAssigner;

  const ir::Function& fn_;
  int num_warps_;
  int arch_ = 0;
  std::vector<std::optional<Layout>> primary_;
  std::vector<std::vector<Layout>> extras_;
  std::vector<std::vector<std::optional<Layout>>> requests_;  // by op index, by operand
  // Preferred vector width and order of tiles of each shape, from the memory
  // ops that touch them.
  struct ShapePreference {
    std::vector<int64_t> shape;
    int vector = 1;
    std::vector<int> order;
    int64_t bytes = 0;  // bytes per element of the op that set them
  };
  std::vector<ShapePreference> preferences_;
  std::vector<std::optional<ShapePreference>> accesses_;  // by op index: loads and stores of tiles
};

}  // namespace tegula::backends::cuda
