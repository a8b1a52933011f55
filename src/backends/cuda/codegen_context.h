// Internal to the CUDA backend: the CUDA dialect of the C-family printer
// (backends/c_family/printer.h) and the state the per-family emitters
// (elementwise, memory, shape, reduce, dot, debug, ...) share while one
// Function becomes a CUDA kernel.
//
// Naming: IR value %7 (as the IR printer numbers it) is the C++ local `v7`;
// parameters are `arg_<name>`. A scalar is a plain local, the same in every
// thread (the IR makes scalars uniform across a program). A tile is a
// register array `T v7[K]` of the K elements this thread holds in the
// value's primary layout; the same tile in another layout one of its uses
// needs is `v7_1`, `v7_2`, ... made right after the definition. Arrays are
// indexed only by loop counters of fully unrolled loops, so they live in
// registers.
//
// Thread coordinates: `lane` and `warp` are computed once; for each layout
// and shape in use, the prologue defines `tbN`, the linear index of the
// thread's first element, and `ownN` when the layout replicates elements
// (true in exactly one of the threads holding each element).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/c_family/printer.h"
#include "backends/c_family/spelling.h"
#include "backends/c_family/text.h"
#include "backends/cuda/codegen.h"
#include "backends/cuda/layout.h"
#include "backends/cuda/shared_tile.h"
#include "backends/cuda/warp_specialize.h"
#include "backends/tensor_map_param.h"
#include "ir/ir.h"
#include "passes/axis_info.h"
#include "passes/debug_sites.h"
#include "passes/pointer_provenance.h"

namespace tegula::backends::cuda {

using c_family::Emitter;

// --- spellings in the CUDA dialect (backends/c_family/spelling.h) --------------------
// The type of one element in registers: bool, int, tg_f16, ...
inline std::string c_scalar(ir::Scalar s) { return c_family::scalar_type(s, c_family::Dialect::Cuda); }
// What memory holds for s: unsigned char for i1.
inline std::string c_memory(ir::Scalar s) { return c_family::memory_type(s, c_family::Dialect::Cuda); }
// The element type of t (pointer types as T*).
inline std::string c_element(const ir::Type& t) { return c_family::element_type(t, c_family::Dialect::Cuda); }
// A read-only local's type: "const float", "float* const".
inline std::string c_const(const ir::Type& t) { return c_family::const_type(t, c_family::Dialect::Cuda); }
// float for f16/bf16, else c_scalar.
inline std::string c_compute(ir::Scalar s) { return c_family::compute_type(s, c_family::Dialect::Cuda); }
using c_family::from_compute;
using c_family::is_half;
using c_family::to_compute;
// An integer literal of C++ type c_scalar(s): c_family::int_literal, with
// the value wrapped to the width of s and a cast for widths other than 32
// and 64.
std::string int_literal(int64_t value, ir::Scalar s);
std::string float_literal(double value, ir::Scalar s);  // of type s (f16/bf16: their bits)
// `text` as a C string literal (escaped, backends/c_family/text.h).
inline std::string c_string_literal(std::string_view text) {
  return c_family::string_literal(text, c_family::Dialect::Cuda);
}
int64_t element_bytes(const ir::Type& t);   // in registers and shared memory
// The most shared memory one program of an sm_<arch> kernel may have, in bytes.
int64_t shared_limit(int arch);

// An expression of `var` that moves bit k of var to bit dest[k] (-1: drops
// it), as shifts and masks: e.g. "(i & 3) + (i >> 2 << 9)". `width` is the
// number of meaningful bits of var.
std::string bits_expr(const std::string& var, const std::vector<int>& dest, int width);

// The CUDA dialect of the C-family printer.
class CudaContext : public c_family::Printer {
 public:
  CudaContext(const ir::Function& fn, const CodegenOptions& options);

  const CodegenOptions& options;
  const passes::AxisInfoAnalysis axis_info;
  const LayoutPlan plan;

