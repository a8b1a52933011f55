// Internal to the CPU backend: the cancellation points of a kernel whose
// programs may run without limit (backends/kernel_abi.h, "Stopping").
//
// A polled loop runs in chunks of abi::kStopPollIterations iterations, an
// inner C++ loop without calls (so the C++ compiler keeps the values it
// carries in registers, as in a loop without polls); after each full chunk
// it asks the launch's StopPoll whether to stop. When it says so, the
// program returns from wherever it is (a program holds nothing that needs
// releasing: its tiles live in arrays and the scratch buffer) and the entry
// returns without starting another. A kernel without such a loop emits none
// of this, so its source is as if this file did not exist.
#pragma once

#include <string>

#include "backends/cpu/codegen_context.h"

namespace tegula::backends::cpu {

// Whether `loop` (a for or while op of `fn`) polls: every while, and a for
// whose trip count is not a constant of at most abi::kUnpolledTripCount.
bool loop_polls(const ir::Function& fn, const ir::Op& loop);

// Whether any loop of `fn` polls: then the kernel reads the StopPoll slot.
bool polls_for_stop(const ir::Function& fn);

// --- the translation unit ------------------------------------------------------------
// TgStopPoll and tg_should_stop, when the kernel polls.
void emit_stop_helpers(Emitter& unit, const ir::Function& fn);
// ", TgStopPoll* tg_stop, bool& tg_stopped" when the kernel polls, else "".
std::string stop_program_parameter(const ir::Function& fn);
// ", tg_stop, tg_stopped" when the kernel polls, else "".
std::string stop_program_argument(const ir::Function& fn);
// In the entry point, before the loop over programs: the StopPoll, read from
// slot `slot` of `args`, and whether a program was told to stop.
void emit_stop_entry(Emitter& unit, const ir::Function& fn, size_t slot);
// Inside the loop over programs, after one ran: return if it was stopped.
void emit_stop_after_program(Emitter& unit, const ir::Function& fn);

}  // namespace tegula::backends::cpu
