// Expressions: evaluation of AST expressions to symbols, typing of binary and
// unary operators (Triton's promotion rules), broadcasting and casts.
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/builtins.h"
#include "frontend/builtins_block_ptr.h"
#include "frontend/builtins_tile.h"
#include "frontend/builtins_types.h"
#include "frontend/lowering.h"
#include "frontend/symbol_leaves.h"
#include "frontend/type_rules.h"
#include "frontend/value_bounds.h"
#include "support/diagnostic.h"
#include "support/spelling.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

bool is_pointer_value(const Lowerer& l, const Symbol& s) { return s.is_value() && l.type(s.value).is_pointer(); }

const char* cmp_pred(ast::CmpOp op) {
  switch (op) {
    case ast::CmpOp::Eq: return "eq";
    case ast::CmpOp::NotEq: return "ne";
    case ast::CmpOp::Lt: return "lt";
    case ast::CmpOp::LtE: return "le";
    case ast::CmpOp::Gt: return "gt";
    case ast::CmpOp::GtE: return "ge";
    default: return nullptr;
  }
}

// Value methods: `x.to(...)`, `x.sum(axis)` ... are the builtin of the same
// name with the receiver as first argument.
bool is_value_method(const std::string& name) {
  const Builtin* b = find_builtin(name);
  return b != nullptr && (b->forms & kMethod) != 0;
}

// `x >> y` of operands already promoted to one integer type. The IR's shr
// shifts in sign bits exactly when its type is signed; where Triton asks for
// the other kind (a signed tile promoted to a wider-or-equal unsigned type),
// the shift runs on the same bits under the signed type of that width.
Scalar integer_of_width(int bits, bool is_signed) {
  for (Scalar s : {Scalar::I8, Scalar::I16, Scalar::I32, Scalar::I64, Scalar::U8, Scalar::U16, Scalar::U32, Scalar::U64})
    if (ir::bit_width(s) == bits && ir::is_signed(s) == is_signed) return s;
  TEGULA_ASSERT(false, "no integer type of " + std::to_string(bits) + " bits");
}

ir::ValueId right_shift(Lowerer& l, ir::ValueId x, ir::ValueId y, bool arithmetic, const SourceLoc& loc) {
  const ir::Type t = l.type(x);
  if (t.scalar == Scalar::I1 || ir::is_signed(t.scalar) == arithmetic) return l.create(OpKind::Shr, {x, y}, t, loc);
  ir::Type as = t.with_scalar(integer_of_width(ir::bit_width(t.scalar), arithmetic));
  ir::ValueId shifted = l.create(OpKind::Shr, {l.create(OpKind::Bitcast, {x}, as, loc),
                                               l.create(OpKind::Bitcast, {y}, as, loc)}, as, loc);
  return l.create(OpKind::Bitcast, {shifted}, t, loc);
}

}  // namespace

std::string Lowerer::describe(const Symbol& s) const {
  switch (s.kind) {
    case Symbol::Kind::Value: {
      const ir::Type& t = fn_.type(s.value);
      return (t.is_tile() ? "a tile of type " : "a scalar of type ") + ir::to_string(t);
    }
    case Symbol::Kind::Const: return std::string("the constant ") + to_string(s.constant);
    case Symbol::Kind::Module: return "the module `" + s.name + "`";
    case Symbol::Kind::Builtin: return "the function `" + s.name + "`";
    case Symbol::Kind::JitFunction:
      return "the @jit function `" + request_.functions[static_cast<size_t>(s.function)].name + "`";
    case Symbol::Kind::Tuple: return "a tuple of " + std::to_string(s.elements.size()) + " elements";
    case Symbol::Kind::Method: return "the method `" + s.name + "`";
    case Symbol::Kind::Opaque: return "the host object " + s.name;
    case Symbol::Kind::HostFunction: return "the constexpr function `" + host_function_name(s) + "`";
    case Symbol::Kind::NamedTupleType: return "the named tuple `" + s.name.substr(0, s.name.find(':')) + "`";
    case Symbol::Kind::AggregateType: return "the aggregate class `" + aggregate_name(s) + "`";
    case Symbol::Kind::Aggregate: return "an instance of `" + aggregate_name(s) + "`";
    case Symbol::Kind::HostModule: return "the module `" + s.name + "`";
    case Symbol::Kind::Slice: return "a slice";
    case Symbol::Kind::Lambda: return "a lambda";
    case Symbol::Kind::BlockPointer:
    case Symbol::Kind::TensorDescriptor: return describe_block_access(*this, s);
  }
  return "?";
}

ir::OpId Lowerer::create_op(OpKind kind, std::vector<ir::ValueId> operands, const std::vector<ir::Type>& results,
                            const SourceLoc& loc, std::vector<ir::NamedAttr> attrs) {
  for (const ir::Type& t : results) check_result_size(t, loc);
  builder_.set_loc(loc);
  return builder_.create(kind, std::move(operands), results, std::move(attrs));
}

ir::ValueId Lowerer::create(OpKind kind, std::vector<ir::ValueId> operands, ir::Type result, const SourceLoc& loc,
                            std::vector<ir::NamedAttr> attrs) {
  ir::OpId op = create_op(kind, std::move(operands), {std::move(result)}, loc, std::move(attrs));
  return fn_.op(op).results[0];
}

void Lowerer::check_result_size(const ir::Type& t, const SourceLoc& loc) {
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    // Both factors stay <= kMaxTileElements, so the product cannot overflow.
    numel = d > ir::kMaxTileElements ? ir::kMaxTileElements + 1 : numel * d;
    if (numel > ir::kMaxTileElements)
      error_at(loc, Diag::TileTooLarge,
               "the result of this operation, a " + ir::to_string(t) + ", has more than 2^20 elements",
               "use smaller block sizes and a loop");
  }
}

ir::ValueId Lowerer::constant(const ConstValue& c, ir::Type type, const SourceLoc& loc, const std::string& what) {
  if (!c.is_numeric()) not_a_tensor(Symbol::of(c), loc, what);
  check_result_size(type, loc);
  builder_.set_loc(loc);
  if (ir::is_float(type.scalar)) return builder_.float_constant(c.as_double(), std::move(type));
  int64_t v = type.scalar == Scalar::I1 ? c.truthy() : const_to_int(c, loc).i;
  // Wrap to the type's width (tl.full((4,), 300, tl.int8) is 44), so no
  // constant can be out of range for its type.
  int bits = ir::bit_width(type.scalar);
  if (type.scalar != Scalar::I1 && bits < 64) {
    uint64_t mask = (uint64_t{1} << bits) - 1, u = static_cast<uint64_t>(v) & mask;
    if (ir::is_signed(type.scalar) && (u >> (bits - 1)) != 0) u |= ~mask;
    v = static_cast<int64_t>(u);
  }
  return builder_.int_constant(v, std::move(type));
}

ir::ValueId Lowerer::to_value(const Symbol& s, const SourceLoc& loc, const std::string& what) {
  if (s.is_value()) return s.value;
  if (s.is_const() && s.constant.is_numeric())
    return constant(s.constant, ir::Type::of(literal_type(s.constant)), loc, what);
  not_a_tensor(s, loc, what);
}

void Lowerer::not_a_tensor(const Symbol& s, const SourceLoc& loc, const std::string& what) const {
  error_at(loc, Diag::NotATensor, what + " must be a tensor or a number, but it is " + describe(s));
}

