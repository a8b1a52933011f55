#include "frontend/symbol_leaves.h"

#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

bool same_block(const Symbol& a, const Symbol& b) {
  if (!a.block || !b.block) return a.block == b.block;
  return a.block->block_shape == b.block->block_shape && a.block->order == b.block->order &&
         a.block->padding == b.block->padding;
}

// A part of a tuple or an aggregate that is not a leaf but part of its structure: a constant other than
// a number (None, a string, a dtype) or a function, which every path must hold alike.
bool is_fixed_part(const Symbol& s) {
  return !is_structured(s) && is_compile_time(s) && !(s.is_const() && s.constant.is_numeric());
}

void collect(const Symbol& s, std::vector<Symbol>& out, bool inside) {
  if (!is_structured(s)) {
    if (!(inside && is_fixed_part(s))) out.push_back(s);
    return;
  }
  for (const Symbol& e : s.elements) collect(e, out, true);
}

}  // namespace

bool is_structured(const Symbol& s) {
  return s.kind == Symbol::Kind::Tuple || s.kind == Symbol::Kind::Aggregate || s.kind == Symbol::Kind::BlockPointer ||
         s.kind == Symbol::Kind::TensorDescriptor;
}

bool is_carriable(const Symbol& s) {
  if (s.is_value()) return true;
  if (s.is_const()) return s.constant.is_numeric();
  if (!is_structured(s)) return false;
  for (const Symbol& e : s.elements)
    if (!is_carriable(e) && !is_fixed_part(e)) return false;
  return true;
}

std::vector<Symbol> leaves_of(const Symbol& s) {
  std::vector<Symbol> out;
  collect(s, out, false);
  return out;
}

namespace {

Symbol rebuild(const Symbol& shape, const std::vector<Symbol>& leaves, size_t* next, bool inside) {
  if (!is_structured(shape)) {
    if (inside && is_fixed_part(shape)) return shape;
    TEGULA_ASSERT(*next < leaves.size(), "too few leaves to rebuild a symbol");
    return leaves[(*next)++];
  }
  Symbol out = shape;
  for (Symbol& e : out.elements) e = rebuild(e, leaves, next, true);
  return out;
}

}  // namespace

Symbol with_leaves(const Symbol& shape, const std::vector<Symbol>& leaves, size_t* next) {
  return rebuild(shape, leaves, next, false);
}

bool same_structure(const Symbol& a, const Symbol& b) {
  if (is_structured(a) != is_structured(b)) return false;
  if (!is_structured(a)) return true;
  if (a.kind != b.kind || a.elements.size() != b.elements.size() || !same_block(a, b)) return false;
  if (a.kind == Symbol::Kind::Aggregate && a.name != b.name) return false;  // instances of two classes
  for (size_t i = 0; i < a.elements.size(); ++i) {
    const Symbol &x = a.elements[i], &y = b.elements[i];
    if (is_fixed_part(x) || is_fixed_part(y)) {  // part of the structure: the same on both paths
      if (!(is_fixed_part(x) && is_fixed_part(y) && same_symbol(x, y))) return false;
      continue;
    }
    if (!same_structure(x, y)) return false;
  }
  return true;
}

bool is_compile_time(const Symbol& s) {
  switch (s.kind) {
    case Symbol::Kind::Const:
    case Symbol::Kind::Module:
    case Symbol::Kind::Builtin:
    case Symbol::Kind::JitFunction:
    case Symbol::Kind::HostFunction:
    case Symbol::Kind::NamedTupleType:
    case Symbol::Kind::AggregateType:
    case Symbol::Kind::Lambda: return true;
    case Symbol::Kind::Tuple:
    case Symbol::Kind::Aggregate:
      for (const Symbol& e : s.elements)
        if (!is_compile_time(e)) return false;
      return true;
    default: return false;
  }
}

bool same_symbol(const Symbol& a, const Symbol& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Symbol::Kind::Value: return a.value == b.value;
    case Symbol::Kind::Const: return a.constant.kind == b.constant.kind && a.constant == b.constant;
    case Symbol::Kind::JitFunction: return a.function == b.function;
    case Symbol::Kind::Lambda: return a.closure == b.closure;
    case Symbol::Kind::HostModule: return a.name == b.name && a.function == b.function;
    case Symbol::Kind::Module:
    case Symbol::Kind::Builtin:
    case Symbol::Kind::Opaque:
    case Symbol::Kind::NamedTupleType:
    case Symbol::Kind::AggregateType:
    case Symbol::Kind::HostFunction: return a.name == b.name;
    case Symbol::Kind::Aggregate:
      if (a.name != b.name) return false;
      [[fallthrough]];
    case Symbol::Kind::Tuple:
      if (a.elements.size() != b.elements.size()) return false;
      for (size_t i = 0; i < a.elements.size(); ++i)
        if (!same_symbol(a.elements[i], b.elements[i])) return false;
      return true;
    default: return false;
  }
}

}  // namespace tegula::frontend
