// Internal to the CUDA backend: debug mode (CodegenOptions::debug), in which
// every load, store and atomic is checked against the array its pointer was
// derived from and asserts report through the launch's error record
// (docs/debug-mode.md). Without debug mode none of this emits anything, so a
// kernel's source is the same as if this file did not exist.
//
// The debug ABI: after the kernel's own parameters come two
// `unsigned long long` per pointer parameter, in parameter order (its
// array's first byte and its size in bytes), then `TgDebugRecord*
// tg_record` (backends/kernel_abi.h). Each thread keeps a `TgDebug tg_dbg`
// (prelude_debug.h).
#pragma once

#include <string>

#include "backends/cuda/codegen_context.h"

namespace tegula::backends::cuda {

// Debug mode's load and store: one checked access per element, no vectors
// (a group of elements may straddle the end of an array).
void emit_checked_memory(CudaContext& ctx, ir::OpId op);

// The condition under which memory op `op` (an atomic, say) accesses
// `pointer`: `mask` (empty: unmasked) and, in debug mode, the bounds check.
// Empty when the access always happens. For a tile, `pointer` is register
// `reg` of a thread's elements in distribution `*d`; null for a scalar.
std::string access_condition(CudaContext& ctx, ir::OpId op, const std::string& pointer, const std::string& mask,
                             const Distribution* d = nullptr, const std::string& reg = "");

// A failing assert, in debug mode: records it (linear element `index`).
std::string assert_failure_statement(const CudaContext& ctx, ir::OpId op, const std::string& index);

// --- the translation unit ------------------------------------------------------------
// The debug helpers after the prelude, in debug mode.
void emit_debug_helpers(Emitter& unit, const CodegenOptions& options);
// The debug parameters after the kernel's own (`", unsigned long long
// tg_base_0, ..."`; without the leading comma when the kernel has none).
std::string debug_kernel_parameters(const ir::Function& fn, const CodegenOptions& options);
// The start of the kernel body: the extents and the thread's TgDebug.
std::string debug_prologue(const ir::Function& fn, const CodegenOptions& options);

}  // namespace tegula::backends::cuda
