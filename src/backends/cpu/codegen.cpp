// The driver of CPU code generation: the per-program function, the exported
// entry point and the dispatch of every op to its family's emitter, plus the
// naming, storage and copy services of CodegenContext.
#include "backends/cpu/codegen.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "backends/c_family/control_flow.h"
#include "backends/c_family/prelude_text.h"
#include "backends/c_family/op_syntax.h"
#include "backends/cpu/codegen_bounds.h"
#include "backends/cpu/codegen_context.h"
#include "backends/cpu/codegen_stop.h"
#include "backends/cpu/prelude.h"
#include "backends/cpu/prelude_atomic.h"
#include "backends/cpu/prelude_fp8.h"
#include "backends/cpu/prelude_gemm.h"
#include "backends/cpu/prelude_libdevice.h"
#include "backends/cpu/prelude_sort.h"
#include "backends/cpu/prelude_stream.h"
#include "backends/kernel_abi.h"
#include "ir/fp8.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::Scalar;

// --- C++ spellings ----------------------------------------------------------------

std::string c_storage(const ir::Type& t) {
  if (!t.is_pointer() && t.scalar == Scalar::I1) return "uint8_t";
  return c_element(t);
}

int64_t c_element_size(const ir::Type& t) {
  if (t.is_pointer()) return static_cast<int64_t>(sizeof(void*));
  return ir::byte_size(t.scalar);
}

std::string float_literal(double value) {
  if (std::isnan(value)) return std::signbit(value) ? "(-__builtin_nan(\"\"))" : "__builtin_nan(\"\")";
  if (std::isinf(value)) return value < 0 ? "(-__builtin_inf())" : "__builtin_inf()";
  // The shortest decimal that reads back to the same double, for readability.
  std::string text = c_family::shortest_decimal(value, 17);
  return value < 0 ? "(" + text + ")" : text;
}

// --- CodegenContext ------------------------------------------------------------------

CodegenContext::CodegenContext(const ir::Function& f, const CodegenOptions& o)
    : Printer(f, c_family::Dialect::Cpu), options(o), axis_info_(f), proven_axis_info_(f, passes::Hints::Ignore) {
  for (size_t i = 0; i < fn.num_values(); ++i) names_[i] = "v" + std::to_string(i);
  users_.resize(fn.num_values());
  planned_.resize(fn.num_values());
  stored_.resize(fn.num_values(), false);
  fn.walk([&](ir::OpId id) {
    const ir::Op& o = fn.op(id);
    for (ir::ValueId v : o.operands) users_[v.index].push_back(id);
    if (o.kind == ir::OpKind::For) find_uniformly_advanced_tiles(o);
  });
  if (options.debug) debug_sites.emplace(fn);
}

// for ... iter_args(%p = %init): yield addptr(%p, uniform) (or add for
// integer tiles): every iteration moves all elements by the same amount, so
// %p is as contiguous as %init.
void CodegenContext::find_uniformly_advanced_tiles(const ir::Op& loop) {
  const ir::Block& body = fn.block(loop.regions[0]);
  const ir::Op& yield = terminator(loop.regions[0]);
  for (size_t i = 0; i + 1 < body.args.size() && i < yield.operands.size(); ++i) {
    ir::ValueId carried = body.args[i + 1], next = yield.operands[i], init = loop.operands[3 + i];
    if (!fn.type(carried).is_tile() || !fn.value(next).def.valid()) continue;
    const ir::Op& step = fn.op(fn.value(next).def);
    if (step.kind != ir::OpKind::AddPtr && step.kind != ir::OpKind::Add) continue;
    bool advances = step.operands[0] == carried && is_uniform_tile(fn, step.operands[1]);
    if (step.kind == ir::OpKind::Add && step.operands[1] == carried && is_uniform_tile(fn, step.operands[0])) advances = true;
    if (advances) carried_like_init_.emplace_back(carried, init);
  }
}

const std::vector<int64_t>& CodegenContext::contiguity(ir::ValueId v) const {
  for (const auto& [carried, init] : carried_like_init_)
    if (carried == v) return contiguity(init);
  return axis_info_.get(v).contiguity;
}