  // --- names and tiles --------------------------------------------------------------
  // The array holding tile `v` in `layout` (its primary or one of its extras).
  std::string tile(ir::ValueId v, const Layout& layout) const;
  // Operand k of `op`: a scalar's name, or the tile in the layout `op` reads it in.
  std::string operand(ir::OpId op, size_t k) const override;
  const Layout& operand_layout(ir::OpId op, size_t k) const;
  const Layout& layout(ir::ValueId v) const { return plan.primary(v); }
  // Name the extra layout `index` of v gets.
  std::string extra_name(ir::ValueId v, size_t index) const;

  Distribution distribution(const Layout& layout, const std::vector<int64_t>& shape) const {
    return distribute(layout, shape);
  }
  // `T name[K];` for a tile of `type` in `layout`; returns K.
  int declare_tile(const std::string& array, const ir::Type& type, const Layout& layout);
  // The prologue constant holding this thread's first linear index ("tb2").
  std::string thread_base(const Distribution& d);
  // Declares `lane` and `warp` in the prologue (once).
  void thread_ids();
  // "own2" for replicated distributions, "" when every thread owns its elements.
  std::string owner(const Distribution& d);
  // Linear index of register `reg` ("tb2 + (i & 3)").
  std::string element_index(const Distribution& d, const std::string& reg);
  // `#pragma unroll` + `for (int i = 0; i < count; i += step)`; returns the
  // counter's name. The caller closes it.
  std::string open_unrolled(int count, int step = 1);

  // --- emission ------------------------------------------------------------------------
  // Every op of `block` but its terminator.
  void emit_block_body(ir::BlockId block) override;
  void emit_op(ir::OpId op);
  // Makes v's extra layouts (right after v is defined).
  void emit_extras(ir::ValueId v);
  // Declares `dest` (a new array) and copies tile `v` from layout `from` into it in `to`.
  void emit_conversion(ir::ValueId v, const std::string& source, const Layout& from, const std::string& dest,
                       const Layout& to);

  // --- the printer's hooks around regions (codegen_regions.cpp) ---------------------------
  // Storage in the value's primary layout; tiles copied register by register.
  void declare_storage(ir::ValueId v) override;
  void copy_value(ir::ValueId dest, const std::string& source) override;
  void declare_saved_tile(ir::ValueId like, const std::string& copy, const std::string& source) override;
  // Software pipelining (codegen_pipeline.cpp) around `for` loops.
  void begin_loop(ir::OpId loop, const std::string& trips) override;
  void begin_iteration(ir::OpId loop, const std::string& trips, const std::string& k) override;
  void end_loop(ir::OpId loop) override;
  // Barrier and store bookkeeping: a loop body may follow its own previous
  // iteration, a region may or may not have run.
  void enter_loop_body(ir::OpId loop) override;
  void before_else(ir::OpId op) override;
  void leave_regions(ir::OpId op) override;
  // The extra layouts of a block's (carried) arguments.
  void enter_block(ir::BlockId block) override;