ConstValue Lowerer::to_const(const Symbol& s, const SourceLoc& loc, const std::string& what) {
  if (s.is_const()) return s.constant;
  if (s.is_value())
    error_at(loc, Diag::NotConstexpr, what + " must be a compile-time constant, but it is " + describe(s),
             "use a literal, a module-level constant, or a parameter annotated `tl.constexpr`");
  error_at(loc, Diag::NotConstexpr, what + " must be a compile-time constant, but it is " + describe(s));
}

int64_t Lowerer::to_int_const(const Symbol& s, const SourceLoc& loc, const std::string& what) {
  ConstValue c = to_const(s, loc, what);
  if (c.kind == ConstValue::Kind::Float) {
    // Most often a launch's `BLOCK=256.0`, or a `/` where `//` was meant.
    bool whole = std::isfinite(c.f) && c.f == std::trunc(c.f) && std::fabs(c.f) < 0x1p53;
    std::string as_int = whole ? std::to_string(static_cast<int64_t>(c.f)) : "256";
    error_at(loc, Diag::NotConstexpr, what + " must be an integer constant, but it is " + describe(s),
             "pass an int, e.g. `BLOCK=" + as_int + "` rather than `BLOCK=" + (whole ? to_string(c) : "256.0") +
                 "`, and divide sizes with `//`, not `/`");
  }
  if (c.kind != ConstValue::Kind::Int && c.kind != ConstValue::Kind::Bool)
    error_at(loc, Diag::NotConstexpr, what + " must be an integer constant, but it is " + describe(s));
  // 2**63 and above hold their bits in `i`: read as int64 they were negative
  // (tl.static_range(2**64 - 1) unrolled nothing).
  if (c.is_unsigned)
    error_at(loc, Diag::ConstantArithmetic,
             what + " is " + to_string(c) + ", which does not fit in a 64-bit signed integer");
  return c.i;
}

ir::Scalar Lowerer::to_dtype(const Symbol& s, const SourceLoc& loc, const std::string& what) {
  if (s.is_const() && s.constant.kind == ConstValue::Kind::DType) {
    if (s.constant.type_form != ConstValue::TypeForm::Scalar)
      error_at(loc, Diag::NotADtype, what + " must be an element dtype, but it is " + to_string(s.constant),
               "a block type's elements are `.element_ty`");
    if (s.constant.pointer)
      error_at(loc, Diag::NotADtype,
               what + " must be a value dtype, but it is the pointer type " + to_string(s.constant),
               "use `ptr.dtype.element_ty` for the type a pointer points to");
    return s.constant.dtype;
  }
  if (s.is_const() && s.constant.kind == ConstValue::Kind::Str) {
    if (auto t = dtype_from_name(s.constant.s)) return *t;
  }
  error_at(loc, Diag::NotADtype, what + " must be a dtype such as tl.float32, but it is " + describe(s));
}

void Lowerer::check_shape(const std::vector<int64_t>& shape, const SourceLoc& loc) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d <= 0 || (d & (d - 1)) != 0)
      error_at(loc, Diag::SizeNotPowerOfTwo,
               "tile dimensions must be powers of two, but a dimension is " + std::to_string(d),
               "round the block size up with tegula.next_power_of_2 and mask the tail");
    numel *= d;
    if (numel > ir::kMaxTileElements)
      error_at(loc, Diag::TileTooLarge, "tile has more than 2^20 elements", "use smaller block sizes and a loop");
  }
}

std::vector<int64_t> Lowerer::to_shape(const Symbol& s, const SourceLoc& loc, const std::string& what) {
  std::vector<int64_t> shape;
  if (s.kind == Symbol::Kind::Tuple) {
    for (const Symbol& e : s.elements) shape.push_back(to_int_const(e, loc, "each dimension of " + what));
  } else {
    shape.push_back(to_int_const(s, loc, what));
  }
  check_shape(shape, loc);
  return shape;
}

ir::ValueId Lowerer::cast(ir::ValueId v, Scalar to, const SourceLoc& loc) {
  const ir::Type& t = type(v);
  if (t.is_pointer()) error_at(loc, Diag::PointerConversion, "cannot convert a pointer to " + triton_name(to));
  if (t.scalar == to) return v;
  return create(OpKind::Cast, {v}, t.with_scalar(to), loc);
}

ir::ValueId Lowerer::broadcast_to(ir::ValueId v, const std::vector<int64_t>& shape, const SourceLoc& loc) {
  ir::Type t = type(v);
  if (t.shape == shape) return v;
  if (!t.is_tile()) return create(OpKind::Splat, {v}, t.with_shape(shape), loc);
  std::string why;
  if (t.shape.size() > shape.size() || !broadcast_shapes(t.shape, shape, &why) ||
      *broadcast_shapes(t.shape, shape, &why) != shape) {
    ir::Type target = t.with_shape(shape);
    error_at(loc, Diag::ShapesDoNotBroadcast, "cannot broadcast " + ir::to_string(t) + " to " + ir::to_string(target));
  }
  while (t.shape.size() < shape.size()) {
    std::vector<int64_t> s = t.shape;
    s.insert(s.begin(), 1);
    v = create(OpKind::ExpandDims, {v}, t.with_shape(s), loc, {{"axis", ir::Attr{int64_t{0}}}});
    t = type(v);
  }
  if (t.shape != shape) v = create(OpKind::Broadcast, {v}, t.with_shape(shape), loc);
  return v;
}

std::pair<ir::ValueId, ir::ValueId> Lowerer::broadcast_pair(ir::ValueId a, ir::ValueId b, const SourceLoc& loc) {
  const ir::Type& ta = type(a);
  const ir::Type& tb = type(b);
  std::string why;
  auto shape = broadcast_shapes(ta.shape, tb.shape, &why);
  if (!shape)
    error_at(loc, Diag::ShapesDoNotBroadcast,
             "shapes " + ir::to_string(ta) + " and " + ir::to_string(tb) + " cannot be broadcast together: " + why,
             "tiles combine when each dimension is equal or 1; use [:, None] / [None, :] to add dimensions");
  std::vector<int64_t> s = *shape;
  ir::ValueId ra = broadcast_to(a, s, loc);
  ir::ValueId rb = broadcast_to(b, s, loc);
  return {ra, rb};
}

std::pair<ir::ValueId, ir::ValueId> Lowerer::arith_operands(const Symbol& a, const Symbol& b, bool div_or_mod,
                                                            const SourceLoc& loc, const char* op_text) {
  auto typed = [&](const Symbol& s) -> TypedOperand {
    if (s.is_value()) {
      if (type(s.value).is_pointer())
        error_at(loc, Diag::InvalidOperandType,
                 std::string("operator `") + op_text + "` is not defined for pointers",
                 "if this operand should be a number, its launch argument was an array or tensor (0-d ones "
                 "included, e.g. torch.tensor(100)): pass a Python number, or `t.item()`");
      return {type(s.value).scalar, false};
    }
    if (s.is_const() && s.constant.is_numeric()) return {literal_type(s.constant), true};
    error_at(loc, Diag::InvalidOperandType, std::string("unsupported operand for `") + op_text + "`: " + describe(s));
  };
  TypedOperand ta = typed(a), tb = typed(b);
  auto ct = promote(ta, tb, div_or_mod);
  if (!ct)
    error_at(loc, Diag::MixedSignedness,
             std::string("Cannot use `") + op_text + "` with " + triton_name(ta.scalar) + " and " +
                      triton_name(tb.scalar) + " because they have different signedness",
             "cast one operand with .to(...) first");
  auto materialize = [&](const Symbol& s) {
    if (s.is_value()) return cast(s.value, *ct, loc);
    if (std::string problem = literal_fit_problem(s.constant, *ct); !problem.empty())
      error_at(loc, Diag::ConstantDoesNotFit,
               problem + " (in `" + op_text + "`)", "convert the other operand first, e.g. x.to(tl.int64)");
    return constant(s.constant, ir::Type::of(*ct), loc, std::string("an operand of `") + op_text + "`");
  };
  ir::ValueId va = materialize(a);
  ir::ValueId vb = materialize(b);
  return broadcast_pair(va, vb, loc);
}

