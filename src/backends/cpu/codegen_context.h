// Internal to the CPU backend: the state shared by the per-family emitters
// (elementwise, shape, memory, control, reduce, dot, debug) while one
// Function is turned into C++.
//
// Naming: every IR value becomes the C++ local `v<index>` (its ValueId), so a
// reader of the generated source can map it back to the IR; values that share
// storage with another (reshape, expand_dims, loop results) take that value's
// name. Scalars are plain locals, tiles are row-major arrays: on the stack
// when small, in the per-thread scratch buffer when large.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/codegen.h"
#include "backends/cpu/emitter.h"
#include "ir/ir.h"
#include "passes/axis_info.h"
#include "passes/debug_sites.h"

namespace tegula::backends::cpu {

// Tiles up to this many bytes live on the stack; the stack total is capped too
// (worker threads may have small stacks).
inline constexpr int64_t kMaxStackTileBytes = 16 * 1024;
inline constexpr int64_t kMaxStackTotalBytes = 256 * 1024;

// C++ spelling of an element kind as stored in tiles and scalars
// (i1 -> bool, f16/bf16 -> uint16_t).
std::string c_scalar(ir::Scalar s);
// C++ spelling of one element of `t`: the scalar, or `T*` for pointers (the
// pointee of ptr<i1> is uint8_t: memory holds bytes, not C++ bools).
std::string c_element(const ir::Type& t);
// The element type of a tile's array: c_element, except that i1 tiles hold
// bytes 0/1 (uint8_t). g++ vectorizes a mask read from a byte array but not
// one read from a bool array.
std::string c_storage(const ir::Type& t);
// A read-only declaration's type: "const float", "float* const".
std::string c_const(const ir::Type& t);
// sizeof(c_element(t)) on this host.
int64_t c_element_size(const ir::Type& t);
// The type arithmetic on `s` is done in: float for f16/bf16, else c_scalar.
std::string c_compute(ir::Scalar s);
bool is_half(ir::Scalar s);  // f16, bf16 or fp8: stored as bits, computed in float
// `expr` (of storage type `s`) as the compute type, and back.
std::string to_compute(ir::Scalar s, const std::string& expr);
std::string from_compute(ir::Scalar s, const std::string& expr);
// An integer literal of type `s` that is valid C++ for every value.
std::string int_literal(int64_t value, ir::Scalar s);
// A double literal that round-trips exactly (hex float, inf, nan).
std::string float_literal(double value);
// `text` as a C string literal (escaped).
std::string c_string_literal(std::string_view text);

class CodegenContext {
 public:
  CodegenContext(const ir::Function& fn, const CodegenOptions& options);

  const ir::Function& fn;
  const CodegenOptions& options;
  Emitter out;

  // --- names -----------------------------------------------------------------
  const std::string& name(ir::ValueId v) const { return names_.at(v.index); }
  // Element `index` of `v` ("v7[i]"), or `v` itself for a scalar.
  std::string element(ir::ValueId v, std::string_view index) const;
  // `v` reads the storage of `storage` from now on (no copy).
  void alias(ir::ValueId v, ir::ValueId storage) {
    names_.at(v.index) = name(storage);
    stored_.at(v.index) = stored_.at(storage.index);
  }
  // Whether tile `v` has an array by now (declared or aliased); a tile
  // without one lives only as a local of a fused loop.
  bool has_storage(ir::ValueId v) const { return stored_.at(v.index); }
  // A fresh local name, e.g. "i3" for loop indices.
  std::string fresh(std::string_view stem);
  // `name` itself the first time, then `name_2`, `name_3`...: for locals
  // named after a value that several loops of one scope may declare.
  std::string unique(const std::string& name);

  // --- declarations ------------------------------------------------------------
  // Declares the storage of `v` (uninitialized array for tiles, mutable
  // scalar otherwise) named name(v); a value with planned storage names that
  // storage instead and declares nothing.
  void declare(ir::ValueId v);
  // `v` (a tile of the same type) will live in the storage of `storage`: its
  // declare() aliases instead of declaring. The loop emitter plans this for a
  // yielded value whose loop-carried argument is dead once it is computed
  // (codegen_control.cpp), so the yield copies nothing.
  void plan_storage(ir::ValueId v, ir::ValueId storage) { planned_.at(v.index) = storage; }
  bool has_planned_storage(ir::ValueId v) const { return planned_.at(v.index).valid(); }
  // Declares an array named `name` for `numel` elements of `element_type`.
  void declare_array(const std::string& element_type, int64_t element_size, int64_t numel,
                     const std::string& name);
  // Declares `v` and copies `from` into it (same type).
  void declare_copy(ir::ValueId v, ir::ValueId from);
  // Copies `from` into the existing storage of `to` (same type).
  void copy(ir::ValueId to, ir::ValueId from);
  // Copies sources[i] into the storage of dests[i], all "at once": correct
  // even when a source is itself one of the destinations (yield %b, %a).
  void parallel_copy(const std::vector<ir::ValueId>& dests, const std::vector<ir::ValueId>& sources);

  // --- emission ------------------------------------------------------------------
  // Emits every op of `block` except its terminator.
  void emit_block_body(ir::BlockId block);
  // Emits consecutive per-element ops of one block (ending at most at one
  // store) as fused loops, grouped by element count.
  void schedule_segment(const std::vector<ir::OpId>& segment);
  // Emits one op (a comment line naming it and its location, then its code).
  void emit_op(ir::OpId op);
  // The terminator of `block`.
  const ir::Op& terminator(ir::BlockId block) const;
  // "add.py:3:11", or "" without a location.
  std::string location(const ir::Op& op) const;
  // `for (int i = 0; i < n; ++i)` header over a flat element index, with
  // the vectorization hint; the caller opens the body.
  void open_element_loop(const std::string& index, int64_t numel);

