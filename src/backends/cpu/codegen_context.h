// Internal to the CPU backend: the CPU dialect of the C-family printer
// (backends/c_family/printer.h) and the state the per-family emitters
// (elementwise, shape, memory, reduce, dot, debug, ...) share while one
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

#include "backends/c_family/printer.h"
#include "backends/c_family/spelling.h"
#include "backends/c_family/text.h"
#include "backends/cpu/codegen.h"
#include "ir/ir.h"
#include "passes/axis_info.h"
#include "passes/debug_sites.h"

namespace tegula::backends::cpu {

using c_family::Emitter;

// Tiles up to this many bytes live on the stack; the stack total is capped too
// (worker threads may have small stacks).
inline constexpr int64_t kMaxStackTileBytes = 16 * 1024;
inline constexpr int64_t kMaxStackTotalBytes = 256 * 1024;

// --- spellings in the CPU dialect (backends/c_family/spelling.h) ---------------------
// i1 -> bool, f16/bf16 -> uint16_t, fp8 -> uint8_t.
inline std::string c_scalar(ir::Scalar s) { return c_family::scalar_type(s, c_family::Dialect::Cpu); }
// One element of `t`: the scalar, or `T*` for pointers (the pointee of
// ptr<i1> is uint8_t: memory holds bytes, not C++ bools).
inline std::string c_element(const ir::Type& t) { return c_family::element_type(t, c_family::Dialect::Cpu); }
// A read-only declaration's type: "const float", "float* const".
inline std::string c_const(const ir::Type& t) { return c_family::const_type(t, c_family::Dialect::Cpu); }
// The type arithmetic on `s` is done in: float for f16/bf16, else c_scalar.
inline std::string c_compute(ir::Scalar s) { return c_family::compute_type(s, c_family::Dialect::Cpu); }
using c_family::from_compute;
using c_family::int_literal;
using c_family::is_half;
using c_family::to_compute;
// The element type of a tile's array: c_element, except that i1 tiles hold
// bytes 0/1 (uint8_t). g++ vectorizes a mask read from a byte array but not
// one read from a bool array.
std::string c_storage(const ir::Type& t);
// sizeof(c_element(t)) on this host.
int64_t c_element_size(const ir::Type& t);
// A double literal that round-trips exactly (shortest decimal, inf, nan).
std::string float_literal(double value);
// `text` as a C string literal (escaped, backends/c_family/text.h).
inline std::string c_string_literal(std::string_view text) {
  return c_family::string_literal(text, c_family::Dialect::Cpu);
}

// The CPU dialect of the C-family printer.
class CodegenContext : public c_family::Printer {
 public:
  CodegenContext(const ir::Function& fn, const CodegenOptions& options);

  const CodegenOptions& options;

  // --- names -----------------------------------------------------------------
  // Element `index` of `v` ("v7[i]"; "tg_addptr(v7[i], offset7)" for a
  // pointer tile kept as an offset), or `v` itself for a scalar.
  std::string element(ir::ValueId v, std::string_view index) const;
  // `v` reads the storage of `storage` from now on (no copy).
  void alias(ir::ValueId v, ir::ValueId storage) override {
    Printer::alias(v, storage);
    stored_.at(v.index) = stored_.at(storage.index);
  }
  // Whether tile `v` has an array by now (declared or aliased); a tile
  // without one lives only as a local of a fused loop.
  bool has_storage(ir::ValueId v) const { return stored_.at(v.index); }
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
  // (codegen_in_place_yields.cpp), so the yield copies nothing.
  void plan_storage(ir::ValueId v, ir::ValueId storage) { planned_.at(v.index) = storage; }
  bool has_planned_storage(ir::ValueId v) const { return planned_.at(v.index).valid(); }
  // Tile `v` reads memory where it lies instead of an array of its own:
  // declares `const T* const name = pointer;` and names `v` by it
  // (codegen_fusion.cpp, "Loads read in place").
  void declare_pointer(ir::ValueId v, const std::string& pointer_name, const std::string& pointer);
  // `v` is named `new_name` from now on (before its storage is declared).
  void rename(ir::ValueId v, const std::string& new_name) { names_.at(v.index) = new_name; }
  // Declares an array named `name` for `numel` elements of `element_type`.
  void declare_array(const std::string& element_type, int64_t element_size, int64_t numel,
                     const std::string& name);