  // --- shared memory ----------------------------------------------------------------------
  // Reserves `bytes` of the dynamic shared buffer for one use and returns
  // where they start (an unsigned char pointer expression, a multiple of
  // `align` bytes from the buffer's start); emits the barrier that keeps
  // readers of an earlier use from seeing them overwritten, unless a small
  // area fits beside that use.
  std::string shared_scratch(int64_t bytes, int64_t align = 16);
  // After the last read of the latest scratch area.
  void shared_reads_done();
  // After thread 0 issued a TMA store or reduction of the latest scratch
  // area: the copy engine reads the block out of shared memory while the
  // kernel goes on. The first later use of shared memory that may overlap
  // it has thread 0 wait for the read (cp.async.bulk.wait_group.read) before
  // the barrier that use takes; so does the kernel's end
  // (finish_bulk_reads), before the CTA's shared memory goes.
  void bulk_reads_pending();
  void finish_bulk_reads();
  // Entering loop bodies and leaving regions: assume readers of any area may be pending.
  void assume_shared_readers();
  int64_t shared_bytes() const { return shared_bytes_; }
  // Where the area shared_scratch handed out last starts, in bytes from tg_smem.
  int64_t scratch_begin() const { return scratch_begin_; }
  // Keeps the first `bytes` of the buffer for one long use (a pipelined
  // loop's ring of tiles, codegen_pipeline.cpp) until release_shared();
  // scratch areas start after it meanwhile. Emits the barrier the previous
  // use needs, like shared_scratch.
  void reserve_shared(int64_t bytes);
  void release_shared();
  int64_t shared_reserved() const { return shared_reserved_; }
  // A barrier every thread passes, which also ends pending shared reads.
  void full_barrier() {
    barrier();
    shared_readers_pending_ = false;
  }
  // Loads a pipelined loop issues ahead (cp.async, or a TMA ring's desc
  // loads and the transposes the dot reads): by value index of the load's
  // result, where the current iteration's tile sits in shared memory.
  std::map<uint32_t, SharedTile> ring_tiles;
  // Set by a pipelined loop whose wgmma dot keeps its group in flight into
  // the next iteration (codegen_pipeline.cpp): that dot waits only for the
  // previous iteration's group, then calls pipeline_refill() to issue the
  // loads ahead into the stage that group read.
  // With `cover` set (a loop of several dots, attention's), the group is
  // not waited for in its iteration at all: `cover`, the body's first dot,
  // waits for every group in the next iteration before anything reads the
  // accumulator, and the refill follows the in-flight dot behind a barrier.
  struct InFlightDot {
    ir::OpId dot, loop;
    std::string trips, k;
    bool refilled = false;
    ir::OpId cover;
    bool tma_ring = false;  // the loop is a TMA ring (codegen_tma_ring.cpp), which refills it
    // Issued one iteration late (codegen_tma_ring.cpp): the dot's site packs
    // its A fragments into `fragments`; its group goes out behind the next
    // iteration's `cover` (or after the loop) and retires, with the refill,
    // before `retire_before` (the first op after `cover` reading the carried
    // accumulator) or at the dot's site, whichever comes first.
    bool late = false;
    bool retired = false;
    std::string fragments;
    ir::OpId retire_before;
  };
  std::optional<InFlightDot> in_flight_dot;
  // Set before the body is emitted when a producer warpgroup feeds the
  // kernel's TMA ring (warp_specialize.h): the body then runs on the
  // consumer threads only, and their barriers leave the producer out.
  std::optional<WarpSpecialization> warp_specialization;
  // A barrier of every thread that runs the kernel's body.
  void barrier() { out.line(barrier_statement() + ";"); }
  std::string barrier_statement() const {
    return warp_specialization
               ? "tg_named_barrier<" + std::to_string(warp_specialization->consumer_threads) + ">(1)"
               : "__syncthreads()";
  }

  // --- global memory ordering -----------------------------------------------------------------
  // A load after a store of this program waits for the store of every thread
  // (one barrier), so a program sees its own writes like on the CPU.
  // A TMA store's thread waits only until the copy engine has read the
  // block out of shared memory; the next load of the program (after
  // after_bulk_store, or in a region that may follow one) waits for the
  // writes themselves first. A TMA reduction (desc_atomic) is waited for
  // only by the loads that may read the array it updates (`pointer`, by
  // pointer provenance; every load when not given): nothing else of the
  // program can see its writes, which no other thread's stores need to
  // precede (one thread issues it, after the barrier its staging takes).
  void before_global_load(ir::ValueId pointer = {});
  void after_global_store() { global_store_pending_ = true; }
  void after_bulk_store() { global_store_pending_ = bulk_store_pending_ = true; }
  void after_bulk_reduce(ir::ValueId base);
  void assume_global_stores() {
    global_store_pending_ = true;
    bulk_store_pending_ = bulk_store_pending_ || has_bulk_stores_;
  }
  // Stores (atomics included, TMA reductions not) anywhere in `block`.
  bool contains_store(ir::BlockId block) const;
  // The TMA reductions of `block` may have run: after_bulk_reduce for each.
  void assume_bulk_reductions(ir::BlockId block);

  // --- tensor maps (sm_90 TMA, codegen_tma.cpp) -------------------------------------------
  // The kernel parameter holding tensor map `map` ("tg_map0"), added after
  // the kernel's own parameters the first time a desc op names it.
  std::string tensor_map(const TensorMapParam& map);
  const std::vector<TensorMapParam>& tensor_maps() const { return tensor_maps_; }
  // The kernel's one mbarrier TMA loads complete on ("tg_tma_bar", 8 bytes
  // after everything else in the buffer, initialized in the prologue), and
  // the parity of the phase the next load completes ("tg_tma_phase", flipped
  // by each load: the phase logic lives in codegen_tma.cpp only).
  std::string tma_barrier() {
    uses_tma_barrier_ = true;
    return "tg_tma_bar";
  }
  bool uses_tma_barrier() const { return uses_tma_barrier_; }
  // One line per desc op: which path it took (the layouts text shows them).
  std::vector<std::string> descriptor_paths;

