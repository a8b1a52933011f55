#include "frontend/symbol_leaves.h"

#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

bool same_block(const Symbol& a, const Symbol& b) {
  if (!a.block || !b.block) return a.block == b.block;
  return a.block->block_shape == b.block->block_shape && a.block->order == b.block->order &&
         a.block->padding == b.block->padding;
}

void collect(const Symbol& s, std::vector<Symbol>& out) {
  if (!is_structured(s)) {
    out.push_back(s);
    return;
  }
  for (const Symbol& e : s.elements) collect(e, out);
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
    if (!is_carriable(e)) return false;
  return true;
}

std::vector<Symbol> leaves_of(const Symbol& s) {
  std::vector<Symbol> out;
  collect(s, out);
  return out;
}

Symbol with_leaves(const Symbol& shape, const std::vector<Symbol>& leaves, size_t* next) {
  if (!is_structured(shape)) {
    TEGULA_ASSERT(*next < leaves.size(), "too few leaves to rebuild a symbol");
    return leaves[(*next)++];
  }
  Symbol out = shape;
  for (Symbol& e : out.elements) e = with_leaves(e, leaves, next);
  return out;
}

bool same_structure(const Symbol& a, const Symbol& b) {
  if (is_structured(a) != is_structured(b)) return false;
  if (!is_structured(a)) return true;
  if (a.kind != b.kind || a.elements.size() != b.elements.size() || !same_block(a, b)) return false;
  if (a.kind == Symbol::Kind::Aggregate && a.name != b.name) return false;  // instances of two classes
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (!same_structure(a.elements[i], b.elements[i])) return false;
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
    case Symbol::Kind::AggregateType: return true;
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