namespace {

bool calls_a_function(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Call) return true;
  for (const ast::ExprPtr& c : e.children)
    if (c && calls_a_function(*c)) return true;
  for (const ast::Keyword& k : e.keywords)
    if (k.value && calls_a_function(*k.value)) return true;
  return false;
}

}  // namespace

// `x if c else y` with a runtime scalar condition and an arm that calls a
// function (a load, a store, an atomic, a helper): Python's rule, only the
// chosen arm runs, as an `if` whose result is the arm's value; a store on
// both sides stores once, a load the condition guards never reads. Arms of
// plain arithmetic are both computed and selected (they cannot fault or
// write), which keeps the common `a if pid > 0 else b` a select.
Symbol Lowerer::runtime_if_expression(const ast::Expr& e, ir::ValueId cond,
                                      const std::function<Symbol(size_t)>& side) {
  const std::string result = kIfExpression;
  Symbol chosen[2];
  auto arm = [&](int k) {
    chosen[k] = side(static_cast<size_t>(k + 1));
    frame().vars[result] = chosen[k];
  };
  lower_runtime_if(e.loc, cond, [&] { arm(0); }, [&] {
    arm(1);
    const Symbol& a = chosen[0];
    const Symbol& b = chosen[1];
    bool a_none = a.is_const() && a.constant.kind == ConstValue::Kind::None;
    bool b_none = b.is_const() && b.constant.kind == ConstValue::Kind::None;
    if (a_none != b_none)
      error_at(e.loc, Diag::VariableChangesType,
               "one arm of `x if c else y` gives no value (None) and the other " + describe(a_none ? b : a),
               "give both arms a value of one type, or write an `if` statement");
    if (a.is_value() && b.is_value() && !(fn_.type(a.value) == fn_.type(b.value)))
      error_at(e.loc, Diag::VariableChangesType,
               "Ternary expression with dynamic condition has inconsistent type: " +
                   ir::to_string(fn_.type(a.value)) + " and " + ir::to_string(fn_.type(b.value)),
               "convert one arm with .to(...) so both have the same type");
  });
  auto found = frame().vars.find(result);
  TEGULA_ASSERT(found != frame().vars.end(), "a runtime `x if c else y` yields its value");
  Symbol out = found->second;
  frame().vars.erase(found);
  return out;
}

Symbol Lowerer::binary(ast::BinaryOp op, const Symbol& a, const Symbol& b, const SourceLoc& loc) {
  using ast::BinaryOp;
  const char* text = ast::to_string(op);
  if (a.is_const() && b.is_const()) {
    if (auto r = const_binary(op, a.constant, b.constant, loc))
      return Symbol::of(*r).mark_assigned(a.assigned || b.assigned);
    error_at(loc, Diag::InvalidOperandType,
             std::string("unsupported operand types for `") + text + "`: " + kind_name(a.constant) + " and " +
                      kind_name(b.constant));
  }
  if (a.kind == Symbol::Kind::Tuple && b.kind == Symbol::Kind::Tuple && op == BinaryOp::Add) {
    ValueSizer size(loc, "this tuple");
    for (const Symbol* part : {&a, &b})
      for (const Symbol& element : part->elements) size.add(element);
    std::vector<Symbol> all = a.elements;
    all.insert(all.end(), b.elements.begin(), b.elements.end());
    return Symbol::tuple(std::move(all));
  }
  // Repetition, as Python's: `[2] * (RANK - 2)`, `n * (0,)`; a count below one gives ().
  bool repeat_a = a.kind == Symbol::Kind::Tuple && b.is_const(), repeat_b = b.kind == Symbol::Kind::Tuple && a.is_const();
  if (op == BinaryOp::Mul && (repeat_a || repeat_b)) {
    const Symbol& tuple = repeat_a ? a : b;
    const ConstValue& count = repeat_a ? b.constant : a.constant;
    if (count.kind != ConstValue::Kind::Int && count.kind != ConstValue::Kind::Bool)
      error_at(loc, Diag::InvalidOperandType,
               std::string("a tuple repeats by an int constant, not ") + kind_name(count),
               "write `(a, b) * N` with N a tl.constexpr or literal int");
    int64_t times = count.i;
    // Measured before it is built: one copy's parts times the count.
    size_t one = measure(tuple).parts - 1;
    if (count.is_unsigned || (times > 0 && one > 0 && static_cast<uint64_t>(times) > kMaxValueParts / one))
      error_at(loc, Diag::CompileTimeValueTooLarge,
               "a tuple repeated " + std::string(count.is_unsigned ? "2^63 or more" : std::to_string(times)) +
                   " times would hold more than " + std::to_string(kMaxValueParts) +
                   " values (counting those of the tuples and aggregates inside it)",
               "keep compile-time tuples small: compute with tiles (tl.arange, tl.full, tl.where)");
    std::vector<Symbol> all;
    for (int64_t k = 0; k < times; ++k) all.insert(all.end(), tuple.elements.begin(), tuple.elements.end());
    return Symbol::tuple(std::move(all));
  }
  // Pointer arithmetic: ptr + int, int + ptr, ptr - int.
  bool pa = is_pointer_value(*this, a), pb = is_pointer_value(*this, b);
  if (pa || pb) {
    if ((op != BinaryOp::Add && op != BinaryOp::Sub) || (pa && pb) || (pb && op == BinaryOp::Sub))
      error_at(loc, Diag::InvalidOperandType, std::string("operator `") + text + "` is not defined for pointers",
               "pointers support `ptr + offset` and `ptr - offset` with integer offsets");
    const Symbol& ptr = pa ? a : b;
    const Symbol& off = pa ? b : a;
    ir::ValueId offset = to_value(off, loc, "a pointer offset");
    // A boolean (a `tl.int1`/`tl.uint1` argument) offsets by 0 or 1, as in Triton.
    if (type(offset).scalar == Scalar::I1) offset = cast(offset, Scalar::I32, loc);
    if (!ir::is_integer(type(offset).scalar))
      error_at(loc, Diag::NonIntegerPointerOffset,
               "pointer offsets must be integers, but the offset is " + describe(Symbol::of(offset)),
               "convert the offset with .to(tl.int32) or .to(tl.int64)");
    if (op == BinaryOp::Sub) offset = create(OpKind::Neg, {offset}, type(offset), loc);
    auto [p, o] = broadcast_pair(ptr.value, offset, loc);
    return Symbol::of(create(OpKind::AddPtr, {p, o}, type(p), loc));
  }
  auto scalar_of = [&](const Symbol& s) {
    return s.is_value() ? type(s.value).scalar : literal_type(s.constant);
  };
  auto typed = [&](const Symbol& s) { return TypedOperand{scalar_of(s), !s.is_value()}; };
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul: {
      auto [x, y] = arith_operands(a, b, false, loc, text);
      OpKind k = op == BinaryOp::Add ? OpKind::Add : op == BinaryOp::Sub ? OpKind::Sub : OpKind::Mul;
      return Symbol::of(create(k, {x, y}, type(x), loc));
    }
    case BinaryOp::Div: {
      auto [x, y] = arith_operands(a, b, true, loc, text);
      if (!ir::is_float(type(x).scalar)) {
        x = cast(x, Scalar::F32, loc);
        y = cast(y, Scalar::F32, loc);
      }
      return Symbol::of(create(OpKind::Div, {x, y}, type(x), loc));
    }
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      auto [x, y] = arith_operands(a, b, true, loc, text);
      if (op == BinaryOp::FloorDiv && ir::is_float(type(x).scalar))
        error_at(loc, Diag::InvalidOperandType, "`//` is defined for integer tiles only",
                 "for floats use tl.floor(a / b)");
      return Symbol::of(create(op == BinaryOp::FloorDiv ? OpKind::Div : OpKind::Rem, {x, y}, type(x), loc));
    }
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
    case BinaryOp::LShift:
    case BinaryOp::RShift: {
      if (ir::is_float(scalar_of(a)) || ir::is_float(scalar_of(b)))
        error_at(loc, Diag::InvalidOperandType,
                 "invalid operands of type " + triton_name(scalar_of(a)) + " and " + triton_name(scalar_of(b)) +
                     " for `" + text + "`: it needs integer or boolean operands, not floats");
      auto [x, y] = arith_operands(a, b, false, loc, text);
      if (op == BinaryOp::RShift)
        return Symbol::of(right_shift(*this, x, y, arithmetic_right_shift(typed(a), typed(b)), loc));
      OpKind k = op == BinaryOp::BitAnd  ? OpKind::And
                 : op == BinaryOp::BitOr ? OpKind::Or
                 : op == BinaryOp::BitXor ? OpKind::Xor
                                          : OpKind::Shl;
      return Symbol::of(create(k, {x, y}, type(x), loc));
    }
    case BinaryOp::Pow: {
      auto [x, y] = arith_operands(a, b, false, loc, text);
      if (!ir::is_float(type(x).scalar))
        error_at(loc, Diag::InvalidOperandType,
                 "`**` on integer tiles is not supported", "convert to a float type first");
      return Symbol::of(create(OpKind::Pow, {x, y}, type(x), loc));
    }
    case BinaryOp::MatMul:
      error_at(loc, Diag::UnsupportedSyntax, "`@` is not supported inside kernels", "use tl.dot(a, b)");
  }
  TEGULA_ASSERT(false, "unhandled binary op");
}