  // --- the printer's hooks (backends/c_family/printer.h) --------------------------------
  void declare_storage(ir::ValueId v) override { declare(v); }
  // A tile by std::memcpy, a scalar by assignment.
  void copy_value(ir::ValueId dest, const std::string& source) override;
  void declare_saved_tile(ir::ValueId like, const std::string& copy, const std::string& source) override;
  // A loop that may run without limit runs in chunks and asks between them
  // whether to stop (codegen_stop.cpp).
  void open_for(ir::OpId loop, const std::string& count_type, const std::string& k, const std::string& trips) override;
  void open_while(ir::OpId loop) override;
  std::string while_exit(ir::OpId loop) override;
  void close_loop(ir::OpId loop) override;
  // Plans the yields of the loop computed in place (codegen_in_place_yields.cpp).
  void begin_iteration(ir::OpId loop, const std::string& trips, const std::string& k) override;
  // Pointer tiles the loop advances by a scalar step become their initial
  // tile plus an offset (codegen_advanced_pointers.cpp): begin_loop picks and
  // declares them, end_loop gives a used loop result its final pointers.
  void begin_loop(ir::OpId loop, const std::string& trips) override;
  void end_loop(ir::OpId loop) override;
  // If `op` advances such a tile, emits the offset's step and returns true.
  bool emit_offset_step(ir::OpId op);
  // The flag, true when every row (last dim of size > 1) of such a tile
  // holds consecutive addresses, checked by begin_loop when the contiguity
  // analysis cannot tell (rows of `(start + arange) % n`, a stride known only
  // at run time); null when there is none.
  const std::string* rows_contiguous_flag(ir::ValueId v) const {
    auto found = rows_contiguous_.find(v.index);
    return found == rows_contiguous_.end() ? nullptr : &found->second;
  }

  // --- emission ------------------------------------------------------------------
  // Emits every op of `block` except its terminator: per-element ops as
  // fused loops, the others one by one.
  void emit_block_body(ir::BlockId block) override;
  // Emits consecutive per-element ops of one block (ending at most at one
  // store) as fused loops, grouped by element count.
  void schedule_segment(const std::vector<ir::OpId>& segment);
  // Emits one op (a comment line naming it and its location, then its code).
  void emit_op(ir::OpId op);
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
  // The same without what hints promise (tl.max_contiguous, tl.multiple_of):
  // where the two differ, a run that reads a promised row from its first
  // address checks the promise at run time first (codegen_fusion.cpp), so a
  // false one costs speed, not a store outside the arrays.
  const std::vector<int64_t>& proven_contiguity(ir::ValueId v) const;
  // The live ops using `v` (nested regions included).
  const std::vector<ir::OpId>& users(ir::ValueId v) const { return users_.at(v.index); }
  // Debug mode only: the numbered checks (codegen_bounds.h).
  std::optional<passes::DebugSites> debug_sites;
  // The function that offsets a pointer: debug mode's catches offsets that overflow (prelude_debug.h).
  const char* addptr() const { return debug_sites ? "tg_addptr_checked" : "tg_addptr"; }
  // Streamed stores (codegen_fusion.cpp, prelude_stream.h): the bytes one
  // program moves through the contiguous accesses of its fused loops (those
  // in loops counted once), and whether some store may stream.
  int64_t program_bytes = 0;
  bool streams = false;
  // Next tiles (codegen_fusion.cpp): tiles of the program body read in
  // place whose copy for the next program later loops prefetch, by the
  // name of their predicted pointer, with how many of their bytes loops
  // emitted so far fetch. Their number is the entry's `tile_history` slots.
  struct NextTile {
    std::string pointer;
    int64_t bytes = 0;
    int64_t prefetched = 0;
    // The loops left to fetch it, in order: true for those that take a
    // share (equal shares among them), false for those that fetch none.
    std::vector<bool> loops = {true};
  };
  std::vector<NextTile> next_tiles;
  // Tiles read in place (codegen_fusion.cpp, "Loads read in place"), by
  // value index: their bytes, for the loop of a store that reads them to
  // check that it does not write them.
  std::map<uint32_t, int64_t> tiles_read_in_place;
  // Streamed stores whose partial end line waits for the thread's next
  // program (prelude_stream.h, tg_line_carry): the entry's `line_carry`
  // slots.
  int line_carries = 0;
  // The slots holding a line once their store's loop has run: the scalar
  // loads and stores after it first write the line out if they touch it.
  std::vector<int> held_lines;
  // Reduces accumulated by the loop computing their operands
  // (codegen_fusion.cpp, "Reductions accumulated where computed"), by
  // their first result's index: the lane arrays that loop filled.
  std::map<uint32_t, std::vector<std::string>> accumulated_lanes;

 protected:
  // Op comments name values by their index ("v7"), whatever storage they share.
  std::string comment_name(ir::ValueId v) const override { return "v" + std::to_string(v.index); }

