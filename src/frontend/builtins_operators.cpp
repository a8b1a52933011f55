// The function forms Triton exports for what kernels usually write as
// operators or conversions: tl.add/sub/mul (`x + y` ...), the tile methods
// x.logical_and/x.logical_or, tl.to_tensor, tl.expect_zero, and
// tl.map_elementwise (a @jit function applied to every element).
#include "frontend/builtins_operators.h"

#include "frontend/lowering.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

// add(x, y, sanitize_overflow=True) and its siblings are the operators. The
// flag only matters under Triton's overflow sanitizer, which Tegula has not:
// integer arithmetic wraps either way (docs/ir.md).
Symbol lower_operator_function(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "y", "?sanitize_overflow"}, c);
  ast::BinaryOp op = n == "add" ? ast::BinaryOp::Add : n == "sub" ? ast::BinaryOp::Sub : ast::BinaryOp::Mul;
  return l.binary(op, a.get("x"), a.get("y"), c.loc);
}

// x.logical_and(y), x.logical_or(y): boolean AND/OR of two boolean tiles.
// Triton bitcasts other operands to int1, which only a boolean survives, so
// a wider operand is refused here with the fix spelled out.
Symbol lower_logical(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"input", "other"}, c);
  auto as_bool = [&](const char* which) {
    ir::ValueId v = l.to_value(a.get(which), a.loc(which), std::string("the ") + which + " of ." + n + "()");
    if (l.type(v).is_pointer() || l.type(v).scalar != Scalar::I1)
      error_at(a.loc(which), Diag::NotBoolean,
               "." + n + "() needs boolean operands, but the " + which + " is " + l.describe(Symbol::of(v)),
               "compare it first, e.g. `x != 0`");
    return v;
  };
  ir::ValueId x = as_bool("input");
  ir::ValueId y = as_bool("other");
  auto [bx, by] = l.broadcast_pair(x, y, c.loc);
  return Symbol::of(l.create(n == "logical_and" ? OpKind::And : OpKind::Or, {bx, by}, l.type(bx), c.loc));
}

// to_tensor(x): a Python number as a scalar of its literal's type (int32,
// int64, uint64, float32, int1); a value passes through.
Symbol lower_to_tensor(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x"}, c);
  const Symbol& x = a.get("x");
  if (x.is_const() && x.constant.is_numeric())
    return Symbol::of(l.constant(x.constant, ir::Type::of(literal_type(x.constant)), c.loc));
  return Symbol::of(l.to_value(x, a.loc("x"), "the argument of tl.to_tensor"));
}

// expect_zero(x, mask): x, unchanged. Triton's debug mode asserts that x is 0
// where mask holds; Tegula's does the same through tl.device_assert's op.
Symbol lower_expect_zero(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x", "mask"}, c);
  if (!l.debug()) return a.get("x");
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the x of tl.expect_zero");
  ir::ValueId m = l.to_value(a.get("mask"), a.loc("mask"), "the mask of tl.expect_zero");
  ir::Type t = l.type(x);
  ir::ValueId zero = l.broadcast_to(l.constant(ConstValue::integer(0), t.element(), c.loc), t.shape, c.loc);
  ir::ValueId is_zero = l.create(OpKind::Cmp, {x, zero}, t.with_scalar(Scalar::I1), c.loc,
                                 {{"pred", ir::Attr{std::string("eq")}}});
  ir::Type mt = l.type(m);
  ir::ValueId no = l.broadcast_to(l.constant(ConstValue::boolean(false), mt.element(), c.loc), mt.shape, c.loc);
  ir::ValueId unmasked = l.create(OpKind::Cmp, {m, no}, mt, c.loc, {{"pred", ir::Attr{std::string("eq")}}});
  auto [z, u] = l.broadcast_pair(is_zero, unmasked, c.loc);
  ir::ValueId ok = l.create(OpKind::Or, {z, u}, l.type(z), c.loc);
  l.builder().set_loc(c.loc);
  l.builder().create(OpKind::Assert, {ok}, {}, {{"message", ir::Attr{std::string("expect_zero expected x == 0 where mask is true")}}});
  return Symbol::of(x);
}

