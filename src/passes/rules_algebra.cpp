// Algebraic identities, canonical operand order, addptr chains and splat
// sinking. Every rule holds for all inputs of the stated types, including
// wrap-around for integers and NaN, infinities and signed zeros for floats.
#include <cmath>

#include "passes/canonicalize_rules.h"
#include "passes/rewrite_utils.h"

namespace tegula::passes::rules {

using ir::OpKind;

namespace {

bool is_int_constant(const ir::Function& fn, ir::ValueId v, int64_t k) {
  std::optional<ConstantValue> c = constant_value(fn, v);
  return c && !c->is_float() && c->int_value == normalize_int(k, c->type);
}

// Exact match, signed zeros told apart.
bool is_float_constant(const ir::Function& fn, ir::ValueId v, double x) {
  std::optional<ConstantValue> c = constant_value(fn, v);
  return c && c->is_float() && c->float_value == x && std::signbit(c->float_value) == std::signbit(x);
}

bool is_float_type(const ir::Function& fn, ir::ValueId v) {
  const ir::Type& t = fn.type(v);
  return !t.is_pointer() && ir::is_float(t.scalar);
}

// The value an identity reduces `op` to, if any.
std::optional<ir::ValueId> identity_result(const ir::Function& fn, const ir::Op& op) {
  if (op.operands.empty()) return std::nullopt;
  ir::ValueId a = op.operands[0];
  ir::ValueId b = op.operands.size() > 1 ? op.operands[1] : ir::ValueId{};
  bool floats = is_float_type(fn, a);
  auto int_is = [&](ir::ValueId v, int64_t k) { return !floats && is_int_constant(fn, v, k); };
  switch (op.kind) {
    case OpKind::Add:
      if (floats) {
        // x + -0.0 -> x (x + +0.0 is not x when x is -0.0)
        if (is_float_constant(fn, b, -0.0)) return a;
        if (is_float_constant(fn, a, -0.0)) return b;
        return std::nullopt;
      }
      if (int_is(b, 0)) return a;  // x + 0 -> x
      if (int_is(a, 0)) return b;  // 0 + x -> x
      return std::nullopt;
    case OpKind::Sub:
      if (floats) return is_float_constant(fn, b, 0.0) ? std::optional(a) : std::nullopt;  // x - +0.0 -> x
      if (int_is(b, 0)) return a;  // x - 0 -> x
      return std::nullopt;
    case OpKind::Mul:
      if (floats) {
        // x * 1.0 -> x, 1.0 * x -> x (x * 0.0 is not 0 for NaN, inf or negative x)
        if (is_float_constant(fn, b, 1.0)) return a;
        if (is_float_constant(fn, a, 1.0)) return b;
        return std::nullopt;
      }
      if (int_is(b, 1)) return a;  // x * 1 -> x
      if (int_is(a, 1)) return b;  // 1 * x -> x
      if (int_is(b, 0)) return b;  // x * 0 -> 0
      if (int_is(a, 0)) return a;  // 0 * x -> 0
      return std::nullopt;
    case OpKind::Div:  // x / 1 -> x (exact for floats too)
      if (floats ? is_float_constant(fn, b, 1.0) : int_is(b, 1)) return a;
      return std::nullopt;
    case OpKind::And:
      if (int_is(b, 0)) return b;   // x & 0 -> 0
      if (int_is(a, 0)) return a;   // 0 & x -> 0
      if (int_is(b, -1)) return a;  // x & ~0 -> x
      if (int_is(a, -1)) return b;  // ~0 & x -> x
      if (a == b) return a;         // x & x -> x
      return std::nullopt;
    case OpKind::Or:
      if (int_is(b, 0)) return a;  // x | 0 -> x
      if (int_is(a, 0)) return b;  // 0 | x -> x
      if (a == b) return a;        // x | x -> x
      return std::nullopt;
    case OpKind::Xor:
      if (int_is(b, 0)) return a;  // x ^ 0 -> x
      if (int_is(a, 0)) return b;  // 0 ^ x -> x
      return std::nullopt;
    case OpKind::Shl:
    case OpKind::Shr:
      if (int_is(b, 0)) return a;  // x << 0 -> x, x >> 0 -> x
      return std::nullopt;
    case OpKind::Min:
    case OpKind::Max:
      if (a == b) return a;  // min(x, x) -> x
      return std::nullopt;
    case OpKind::Select: {
      if (op.operands.size() != 3) return std::nullopt;
      if (op.operands[1] == op.operands[2]) return op.operands[1];  // select(c, a, a) -> a
      std::optional<ConstantValue> cond = constant_value(fn, a);
      if (!cond || cond->is_float()) return std::nullopt;
      return cond->int_value != 0 ? op.operands[1] : op.operands[2];  // select(true, a, b) -> a
    }
    case OpKind::Not:
    case OpKind::Neg: {
      // not(not x) -> x, neg(neg x) -> x
      const ir::Op* inner = defining_op(fn, a, op.kind);
      if (inner != nullptr) return inner->operands[0];
      return std::nullopt;
    }
    case OpKind::Cast:
    case OpKind::Bitcast:  // cast x to x's own type -> x
      if (fn.type(a) == fn.type(op.results[0])) return a;
      return std::nullopt;
    case OpKind::AddPtr:  // addptr(p, 0) -> p
      if (!b.valid()) return std::nullopt;
      if (is_int_constant(fn, b, 0)) return a;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool apply_identity(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (op.results.size() != 1) return false;
  std::optional<ir::ValueId> result = identity_result(fn, op);
  if (!result || fn.type(*result) != fn.type(op.results[0])) return false;
  replace_op(fn, id, {*result});
  return true;
}

// x - x -> 0, x ^ x -> 0 (integers); cmp(x, x) -> eq/le/ge: true, ne/lt/gt: false (integers)
bool fold_self_operation(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (op.operands.size() != 2 || op.operands[0] != op.operands[1] || op.results.size() != 1) return false;
  const ir::Type& operand_type = fn.type(op.operands[0]);
  if (operand_type.is_pointer() || ir::is_float(operand_type.scalar)) return false;
  ir::Type result_type = fn.type(op.results[0]);
  ConstantValue value{result_type.scalar, 0, 0.0};
  if (op.kind == OpKind::Cmp) {
    std::optional<Predicate> pred = predicate_of(op);
    if (!pred) return false;
    value.int_value = (*pred == Predicate::Eq || *pred == Predicate::Le || *pred == Predicate::Ge) ? 1 : 0;
  } else if (op.kind != OpKind::Sub && op.kind != OpKind::Xor) {
    return false;
  }
  replace_op(fn, id, {make_constant(fn, id, value, result_type)});
  return true;
}

// op(constant, x) -> op(x, constant) for commutative op: one form to match.
bool order_commutative(ir::Function& fn, ir::OpId id) {
  ir::Op& op = fn.op(id);
  if (!ir::is_commutative(op.kind) || op.operands.size() != 2) return false;
  bool lhs_constant = defining_op(fn, op.operands[0], OpKind::Constant) != nullptr;
  bool rhs_constant = defining_op(fn, op.operands[1], OpKind::Constant) != nullptr;
  if (!lhs_constant || rhs_constant) return false;
  std::swap(op.operands[0], op.operands[1]);
  return true;
}

// addptr(addptr(p, a), b) -> addptr(p, a + b), when a and b have the same type
// and the inner addptr has no other use (otherwise nothing gets simpler).
bool merge_addptr_chain(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (op.kind != OpKind::AddPtr || op.operands.size() != 2) return false;
  const ir::Op* inner = defining_op(fn, op.operands[0], OpKind::AddPtr);
  if (inner == nullptr || inner->operands.size() != 2) return false;
  ir::ValueId base = inner->operands[0], first = inner->operands[1], second = op.operands[1];
  if (fn.type(first) != fn.type(second)) return false;
  if (fn.use_counts()[op.operands[0].index] != 1) return false;
  ir::Type offset_type = fn.type(first);
  ir::Type result_type = fn.type(op.results[0]);
  ir::Builder builder = builder_before(fn, id);
  ir::ValueId sum = builder.create1(OpKind::Add, {first, second}, offset_type);
  replace_op(fn, id, {builder.create1(OpKind::AddPtr, {base, sum}, result_type)});
  return true;
}

// (x ± c1) ± c2 -> x + (±c1 ± c2) for integers, exact under wrap-around, when
// the inner op has no other use. cdiv's (n + 32) - 1 becomes n + 31.
bool merge_constant_offsets(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if ((op.kind != OpKind::Add && op.kind != OpKind::Sub) || op.operands.size() != 2) return false;
  std::optional<ConstantValue> outer = constant_value(fn, op.operands[1]);
  if (!outer || outer->is_float()) return false;
  ir::OpId inner_id = fn.value(op.operands[0]).def;
  if (!inner_id.valid()) return false;
  const ir::Op& inner = fn.op(inner_id);
  if ((inner.kind != OpKind::Add && inner.kind != OpKind::Sub) || inner.operands.size() != 2) return false;
  std::optional<ConstantValue> first = constant_value(fn, inner.operands[1]);
  if (!first || first->type != outer->type) return false;
  if (fn.use_counts()[op.operands[0].index] != 1) return false;

  auto signed_term = [](OpKind kind, const ConstantValue& c) {
    auto bits = static_cast<uint64_t>(c.int_value);
    return kind == OpKind::Sub ? 0 - bits : bits;
  };
  uint64_t sum = signed_term(inner.kind, *first) + signed_term(op.kind, *outer);
  ConstantValue offset{outer->type, normalize_int(static_cast<int64_t>(sum), outer->type), 0.0};
  ir::ValueId x = inner.operands[0];
  ir::Type result_type = fn.type(op.results[0]);
  ir::ValueId c = make_constant(fn, id, offset, result_type);
  ir::Builder builder = builder_before(fn, id);
  replace_op(fn, id, {builder.create1(OpKind::Add, {x, c}, result_type)});
  return true;
}

// cmp.ne(cast(b), 0) -> b and cmp.eq(cast(b), 0) -> not b, for b of type i1
// cast to an integer: `keep != 0` on a loaded bool mask is the bool itself.
bool fold_bool_compare(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (op.kind != OpKind::Cmp || op.operands.size() != 2 || op.results.size() != 1) return false;
  std::optional<Predicate> pred = predicate_of(op);
  if (!pred || (*pred != Predicate::Ne && *pred != Predicate::Eq)) return false;
  const ir::Op* cast = defining_op(fn, op.operands[0], OpKind::Cast);
  if (cast == nullptr || cast->operands.size() != 1 || !is_int_constant(fn, op.operands[1], 0)) return false;
  ir::ValueId b = cast->operands[0];
  const ir::Type& from = fn.type(b);
  const ir::Type& to = fn.type(op.operands[0]);
  if (from.is_pointer() || from.scalar != ir::Scalar::I1 || to.is_pointer() || ir::is_float(to.scalar)) return false;
  if (fn.type(b) != fn.type(op.results[0])) return false;
  if (*pred == Predicate::Ne) {
    replace_op(fn, id, {b});
    return true;
  }
  ir::Type result_type = fn.type(op.results[0]);
  ir::Builder builder = builder_before(fn, id);
  replace_op(fn, id, {builder.create1(OpKind::Not, {b}, result_type)});
  return true;
}

}  // namespace

bool simplify_algebra(ir::Function& fn, ir::OpId id) {
  return apply_identity(fn, id) || fold_self_operation(fn, id) || merge_constant_offsets(fn, id) ||
         merge_addptr_chain(fn, id) || order_commutative(fn, id) || fold_bool_compare(fn, id);
}

// elementwise(splat a, splat b) -> splat(elementwise(a, b)); constant tiles
// count as splats of their value. Keeps uniform math scalar.
bool sink_splats(ir::Function& fn, ir::OpId id) {
  const ir::Op& op = fn.op(id);
  if (!ir::is_elementwise(op.kind) || op.results.size() != 1 || op.operands.empty()) return false;
  if (op.kind == OpKind::Hint) return false;  // its attributes describe the tile's dimensions
  ir::Type result_type = fn.type(op.results[0]);
  if (!result_type.is_tile()) return false;

  bool any_splat = false;
  for (ir::ValueId v : op.operands) {
    bool is_splat = defining_op(fn, v, OpKind::Splat) != nullptr;
    if (!is_splat && !constant_value(fn, v)) return false;
    any_splat = any_splat || is_splat;
  }
  if (!any_splat) return false;

  std::vector<ir::ValueId> operands = op.operands;
  OpKind kind = op.kind;
  std::vector<ir::NamedAttr> attrs = op.attrs;
  std::vector<ir::ValueId> scalars;
  for (ir::ValueId v : operands) {
    if (const ir::Op* splat = defining_op(fn, v, OpKind::Splat)) {
      scalars.push_back(splat->operands[0]);
    } else {
      ConstantValue c = *constant_value(fn, v);
      scalars.push_back(make_constant(fn, id, c, fn.type(v).element()));
    }
  }
  ir::Builder builder = builder_before(fn, id);
  ir::ValueId scalar = builder.create1(kind, scalars, result_type.element(), attrs);
  replace_op(fn, id, {builder.create1(OpKind::Splat, {scalar}, result_type)});
  return true;
}

}  // namespace tegula::passes::rules
