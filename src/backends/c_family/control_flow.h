// Structured control flow, the same in every dialect: for, if, while with
// yielded values.
//
// Loop-carried values (block arguments) get storage declared before the C++
// loop (Printer::declare_storage: locals or arrays on the CPU, register
// arrays in the plan's layout on CUDA); `yield` copies into it as a
// parallel copy, so `yield %b, %a` swaps. After the loop the op's results
// name the same storage, which nothing writes any more. `if` results are
// storage both branches copy into. Conditions are scalars, so on CUDA the
// whole block takes the same path and barriers inside regions are safe.
//
// `for` computes its trip count up front without overflow (a zero step
// runs nothing, prelude's tg_trip_count) and derives the induction
// variable with wrapping arithmetic (tg_induction).
//
// A dialect's own work around regions goes through the hooks of Printer
// (begin_loop, enter_loop_body, ...), called at fixed points below.
#pragma once

#include <vector>

#include "backends/c_family/printer.h"

namespace tegula::backends::c_family {

// Emits a for, if or while op.
void emit_control(Printer& p, ir::OpId op);

// dests[i] = operand first + i of `term`, all at once: a source that is
// also a destination is saved before any copy.
void parallel_copy(Printer& p, const std::vector<ir::ValueId>& dests, ir::OpId term, size_t first);

}  // namespace tegula::backends::c_family
