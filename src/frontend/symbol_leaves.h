// Structured symbols — tuples, block pointers and tensor descriptors — cross
// runtime control flow as their *leaves*: the IR values (and numbers) they
// hold, in a fixed order. A runtime loop carries one iteration value per leaf
// and an `if` yields one result per leaf that differs between its branches;
// the structure (kinds, arity, the compile-time parts of a block pointer) must
// be the same on every path. A plain value or number is its own single leaf.
// Inside a tuple or an aggregate, a constant that is not a number (None, a
// string, a dtype) and a function are part of the structure, not leaves:
// every path must hold the same one there (an epilogue whose bias is None).
#pragma once

#include <cstddef>
#include <vector>

#include "frontend/symbol.h"

namespace tegula::frontend {

// A tuple, an aggregate instance, a block pointer or a tensor descriptor.
bool is_structured(const Symbol& s);

// A value, a number, or a structured symbol made only of carriable parts:
// what a runtime loop or `if` can carry.
bool is_carriable(const Symbol& s);

// The leaves of a carriable symbol: Value or numeric Const symbols.
std::vector<Symbol> leaves_of(const Symbol& s);

// `shape` with its leaves replaced, in leaves_of order, by leaves[*next], ...
// (advancing *next past them).
Symbol with_leaves(const Symbol& shape, const std::vector<Symbol>& leaves, size_t* next);

// Whether the leaves of `a` and `b` pair up: both plain, or both structured
// with the same kind, arity and compile-time parts.
bool same_structure(const Symbol& a, const Symbol& b);

// What a constexpr accepts: a constant, a function (a @jit one, one of the language, a constexpr
// function), a module or a class, or a tuple or aggregate instance of them.
bool is_compile_time(const Symbol& s);

// Whether `a` and `b` denote the same thing: the same IR value, equal
// constants, the same function or module, tuples of such.
bool same_symbol(const Symbol& a, const Symbol& b);

}  // namespace tegula::frontend