  std::string prologue() const { return prologue_.text(); }
  // Device functions the unit needs besides the preludes (one per wgmma
  // shape): each emitted once, before the kernel.
  void add_device_helper(const std::string& name, const std::string& definition);
  std::string device_helpers() const;

  // Debug mode only: the numbered checks (codegen_bounds.h).
  std::optional<passes::DebugSites> debug_sites;

 private:
  Emitter prologue_;
  std::vector<Distribution> bases_;  // index N: the distribution of tbN
  std::vector<bool> replicated_base_;
  bool thread_ids_declared_ = false;
  int64_t shared_bytes_ = 0;
  int64_t shared_reserved_ = 0;
  std::vector<std::pair<std::string, std::string>> device_helpers_;  // name, definition
  bool shared_readers_pending_ = false;
  // Byte offsets in the buffer: the area whose readers may be pending, and
  // the one shared_scratch handed out last.
  static constexpr int64_t kEverything = INT64_MAX;
  int64_t pending_begin_ = 0, pending_end_ = 0;
  int64_t scratch_begin_ = 0, scratch_end_ = 0;
  bool global_store_pending_ = false;
  bool bulk_store_pending_ = false;
  bool has_bulk_stores_ = false;  // the kernel has desc stores (TMA stores: codegen_tma.cpp)
  bool has_bulk_writes_ = false;  // desc stores or desc atomics (TMA reductions)
  // The area a TMA store or reduction may still be reading (kEverything:
  // any, after a region that may hold one).
  bool bulk_reads_pending_ = false;
  int64_t bulk_begin_ = 0, bulk_end_ = 0;
  // Thread 0's wait for the bulk reads when `begin`..`end` may overlap them.
  void wait_bulk_reads_over(int64_t begin, int64_t end);
  // The parameters TMA reductions in flight may write (pointer provenance,
  // made when the first one is emitted), and whether one's target is unknown.
  std::optional<passes::PointerProvenance> provenance_;
  std::vector<int32_t> reduced_params_;
  bool reduced_unknown_ = false;
  bool may_read_reduced(ir::ValueId pointer);
  std::vector<TensorMapParam> tensor_maps_;
  bool uses_tma_barrier_ = false;
};

// --- per-family emitters (one file each) ---------------------------------------------------------
// Elementwise ops, constants, arange, splat, program_id, num_programs on
// scalars and tiles. For a tile result: computes it in `layout` into a new
// array `dest`, reading tile operands in the matching layout.
void emit_elementwise(CudaContext& ctx, ir::OpId op, const Layout* layout, const std::string& dest);
void emit_memory(CudaContext& ctx, ir::OpId op);                  // load, store
// broadcast, expand_dims (register copies, in any layout like elementwise),
// reshape, trans, join, split (through shared memory).
void emit_shape(CudaContext& ctx, ir::OpId op, const Layout* layout, const std::string& dest);
// The distribution in which the registers of trans `op`'s operand (its
// primary layout) hold the elements of its result: the transpose as a
// relabeling, for a reader that takes the result from those registers.
Distribution transposed_distribution(const CudaContext& ctx, ir::OpId trans);
void emit_reduce(CudaContext& ctx, ir::OpId op);
void emit_scan(CudaContext& ctx, ir::OpId op);                    // codegen_scan.cpp
void emit_sort(CudaContext& ctx, ir::OpId op);                    // codegen_sort.cpp
void emit_indexed(CudaContext& ctx, ir::OpId op);                 // gather, histogram: codegen_gather.cpp
void emit_dot(CudaContext& ctx, ir::OpId op);
void emit_dot_mma(CudaContext& ctx, ir::OpId op);                 // tensor cores: codegen_mma.cpp
// Whether `fn` has a dot (its unit then needs prelude_mma.h on sm_80+).
bool uses_dot(const ir::Function& fn);
// Software pipelining of `for` loops that feed tensor-core dots
// (codegen_pipeline.cpp), called by the control-flow hooks around the loop:
// before the loop (carried values initialized, `trips` declared), at the top
// of each iteration (loop counter `k`), and after the loop.
void pipeline_before_loop(CudaContext& ctx, ir::OpId loop, const std::string& trips);
void pipeline_iteration(CudaContext& ctx, ir::OpId loop, const std::string& trips, const std::string& k);
void pipeline_after_loop(CudaContext& ctx, ir::OpId loop);
// The loads of ctx.in_flight_dot's loop for the iteration ahead, issued from
// inside its dot once the previous group has been waited for.
void pipeline_refill(CudaContext& ctx);
// Multi-stage TMA rings of K loops whose wgmma dot reads two descriptor
// loads (codegen_tma_ring.cpp), tried by the pipeline hooks first: each
// returns whether the loop is a ring (and then emitted its part).
bool tma_ring_before_loop(CudaContext& ctx, ir::OpId loop, const std::string& trips);
bool tma_ring_iteration(CudaContext& ctx, ir::OpId loop, const std::string& trips, const std::string& k);
void tma_ring_refill(CudaContext& ctx);
// With the last dot issued late: its group, behind the first dot's in the
// loop (the previous iteration's, an empty group in the first) or after the
// loop (the last iteration's); and its retirement with the refill.
void tma_ring_issue_late(CudaContext& ctx, bool in_loop);
void tma_ring_retire(CudaContext& ctx);
// After the first dot's wait with the last dot late: the release of the
// blocks only the first dot reads, when they have barriers of their own.
void tma_ring_first_dot_retired(CudaContext& ctx);
bool tma_ring_after_loop(CudaContext& ctx, ir::OpId loop);
// "" when `loop` runs as a TMA ring; otherwise why not, as a phrase.
std::string tma_ring_refusal(const CudaContext& ctx, ir::OpId loop);
// For warp specialization (warp_specialize.cpp), of a loop that runs as a
// TMA ring: the values defined outside the loop that its copies read (the
// offsets' inputs); the bytes it reserves at the start of shared memory;
// its mbarriers' names, declared, and initialized by thread 0 (the caller
// makes every thread wait for that); and the producer's loop issuing every
// iteration's copies as the consumers release the stages.
std::vector<ir::ValueId> tma_ring_inputs(const CudaContext& ctx, ir::OpId loop);
int64_t tma_ring_shared_bytes(const CudaContext& ctx, ir::OpId loop);
void tma_ring_init_barriers(CudaContext& ctx, ir::OpId loop);
// The consumers' stage and parity, declared once when they run on across a
// loop over tiles; the producer's loop over one entry's iterations (its
// `stage`, `phase` and `sm` declared by the caller).
void tma_ring_declare_state(CudaContext& ctx, ir::OpId loop);
void tma_ring_produce(CudaContext& ctx, ir::OpId loop, const std::string& trips);
void emit_debug(CudaContext& ctx, ir::OpId op);                   // print, assert
void emit_inline_asm(CudaContext& ctx, ir::OpId op);              // codegen_inline_asm.cpp
void emit_atomic(CudaContext& ctx, ir::OpId op);                  // atomic_rmw, atomic_cas
void emit_tma(CudaContext& ctx, ir::OpId op);                     // desc_load, desc_store, desc_atomic: codegen_tma.cpp
// Whether trans `op` is left unemitted because the desc_store or desc_atomic
// right after it stages its operand's registers transposed (codegen_tma.cpp).
bool transpose_staged_by_tma(const CudaContext& ctx, ir::OpId trans);
// Whether `fn` has atomics (its unit then needs prelude_atomic.h).
bool uses_atomics(const ir::Function& fn);

// The C++ expression of elementwise op `op` on one element of each operand.
std::string elementwise_expr(const CudaContext& ctx, const ir::Op& op, const std::vector<std::string>& operands);

// Copies tiles between arrays: dest[j] = src[j] (same layout).
void emit_tile_copy(CudaContext& ctx, const std::string& dest, const std::string& src, int registers);

}  // namespace tegula::backends::cuda