Symbol Lowerer::unary(ast::UnaryOp op, const Symbol& a, const SourceLoc& loc) {
  if (a.is_const()) {
    if (auto r = const_unary(op, a.constant, loc)) return Symbol::of(*r).mark_assigned(a.assigned);
    error_at(loc, Diag::InvalidOperandType,
             std::string("bad operand type for unary `") + ast::to_string(op) + "`: " + kind_name(a.constant));
  }
  ir::ValueId v = to_value(a, loc, std::string("the operand of `") + ast::to_string(op) + "`");
  const ir::Type& t = type(v);
  if (t.is_pointer()) error_at(loc, Diag::InvalidOperandType,
                               std::string("unary `") + ast::to_string(op) + "` is not defined for pointers");
  switch (op) {
    case ast::UnaryOp::Pos: return Symbol::of(v);
    case ast::UnaryOp::Neg: return Symbol::of(create(OpKind::Neg, {v}, t, loc));
    case ast::UnaryOp::Invert:
      if (ir::is_float(t.scalar)) error_at(loc, Diag::InvalidOperandType,
                                           "`~` needs an integer or boolean operand, not " + triton_name(t.scalar));
      return Symbol::of(create(OpKind::Not, {v}, t, loc));
    case ast::UnaryOp::Not: {
      ir::ValueId zero = constant(ConstValue::integer(0), t.element(), loc);
      zero = broadcast_to(zero, t.shape, loc);
      return Symbol::of(create(OpKind::Cmp, {v, zero}, t.with_scalar(Scalar::I1), loc,
                               {{"pred", ir::Attr{std::string("eq")}}}));
    }
  }
  TEGULA_ASSERT(false, "unhandled unary op");
}

Symbol Lowerer::compare(ast::CmpOp op, const Symbol& a, const Symbol& b, const SourceLoc& loc) {
  using ast::CmpOp;
  if (a.kind == Symbol::Kind::Tuple && b.kind == Symbol::Kind::Tuple && (op == CmpOp::Eq || op == CmpOp::NotEq)) {
    // Tuples of constants (x.shape == (16, 32)) compare element by element.
    bool equal = a.elements.size() == b.elements.size();
    for (size_t i = 0; equal && i < a.elements.size(); ++i) {
      Symbol e = compare(CmpOp::Eq, a.elements[i], b.elements[i], loc);
      bool t;
      if (!truth_constant(e, loc, &t)) error_at(loc, Diag::NotConstexpr,
                                                "tuples can only be compared when they hold constants");
      equal = t;
    }
    return Symbol::of(ConstValue::boolean(op == CmpOp::Eq ? equal : !equal));
  }
  if (a.is_const() && b.is_const()) {
    if (auto r = const_compare(op, a.constant, b.constant))
      return Symbol::of(*r).mark_assigned(a.assigned || b.assigned);
    error_at(loc, Diag::InvalidOperandType,
             std::string("`") + ast::to_string(op) + "` is not supported between " + kind_name(a.constant) +
                      " and " + kind_name(b.constant));
  }
  // A dtype against a host object (`ptr.dtype.element_ty == torch.float16`, as LMDeploy's fused_lora writes):
  // Triton calls tl.dtype.__eq__, under which a dtype equals only a dtype, so `==` is the constant False and `!=`
  // True, where this fell through to the arithmetic operands and was refused (E0301).
  auto dtype_and_host_object = [](const Symbol& x, const Symbol& y) {
    return x.is_const() && x.constant.kind == ConstValue::Kind::DType && y.kind == Symbol::Kind::Opaque;
  };
  if ((op == CmpOp::Eq || op == CmpOp::NotEq) && (dtype_and_host_object(a, b) || dtype_and_host_object(b, a))) {
    // Kept for compatibility, but almost always a slip for the tl dtype: said where it is written.
    const Symbol& dtype = a.is_const() ? a : b;
    const Symbol& other = a.is_const() ? b : a;
    warn_at(loc,
            "`" + std::string(ast::to_string(op)) + "` between " + to_string(dtype.constant) + " and a host object (" +
                other.name + ") is always " + (op == CmpOp::Eq ? "False" : "True") +
                ": a kernel's dtypes are tl dtypes, which equal only tl dtypes (as in Triton)",
            "compare with the tl dtype (tl.float16 for torch.float16 or np.float16)");
    return Symbol::of(ConstValue::boolean(op == CmpOp::NotEq));
  }
  if (op == CmpOp::Is || op == CmpOp::IsNot) {
    // `x is None` on anything that is not a constant is simply false.
    bool same = false;
    if (a.kind != b.kind) same = false;
    return Symbol::of(ConstValue::boolean(op == CmpOp::Is ? same : !same));
  }
  const char* pred = cmp_pred(op);
  if (!pred) error_at(loc, Diag::InvalidOperandType,
                      std::string("`") + ast::to_string(op) + "` is not supported on tiles");
  auto [x, y] = arith_operands(a, b, false, loc, ast::to_string(op));
  return Symbol::of(create(OpKind::Cmp, {x, y}, type(x).with_scalar(Scalar::I1), loc,
                           {{"pred", ir::Attr{std::string(pred)}}}));
}

