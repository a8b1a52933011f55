// The driver of CPU code generation: the per-program function, the exported
// entry point and the dispatch of every op to its family's emitter, plus the
// naming, storage and copy services of CodegenContext.
#include "backends/cpu/codegen.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backends/cpu/codegen_bounds.h"
#include "backends/cpu/codegen_context.h"
#include "backends/cpu/prelude.h"
#include "backends/cpu/prelude_atomic.h"
#include "backends/cpu/prelude_fp8.h"
#include "backends/cpu/prelude_sort.h"
#include "backends/kernel_abi.h"
#include "ir/fp8.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::Scalar;

// --- C++ spellings ----------------------------------------------------------------

std::string c_scalar(Scalar s) {
  switch (s) {
    case Scalar::I1: return "bool";
    case Scalar::I8: return "int8_t";
    case Scalar::I16: return "int16_t";
    case Scalar::I32: return "int32_t";
    case Scalar::I64: return "int64_t";
    case Scalar::U8: return "uint8_t";
    case Scalar::U16: return "uint16_t";
    case Scalar::U32: return "uint32_t";
    case Scalar::U64: return "uint64_t";
    case Scalar::F16: return "uint16_t";
    case Scalar::BF16: return "uint16_t";
    case Scalar::F32: return "float";
    case Scalar::F64: return "double";
    case Scalar::F8E4M3: return "uint8_t";
    case Scalar::F8E5M2: return "uint8_t";
  }
  TEGULA_ASSERT(false, "unknown scalar kind");
}

std::string c_element(const ir::Type& t) {
  if (t.is_pointer()) return (t.scalar == Scalar::I1 ? std::string("uint8_t") : c_scalar(t.scalar)) + "*";
  return c_scalar(t.scalar);
}

std::string c_storage(const ir::Type& t) {
  if (!t.is_pointer() && t.scalar == Scalar::I1) return "uint8_t";
  return c_element(t);
}

std::string c_const(const ir::Type& t) {
  return t.is_pointer() ? c_element(t) + " const" : "const " + c_element(t);
}

int64_t c_element_size(const ir::Type& t) {
  if (t.is_pointer()) return static_cast<int64_t>(sizeof(void*));
  return ir::byte_size(t.scalar);
}

bool is_half(Scalar s) { return s == Scalar::F16 || s == Scalar::BF16 || ir::is_fp8(s); }

std::string c_compute(Scalar s) { return is_half(s) ? "float" : c_scalar(s); }

std::string to_compute(Scalar s, const std::string& expr) {
  if (s == Scalar::F16) return "tg_f16_to_f32(" + expr + ")";
  if (s == Scalar::BF16) return "tg_bf16_to_f32(" + expr + ")";
  if (s == Scalar::F8E4M3) return "tg_f8e4m3_to_f32(" + expr + ")";
  if (s == Scalar::F8E5M2) return "tg_f8e5m2_to_f32(" + expr + ")";
  return expr;
}

std::string from_compute(Scalar s, const std::string& expr) {
  if (s == Scalar::F16) return "tg_f32_to_f16(" + expr + ")";
  if (s == Scalar::BF16) return "tg_f32_to_bf16(" + expr + ")";
  if (s == Scalar::F8E4M3) return "tg_f32_to_f8e4m3(" + expr + ")";
  if (s == Scalar::F8E5M2) return "tg_f32_to_f8e5m2(" + expr + ")";
  return expr;
}

