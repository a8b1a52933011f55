// The `hint` op: the identity on its operand, carrying facts the program
// promises about the value for the axis analysis (tl.multiple_of,
// tl.max_contiguous, tl.max_constancy, tl.assume): attributes
// `divisibility`, `contiguity`, `constancy`, each an optional list of powers
// of two, one per dimension (one entry for a scalar), and `at_least`
// ([c], c >= 0: the integer scalar is never below c, from tl.assume(x >= c)
// and its kin). A backend may rely on them (vector loads, TMA stores), so a
// false hint gives unspecified results, as in Triton.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// "" when `op` (a hint op) is well formed, else what is wrong, for the
// verifier to report.
std::string hint_problem(const Function& fn, const Op& op);

// Hint attribute names, in the order the axis analysis reads them.
inline constexpr const char* kHintDivisibility = "divisibility";
inline constexpr const char* kHintContiguity = "contiguity";
inline constexpr const char* kHintConstancy = "constancy";
inline constexpr const char* kHintAtLeast = "at_least";

}  // namespace tegula::ir