ir::ValueId Lowerer::truth_of(ir::ValueId v, const SourceLoc& loc) {
  const ir::Type t = type(v);
  if (t.is_pointer()) return create(OpKind::Cast, {v}, t.with_scalar(Scalar::I1), loc);
  if (t.scalar == Scalar::I1) return v;
  ir::ValueId zero = broadcast_to(constant(ConstValue::integer(0), t.element(), loc), t.shape, loc);
  return create(OpKind::Cmp, {v, zero}, t.with_scalar(Scalar::I1), loc, {{"pred", ir::Attr{std::string("ne")}}});
}

bool Lowerer::truth_constant(const Symbol& s, const SourceLoc& loc, bool* value) {
  if (s.is_const()) {
    *value = s.constant.truthy();
    return true;
  }
  if (s.kind == Symbol::Kind::Tuple) {
    *value = !s.elements.empty();
    return true;
  }
  if (s.is_value()) return false;
  *value = true;  // modules, functions: truthy like in Python
  return true;
}

namespace {

bool is_full_slice(const Symbol& s) {
  return s.kind == Symbol::Kind::Slice &&
         std::all_of(s.elements.begin(), s.elements.end(), [](const Symbol& part) { return part.is_none(); });
}

// Python's items[lo:hi:step] of constant bounds (None where absent).

}  // namespace

// Subscripts. Tuples (constexpr ones included) take an index or a Python
// slice. Tiles and scalars take what Triton's tensor.__getitem__ takes: None
// inserts a size-1 dim at its position, a full slice (`:`, `::`, `None:`...)
// keeps the dim there; anything else (x[1:3], x[0], x[i]) is refused.
Symbol Lowerer::subscript(const Symbol& base, const std::vector<Symbol>& index, const std::vector<SourceLoc>& locs,
                          const SourceLoc& loc) {
  if (base.kind == Symbol::Kind::Aggregate) return aggregate_subscript(base, index, locs, loc);
  if (base.kind == Symbol::Kind::Tuple) {
    if (index.size() != 1) error_at(loc, Diag::InvalidTupleIndex, "tuples take exactly one index");
    if (index[0].kind == Symbol::Kind::Slice) {
      std::vector<std::optional<Symbol>> bounds(index[0].elements.begin(), index[0].elements.end());
      return slice_tuple(*this, base, bounds, locs[0]);
    }
    const Symbol& at = index[0];
    if (at.is_const() && at.constant.kind == ConstValue::Kind::Int && at.constant.is_unsigned)
      error_at(locs[0], Diag::InvalidTupleIndex, "tuple index out of range");  // 2**63 and above
    int64_t i = to_int_const(at, locs[0], "a tuple index");
    int64_t n = static_cast<int64_t>(base.elements.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) error_at(locs[0], Diag::InvalidTupleIndex, "tuple index out of range");
    return base.elements[static_cast<size_t>(i)];
  }
  if (!base.is_value()) error_at(loc, Diag::InvalidTupleIndex, describe(base) + " cannot be indexed");
  ir::ValueId v = base.value;
  // A scalar's `None`s insert where its dimensions end, as Triton's expand_dims of a scalar does
  // (Python's list.insert clamps the position): `flag[:, None]` is a tile of one element.
  const bool scalar = !type(v).is_tile();
  for (size_t axis = 0; axis < index.size(); ++axis) {
    const Symbol& s = index[axis];
    if (is_full_slice(s)) continue;
    if (!s.is_none())
      error_at(locs[axis], Diag::InvalidTileIndex,
               "unsupported tensor index: tiles take only `None` (a new dimension) and `:` (a kept one), got " +
                   (s.kind == Symbol::Kind::Slice ? std::string("a slice with bounds") : describe(s)),
               "tiles have static shapes: select elements with masks and tl.where, or tl.reshape/tl.split");
    const ir::Type t = type(v);
    int64_t at = scalar ? std::min<int64_t>(static_cast<int64_t>(axis), t.rank()) : static_cast<int64_t>(axis);
    if (at > t.rank())
      error_at(locs[axis], Diag::InvalidTileIndex,
               "`None` at position " + std::to_string(axis) + " is past the dimensions of " + describe(base));
    std::vector<int64_t> shape = t.shape;
    shape.insert(shape.begin() + at, 1);
    v = t.is_tile() ? create(OpKind::ExpandDims, {v}, t.with_shape(shape), loc, {{"axis", ir::Attr{at}}})
                    : create(OpKind::Splat, {v}, t.with_shape(shape), loc);
  }
  return Symbol::of(v);
}