 private:
  void find_uniformly_advanced_tiles(const ir::Op& loop);
  // Emits the check behind rows_contiguous_flag(carried), rows of `row`.
  void check_rows_contiguous(ir::ValueId carried, int64_t row);

  std::vector<std::vector<ir::OpId>> users_;
  std::vector<ir::ValueId> planned_;  // storage planned for a value, or invalid
  std::vector<bool> stored_;          // see has_storage
  std::map<std::string, int> uses_of_name_;  // see unique
  passes::AxisInfoAnalysis axis_info_;
  passes::AxisInfoAnalysis proven_axis_info_;  // hints ignored
  std::vector<std::pair<ir::ValueId, ir::ValueId>> carried_like_init_;  // carried tile -> its initial value
  std::map<uint32_t, std::string> pointer_offsets_;  // carried pointer tile -> its offset variable
  std::map<uint32_t, ir::ValueId> offset_steps_;      // op advancing one -> that tile
  std::map<uint32_t, std::string> rows_contiguous_;  // such a tile -> see rows_contiguous_flag
  // Polled loops by op index (codegen_stop.cpp): the condition a `for` puts
  // before its poll ("k < trips && "; empty for a while), and the label
  // after each polled while.
  std::map<uint32_t, std::string> stop_polls_;
  std::map<uint32_t, std::string> while_exits_;
  int64_t stack_bytes_ = 0;
  int64_t scratch_bytes_ = 0;
};

// Whether every element of tile `v` is the same value: a splat or constant,
// through broadcasts and reshapes.
bool is_uniform_tile(const ir::Function& fn, ir::ValueId v);

// --- per-family emitters (one file each) -----------------------------------------
// Tile-valued per-element ops (see codegen_fusion.cpp) never reach these:
// they are emitted in fused element loops through the *_element functions.
void emit_elementwise(CodegenContext& ctx, const ir::Op& op);   // EW ops on scalars
void emit_value_source(CodegenContext& ctx, const ir::Op& op);  // scalar constant, program_id, num_programs
void emit_shape(CodegenContext& ctx, const ir::Op& op);         // trans, join, split; scalar<->tile reshape
void emit_memory(CodegenContext& ctx, const ir::Op& op);        // scalar load, store
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
// Whether tile ops call a libm function that has vector versions with
// TEGULA_VECTOR_MATH (prelude.h: exp, log, tanh...; codegen_elementwise.cpp).
bool uses_vector_math(const ir::Function& fn);
// Whether a dot has f16/bf16 operands (its unit needs prelude_gemm.h).
bool uses_half_dot(const ir::Function& fn);

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
// Element `index` of tile `v`: read from its array, or computed from its
// operands' when it has none (a tile computed where reduced).
std::string tile_element(const CodegenContext& ctx, ir::ValueId v, const std::string& index);
// Next tiles (codegen_fusion.cpp): what a loop in blocks of
// kNextTileBlock elements fetches of each pending next tile, its share
// (counted as fetched from now on): per block, `bytes_per_element` times
// kNextTileBlock bytes from `offset + first element * bytes_per_element`.
inline constexpr int64_t kNextTileBlock = 64;
struct NextTileFetch {
  std::string pointer;
  int64_t offset, bytes_per_element;
};
std::vector<NextTileFetch> plan_next_tile_fetches(CodegenContext& ctx, int64_t blocks);
// The prefetch of `fetch` for the block whose first element is `first`.
std::string next_tile_prefetch(const NextTileFetch& fetch, const std::string& first);
// Whether reduce `op` combines a whole tile along its one wide axis, in
// lanes of kNextTileBlock elements (codegen_reduce.cpp): its loop walks the
// tile in blocks of the fused loops' size, in the same order.
bool reduces_in_blocks(const CodegenContext& ctx, const ir::Op& op);
// Whether reduce `op` fetches next tiles in its loop (codegen_reduce.cpp).
bool reduce_fetches_next_tiles(const CodegenContext& ctx, const ir::Op& op);
// Whether reduce `op` is to be accumulated by the fused loop computing its
// operands, leaving it only the combining of the lanes (codegen_fusion.cpp).
bool reduce_accumulated_where_computed(const CodegenContext& ctx, const ir::Op& op);
// Emits `ops` (consecutive per-element ops of one block, same element count)
// as one loop. Results used outside the group get arrays; the others stay
// scalar locals of the loop body.
void emit_fused(CodegenContext& ctx, const std::vector<ir::OpId>& ops);

}  // namespace tegula::backends::cpu
