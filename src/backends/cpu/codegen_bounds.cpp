// Debug mode on the CPU backend: the bounds check of every memory access,
// the assert report and the debug ABI of the entry point (codegen_bounds.h).
//
// A check is one call, `tg_access<params...>(tg_dbg, pointer, bytes, site)`,
// ANDed with the access's mask so that masked-off lanes are never checked:
// the parameters are the pointer's provenance (passes/pointer_provenance.h),
// the site its number in passes::DebugSites. A pointer that may come from
// several arrays (tl.where between two of them) passes when it lies inside
// any of them. A failed check skips the access (a load yields `other`, or
// 0) and stops the program: every later access of that program is skipped.
#include "backends/cpu/codegen_bounds.h"
#include "backends/c_family/prelude_text.h"

#include <algorithm>
#include <cstddef>

#include "backends/cpu/prelude_debug.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

// The id of `op`, an element of fn's op table.
ir::OpId id_of(const ir::Function& fn, const ir::Op& op) {
  std::ptrdiff_t index = &op - &fn.op(ir::OpId{0});
  TEGULA_ASSERT(index >= 0 && static_cast<size_t>(index) < fn.num_ops(), "an op of another function");
  return ir::OpId{static_cast<uint32_t>(index)};
}

bool has_print(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) { found = found || fn.op(id).kind == ir::OpKind::Print; });
  return found;
}

}  // namespace

std::string access_condition(const CodegenContext& ctx, const ir::Op& op, const std::string& pointer,
                             const std::string& mask) {
  if (!ctx.debug_sites) return mask;
  ir::OpId id = id_of(ctx.fn, op);
  int32_t site = ctx.debug_sites->index(id);
  TEGULA_ASSERT(site >= 0, std::string("no debug site for `") + ir::name(op.kind) + "`");
  const passes::DebugSite& s = ctx.debug_sites->sites()[static_cast<size_t>(site)];
  // No array to check against: the pointer was made from an integer or read
  // from memory (unknown provenance, docs/debug-mode.md), so it may point into
  // memory no argument covers; the access is not checked.
  if (s.params.empty()) return mask;
  std::string params;
  for (int32_t p : s.params) params += (params.empty() ? "" : ", ") + std::to_string(p);
  std::string check = "tg_access<" + params + ">(tg_dbg, (const void*)(" + pointer + "), " +
                      std::to_string(ir::byte_size(s.element)) + ", " + std::to_string(site) + ")";
  // The mask first: masked-off lanes are never checked.
  return mask.empty() ? check : "(" + mask + ") && " + check;
}

std::string assert_failure_statement(const CodegenContext& ctx, const ir::Op& op, const std::string& index) {
  TEGULA_ASSERT(ctx.debug_sites, "asserts are compiled only in debug mode");
  return "tg_debug_assert(tg_dbg, " + std::to_string(ctx.debug_sites->index(id_of(ctx.fn, op))) + ", " + index + ");";
}

void emit_debug_helpers(Emitter& unit, const ir::Function& fn, const CodegenOptions& options) {
  if (options.debug) {
    unit.raw(c_family::kCpuFunctions);
    unit.raw(c_family::kDebugRecord);
    unit.raw(kDebugPrelude);
  }
  if (has_print(fn)) unit.raw(kPrintPrelude);
}

std::string debug_program_parameter(const CodegenOptions& options) { return options.debug ? ", TgDebug& tg_dbg" : ""; }

std::string debug_program_argument(const CodegenOptions& options) { return options.debug ? ", tg_dbg" : ""; }

void emit_debug_entry(Emitter& unit, const ir::Function& fn, const CodegenOptions& options) {
  if (!options.debug) return;
  size_t count = fn.params.size();
  unit.line("// debug mode: after the arguments, each pointer parameter's array (first byte, bytes), then the record");
  unit.line("TgExtent tg_extents[" + std::to_string(std::max<size_t>(count, 1)) + "] = {};");
  size_t slot = count;
  for (size_t i = 0; i < count; ++i) {
    if (!fn.params[i].type.is_pointer()) continue;
    unit.line("tg_extents[" + std::to_string(i) + "] = {*static_cast<const uint64_t*>(args[" + std::to_string(slot) +
              "]), *static_cast<const uint64_t*>(args[" + std::to_string(slot + 1) + "])};  // " + c_family::comment_text(fn.params[i].name));
    slot += 2;
  }
  unit.line("TgDebugRecord* const tg_record = *static_cast<TgDebugRecord* const*>(args[" + std::to_string(slot) + "]);");
}

size_t debug_slot_count(const ir::Function& fn, const CodegenOptions& options) {
  if (!options.debug) return 0;
  size_t slots = 1;  // the record
  for (const ir::Param& p : fn.params) slots += p.type.is_pointer() ? 2 : 0;
  return slots;
}

void emit_debug_program_state(Emitter& unit, const CodegenOptions& options) {
  if (!options.debug) return;
  unit.line("TgDebug tg_dbg{tg_record, tg_extents, id, {pid_x, pid_y, pid_z}, false};");
}

void emit_program_end(Emitter& unit, const ir::Function& fn) {
  if (has_print(fn)) unit.line("tg_print_flush();");
}

}  // namespace tegula::backends::cpu