std::string int_literal(int64_t value, Scalar s) {
  if (s == Scalar::I1) return value != 0 ? "true" : "false";
  int bits = ir::bit_width(s);
  if (!ir::is_signed(s)) {
    uint64_t u = static_cast<uint64_t>(value);
    if (bits < 64) u &= (uint64_t{1} << bits) - 1;
    return std::to_string(u) + (bits == 64 ? "ull" : "u");
  }
  if (bits == 64) {
    if (value == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return std::to_string(value) + "LL";
  }
  if (value == INT32_MIN) return "(-2147483647 - 1)";
  return std::to_string(value);
}

std::string float_literal(double value) {
  if (std::isnan(value)) return std::signbit(value) ? "(-__builtin_nan(\"\"))" : "__builtin_nan(\"\")";
  if (std::isinf(value)) return value < 0 ? "(-__builtin_inf())" : "__builtin_inf()";
  // The shortest decimal that reads back to the same double, for readability.
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  std::string text = buf;
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return value < 0 ? "(" + text + ")" : text;
}

std::string c_string_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f || c == '?') {
          // Octal escapes take at most 3 digits, so the next character can
          // never be read as part of the escape; '?' avoids trigraphs.
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

// --- CodegenContext ------------------------------------------------------------------

CodegenContext::CodegenContext(const ir::Function& f, const CodegenOptions& o)
    : fn(f), options(o), axis_info_(f) {
  names_.reserve(fn.num_values());
  for (size_t i = 0; i < fn.num_values(); ++i) names_.push_back("v" + std::to_string(i));
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
  return name(v) + "[" + std::string(index) + "]";
}

std::string CodegenContext::fresh(std::string_view stem) {
  return std::string(stem) + std::to_string(next_fresh_++);
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

void CodegenContext::copy(ir::ValueId to, ir::ValueId from) {
  if (name(to) == name(from)) return;
  const ir::Type& t = fn.type(to);
  if (t.is_tile()) {
    out.line("std::memcpy(" + name(to) + ", " + name(from) + ", sizeof(" + c_storage(t) + ") * " +
             std::to_string(t.numel()) + ");");
  } else {
    out.line(name(to) + " = " + name(from) + ";");
  }
}

void CodegenContext::declare_copy(ir::ValueId v, ir::ValueId from) {
  declare(v);
  copy(v, from);
}

void CodegenContext::parallel_copy(const std::vector<ir::ValueId>& dests,
                                   const std::vector<ir::ValueId>& sources) {
  TEGULA_ASSERT(dests.size() == sources.size(), "parallel copy arity mismatch");
  // A source living in another destination's storage is saved first, so no
  // copy reads a value an earlier copy of this group overwrote.
  std::vector<std::string> from(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    from[i] = name(sources[i]);
    bool clobbered = false;
    for (size_t j = 0; j < dests.size(); ++j)
      if (j != i && name(dests[j]) == from[i]) clobbered = true;
    if (!clobbered) continue;
    const ir::Type& t = fn.type(sources[i]);
    std::string saved = fresh("saved");
    if (t.is_tile()) {
      declare_array(c_storage(t), c_element_size(t), t.numel(), saved);
      out.line("std::memcpy(" + saved + ", " + from[i] + ", sizeof(" + saved + "[0]) * " +
               std::to_string(t.numel()) + ");");
    } else {
      out.line(c_const(t) + " " + saved + " = " + from[i] + ";");
    }
    from[i] = saved;
  }
  for (size_t i = 0; i < dests.size(); ++i) {
    if (name(dests[i]) == from[i]) continue;
    const ir::Type& t = fn.type(dests[i]);
    if (t.is_tile()) {
      out.line("std::memcpy(" + name(dests[i]) + ", " + from[i] + ", sizeof(" + c_storage(t) + ") * " +
               std::to_string(t.numel()) + ");");
    } else {
      out.line(name(dests[i]) + " = " + from[i] + ";");
    }
  }
}

const ir::Op& CodegenContext::terminator(ir::BlockId block) const {
  const ir::Block& b = fn.block(block);
  TEGULA_ASSERT(!b.ops.empty(), "block without terminator");
  const ir::Op& term = fn.op(b.ops.back());
  TEGULA_ASSERT(ir::is_terminator(term.kind), "block does not end in a terminator");
  return term;
}

std::string CodegenContext::location(const ir::Op& op) const {
  if (!op.loc.valid()) return "";
  std::string file = op.loc.file < static_cast<int32_t>(fn.files.size())
                         ? fn.files[static_cast<size_t>(op.loc.file)]
                         : "<unknown>";
  return file + ":" + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col);
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
  auto flush = [&] {
    if (!segment.empty()) schedule_segment(segment);
    segment.clear();
  };
  // A pure scalar op that reads nothing of the open segment is emitted
  // right away, ahead of the segment's loops: `y_ptr + row * stride` between
  // a tile's last op and its store does not split their loop.
  auto independent_scalar = [&](const ir::Op& o) {
    if (!ir::is_pure(o.kind) || !o.regions.empty() || o.results.empty()) return false;
    for (ir::ValueId r : o.results)
      if (fn.type(r).is_tile()) return false;
    for (ir::ValueId v : o.operands)
      for (ir::OpId member : segment)
        if (fn.value(v).def == member) return false;
    return true;
  };
  for (ir::OpId id : fn.block(block).ops) {
    const ir::Op& o = fn.op(id);
    if (o.erased || ir::is_terminator(o.kind)) continue;
    if (!is_per_element(*this, o)) {
      if (!independent_scalar(o)) flush();
      at_source(o.loc, [&] { emit_op(id); });  // an internal error names the kernel line
      continue;
    }
    segment.push_back(id);
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
  auto index_in_segment = [&](ir::ValueId v) -> int {
    ir::OpId def = fn.value(v).def;
    for (size_t k = 0; k < segment.size(); ++k)
      if (segment[k] == def) return static_cast<int>(k);
    return -1;
  };
  auto ready = [&](size_t k) {
    const ir::Op& o = fn.op(segment[k]);
    bool waits_for_all = o.kind == ir::OpKind::Store || (!o.results.empty() && planned_[o.results[0].index].valid());
    for (size_t j = 0; j < k; ++j) {
      if (placed[j]) continue;
      if (waits_for_all) return false;
      if (o.kind == ir::OpKind::Load && fn.op(segment[j]).kind == ir::OpKind::Load) return false;
    }
    for (ir::ValueId v : o.operands) {
      int def = index_in_segment(v);
      if (def >= 0 && !placed[static_cast<size_t>(def)]) return false;
    }
    return true;
  };
  std::vector<ir::OpId> run;
  int64_t run_numel = -1;
  auto joins_run = [&](size_t k) {
    const ir::Op& o = fn.op(segment[k]);
    if (numel_of(o) != run_numel) return false;
    if (o.kind != ir::OpKind::Broadcast) return true;
    for (ir::OpId member : run)
      for (ir::ValueId r : fn.op(member).results)
        if (r == o.operands[0]) return false;
    return true;
  };
  for (size_t left = segment.size(); left > 0;) {
    size_t pick = segment.size();
    for (size_t k = 0; k < segment.size() && pick == segment.size(); ++k)
      if (!placed[k] && ready(k) && joins_run(k)) pick = k;
    if (pick == segment.size()) {
      if (!run.empty()) emit_fused(*this, run);
      run.clear();
      for (size_t k = 0; k < segment.size() && pick == segment.size(); ++k)
        if (!placed[k] && ready(k)) pick = k;
      TEGULA_ASSERT(pick < segment.size(), "no schedulable op in a fused segment");
      run_numel = numel_of(fn.op(segment[pick]));
    }
    placed[pick] = true;
    run.push_back(segment[pick]);
    --left;
  }
  if (!run.empty()) emit_fused(*this, run);
}

// "v7 = add(v3, v6)  add.py:4:12": the op as the IR names it, for readers.
std::string op_comment(const CodegenContext& ctx, const ir::Op& o) {
  std::string text = "// ";
  for (size_t i = 0; i < o.results.size(); ++i)
    text += (i ? ", v" : "v") + std::to_string(o.results[i].index);
  if (!o.results.empty()) text += " = ";
  text += ir::name(o.kind);
  if (const ir::Attr* pred = o.attr("pred"); pred && std::holds_alternative<std::string>(*pred))
    text += "." + std::get<std::string>(*pred);
  text += "(";
  for (size_t i = 0; i < o.operands.size(); ++i)
    text += (i ? ", v" : "v") + std::to_string(o.operands[i].index);
  text += ")";
  std::string loc = ctx.location(o);
  if (!loc.empty()) text += "  " + loc;
  return text;
}

void CodegenContext::emit_op(ir::OpId id) {
  const ir::Op& o = fn.op(id);
  out.line(op_comment(*this, o));
  if (ir::is_elementwise(o.kind)) return emit_elementwise(*this, o);
  switch (o.kind) {
    case ir::OpKind::Constant:
    case ir::OpKind::ProgramId:
    case ir::OpKind::NumPrograms:
    case ir::OpKind::Arange: return emit_value_source(*this, o);
    case ir::OpKind::Splat:
    case ir::OpKind::Broadcast:
    case ir::OpKind::ExpandDims:
    case ir::OpKind::Reshape:
    case ir::OpKind::Trans:
    case ir::OpKind::Join:
    case ir::OpKind::Split: return emit_shape(*this, o);
    case ir::OpKind::Load:
    case ir::OpKind::Store: return emit_memory(*this, o);
    case ir::OpKind::AtomicRmw:
    case ir::OpKind::AtomicCas: return emit_atomic(*this, o);
    case ir::OpKind::For:
    case ir::OpKind::If:
    case ir::OpKind::While: return emit_control(*this, o);
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

}  // namespace

std::string emit_cpp(const ir::Function& fn, const CodegenOptions& options) {
  CodegenContext ctx(fn, options);
  const ir::Block& body = fn.block(fn.body());
  TEGULA_ASSERT(body.args.size() == fn.params.size(), "kernel parameters and body arguments differ");

  // The program body goes first into its own emitter: its scratch size is
  // only known once every tile has been placed.
  std::string params;
  for (size_t i = 0; i < fn.params.size(); ++i)
    params += c_element(fn.params[i].type) + " " + ctx.name(body.args[i]) + ", ";
  ctx.out.open("static inline void tegula_program(" + params +
               "int32_t pid_x, int32_t pid_y, int32_t pid_z, const int32_t* grid, unsigned char* scratch" +
               debug_program_parameter(options) + ")");
  ctx.out.line("(void)pid_x; (void)pid_y; (void)pid_z; (void)grid; (void)scratch;");
  ctx.emit_block_body(fn.body());
  ctx.out.close();

  Emitter unit;
  unit.line("// Generated by Tegula: CPU code for kernel @" + fn.name + ".");
  unit.raw(kPrelude);
  if (uses_atomics(fn)) unit.raw(kAtomicPrelude);
  if (uses_sort(fn)) unit.raw(kSortPrelude);
  if (ir::uses_fp8(fn)) unit.raw(kFp8Prelude);
  emit_debug_helpers(unit, fn, options);
  unit.blank();
  unit.line("// ---- kernel ----");
  unit.raw(ctx.out.text());
  unit.blank();
  unit.open("extern \"C\" void " + std::string(abi::kEntrySymbol) +
            "(void* const* args, const int32_t* grid, int64_t first, int64_t last)");
  std::string call_args;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    std::string local = ctx.name(body.args[i]);
    unit.line(c_const(p.type) + " " + local + " = " + param_slot_read(ctx, p, i) + ";  // " +
              p.name);
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
  unit.line("const int64_t grid_x = grid[0], grid_y = grid[1];");
  unit.open("for (int64_t id = first; id < last; ++id)");
  unit.line("const int32_t pid_x = (int32_t)(id % grid_x);");
  unit.line("const int32_t pid_y = (int32_t)((id / grid_x) % grid_y);");
  unit.line("const int32_t pid_z = (int32_t)(id / (grid_x * grid_y));");
  emit_debug_program_state(unit, options);
  unit.line("tegula_program(" + call_args + "pid_x, pid_y, pid_z, grid, scratch" + debug_program_argument(options) + ");");
  emit_program_end(unit, fn);
  unit.close();
  unit.close();
  return unit.text();
}

}  // namespace tegula::backends::cpu
