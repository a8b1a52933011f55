// tl.atomic_add, atomic_max, atomic_min, atomic_and, atomic_or, atomic_xor,
// atomic_xchg (-> `atomic_rmw`) and tl.atomic_cas (-> `atomic_cas`).
//
// Typing follows Triton: `val` (and `cmp`) are converted to the pointee
// type; pointer, values and mask broadcast to one shape (a scalar pointer
// with a tile value becomes a tile of equal pointers, each element its own
// atomic); the result is the old memory value, of the pointee type, in that
// shape. `sem` defaults to "acq_rel" and `scope` to "gpu"; the IR always
// carries both explicitly.
#include <optional>

#include "frontend/builtins_atomic.h"
#include "frontend/builtins.h"
#include "frontend/lowering.h"
#include "frontend/type_rules.h"
#include "ir/atomic.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::AtomicOp;
using ir::OpKind;
using ir::Scalar;

namespace {

ir::ValueId atomic_pointer(Lowerer& l, const BoundArgs& a, AtomicOp op, const std::string& callee) {
  const Symbol& p = a.get("pointer");
  if (!p.is_value() || !l.type(p.value).is_pointer())
    error_at(a.loc("pointer"), Diag::WrongArgumentKind,
             "the pointer of " + callee + " must be a pointer or a tile of pointers, but it is " +
                                   l.describe(p),
             "pass an array argument, offset with `ptr + offsets`");
  check_atomic_element(op, l.type(p.value).scalar, a.loc("pointer"), callee);
  return p.value;
}

// `val` / `cmp` as a value of the pointee type (a tile keeps its shape).
ir::ValueId atomic_operand(Lowerer& l, const BoundArgs& a, const char* name, Scalar elem, const std::string& callee) {
  const Symbol& s = a.get(name);
  if (s.is_const() && s.constant.is_numeric()) return l.constant(s.constant, ir::Type::of(elem), a.loc(name));
  ir::ValueId v = l.to_value(s, a.loc(name), std::string("the ") + name + " of " + callee);
  if (l.type(v).is_pointer())
    error_at(a.loc(name), Diag::PointerConversion,
             std::string("the ") + name + " of " + callee + " must be a number, not a pointer");
  return l.cast(v, elem, a.loc(name));
}

// One string option of the memory model, checked against its spellings.
template <class Enum>
Enum memory_option(Lowerer& l, const BoundArgs& a, const char* name, Enum fallback,
                   std::optional<Enum> (*parse)(std::string_view), const std::string& choices,
                   const std::string& callee) {
  if (!a.has(name)) return fallback;
  ConstValue v = l.to_const(a.get(name), a.loc(name), std::string("the ") + name + " of " + callee);
  std::optional<Enum> parsed = v.kind == ConstValue::Kind::Str ? parse(v.s) : std::nullopt;
  if (!parsed) {
    std::string shown = v.kind == ConstValue::Kind::Str ? "\"" + v.s + "\"" : to_string(v);
    error_at(a.loc(name), Diag::InvalidOption, "invalid " + std::string(name) + " " + shown + " for " + callee,
             "use one of " + choices + ", or None for \"" + std::string(ir::to_string(fallback)) + "\"");
  }
  return *parsed;
}

std::vector<ir::NamedAttr> memory_attrs(Lowerer& l, const BoundArgs& a, const std::string& callee) {
  ir::MemorySem sem = memory_option(l, a, "sem", ir::MemorySem::AcqRel, ir::parse_memory_sem,
                                    ir::memory_sem_choices(), callee);
  ir::MemoryScope scope = memory_option(l, a, "scope", ir::MemoryScope::Gpu, ir::parse_memory_scope,
                                        ir::memory_scope_choices(), callee);
  return {{"sem", ir::Attr{std::string(ir::to_string(sem))}}, {"scope", ir::Attr{std::string(ir::to_string(scope))}}};
}

// Broadcasts every value to their common shape (NumPy rules, error at `loc`).
void broadcast_all(Lowerer& l, std::vector<ir::ValueId>& values, const SourceLoc& loc) {
  for (size_t i = 1; i < values.size(); ++i) std::tie(values[0], values[i]) = l.broadcast_pair(values[0], values[i], loc);
  for (size_t i = 1; i < values.size(); ++i) values[i] = l.broadcast_to(values[i], l.type(values[0]).shape, loc);
}

}  // namespace

void check_atomic_element(AtomicOp op, Scalar element, const SourceLoc& loc, const std::string& callee) {
  if (ir::atomic_supports(op, element)) return;
  std::string kinds;
  for (Scalar s : ir::atomic_element_kinds(op)) kinds += (kinds.empty() ? "" : ", ") + triton_name(s);
  error_at(loc, Diag::UnsupportedElementType, callee + " does not support " + triton_name(element) + " elements",
           "supported element types: " + kinds);
}

Symbol lower_atomic_rmw(Lowerer& l, const CallArgs& c, const std::string& n) {
  const std::string callee = "tl." + n;
  std::optional<AtomicOp> op = ir::parse_atomic_op(n.substr(std::string("atomic_").size()));
  TEGULA_ASSERT(op.has_value(), "not an atomic read-modify-write: " + n);
  BoundArgs a(n, {"pointer", "val", "?mask", "?sem", "?scope"}, c);
  ir::ValueId ptr = atomic_pointer(l, a, *op, callee);
  Scalar elem = l.type(ptr).scalar;
  std::vector<ir::ValueId> operands = {ptr, atomic_operand(l, a, "val", elem, callee)};
  if (a.has("mask")) operands.push_back(as_mask(l, a.get("mask"), a.loc("mask"), callee));
  std::vector<ir::NamedAttr> attrs = {{"op", ir::Attr{std::string(ir::to_string(*op))}}};
  for (ir::NamedAttr& m : memory_attrs(l, a, callee)) attrs.push_back(std::move(m));
  broadcast_all(l, operands, c.loc);
  ir::Type result = l.type(operands[0]).with_scalar(elem);
  return Symbol::of(l.create(OpKind::AtomicRmw, operands, result, c.loc, attrs));
}

Symbol lower_atomic_cas(Lowerer& l, const CallArgs& c, const std::string& n) {
  const std::string callee = "tl." + n;
  BoundArgs a(n, {"pointer", "cmp", "val", "?sem", "?scope"}, c);
  ir::ValueId ptr = atomic_pointer(l, a, AtomicOp::Cas, callee);
  Scalar elem = l.type(ptr).scalar;
  std::vector<ir::ValueId> operands = {ptr, atomic_operand(l, a, "cmp", elem, callee),
                                       atomic_operand(l, a, "val", elem, callee)};
  std::vector<ir::NamedAttr> attrs = memory_attrs(l, a, callee);
  broadcast_all(l, operands, c.loc);
  ir::Type result = l.type(operands[0]).with_scalar(elem);
  return Symbol::of(l.create(OpKind::AtomicCas, operands, result, c.loc, attrs));
}

}  // namespace tegula::frontend