  int64_t scratch_bytes() const { return scratch_bytes_; }
  // Contiguity facts of integer and pointer values (src/passes/axis_info.h).
  const passes::AxisInfoAnalysis& axis_info() const { return axis_info_; }
  // The contiguity of `v` per dim: axis info's, except that a tile carried
  // through a `for` and advanced by the same amount in every element each
  // iteration (`ptrs += BLOCK_K`) keeps the contiguity of its initial value,
  // which the analysis (starting loop-carried values at "unknown") misses.
  const std::vector<int64_t>& contiguity(ir::ValueId v) const;
  // The live ops using `v` (nested regions included).
  const std::vector<ir::OpId>& users(ir::ValueId v) const { return users_.at(v.index); }
  // Debug mode only: the numbered checks (codegen_bounds.h).
  std::optional<passes::DebugSites> debug_sites;

 private:
  void find_uniformly_advanced_tiles(const ir::Op& loop);

  std::vector<std::string> names_;
  std::vector<std::vector<ir::OpId>> users_;
  std::vector<ir::ValueId> planned_;  // storage planned for a value, or invalid
  std::vector<bool> stored_;          // see has_storage
  std::map<std::string, int> uses_of_name_;  // see unique
  passes::AxisInfoAnalysis axis_info_;
  std::vector<std::pair<ir::ValueId, ir::ValueId>> carried_like_init_;  // carried tile -> its initial value
  int next_fresh_ = 0;
  int64_t stack_bytes_ = 0;
  int64_t scratch_bytes_ = 0;
};

// Whether every element of tile `v` is the same value: a splat or constant,
// through broadcasts and reshapes.
bool is_uniform_tile(const ir::Function& fn, ir::ValueId v);

// "// v7 = add(v3, v6)  add.py:4:12": the comment line naming an op.
std::string op_comment(const CodegenContext& ctx, const ir::Op& op);

// --- per-family emitters (one file each) -----------------------------------------
// Tile-valued per-element ops (see codegen_fusion.cpp) never reach these:
// they are emitted in fused element loops through the *_element functions.
void emit_elementwise(CodegenContext& ctx, const ir::Op& op);   // EW ops on scalars
void emit_value_source(CodegenContext& ctx, const ir::Op& op);  // scalar constant, program_id, num_programs
void emit_shape(CodegenContext& ctx, const ir::Op& op);         // trans, join, split; scalar<->tile reshape
void emit_memory(CodegenContext& ctx, const ir::Op& op);        // scalar load, store
void emit_control(CodegenContext& ctx, const ir::Op& op);       // for, if, while
void emit_reduce(CodegenContext& ctx, const ir::Op& op);
void emit_dot(CodegenContext& ctx, const ir::Op& op);
void emit_debug(CodegenContext& ctx, const ir::Op& op);         // print, assert
void emit_scan(CodegenContext& ctx, const ir::Op& op);          // codegen_scan.cpp
void emit_sort(CodegenContext& ctx, const ir::Op& op);          // codegen_sort.cpp
// Whether `fn` sorts (its unit then needs prelude_sort.h).
bool uses_sort(const ir::Function& fn);
void emit_indexed(CodegenContext& ctx, const ir::Op& op);       // gather, histogram: codegen_gather.cpp
void emit_atomic(CodegenContext& ctx, const ir::Op& op);        // atomic_rmw, atomic_cas
// Whether `fn` has atomics (its unit then needs prelude_atomic.h).
bool uses_atomics(const ir::Function& fn);

// --- element expressions, for fused loops ------------------------------------------
// `operands` holds one C++ expression per operand: its element at the loop's
// flat index `index` (or the scalar itself).
//
// The element of elementwise op `op`, in the storage type of its result.
std::string elementwise_expr(const CodegenContext& ctx, const ir::Op& op,
                             const std::vector<std::string>& operands);
// Element `index` of a tile constant, splat or arange.
std::string value_source_element(const CodegenContext& ctx, const ir::Op& op,
                                 const std::vector<std::string>& operands, const std::string& index);
// Element `index` of a broadcast; reads the operand's array at the mapped index.
std::string broadcast_element(const CodegenContext& ctx, const ir::Op& op, const std::string& index);
// The same for the element at flat index row * row_length + column of a loop
// over rows (0 <= column < row_length, row_length dividing the result's last
// dim of size > 1), as an index affine in `column`.
std::string broadcast_row_element(const CodegenContext& ctx, const ir::Op& op, const std::string& row,
                                  int64_t row_length, const std::string& column);
// The operand's flat index that result element `index` of a broadcast from
// `from` to `to` reads.
int64_t broadcast_source_index(const ir::Type& from, const ir::Type& to, int64_t index);
// The loaded element (never touching memory where the mask is false).
std::string load_element(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands);
// The statement storing one element.
std::string store_statement(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands);

// Whether `op` is a tile op computing element i from element i of its
// operands (or from i alone), so it can share an element loop with others
// of the same element count.
bool is_per_element(const CodegenContext& ctx, const ir::Op& op);
// Emits `ops` (consecutive per-element ops of one block, same element count)
// as one loop. Results used outside the group get arrays; the others stay
// scalar locals of the loop body.
void emit_fused(CodegenContext& ctx, const std::vector<ir::OpId>& ops);

}  // namespace tegula::backends::cpu
