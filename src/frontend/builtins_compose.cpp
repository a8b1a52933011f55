// Triton standard-library helpers that are compositions of other ops, so
// they need no IR op of their own: tl.interleave and tl.cat (join, then
// trans/reshape) and tl.swizzle2d (integer arithmetic on scalars or tiles).
#include <algorithm>

#include "frontend/builtins_scan.h"
#include "frontend/builtins_tile.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;

namespace {

// a and b promoted to one type and joined: shape + [2].
ir::ValueId join_pair(Lowerer& l, const Symbol& a, const Symbol& b, const SourceLoc& loc, const char* callee) {
  auto [x, y] = l.arith_operands(a, b, false, loc, callee);
  if (!l.type(x).is_tile()) error_at(loc, Diag::WrongRank, std::string(callee) + " needs tiles, got two scalars");
  std::vector<int64_t> shape = l.type(x).shape;
  shape.push_back(2);
  return l.create(OpKind::Join, {x, y}, l.type(x).with_shape(shape), loc);
}

Symbol py_min(Lowerer& l, const Symbol& a, const Symbol& b, const SourceLoc& loc) {
  CallArgs args;
  args.positional = {a, b};
  args.positional_locs = {loc, loc};
  args.loc = loc;
  return l.call_builtin(a.is_const() && b.is_const() ? "py.min" : "minimum", args);
}

}  // namespace

// interleave(a, b) along the last dim: [a0, b0, a1, b1, ...], which is the
// row-major order of join(a, b); two scalars interleave to their join.
Symbol lower_interleave(Lowerer& l, const CallArgs& c, const std::string& name) {
  BoundArgs a(name, {"a", "b"}, c);
  CallArgs pair;
  pair.loc = c.loc;
  pair.positional = {a.get("a"), a.get("b")};
  pair.positional_locs = {a.loc("a"), a.loc("b")};
  ir::ValueId joined = l.to_value(l.call_builtin("join", pair), c.loc, "the joined pair");
  if (l.type(joined).rank() == 1) return Symbol::of(joined);
  std::vector<int64_t> shape = l.type(joined).shape;
  shape.pop_back();
  shape.back() *= 2;
  return Symbol::of(l.create(OpKind::Reshape, {joined}, l.type(joined).with_shape(shape), c.loc));
}

// cat(a, b, dim=0): join puts the pair last ([..., 2]); moving that dim in
// front of `dim` and merging the two lays out all of a, then all of b along
// `dim`. Tegula always keeps this order, so can_reorder (Triton's hint that
// any order will do) changes nothing.
Symbol lower_cat(Lowerer& l, const CallArgs& c, const std::string& name) {
  BoundArgs a(name, {"input", "other", "?can_reorder", "?dim"}, c);
  for (const char* which : {"input", "other"}) {
    const Symbol& s = a.get(which);
    if (!s.is_value() || !l.type(s.value).is_tile())
      error_at(a.loc(which), Diag::WrongRank,
               "tl.cat needs tiles, but its " + std::string(which) + " is " + l.describe(s));
  }
  const ir::Type& ta = l.type(a.get("input").value);
  const ir::Type& tb = l.type(a.get("other").value);
  if (ta.shape != tb.shape)
    error_at(c.loc, Diag::ShapeMismatch,
             "tl.cat needs tiles of the same shape, got " + ir::to_string(ta) + " and " + ir::to_string(tb),
             "tile sizes are powers of two, so only equal halves concatenate to one");
  int64_t dim = 0;
  if (a.has("dim")) {
    int64_t given = l.to_int_const(a.get("dim"), a.loc("dim"), "the dim of tl.cat");
    dim = wrap_axis(given, ta.rank(), a.loc("dim"),
                    "the dim of tl.cat is " + std::to_string(given) + ", out of range for a tile of rank " +
                        std::to_string(ta.rank()));
  }
  ir::ValueId joined = join_pair(l, a.get("input"), a.get("other"), c.loc, "tl.cat");
  const ir::Type& tj = l.type(joined);
  int rank = tj.rank();
  std::vector<int64_t> perm;
  for (int d = 0; d + 1 < rank; ++d) {
    if (d == dim) perm.push_back(rank - 1);
    perm.push_back(d);
  }
  std::vector<int64_t> moved;
  for (int64_t p : perm) moved.push_back(tj.shape[static_cast<size_t>(p)]);
  ir::ValueId front = l.create(OpKind::Trans, {joined}, tj.with_shape(moved), c.loc, {{"perm", ir::Attr{perm}}});
  std::vector<int64_t> shape;
  for (size_t d = 0; d < moved.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) {
      shape.push_back(moved[d] * moved[d + 1]);
      ++d;
    } else {
      shape.push_back(moved[d]);
    }
  }
  return Symbol::of(l.create(OpKind::Reshape, {front}, tj.with_shape(shape), c.loc));
}

// swizzle2d(i, j, size_i, size_j, size_g): renumbers the cells of a
// size_i x size_j grid so that consecutive linear ids walk bands of size_g
// rows column by column (the last band may be shorter), which keeps the
// programs running at one time on few rows and columns (L2 reuse in matmul).
Symbol lower_swizzle2d(Lowerer& l, const CallArgs& c, const std::string& name) {
  BoundArgs a(name, {"i", "j", "size_i", "size_j", "size_g"}, c);
  using ast::BinaryOp;
  auto op = [&](BinaryOp kind, const Symbol& x, const Symbol& y) { return l.binary(kind, x, y, c.loc); };
  Symbol linear = op(BinaryOp::Add, op(BinaryOp::Mul, a.get("i"), a.get("size_j")), a.get("j"));
  Symbol band_cells = op(BinaryOp::Mul, a.get("size_g"), a.get("size_j"));
  Symbol first_row = op(BinaryOp::Mul, op(BinaryOp::FloorDiv, linear, band_cells), a.get("size_g"));
  Symbol rows = py_min(l, op(BinaryOp::Sub, a.get("size_i"), first_row), a.get("size_g"), c.loc);
  Symbol within = op(BinaryOp::Mod, linear, band_cells);
  Symbol new_i = op(BinaryOp::Add, first_row, op(BinaryOp::Mod, within, rows));
  Symbol new_j = op(BinaryOp::FloorDiv, within, rows);
  return Symbol::tuple({new_i, new_j});
}

}  // namespace tegula::frontend
