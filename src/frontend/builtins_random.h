// Random numbers (builtins_random.cpp): the counter-based Philox generator
// and what Triton builds on it, lowered to integer IR ops (umulhi, mul, xor,
// add) so that both backends compute the same bits with no code of their
// own: philox, philox_impl, randint, randint4x, rand, rand4x, randn,
// randn4x, uint_to_uniform_float, pair_uniform_to_normal.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

// builtins.cpp's registry names them; each takes the call's arguments and
// the name it was called by.
Symbol lower_philox(Lowerer& l, const CallArgs& c, const std::string& name);  // philox, philox_impl
Symbol lower_randint(Lowerer& l, const CallArgs& c, const std::string& name);  // randint, randint4x
// rand, rand4x, randn, randn4x
Symbol lower_rand(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_uint_to_uniform_float(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_pair_uniform_to_normal(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