const std::vector<int64_t>& CodegenContext::proven_contiguity(ir::ValueId v) const {
  for (const auto& [carried, init] : carried_like_init_)
    if (carried == v) return proven_contiguity(init);
  return proven_axis_info_.get(v).contiguity;
}

bool is_uniform_tile(const ir::Function& fn, ir::ValueId v) {
  if (!fn.type(v).is_tile()) return true;
  ir::OpId def = fn.value(v).def;
  if (!def.valid()) return false;
  const ir::Op& o = fn.op(def);
  switch (o.kind) {
    case ir::OpKind::Splat:
    case ir::OpKind::Constant: return true;
    case ir::OpKind::Broadcast:
    case ir::OpKind::ExpandDims:
    case ir::OpKind::Reshape: return is_uniform_tile(fn, o.operands[0]);
    default: return false;
  }
}

std::string CodegenContext::element(ir::ValueId v, std::string_view index) const {
  if (!fn.type(v).is_tile()) return name(v);
  std::string at = name(v) + "[" + std::string(index) + "]";
  auto offset = pointer_offsets_.find(v.index);
  return offset == pointer_offsets_.end() ? at : std::string(addptr()) + "(" + at + ", " + offset->second + ")";
}

std::string CodegenContext::unique(const std::string& name) {
  int uses = ++uses_of_name_[name];
  return uses == 1 ? name : name + "_" + std::to_string(uses);
}

void CodegenContext::declare_array(const std::string& element_type, int64_t element_size, int64_t numel,
                                   const std::string& array_name) {
  int64_t bytes = element_size * numel;
  if (bytes <= kMaxStackTileBytes && stack_bytes_ + bytes <= kMaxStackTotalBytes) {
    stack_bytes_ += bytes;
    out.line("alignas(64) " + element_type + " " + array_name + "[" + std::to_string(numel) + "];");
    return;
  }
  int64_t offset = (scratch_bytes_ + 63) / 64 * 64;
  scratch_bytes_ = offset + bytes;
  out.line(element_type + "* const __restrict " + array_name + " = reinterpret_cast<" + element_type +
           "*>(scratch + " + std::to_string(offset) + ");");
}

void CodegenContext::declare(ir::ValueId v) {
  if (ir::ValueId storage = planned_.at(v.index); storage.valid()) {
    TEGULA_ASSERT(fn.type(storage) == fn.type(v), "planned storage of another type");
    out.line("// v" + std::to_string(v.index) + " is computed in place of " + name(storage));
    alias(v, storage);
    return;
  }
  const ir::Type& t = fn.type(v);
  stored_.at(v.index) = true;
  if (t.is_tile()) {
    declare_array(c_storage(t), c_element_size(t), t.numel(), name(v));
  } else {
    out.line(c_element(t) + " " + name(v) + "{};");
  }
}

void CodegenContext::declare_pointer(ir::ValueId v, const std::string& pointer_name, const std::string& pointer) {
  const ir::Type& t = fn.type(v);
  TEGULA_ASSERT(t.is_tile(), "only tiles read memory in place");
  rename(v, pointer_name);
  stored_.at(v.index) = true;
  out.line("const " + c_storage(t) + "* const " + pointer_name + " = " + pointer + ";");
}

void CodegenContext::copy_value(ir::ValueId dest, const std::string& source) {
  if (name(dest) == source) return;
  const ir::Type& t = fn.type(dest);
  if (t.is_tile()) {
    out.line("std::memcpy(" + name(dest) + ", " + source + ", sizeof(" + c_storage(t) + ") * " +
             std::to_string(t.numel()) + ");");
  } else {
    out.line(name(dest) + " = " + source + ";");
  }
}

void CodegenContext::declare_saved_tile(ir::ValueId like, const std::string& copy, const std::string& source) {
  const ir::Type& t = fn.type(like);
  declare_array(c_storage(t), c_element_size(t), t.numel(), copy);
  out.line("std::memcpy(" + copy + ", " + source + ", sizeof(" + copy + "[0]) * " + std::to_string(t.numel()) + ");");
}