// map_elementwise(fn, *args, pack=1): fn applied to every element of the
// broadcast arguments. Tile operations are elementwise, so calling fn once on
// the whole tiles computes the same elements; what fn cannot do on tiles is
// branch on an element (`if x > 0:` is a runtime `if` on a tile condition,
// refused where it is written, with tl.where as the way out).
Symbol lower_map_elementwise(Lowerer& l, const CallArgs& c, const std::string& n) {
  if (c.positional.empty() || c.positional[0].kind != Symbol::Kind::JitFunction)
    error_at(c.loc, Diag::WrongArgumentKind, "the first argument of tl.map_elementwise must be a @jit function");
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    if (c.keywords[k].first != "pack")
      error_at(c.keyword_locs[k], Diag::UnknownKeywordArgument,
               "`tl.map_elementwise` got an unexpected keyword argument `" + c.keywords[k].first + "`");
    int64_t pack = l.to_int_const(c.keywords[k].second, c.keyword_locs[k], "the pack of tl.map_elementwise");
    if (pack < 1) error_at(c.keyword_locs[k], Diag::ArgumentOutOfRange, "pack must be >= 1");
    // pack > 1 hands fn several neighbouring elements at once, a register
    // packing hint; applied to whole tiles the elements are the same.
    if (pack > 1)
      error_at(c.keyword_locs[k], Diag::UnsupportedLanguageName,
               "tl.map_elementwise with pack > 1 is not supported",
               "pack=1 computes the same elements; drop the argument");
  }
  std::vector<ir::ValueId> args;
  for (size_t i = 1; i < c.positional.size(); ++i)
    args.push_back(l.to_value(c.positional[i], c.positional_locs[i], "an argument of tl.map_elementwise"));
  if (args.empty()) error_at(c.loc, Diag::WrongArgumentCount, "tl.map_elementwise needs at least one tile");
  std::vector<int64_t> shape = l.type(args[0]).shape;
  for (size_t i = 1; i < args.size(); ++i) shape = l.type(l.broadcast_pair(args[0], args[i], c.loc).first).shape;
  CallArgs call;
  call.loc = c.loc;
  for (size_t i = 0; i < args.size(); ++i) {
    call.positional.push_back(Symbol::of(l.broadcast_to(args[i], shape, c.positional_locs[i + 1])));
    call.positional_locs.push_back(c.positional_locs[i + 1]);
  }
  Symbol r = l.call_jit(c.positional[0].function, call);
  // Every result has the arguments' shape, constants included (a tensor in Triton).
  auto widen = [&](const Symbol& s) {
    ir::ValueId v = l.to_value(s, c.loc, "a result of the mapped function");
    return Symbol::of(l.broadcast_to(v, shape, c.loc));
  };
  if (r.kind != Symbol::Kind::Tuple) return widen(r);
  std::vector<Symbol> out;
  for (const Symbol& e : r.elements) out.push_back(widen(e));
  return Symbol::tuple(std::move(out));
}

// inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack): the
// `inline_asm` op over the broadcast arguments, one result per dtype (a
// tuple when dtype is a sequence). Triton's operand conventions ($0..., the
// constraint string, packing of narrow elements into 32-bit registers) are
// the CUDA backend's to spell (docs/ir.md); the CPU backend has no PTX and
// refuses the op.
Symbol lower_inline_asm(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"asm", "constraints", "args", "dtype", "is_pure", "pack"}, c);
  auto text = [&](const char* name) {
    ConstValue v = l.to_const(a.get(name), a.loc(name), std::string("the ") + name + " of tl." + n);
    if (v.kind != ConstValue::Kind::Str)
      error_at(a.loc(name), Diag::WrongArgumentKind, std::string("the ") + name + " of tl." + n + " must be a string");
    return v.s;
  };
  std::string asm_text = text("asm"), constraints = text("constraints");
  bool pure = l.to_const(a.get("is_pure"), a.loc("is_pure"), "is_pure").truthy();
  int64_t pack = l.to_int_const(a.get("pack"), a.loc("pack"), "the pack of tl." + n);
  if (pack < 1) error_at(a.loc("pack"), Diag::ArgumentOutOfRange, "pack must be at least 1");
  auto number = [&](Scalar s, const SourceLoc& where, const std::string& what) {
    if (s == Scalar::I1)
      error_at(where, Diag::UnsupportedElementType, what + " of tl." + n + " cannot be boolean",
               "convert it with .to(tl.int8) or .to(tl.int32)");
  };
  const Symbol& list = a.get("args");
  std::vector<Symbol> items = list.kind == Symbol::Kind::Tuple ? list.elements : std::vector<Symbol>{list};
  std::vector<ir::ValueId> args;
  std::vector<int64_t> shape;
  for (const Symbol& s : items) {
    ir::ValueId v = l.to_value(s, a.loc("args"), "an argument of tl." + n);
    if (l.type(v).is_pointer()) error_at(a.loc("args"), Diag::InvalidOperandType, "tl." + n + " takes numbers, not pointers");
    number(l.type(v).scalar, a.loc("args"), "an argument");
    args.push_back(v);
    if (!args.empty()) shape = l.type(l.broadcast_pair(args[0], v, a.loc("args")).first).shape;
  }
  for (ir::ValueId& v : args) v = l.broadcast_to(v, shape, a.loc("args"));
  const Symbol& d = a.get("dtype");
  std::vector<Symbol> dtypes = d.kind == Symbol::Kind::Tuple ? d.elements : std::vector<Symbol>{d};
  std::vector<ir::Type> results;
  for (const Symbol& t : dtypes) {
    Scalar s = l.to_dtype(t, a.loc("dtype"), "the dtype of tl." + n);
    number(s, a.loc("dtype"), "a result");
    results.push_back(ir::Type{s, false, shape});
  }
  if (results.empty()) error_at(a.loc("dtype"), Diag::WrongArgumentCount, "tl." + n + " needs at least one result dtype");
  l.builder().set_loc(c.loc);
  ir::OpId op = l.builder().create(OpKind::InlineAsm, args, results,
                                   {{"asm", ir::Attr{asm_text}}, {"constraints", ir::Attr{constraints}},
                                    {"pack", ir::Attr{pack}}, {"pure", ir::Attr{int64_t{pure ? 1 : 0}}}});
  const std::vector<ir::ValueId>& out = l.function().op(op).results;
  if (d.kind != Symbol::Kind::Tuple) return Symbol::of(out[0]);
  std::vector<Symbol> tuple;
  for (ir::ValueId v : out) tuple.push_back(Symbol::of(v));
  return Symbol::tuple(std::move(tuple));
}

}  // namespace tegula::frontend
