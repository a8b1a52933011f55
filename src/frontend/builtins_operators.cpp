// Triton's tensor operator methods by name (`x.__add__(y)`, x.logical_and,
// see builtins_operators.h) and the function forms Triton exports for what
// kernels usually write as operators or conversions: tl.add/sub/mul,
// tl.to_tensor, tl.expect_zero, tl.map_elementwise (a @jit function applied
// to every element) and tl.inline_asm_elementwise.
#include "frontend/builtins_operators.h"

#include <map>

#include "frontend/builtins.h"
#include "frontend/lowering.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

using ast::BinaryOp;
using ast::CmpOp;
using ast::UnaryOp;

const std::map<std::string, BinaryOp>& binary_methods() {
  static const std::map<std::string, BinaryOp> m = {
      {"add", BinaryOp::Add},         {"sub", BinaryOp::Sub},       {"mul", BinaryOp::Mul},
      {"truediv", BinaryOp::Div},     {"floordiv", BinaryOp::FloorDiv}, {"mod", BinaryOp::Mod},
      {"and", BinaryOp::BitAnd},      {"or", BinaryOp::BitOr},      {"xor", BinaryOp::BitXor},
      {"lshift", BinaryOp::LShift},   {"rshift", BinaryOp::RShift},
  };
  return m;
}

const std::map<std::string, CmpOp>& compare_methods() {
  static const std::map<std::string, CmpOp> m = {
      {"eq", CmpOp::Eq}, {"ne", CmpOp::NotEq}, {"lt", CmpOp::Lt},
      {"le", CmpOp::LtE}, {"gt", CmpOp::Gt},   {"ge", CmpOp::GtE},
  };
  return m;
}

Symbol truth(Lowerer& l, const Symbol& s, const SourceLoc& loc) {
  ir::ValueId v = l.to_value(s, loc, "an operand of logical_and/logical_or");
  return Symbol::of(l.cast(v, ir::Scalar::I1, loc));
}

}  // namespace

Symbol lower_operator_method(Lowerer& l, const CallArgs& c, const std::string& n) {
  const Symbol& self = c.positional.at(0);
  if (n == "__neg__" || n == "__invert__" || n == "__not__" || n == "__pos__") {
    BoundArgs a(n, {"self"}, c);
    UnaryOp op = n == "__neg__" ? UnaryOp::Neg : n == "__invert__" ? UnaryOp::Invert
                 : n == "__not__" ? UnaryOp::Not : UnaryOp::Pos;
    return l.unary(op, self, c.loc);
  }
  BoundArgs a(n, {"self", "other"}, c);
  const Symbol& other = a.get("other");
  if (n == "logical_and" || n == "logical_or")
    return l.binary(n == "logical_and" ? BinaryOp::BitAnd : BinaryOp::BitOr, truth(l, self, c.loc),
                    truth(l, other, a.loc("other")), c.loc);
  // "__radd__" -> ("add", reflected)
  bool reflected = n.size() > 5 && n[2] == 'r' && !binary_methods().count(n.substr(2, n.size() - 4));
  std::string base = n.substr(reflected ? 3 : 2, n.size() - (reflected ? 5 : 4));
  if (auto it = binary_methods().find(base); it != binary_methods().end())
    return reflected ? l.binary(it->second, other, self, c.loc) : l.binary(it->second, self, other, c.loc);
  if (auto it = compare_methods().find(base); it != compare_methods().end())
    return reflected ? l.compare(it->second, other, self, c.loc) : l.compare(it->second, self, other, c.loc);
  TEGULA_ASSERT(false, "an operator method without a meaning: " + n);
}


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
  ir::ValueId m = as_mask(l, a.get("mask"), a.loc("mask"), "tl.expect_zero");
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
// the whole tiles computes the same elements; an `if` on an element
// (`if x > 0:`, a tile condition there) runs both branches and selects per
// element (lower_elementwise_if.cpp).
//
// With pack = p (a power of two), fn takes p neighbouring elements of each
// argument at once, (a0..a{p-1}, b0..b{p-1}, ...), and returns p values of
// each result, (r0..r{p-1}, s0..s{p-1}, ...), as in Triton. Neighbours are
// consecutive in the tiles' row-major order: each argument is cut into p
// tiles of every p-th element (a reshape to [n/p, 2, ..., 2] and splits), fn
// runs once on those, and each result's p tiles are joined back.
namespace {

// The pieces of a [m, 2, ..., 2] tile (k twos): piece j holds the elements whose
// index within their group of 2^k is j, the first 2 the most significant bit.
std::vector<Symbol> split_pack(Lowerer& l, const Symbol& t, int k, const SourceLoc& loc) {
  if (k == 0) return {t};
  CallArgs one;
  one.loc = loc;
  one.positional = {t};
  one.positional_locs = {loc};
  Symbol halves = l.call_builtin("split", one);
  std::vector<Symbol> even = split_pack(l, halves.elements[0], k - 1, loc);
  std::vector<Symbol> odd = split_pack(l, halves.elements[1], k - 1, loc);
  std::vector<Symbol> out;
  for (size_t j = 0; j < even.size() * 2; ++j) out.push_back((j & 1) ? odd[j >> 1] : even[j >> 1]);
  return out;
}

// The inverse of split_pack: pieces of [m] back to [m, 2, ..., 2].
Symbol join_pack(Lowerer& l, const std::vector<Symbol>& pieces, const SourceLoc& loc) {
  if (pieces.size() == 1) return pieces[0];
  std::vector<Symbol> even, odd;
  for (size_t j = 0; j < pieces.size(); ++j) ((j & 1) ? odd : even).push_back(pieces[j]);
  CallArgs pair;
  pair.loc = loc;
  pair.positional = {join_pack(l, even, loc), join_pack(l, odd, loc)};
  pair.positional_locs = {loc, loc};
  return l.call_builtin("join", pair);
}

}  // namespace