void CodegenContext::open_element_loop(const std::string& index, int64_t numel) {
  out.line("TG_IVDEP");
  out.open("for (int " + index + " = 0; " + index + " < " + std::to_string(numel) + "; ++" + index + ")");
}

// Per-element ops become fused loops, one loop per element count. A
// *segment* is a maximal sequence of consecutive per-element ops of a block,
// ending at its first store; within a segment the ops are regrouped by
// element count (schedule_segment), so that a 32-element index computation
// sitting between two 2048-element loads does not split their loop.
void CodegenContext::emit_block_body(ir::BlockId block) {
  std::vector<ir::OpId> segment;
  std::unordered_set<uint32_t> in_segment;  // op indices of `segment`, for O(1) membership
  auto flush = [&] {
    if (!segment.empty()) schedule_segment(segment);
    segment.clear();
    in_segment.clear();
  };
  // A pure scalar op that reads nothing of the open segment is emitted
  // right away, ahead of the segment's loops: `y_ptr + row * stride` between
  // a tile's last op and its store does not split their loop.
  auto independent_scalar = [&](const ir::Op& o) {
    if (!ir::is_pure(o.kind) || !o.regions.empty() || o.results.empty()) return false;
    for (ir::ValueId r : o.results)
      if (fn.type(r).is_tile()) return false;
    for (ir::ValueId v : o.operands)
      if (in_segment.count(fn.value(v).def.index) != 0) return false;
    return true;
  };
  for (ir::OpId id : fn.block(block).ops) {
    const ir::Op& o = fn.op(id);
    if (o.erased || ir::is_terminator(o.kind)) continue;
    if (offset_steps_.count(id.index) != 0) {  // after the loads and stores it moves
      flush();
      at_source(o.loc, [&] {
        out.line(op_comment(o));
        emit_offset_step(id);
      });
      continue;
    }
    if (!is_per_element(*this, o)) {
      if (!independent_scalar(o)) flush();
      at_source(o.loc, [&] { emit_op(id); });  // an internal error names the kernel line
      continue;
    }
    segment.push_back(id);
    in_segment.insert(id.index);
    if (o.kind == ir::OpKind::Store) flush();
  }
  flush();
}

// List scheduling of one segment into fused runs. An op is ready once the ops
// of the segment defining its operands are placed. The current run takes the
// first ready op (in program order) of its element count; when there is none,
// the run is emitted and the first ready op starts the next one. Reordering
// per-element ops is safe because they are pure except for loads and the
// store that ends the segment, and the constraints below keep those in place:
//  * loads keep their program order, and the store comes last;
//  * a broadcast reads its operand at other indices, so it never joins the
//    run computing that operand;
//  * an op computed in place of another value's storage (plan_storage) waits
//    for every op before it, which may still read that storage.
void CodegenContext::schedule_segment(const std::vector<ir::OpId>& segment) {
  auto numel_of = [&](const ir::Op& o) { return fn.type(o.results.empty() ? o.operands[0] : o.results[0]).numel(); };
  std::vector<bool> placed(segment.size(), false);
  std::unordered_map<uint32_t, int> position;  // op index -> its place in `segment`
  for (size_t k = 0; k < segment.size(); ++k) position.emplace(segment[k].index, static_cast<int>(k));
  auto index_in_segment = [&](ir::ValueId v) -> int {
    auto it = position.find(fn.value(v).def.index);
    return it == position.end() ? -1 : it->second;
  };
  // The first op not yet placed, and the first load not yet placed: they
  // only move forward, so the questions of `ready` cost O(1) each.
  size_t first_unplaced = 0, first_unplaced_load = 0;
  auto advance = [&] {
    while (first_unplaced < segment.size() && placed[first_unplaced]) ++first_unplaced;
    while (first_unplaced_load < segment.size() &&
           (placed[first_unplaced_load] || fn.op(segment[first_unplaced_load]).kind != ir::OpKind::Load))
      ++first_unplaced_load;
  };
  advance();
  auto ready = [&](size_t k) {
    const ir::Op& o = fn.op(segment[k]);
    bool waits_for_all = o.kind == ir::OpKind::Store || (!o.results.empty() && planned_[o.results[0].index].valid());
    if (waits_for_all && first_unplaced < k) return false;
    if (o.kind == ir::OpKind::Load && first_unplaced_load < k) return false;
    for (ir::ValueId v : o.operands) {
      int def = index_in_segment(v);
      if (def >= 0 && !placed[static_cast<size_t>(def)]) return false;
    }
    return true;
  };
  std::vector<ir::OpId> run;
  std::unordered_set<uint32_t> run_results;  // value indices the current run defines
  int64_t run_numel = -1;
  auto joins_run = [&](size_t k) {
    const ir::Op& o = fn.op(segment[k]);
    if (numel_of(o) != run_numel) return false;
    return o.kind != ir::OpKind::Broadcast || run_results.count(o.operands[0].index) == 0;
  };
  for (size_t left = segment.size(); left > 0;) {
    size_t pick = segment.size();
    for (size_t k = first_unplaced; k < segment.size() && pick == segment.size(); ++k)
      if (!placed[k] && ready(k) && joins_run(k)) pick = k;
    if (pick == segment.size()) {
      if (!run.empty()) emit_fused(*this, run);
      run.clear();
      run_results.clear();
      for (size_t k = first_unplaced; k < segment.size() && pick == segment.size(); ++k)
        if (!placed[k] && ready(k)) pick = k;
      TEGULA_ASSERT(pick < segment.size(), "no schedulable op in a fused segment");
      run_numel = numel_of(fn.op(segment[pick]));
    }
    placed[pick] = true;
    advance();
    run.push_back(segment[pick]);
    for (ir::ValueId r : fn.op(segment[pick]).results) run_results.insert(r.index);
    --left;
  }
  if (!run.empty()) emit_fused(*this, run);
}