Symbol Lowerer::attribute(const Symbol& base, const std::string& attr, const SourceLoc& loc) {
  switch (base.kind) {
    case Symbol::Kind::Module: {
      if (base.name == "tegula") {
        if (attr == "language") return Symbol::module("language");
        if (find_builtin("tegula." + attr) != nullptr) return Symbol::builtin("tegula." + attr);
        error_at(loc, Diag::HostObjectInKernel,
                 "`" + attr + "` of the tegula/triton module cannot be used inside a kernel");
      }
      if (auto t = dtype_from_name(attr); t && attr != "float" && attr != "double" && attr != "half" &&
                                          attr != "bool")
        return Symbol::of(ConstValue::type(*t));
      // tl.core is the module that defines most of Triton's tl names: the same language (tl.core.arange).
      if (attr == "core" && base.name == "language") return base;
      if (attr == "math" || attr == "extra" || attr == "libdevice" || attr == "cuda" || attr == "standard" ||
          attr == "target_info" || attr == "random" || (attr == "cpu" && base.name.ends_with(".extra")))
        return Symbol::module(base.name + "." + attr);
      if (base.name.ends_with("target_info")) {
        if (find_builtin("target_info." + attr) != nullptr) return Symbol::builtin("target_info." + attr);
        error_at(loc, Diag::UnsupportedLanguageName, "`tl.target_info." + attr + "` is not supported by Tegula",
                 "tl.target_info has is_cuda, cuda_capability_geq, is_hip and its variants");
      }
      if (attr == "constexpr") return Symbol::builtin("constexpr");
      if (std::optional<Symbol> c = language_constant(attr)) return *c;
      if (attr == "tensor" || attr == "dtype") return Symbol::builtin(attr);  // classes isinstance() tests for
      if (base.name == "language.PropagateNan") {
        if (attr == "ALL") return Symbol::of(ConstValue::string("all"));
        if (attr == "NONE") return Symbol::of(ConstValue::string("none"));
        error_at(loc, Diag::NoSuchAttribute,
                 "tl.PropagateNan has no member `" + attr + "`", "use tl.PropagateNan.ALL or tl.PropagateNan.NONE");
      }
      if (attr == "PropagateNan") return Symbol::module(base.name + ".PropagateNan");
      if (base.name.ends_with(".math")) {
        // Triton 2's tl.math held libdevice's functions, its elementwise max
        // and min among them; kernels written for it still call
        // tl.math.max(a, b), which must not reach the reduction tl.max.
        if (attr == "max" || attr == "min") return Symbol::builtin(attr == "max" ? "maximum" : "minimum");
        if (!is_language_builtin(attr) && find_builtin("libdevice." + attr) != nullptr)
          return Symbol::builtin("libdevice." + attr);
      }
      if (base.name.ends_with("libdevice") && find_builtin("libdevice." + attr) != nullptr)
        return Symbol::builtin("libdevice." + attr);
      // Triton 2's tl.libdevice.min(a, b) and max were elementwise too (fminf, fmaxf, and their integer kin).
      if (base.name.ends_with("libdevice") && (attr == "max" || attr == "min"))
        return Symbol::builtin(attr == "max" ? "maximum" : "minimum");
      if (is_language_builtin(attr)) return Symbol::builtin(attr);
      // Triton's names that Tegula lacks are in the registry (call_builtin refuses them): this one is neither.
      // Named by the path it was reached through (`tl.extra.cuda.X`, not `tl.X`).
      const std::string shown =
          base.name.starts_with("language") ? "tl" + base.name.substr(std::string("language").size()) : base.name;
      std::string hint = did_you_mean(attr, language_names(), "tl.");
      error_at(loc, Diag::UnsupportedLanguageName, "`" + shown + "." + attr + "` is not a name of tegula.language",
               hint.empty() ? "docs/language.md lists the supported names" : hint);
    }
    case Symbol::Kind::Value: {
      const ir::Type& t = type(base.value);
      if (attr == "dtype") {
        ConstValue d = ConstValue::type(t.scalar);
        d.pointer = t.is_pointer();
        return Symbol::of(d);
      }
      if (attr == "shape") {
        std::vector<Symbol> dims;
        for (int64_t d : t.shape) dims.push_back(Symbol::of(ConstValue::integer(d)));
        return Symbol::tuple(std::move(dims));
      }
      if (attr == "numel") return Symbol::of(ConstValue::integer(t.numel()));
      if (attr == "type") return type_of(*this, base);
      if (attr == "T") {
        CallArgs args;
        args.positional = {base};
        args.positional_locs = {loc};
        args.loc = loc;
        return call_builtin("trans", args);
      }
      if (is_value_method(attr)) {
        Symbol m;
        m.kind = Symbol::Kind::Method;
        m.name = attr;
        m.receiver = std::make_shared<Symbol>(base);
        return m;
      }
      error_at(loc, Diag::NoSuchAttribute, describe(base) + " has no attribute `" + attr + "`",
               did_you_mean(attr, tile_attribute_names()));
    }
    case Symbol::Kind::Const:
      if (base.constant.kind == ConstValue::Kind::DType) {
        if (attr == "element_ty" && base.constant.pointer) return Symbol::of(ConstValue::type(base.constant.dtype));
        if (attr == "primitive_bitwidth") return Symbol::of(ConstValue::integer(ir::bit_width(base.constant.dtype)));
        if (attr == "itemsize") return Symbol::of(ConstValue::integer(ir::byte_size(base.constant.dtype)));
        if (std::optional<Symbol> a = type_object_attribute(base.constant, attr)) return *a;
        if (find_builtin("dtype." + attr) != nullptr) {
          Symbol m;
          m.kind = Symbol::Kind::Method;
          m.name = "dtype." + attr;
          m.receiver = std::make_shared<Symbol>(base);
          return m;
        }
      }
      if (attr == "type" && base.assigned && base.constant.is_numeric())  // a tensor in Triton: its dtype
        return type_of(*this, Symbol::of(to_value(base, loc, "the constant")));
      if (attr == "type") return type_of(*this, base);
      if (attr == "value") return base;  // tl.constexpr(x).value
      if (base.constant.is_numeric() && (attr == "dtype" || attr == "shape" || attr == "numel" ||
                                         is_value_method(attr)))
        // A Python number is a tensor where Triton makes it one: `acc = 0; acc.to(tl.int64)`.
        return attribute(Symbol::of(to_value(base, loc, "the constant")), attr, loc);
      error_at(loc, Diag::NoSuchAttribute, describe(base) + " has no attribute `" + attr + "`",
               base.constant.is_numeric() ? did_you_mean(attr, tile_attribute_names()) : "");
    case Symbol::Kind::Opaque:
      error_at(loc, Diag::HostObjectInKernel, "`" + base.name + "` is a host object and cannot be used inside a kernel",
               "kernels can use tl/tegula functions, @jit functions and int/float/bool/str constants");
    case Symbol::Kind::HostModule: return member_global(base, attr, loc);
    case Symbol::Kind::Tuple: {
      // A named tuple argument's field (Symbol::name holds the fields, comma-separated).
      size_t index = 0, start = 0;
      while (!base.name.empty() && start <= base.name.size()) {
        size_t end = base.name.find(',', start);
        if (end == std::string::npos) end = base.name.size();
        if (base.name.compare(start, end - start, attr) == 0 && index < base.elements.size())
          return base.elements[index];
        ++index;
        start = end + 1;
      }
      if (attr == "type") {
        // A tuple of constants is a constexpr; one that holds tensors (or
        // numbers Triton makes tensors of) has a tl.tuple_type.
        bool tensors = false;
        for (const Symbol& leaf : leaves_of(base)) tensors = tensors || !leaf.is_const() || leaf.assigned;
        if (!tensors && constexpr_text(base)) return type_of(*this, base);
        Symbol types = Symbol::tuple({});
        types.name = base.name;
        for (const Symbol& e : base.elements) types.elements.push_back(attribute(e, "type", loc));
        return types;
      }
      error_at(loc, Diag::NoSuchAttribute, describe(base) + " has no attribute `" + attr + "`");
    }
    case Symbol::Kind::BlockPointer:
    case Symbol::Kind::TensorDescriptor: return block_access_attribute(*this, base, attr, loc);
    case Symbol::Kind::AggregateType:
    case Symbol::Kind::Aggregate: return aggregate_attribute(base, attr, loc);
    default: error_at(loc, Diag::NoSuchAttribute, describe(base) + " has no attribute `" + attr + "`");
  }
}

namespace {

// Triton's builtins take the code generator's state as keywords (`tl.arange(0, n, _semantic=_semantic)`),
// which library code written in their style passes on: Tegula's builtins have no use for them.
CallArgs without_semantic(const CallArgs& args) {
  CallArgs out = args;
  out.keywords.clear();
  out.keyword_locs.clear();
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    if (args.keywords[k].first == "_semantic" || args.keywords[k].first == "_generator") continue;
    out.keywords.push_back(args.keywords[k]);
    if (k < args.keyword_locs.size()) out.keyword_locs.push_back(args.keyword_locs[k]);
  }
  return out;
}

}  // namespace

