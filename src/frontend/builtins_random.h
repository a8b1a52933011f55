// Random numbers (builtins_random.cpp): the counter-based Philox generator
// and what Triton builds on it, lowered to integer IR ops (umulhi, mul, xor,
// add) so that both backends compute the same bits with no code of their
// own: philox, philox_impl, randint, randint4x, rand, rand4x, randn,
// randn4x, uint_to_uniform_float, pair_uniform_to_normal.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

bool is_random_builtin(const std::string& name);
// The value of the call of random builtin `name` (is_random_builtin(name) holds).
Symbol lower_random_builtin(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