void CodegenContext::emit_op(ir::OpId id) {
  const ir::Op& o = fn.op(id);
  out.line(op_comment(o));
  if (ir::is_elementwise(o.kind)) return emit_elementwise(*this, o);
  switch (o.kind) {
    case ir::OpKind::Constant:
    case ir::OpKind::ProgramId:
    case ir::OpKind::NumPrograms:
    case ir::OpKind::Arange:
    case ir::OpKind::GlobalTimer:
    case ir::OpKind::Smid: return emit_value_source(*this, o);
    // No grid depends on a CPU kernel's, or it on one: nothing to order.
    case ir::OpKind::GdcWait:
    case ir::OpKind::GdcLaunchDependents: return;
    case ir::OpKind::Splat:
    case ir::OpKind::Broadcast:
    case ir::OpKind::ExpandDims:
    case ir::OpKind::Reshape:
    case ir::OpKind::Trans:
    case ir::OpKind::Join:
    case ir::OpKind::Split: return emit_shape(*this, o);
    case ir::OpKind::Load:
    case ir::OpKind::Store:
      for (int slot : held_lines) {
        std::string pointer = name(o.operands[0]);
        out.line("line_carry[" + std::to_string(slot) + "].flush_if_holds(" + pointer + ", sizeof(*" + pointer + "));");
      }
      return emit_memory(*this, o);
    case ir::OpKind::AtomicRmw:
    case ir::OpKind::AtomicCas: return emit_atomic(*this, o);
    case ir::OpKind::For:
    case ir::OpKind::If:
    case ir::OpKind::While: return c_family::emit_control(*this, id);
    case ir::OpKind::Reduce: return emit_reduce(*this, o);
    case ir::OpKind::Dot: return emit_dot(*this, o);
    case ir::OpKind::Scan: return emit_scan(*this, o);
    case ir::OpKind::Sort: return emit_sort(*this, o);
    case ir::OpKind::Gather:
    case ir::OpKind::Histogram: return emit_indexed(*this, o);
    case ir::OpKind::Print:
    case ir::OpKind::Assert: return emit_debug(*this, o);
    default: TEGULA_ASSERT(false, std::string("op not expected here: ") + ir::name(o.kind));
  }
}

// --- the translation unit --------------------------------------------------------------

