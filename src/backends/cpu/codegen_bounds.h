// Internal to the CPU backend: debug mode (CodegenOptions::debug), in which
// every load, store and atomic is checked against the array its pointer was
// derived from and asserts report through the launch's error record
// (docs/debug-mode.md). Without debug mode none of this emits anything, so a
// kernel's source is the same as if this file did not exist.
//
// The debug ABI: after the kernel's own argument slots, `args` holds two
// uint64_t slots per pointer parameter, in parameter order (its array's
// first byte and its size in bytes), then one slot holding the address of
// the TgDebugRecord (backends/kernel_abi.h). Each program instance gets a
// `TgDebug& tg_dbg` (prelude_debug.h) naming its id, the extents and the
// record.
#pragma once

#include <string>

#include "backends/cpu/codegen_context.h"

namespace tegula::backends::cpu {

// The condition under which the access of memory op `op` (load, store or
// atomic) to `pointer` happens: `mask` (empty: unmasked) and, in debug
// mode, the bounds check. Empty when the access always happens.
std::string access_condition(const CodegenContext& ctx, const ir::Op& op, const std::string& pointer,
                             const std::string& mask);

// A failing assert, in debug mode: records it (flat element `index`).
std::string assert_failure_statement(const CodegenContext& ctx, const ir::Op& op, const std::string& index);

// --- the translation unit ------------------------------------------------------------
// What the unit needs after the prelude: the debug helpers in debug mode,
// the print buffer when the kernel prints.
void emit_debug_helpers(Emitter& unit, const ir::Function& fn, const CodegenOptions& options);
// ", TgDebug& tg_dbg" in debug mode, else "".
std::string debug_program_parameter(const CodegenOptions& options);
// In the entry point, before the loop over programs: the extents and the
// record, read from the debug slots of `args`.
void emit_debug_entry(Emitter& unit, const ir::Function& fn, const CodegenOptions& options);
// How many slots debug mode adds after the kernel's own (0 without it).
size_t debug_slot_count(const ir::Function& fn, const CodegenOptions& options);
// Inside the loop, before calling the program: its TgDebug.
void emit_debug_program_state(Emitter& unit, const CodegenOptions& options);
// ", tg_dbg" in debug mode, else "".
std::string debug_program_argument(const CodegenOptions& options);
// After the program returns: writes out what it printed.
void emit_program_end(Emitter& unit, const ir::Function& fn);

}  // namespace tegula::backends::cpu