Symbol Lowerer::call(const Symbol& callee, const CallArgs& args) {
  switch (callee.kind) {
    case Symbol::Kind::Builtin: return call_builtin(callee.name, without_semantic(args));
    case Symbol::Kind::JitFunction: return call_jit(callee.function, args);
    case Symbol::Kind::Lambda: return call_lambda(callee, args);
    case Symbol::Kind::HostFunction: return call_host_function(callee, args);
    case Symbol::Kind::NamedTupleType: return make_named_tuple(callee, args);
    case Symbol::Kind::AggregateType: return make_aggregate(callee, args);
    case Symbol::Kind::Method: {
      CallArgs with_self = args;
      with_self.positional.insert(with_self.positional.begin(), *callee.receiver);
      with_self.positional_locs.insert(with_self.positional_locs.begin(), args.loc);
      if (!callee.elements.empty()) return call(callee.elements[0], with_self);  // an aggregate's method
      return call_builtin(callee.name, without_semantic(with_self));
    }
    case Symbol::Kind::Opaque: {
      std::string counterpart = language_counterpart(callee.name);
      error_at(args.loc, Diag::HostObjectInKernel,
               "`" + callee.name + "` is a host object and cannot be called inside a kernel",
               counterpart.empty() ? "only tl functions and other @tegula.jit functions can be called from a kernel"
                                   : "use `" + counterpart + "` inside a kernel");
    }
    default: error_at(args.loc, Diag::NotCallable, describe(callee) + " is not callable");
  }
}

// `a0 + a1 + ... + aN` is a left-leaning tree as deep as the sum is long:
// its left spine is walked in a loop, so the stack stays flat however many
// terms there are (eval's frame is large). Operands are still evaluated left
// to right.
Symbol Lowerer::eval_binary_chain(const ast::Expr& e) {
  std::vector<const ast::Expr*> spine;
  const ast::Expr* leftmost = &e;
  for (; leftmost->kind == ast::ExprKind::Binary; leftmost = leftmost->children[0].get()) spine.push_back(leftmost);
  Symbol acc = eval(*leftmost);
  for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
    Symbol right = eval(*(*it)->children[1]);
    acc = binary((*it)->binary_op, acc, right, (*it)->loc);
  }
  return acc;
}

// Builders that grow a value from many parts (a tuple literal, a
// comprehension, a call's arguments) bound it part by part; this catches
// the rest (a named tuple's or an aggregate's fields, a helper's result).
Symbol Lowerer::eval(const ast::Expr& e) {
  check_stack_room(e.loc);
  Symbol s = eval_expression(e);
  check_value_size(s, e.loc);
  return s;
}

Symbol Lowerer::eval_expression(const ast::Expr& e) {
  using ast::ExprKind;
  switch (e.kind) {
    case ExprKind::Name: return lookup(e.name, e.loc);
    case ExprKind::Int: {
      ConstValue c = ConstValue::integer(e.int_value);
      c.is_unsigned = e.is_unsigned;
      return Symbol::of(c);
    }
    case ExprKind::Float: return Symbol::of(ConstValue::real(e.float_value));
    case ExprKind::Bool: return Symbol::of(ConstValue::boolean(e.bool_value));
    case ExprKind::None: return Symbol::of(ConstValue::none());
    case ExprKind::Str: return Symbol::of(ConstValue::string(e.name));
    case ExprKind::JoinedStr: return joined_string(e);
    case ExprKind::FormattedValue: TEGULA_ASSERT(false, "a FormattedValue outside its JoinedStr");
    case ExprKind::Attribute: return attribute(eval(*e.children[0]), e.name, e.loc);
    case ExprKind::Subscript: {
      Symbol base = eval(*e.children[0]);
      if (base.kind == Symbol::Kind::Tuple && e.children.size() == 2 && e.children[1] &&
          e.children[1]->kind == ExprKind::Slice) {
        std::vector<std::optional<Symbol>> bounds;
        for (const auto& part : e.children[1]->children) bounds.push_back(part ? std::optional(eval(*part)) : std::nullopt);
        return slice_tuple(*this, base, bounds, e.children[1]->loc);
      }
      std::vector<Symbol> index;
      std::vector<SourceLoc> locs;
      for (size_t i = 1; i < e.children.size(); ++i) {
        const ast::Expr* c = e.children[i].get();
        locs.push_back(c ? c->loc : e.loc);
        if (c && c->kind == ExprKind::Slice) {
          Symbol s;
          s.kind = Symbol::Kind::Slice;
          for (const auto& part : c->children) s.elements.push_back(part ? eval(*part) : Symbol::of(ConstValue::none()));
          index.push_back(std::move(s));
        } else {
          index.push_back(c ? eval(*c) : Symbol::of(ConstValue::none()));
        }
      }
      return subscript(base, index, locs, e.loc);
    }
    case ExprKind::Slice: error_at(e.loc, Diag::InvalidTileIndex, "a slice can only appear inside `[...]`");
    case ExprKind::Call: {
      Symbol callee = eval(*e.children[0]);
      CallArgs args;
      args.loc = e.loc;
      ValueSizer size(e.loc, "the arguments of this call");
      for (size_t i = 1; i < e.children.size(); ++i) {
        if (e.children[i]->kind == ExprKind::Starred) {  // f(*t): the tuple's elements, each in its place
          Symbol t = eval(*e.children[i]->children[0]);
          if (t.kind != Symbol::Kind::Tuple)
            error_at(e.children[i]->loc, Diag::WrongArgumentKind,
                     "`*` unpacks a tuple into the arguments of a call, but this is " + describe(t));
          size.add(t);
          for (const Symbol& element : t.elements) {
            args.positional.push_back(element);
            args.positional_locs.push_back(e.children[i]->loc);
          }
          continue;
        }
        args.positional.push_back(eval(*e.children[i]));
        args.positional_locs.push_back(e.children[i]->loc);
        size.add(args.positional.back());
      }
      for (const ast::Keyword& k : e.keywords) {
        args.keywords.emplace_back(k.name, eval(*k.value));
        args.keyword_locs.push_back(k.loc);
        size.add(args.keywords.back().second);
      }
      return call(callee, args);
    }
    case ExprKind::Binary: return eval_binary_chain(e);
    case ExprKind::Unary: return unary(e.unary_op, eval(*e.children[0]), e.loc);
    case ExprKind::BoolOp: {
      bool is_and = e.bool_op == ast::BoolOpKind::And;
      Symbol acc = eval(*e.children[0]);
      for (size_t i = 1; i < e.children.size(); ++i) {
        bool truth;
        if (truth_constant(acc, e.children[i - 1]->loc, &truth)) {
          // Python semantics: `a and b` is a if a is falsy, else b.
          if (is_and != truth) return acc;
          acc = eval(*e.children[i]);
          continue;
        }
        Symbol next = eval(*e.children[i]);
        bool next_truth;
        if (truth_constant(next, e.children[i]->loc, &next_truth)) {
          if (is_and == next_truth) continue;  // `x and True` -> x, `x or False` -> x
          acc = next;
          continue;
        }
        ir::ValueId x = truth_of(to_value(acc, e.loc, "an operand of `and`/`or`"), e.loc);
        ir::ValueId y = truth_of(to_value(next, e.loc, "an operand of `and`/`or`"), e.loc);
        auto [bx, by] = broadcast_pair(x, y, e.loc);
        acc = Symbol::of(create(is_and ? OpKind::And : OpKind::Or, {bx, by}, type(bx), e.loc));
      }
      return acc;
    }
    case ExprKind::Compare: {
      Symbol left = eval(*e.children[0]);
      Symbol result;
      bool have = false;
      for (size_t i = 0; i < e.cmp_ops.size(); ++i) {
        Symbol right = eval(*e.children[i + 1]);
        Symbol r = compare(e.cmp_ops[i], left, right, e.loc);
        result = have ? binary(ast::BinaryOp::BitAnd, result, r, e.loc) : r;
        have = true;
        left = right;
      }
      return result;
    }
    case ExprKind::IfExp: {
      Symbol cond = eval(*e.children[0]);
      bool truth;
      if (truth_constant(cond, e.children[0]->loc, &truth)) {
        Symbol chosen = eval(*e.children[truth ? 1 : 2]);
        return cond.assigned ? chosen.mark_assigned() : chosen;  // Triton selects between tensors
      }
      ir::ValueId c = to_value(cond, e.children[0]->loc, "the condition");
      if (type(c).is_tile() && type(c).numel() == 1) c = only_element(*this, c, e.children[0]->loc);
      if (!type(c).is_tile()) c = truth_of(c, e.children[0]->loc);  // Python's truth, as `if` takes it
      if (type(c).scalar != Scalar::I1) error_at(e.children[0]->loc, Diag::NotBoolean,
                                                 "the condition of `x if c else y` must be boolean");
      if (!type(c).is_tile() && (calls_a_function(*e.children[1]) || calls_a_function(*e.children[2])))
        return runtime_if_expression(e, c, [&](size_t k) { return eval(*e.children[k]); });
      Symbol a = eval(*e.children[1]);
      Symbol b = eval(*e.children[2]);
      // Pointers are chosen, not selected (arithmetic has no pointer select):
      // the branches yield the arms computed above.
      if (!type(c).is_tile() && (is_pointer_value(*this, a) || is_pointer_value(*this, b)))
        return runtime_if_expression(e, c, [&](size_t k) { return k == 1 ? a : b; });
      auto [x, y] = arith_operands(a, b, false, e.loc, "if-else");
      auto [cc, xx] = broadcast_pair(c, x, e.loc);
      auto [cc2, yy] = broadcast_pair(cc, y, e.loc);
      auto [xx2, yy2] = broadcast_pair(xx, yy, e.loc);
      return Symbol::of(create(OpKind::Select, {cc2, xx2, yy2}, type(xx2), e.loc));
    }
    case ExprKind::Tuple:
    case ExprKind::List: {
      std::vector<Symbol> elems;
      ValueSizer size(e.loc, e.kind == ExprKind::List ? "this list" : "this tuple");
      for (const auto& c : e.children) {
        elems.push_back(eval(*c));
        size.add(elems.back());
      }
      Symbol tuple = Symbol::tuple(std::move(elems));
      tuple.written_as_list = e.kind == ExprKind::List;
      return tuple;
    }
    case ExprKind::Comprehension: return comprehension(e);
    case ExprKind::Lambda: return make_lambda(e);
    case ExprKind::NamedExpr: {
      const std::string& name = e.children[0]->name;
      Symbol v = eval(*e.children[1]);
      if (!frame().constexpr_names.count(name)) v.mark_assigned();
      assign(name, v);
      return v;
    }
    case ExprKind::Starred:
      error_at(e.loc, Diag::UnsupportedSyntax, "`*` unpacks a tuple only into the arguments of a call here",
               "index the tuple (t[0], t[1]) or pass it whole");
  }
  TEGULA_ASSERT(false, "unhandled expression kind");
}