namespace {

bool uses_narrow_floats(const ir::Function& fn) {
  for (size_t i = 0; i < fn.num_values(); ++i)
    if (ir::is_narrow_float(fn.type(ir::ValueId{static_cast<uint32_t>(i)}).scalar)) return true;
  return false;
}

// What a kernel parameter's slot in `args` holds (codegen.h documents the ABI).
std::string param_slot_read(const CodegenContext& ctx, const ir::Param& p, size_t index) {
  std::string slot = "args[" + std::to_string(index) + "]";
  if (p.type.is_pointer()) {
    std::string t = c_element(p.type);
    return "*static_cast<" + t + " const*>(" + slot + ")";
  }
  if (p.type.scalar == Scalar::I1) return "*static_cast<const uint8_t*>(" + slot + ") != 0";
  return "*static_cast<const " + c_scalar(p.type.scalar) + "*>(" + slot + ")";
}

// tl.inline_asm_elementwise carries a GPU's assembly (PTX, which only the
// CUDA backend runs, or another GPU's): the kernel is refused at the call,
// before any C++ is written.
void refuse_inline_asm(const ir::Function& fn) {
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    if (op.kind == ir::OpKind::InlineAsm)
      error_at(op.loc, Diag::NeedsOtherBackend,
               "tl.inline_asm_elementwise runs GPU assembly (PTX on the CUDA backend), which the CPU backend cannot run",
               "launch on the CUDA backend, or compute the same values with tl functions (guard the choice "
               "with a constexpr)");
  });
}

}  // namespace

