// Work count: the bytes a kernel's loads and stores move and the operations
// it does, at one launch's grid and scalar arguments. `kernel.report` and
// `tegula profile` set them against the machine's floors (docs/profiling.md
// states the counting rule; this is its implementation).
//
// The analysis runs every program of the grid through the optimized IR,
// evaluating only the integer and boolean values (indices, masks, loop
// bounds); floats and pointers stay unevaluated. Per program:
//   * a load or store moves (elements) x (element bytes); the elements are
//     the mask's true lanes when the mask is evaluated, else the whole tile;
//     an atomic reads and writes its elements; a desc_load/desc_store moves
//     its whole block (padding included), a desc_atomic reads and writes it;
//   * a dot does 2*M*N*K operations;
//   * an elementwise op on floats does one operation per element (fma two),
//     counted as transcendental when it is (exp, log, sqrt, sin, tanh, ...,
//     every libdevice function); casts, bitcasts, selects and integer index
//     arithmetic are not operations;
//   * a reduce or scan of n elements does n operations per float op of its
//     combiner (the first element combines with the identity);
//   * a `for` runs its body once per trip of the evaluated bounds; a `while`
//     runs until its evaluated condition fails; an `if` on an evaluated
//     condition runs one branch.
// What cannot be evaluated is said in `notes`: a mask that depends on loaded
// data counts whole tiles (an upper bound); an `if` on loaded data counts
// both branches (an upper bound); a loop whose trip count is not known makes
// the count `known = false` (its body is not counted).
// A launch too large to evaluate every mask element (kTileBudget element
// operations) is counted again with tiles unevaluated: masks count whole
// tiles and a note says so.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

struct LaunchValues {
  std::array<int64_t, 3> grid{1, 1, 1};
  // One per fn.params: the integer (or bool) argument, nullopt for pointers,
  // floats and arguments the caller does not give.
  std::vector<std::optional<int64_t>> scalars;
};

struct ParamTraffic {
  int64_t loaded_bytes = 0;  // atomics count in both
  int64_t stored_bytes = 0;
};

struct WorkCount {
  std::vector<ParamTraffic> params;  // one per fn.params; zero for non-pointers
  int64_t loaded_bytes = 0;          // every load, attributed to a parameter or not
  int64_t stored_bytes = 0;
  int64_t dot_ops = 0;               // 2*M*N*K per dot
  int64_t arithmetic_ops = 0;        // elementwise and reduction float ops, transcendental excluded
  int64_t transcendental_ops = 0;
  bool known = true;                 // false: a loop's trip count was not known
  std::vector<std::string> notes;    // what was estimated, and why (distinct, in program order)

  int64_t total_ops() const { return dot_ops + arithmetic_ops + transcendental_ops; }
};

// Element operations on tiles one count may evaluate before it falls back to
// whole-tile masks.
inline constexpr int64_t kTileBudget = int64_t{1} << 28;

// Counts `fn` (the optimized IR of one specialization) at `launch`.
WorkCount count_work(const ir::Function& fn, const LaunchValues& launch, int64_t tile_budget = kTileBudget);

// One line per figure and per note, for tests and `tegula profile`.
std::string to_string(const WorkCount& count, const ir::Function& fn);

}  // namespace tegula::passes