Symbol Lowerer::comprehension(const ast::Expr& e) {
  constexpr size_t kMaxElements = 4096;  // as many as tl.static_range unrolls
  constexpr size_t kMaxKernelElements = 65536;
  // What a clause iterates: a tuple's elements, or the ints of range(...) /
  // tl.static_range(...) of constants.
  auto items_of = [&](const ast::Expr& iter) {
    if (iter.kind == ast::ExprKind::Call) {
      Symbol callee = eval(*iter.children[0]);
      if (callee.kind == Symbol::Kind::Builtin &&
          (callee.name == "py.range" || callee.name == "range" || callee.name == "static_range")) {
        if (!iter.keywords.empty() || iter.children.size() < 2 || iter.children.size() > 4)
          error_at(iter.loc, Diag::WrongArgumentCount,
                   "a range in a comprehension takes 1 to 3 positional arguments, known when compiling");
        std::vector<int64_t> b;
        for (size_t i = 1; i < iter.children.size(); ++i)
          b.push_back(to_int_const(eval(*iter.children[i]), iter.children[i]->loc, "a bound of the range"));
        int64_t start = b.size() == 1 ? 0 : b[0], end = b.size() == 1 ? b[0] : b[1], step = b.size() == 3 ? b[2] : 1;
        if (step == 0) error_at(iter.loc, Diag::UnsupportedLoop, "the step of a range cannot be zero");
        std::vector<Symbol> out;
        // Stepped in 128 bits: near the ends of int64, `v += step` wrapped and ran on.
        for (__int128 v = start; step > 0 ? v < end : v > end; v += step) {
          if (out.size() == kMaxElements)
            error_at(iter.loc, Diag::StaticLoopTooLong,
                     "a comprehension inside a kernel unrolls at most " + std::to_string(kMaxElements) + " elements");
          out.push_back(Symbol::of(ConstValue::integer(static_cast<int64_t>(v))));
        }
        return out;
      }
    }
    Symbol s = eval(iter);
    if (s.kind != Symbol::Kind::Tuple)
      error_at(iter.loc, Diag::UnsupportedLoop,
               "a comprehension inside a kernel iterates a tuple or a range of constants, not " + describe(s),
               "it is unrolled when the kernel compiles; loop over tl.range(...) for values known at run time");
    return s.elements;
  };
  // The clauses' targets are the comprehension's own names: what they were
  // before (or that they were not defined) comes back afterwards, as in Python.
  std::map<std::string, Symbol> before = frame().vars;
  std::vector<Symbol> out;
  ValueSizer size(e.loc, "this comprehension's tuple");
  size_t clauses = (e.children.size() - 1) / 3;
  std::function<void(size_t)> run = [&](size_t c) {
    if (c == clauses) {
      if (out.size() == kMaxElements)
        error_at(e.loc, Diag::StaticLoopTooLong,
                 "a comprehension inside a kernel unrolls at most " + std::to_string(kMaxElements) + " elements");
      // Nested comprehensions multiply: the kernel as a whole has a budget too.
      if (++comprehension_elements_ > kMaxKernelElements)
        error_at(e.loc, Diag::StaticLoopTooLong,
                 "the comprehensions of this kernel unroll more than " + std::to_string(kMaxKernelElements) +
                     " elements in all",
                 "compute with tiles (tl.arange) instead of unrolling");
      out.push_back(eval(*e.children[0]));
      size.add(out.back());
      return;
    }
    const ast::Expr& target = *e.children[1 + 3 * c];
    const ast::Expr* condition = e.children[3 + 3 * c].get();
    for (const Symbol& item : items_of(*e.children[2 + 3 * c])) {
      bind_target(*this, target, item);
      if (condition) {
        bool keep = false;
        if (!truth_constant(eval(*condition), condition->loc, &keep))
          error_at(condition->loc, Diag::NotConstexpr,
                   "the `if` of a comprehension inside a kernel must be known when the kernel compiles",
                   "choose elements with tl.where for values known at run time");
        if (!keep) continue;
      }
      run(c + 1);
    }
  };
  run(0);
  frame().vars = std::move(before);
  return Symbol::tuple(std::move(out));
}

}  // namespace tegula::frontend
