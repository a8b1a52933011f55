// The one registry of the functions a kernel can call (builtins.cpp): a row
// per name with the handler that lowers the call and the ways the name is
// written. Lowerer::call_builtin and every name lookup of the front end read
// it; tests/cpp/test_builtin_registry.cpp keeps the Python stubs of
// python/tegula/language in step with it.
//
// A row's name is what the front end calls it by:
//   "load"                           tl.load (and x.load if a method)
//   "py.min"                         the Python builtin min
//   "tegula.cdiv"                    tegula.cdiv (triton.cdiv)
//   "tensor_descriptor.atomic_add"   a method of tensor descriptors only
// tl.math.<name> and tl.extra.libdevice.<name> reach the same names as
// tl.<name>: the language has one namespace, as the stubs do in Python.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/lowering.h"

namespace tegula::frontend {

using BuiltinHandler = Symbol (*)(Lowerer& l, const CallArgs& c, const std::string& name);

// How a kernel writes a name, beyond the prefixes above.
enum BuiltinForm : uint8_t {
  kLanguage = 1u << 0,  // tl.<name>
  kMethod = 1u << 1,    // tile.<name>(...): the tile is the first argument
};

struct Builtin {
  const char* name;
  BuiltinHandler lower;  // nullptr: a Triton name Tegula does not implement yet
  uint8_t forms;         // BuiltinForm bits
};

// `v` as a condition (an assertion, tl.where's): i1 as it is, an integer
// compared with 0; a float or a pointer is an error at `loc` naming `what`
// (a float is compared with 0 too when `floats_too`, for tl.where).
ir::ValueId as_condition(Lowerer& l, ir::ValueId v, const SourceLoc& loc, const std::string& what,
                         bool floats_too = false);

// `s` as the mask of `callee` (tl.load, tl.store, the atomics): a boolean
// only, as in Triton ("Mask must have boolean scalar type"). An integer is
// E0310 at `loc` like a float: `mask=offs` for `mask=offs < n` would
// otherwise select the nonzero offsets, silently.
ir::ValueId as_mask(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& callee);

// E0405 at `loc` if `text`, which the generated kernel will hold (a printed
// string, an assertion's message, inline assembly), holds a NUL character:
// the kernel's C string would end there. `what` names it in the message.
void refuse_nul(const std::string& text, const SourceLoc& loc, const std::string& what);

// The row of `name`, or nullptr.
const Builtin* find_builtin(std::string_view name);
// What a misspelled name is compared with (support/spelling.h): the names
// kernels write as tl.<name> (functions and dtypes), and those a tile has
// (its methods, shape, dtype...).
std::vector<std::string> language_names();
std::vector<std::string> tile_attribute_names();
// Every row, in the registry's order.
std::span<const Builtin> builtin_registry();

}  // namespace tegula::frontend