std::string emit_cpp(const ir::Function& fn, const CodegenOptions& options) {
  refuse_inline_asm(fn);
  CodegenContext ctx(fn, options);
  const ir::Block& body = fn.block(fn.body());
  TEGULA_ASSERT(body.args.size() == fn.params.size(), "kernel parameters and body arguments differ");

  // The program body goes first into its own emitter: its scratch size and
  // its next tiles (a parameter) are only known once every tile has been
  // placed.
  ctx.out.open("");
  ctx.out.line("(void)pid_x; (void)pid_y; (void)pid_z; (void)grid; (void)scratch;");
  ctx.emit_block_body(fn.body());
  ctx.out.close();
  bool fetches_next_tiles = !ctx.next_tiles.empty();
  bool carries_lines = ctx.line_carries > 0;
  std::string params;
  for (size_t i = 0; i < fn.params.size(); ++i)
    params += c_element(fn.params[i].type) + " " + ctx.name(body.args[i]) + ", ";
  std::string program_header = "static inline void tegula_program(" + params +
                               "int32_t pid_x, int32_t pid_y, int32_t pid_z, const int32_t* grid, unsigned char* scratch" +
                               std::string(fetches_next_tiles ? ", const char** tile_history" : "") +
                               std::string(carries_lines ? ", tg_line_carry* line_carry" : "") +
                               stop_program_parameter(fn) + debug_program_parameter(options) + ") ";

  Emitter unit;
  unit.line("// Generated by Tegula: CPU code for kernel @" + c_family::comment_text(fn.name) + ".");
  unit.raw(kPrelude);
  if (uses_atomics(fn)) unit.raw(kAtomicPrelude);
  if (uses_sort(fn)) unit.raw(kSortPrelude);
  if (uses_half_dot(fn)) unit.raw(kGemmPrelude);
  if (ir::uses_fp8(fn)) {
    unit.raw(c_family::kCpuFunctions);
    unit.raw(c_family::kSoftFp8);
    unit.raw(kFp8Prelude);
    if (ir::uses_scalar(fn, ir::Scalar::F8E4B15)) unit.raw(c_family::kSoftFp8E4b15);
    if (ir::uses_scalar(fn, ir::Scalar::F8E4B8) || ir::uses_scalar(fn, ir::Scalar::F8E5B16))
      unit.raw(c_family::kSoftFp8Fnuz);
  }
  if (c_family::uses_libdevice(fn)) unit.raw(kLibdevicePrelude);
  if (ctx.streams || fetches_next_tiles) unit.raw(kStreamPrelude);
  emit_debug_helpers(unit, fn, options);
  unit.blank();
  unit.line("// ---- kernel ----");
  if (uses_narrow_floats(fn)) {
    // g++ 12 (-O3, AVX-512) miscompiles some vectorized loops that convert
    // f16 or bf16 elements when they carry `GCC ivdep`: elements come out
    // wrong, differently from run to run, though the loops carry no
    // dependence (tests/python/test_cpu_narrow_float_loops.py). Their
    // loops go without the hint; f32 and wider ones keep it.
    unit.line("#if defined(__GNUC__) && !defined(__clang__)");
    unit.line("#undef TG_IVDEP");
    unit.line("#define TG_IVDEP");
    unit.line("#endif");
  }
  emit_stop_helpers(unit, fn);
  if (ctx.streams || fetches_next_tiles) {
    unit.line("// The bytes one program moves through its fused loops: with the grid, whether a launch streams.");
    unit.line("static constexpr int64_t tg_program_bytes = " + std::to_string(ctx.program_bytes) + ";");
    unit.blank();
  }
  bool has_dot = false;
  fn.walk([&](ir::OpId id) { has_dot = has_dot || fn.op(id).kind == ir::OpKind::Dot; });
  if (uses_vector_math(fn) && !has_dot) {
    // SLEEF's 16-lane functions cost about what its 8-lane ones do per call,
    // so loops calling them run twice as fast on 512-bit vectors; g++
    // prefers 256 bits on these CPUs. Units with a dot keep the default
    // their dot was tuned with.
    unit.line("#if defined(TEGULA_VECTOR_MATH) && defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)");
    unit.line("#pragma GCC target(\"prefer-vector-width=512\")");
    unit.line("#endif");
  }
  unit.raw(program_header + ctx.out.text());
  unit.blank();
  unit.open("extern \"C\" void " + std::string(abi::kEntrySymbol) +
            "(void* const* args, const int32_t* grid, int64_t first, int64_t last)");
  std::string call_args;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    std::string local = ctx.name(body.args[i]);
    unit.line(c_const(p.type) + " " + local + " = " + param_slot_read(ctx, p, i) + ";  // " +
              c_family::comment_text(p.name));
    call_args += local + ", ";
  }
  if (ctx.scratch_bytes() > 0) {
    std::string bytes = std::to_string(ctx.scratch_bytes());
    unit.line("unsigned char* const scratch = tg_scratch(" + bytes + ");");
    unit.open("if (scratch == nullptr)");
    unit.line("std::fprintf(stderr, \"%s\\n\", " +
              c_string_literal("tegula: cannot allocate " + bytes + " bytes for the tiles of @" + fn.name) + ");");
    unit.line("return;");
    unit.close();
  } else {
    unit.line("unsigned char* const scratch = nullptr;");
  }
  emit_debug_entry(unit, fn, options);
  if (ctx.streams) unit.line("const tg_stream_fence fence;  // streamed stores are visible when the entry returns");
  if (carries_lines)
    unit.line("tg_line_carry line_carry[" + std::to_string(ctx.line_carries) +
              "];  // partial lines waiting for the next program (written out before the fence)");
  if (fetches_next_tiles)
    unit.line("const char* tile_history[" + std::to_string(ctx.next_tiles.size()) +
              "] = {};  // where this thread's last program read its next tiles");
  emit_stop_entry(unit, fn, fn.params.size() + debug_slot_count(fn, options));
  unit.line("const int64_t grid_x = grid[0], grid_y = grid[1];");
  unit.open("for (int64_t id = first; id < last; ++id)");
  unit.line("const int32_t pid_x = (int32_t)(id % grid_x);");
  unit.line("const int32_t pid_y = (int32_t)((id / grid_x) % grid_y);");
  unit.line("const int32_t pid_z = (int32_t)(id / (grid_x * grid_y));");
  emit_debug_program_state(unit, options);
  unit.line("tegula_program(" + call_args + "pid_x, pid_y, pid_z, grid, scratch" +
            std::string(fetches_next_tiles ? ", tile_history" : "") +
            std::string(carries_lines ? ", line_carry" : "") + stop_program_argument(fn) +
            debug_program_argument(options) + ");");
  emit_program_end(unit, fn);
  emit_stop_after_program(unit, fn);
  unit.close();
  unit.close();
  return unit.text();
}

}  // namespace tegula::backends::cpu