Symbol lower_map_elementwise(Lowerer& l, const CallArgs& c, const std::string& n) {
  if (c.positional.empty() || (c.positional[0].kind != Symbol::Kind::JitFunction &&
                                c.positional[0].kind != Symbol::Kind::Lambda))
    error_at(c.loc, Diag::WrongArgumentKind,
             "the first argument of tl.map_elementwise must be a @jit function or a lambda");
  int64_t pack = 1;
  SourceLoc pack_loc = c.loc;
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    if (c.keywords[k].first != "pack")
      error_at(c.keyword_locs[k], Diag::UnknownKeywordArgument,
               "`tl.map_elementwise` got an unexpected keyword argument `" + c.keywords[k].first + "`");
    pack = l.to_int_const(c.keywords[k].second, c.keyword_locs[k], "the pack of tl.map_elementwise");
    pack_loc = c.keyword_locs[k];
    if (pack < 1 || (pack & (pack - 1)) != 0)
      error_at(pack_loc, Diag::ArgumentOutOfRange,
               "the pack of tl.map_elementwise must be a power of two, got " + std::to_string(pack));
  }
  std::vector<ir::ValueId> args;
  for (size_t i = 1; i < c.positional.size(); ++i)
    args.push_back(l.to_value(c.positional[i], c.positional_locs[i], "an argument of tl.map_elementwise"));
  if (args.empty()) error_at(c.loc, Diag::WrongArgumentCount, "tl.map_elementwise needs at least one tile");
  std::vector<int64_t> shape = l.type(args[0]).shape;
  for (size_t i = 1; i < args.size(); ++i) shape = l.type(l.broadcast_pair(args[0], args[i], c.loc).first).shape;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (pack > 1 && numel % pack != 0)
    error_at(pack_loc, Diag::ShapeMismatch,
             "tl.map_elementwise with pack=" + std::to_string(pack) + " needs tiles of a multiple of " +
                 std::to_string(pack) + " elements, got " + std::to_string(numel),
             "use a smaller pack, or pack=1");
  int twos = 0;
  for (int64_t p = pack; p > 1; p >>= 1) ++twos;
  std::vector<int64_t> grouped = {numel / pack};  // [n / pack, 2, ..., 2]
  for (int b = 0; b < twos; ++b) grouped.push_back(2);
  CallArgs call;
  call.loc = c.loc;
  for (size_t i = 0; i < args.size(); ++i) {
    ir::ValueId v = l.broadcast_to(args[i], shape, c.positional_locs[i + 1]);
    if (pack == 1) {
      call.positional.push_back(Symbol::of(v));
      call.positional_locs.push_back(c.positional_locs[i + 1]);
      continue;
    }
    v = l.create(OpKind::Reshape, {v}, l.type(v).with_shape(grouped), c.positional_locs[i + 1]);
    for (const Symbol& piece : split_pack(l, Symbol::of(v), twos, c.positional_locs[i + 1])) {
      call.positional.push_back(piece);
      call.positional_locs.push_back(c.positional_locs[i + 1]);
    }
  }
  Symbol r = c.positional[0].kind == Symbol::Kind::Lambda ? l.call(c.positional[0], call)
                                                         : l.call_jit_per_element(c.positional[0].function, call);
  const std::vector<int64_t> piece_shape = pack == 1 ? shape : std::vector<int64_t>{numel / pack};
  // Every result has the arguments' shape, constants included (a tensor in Triton).
  auto widen = [&](const Symbol& s, const std::vector<int64_t>& to) {
    ir::ValueId v = l.to_value(s, c.loc, "a result of the mapped function");
    return Symbol::of(l.broadcast_to(v, to, c.loc));
  };
  std::vector<Symbol> values = r.kind == Symbol::Kind::Tuple ? r.elements : std::vector<Symbol>{r};
  if (pack == 1) {
    if (r.kind != Symbol::Kind::Tuple) return widen(r, shape);
    std::vector<Symbol> out;
    for (const Symbol& e : values) out.push_back(widen(e, shape));
    return Symbol::tuple(std::move(out));
  }
  if (values.size() % static_cast<size_t>(pack) != 0)
    error_at(c.loc, Diag::WrongArgumentCount,
             "with pack=" + std::to_string(pack) + " the function given to tl.map_elementwise returns " +
                 std::to_string(pack) + " values of each result, but it returned " + std::to_string(values.size()),
             "return (r0, r1, ...) with one value per packed element, for each result in turn");
  std::vector<Symbol> out;
  for (size_t first = 0; first < values.size(); first += static_cast<size_t>(pack)) {
    std::vector<Symbol> pieces;
    for (int64_t j = 0; j < pack; ++j) pieces.push_back(widen(values[first + static_cast<size_t>(j)], piece_shape));
    ir::ValueId joined = l.to_value(join_pack(l, pieces, c.loc), c.loc, "a packed result");
    out.push_back(Symbol::of(l.create(OpKind::Reshape, {joined}, l.type(joined).with_shape(shape), c.loc)));
  }
  if (out.size() == 1) return out[0];
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
    refuse_nul(v.s, a.loc(name), std::string("the ") + name + " of tl." + n);
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
    // A pointer goes in as its 64-bit address (constraint l), as Triton passes it: loads and stores the asm
    // makes itself (ld.global.acquire, prefetch) through tensors of pointers.
    if (!l.type(v).is_pointer()) number(l.type(v).scalar, a.loc("args"), "an argument");
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
  ir::OpId op = l.create_op(OpKind::InlineAsm, args, results, c.loc,
                            {{"asm", ir::Attr{asm_text}}, {"constraints", ir::Attr{constraints}},
                             {"pack", ir::Attr{pack}}, {"pure", ir::Attr{int64_t{pure ? 1 : 0}}}});
  const std::vector<ir::ValueId>& out = l.function().op(op).results;
  if (d.kind != Symbol::Kind::Tuple) return Symbol::of(out[0]);
  std::vector<Symbol> tuple;
  for (ir::ValueId v : out) tuple.push_back(Symbol::of(v));
  return Symbol::tuple(std::move(tuple));
}

}  // namespace tegula::frontend
