// Block pointers and tensor descriptors (see builtins_block_ptr.h for the
// expansion into pointer tiles and masks).
#include "frontend/builtins_block_ptr.h"

#include "frontend/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>

#include "frontend/builtins_atomic.h"
#include "frontend/type_rules.h"
#include "ir/atomic.h"
#include "ir/block_access.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

constexpr size_t kMaxDescriptorRank = 5;  // Triton's limit (and the hardware's for TMA)

// --- the parts of a block pointer / descriptor symbol ---------------------------------

size_t rank_of(const Symbol& s) { return s.block->block_shape.size(); }

ir::ValueId part(const Symbol& s, size_t index) {
  TEGULA_ASSERT(index < s.elements.size() && s.elements[index].is_value(), "malformed block access symbol");
  return s.elements[index].value;
}
ir::ValueId base_of(const Symbol& s) { return part(s, 0); }
ir::ValueId shape_of(const Symbol& s, size_t d) { return part(s, 1 + d); }
ir::ValueId stride_of(const Symbol& s, size_t d) { return part(s, 1 + rank_of(s) + d); }
ir::ValueId offset_of(const Symbol& s, size_t d) { return part(s, 1 + 2 * rank_of(s) + d); }

Symbol make_symbol(Symbol::Kind kind, std::vector<ir::ValueId> parts, BlockAccess block) {
  Symbol s;
  s.kind = kind;
  for (ir::ValueId v : parts) s.elements.push_back(Symbol::of(v));
  s.block = std::make_shared<const BlockAccess>(std::move(block));
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t d : shape) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

// The integer a value holds when it is a constant (a literal, a constexpr, an
// argument specialized as 1).
std::optional<int64_t> known_int(Lowerer& l, ir::ValueId v) {
  int64_t out = 0;
  if (!ir::known_int(l.function(), v, &out)) return std::nullopt;
  return out;
}

// --- arguments ------------------------------------------------------------------------------

// The items of a shape/strides/offsets argument: a tuple, or one scalar for rank 1 (as Triton).
std::vector<Symbol> items(const Symbol& s) {
  if (s.kind == Symbol::Kind::Tuple) return s.elements;
  return {s};
}

ir::ValueId pointer_base(Lowerer& l, const BoundArgs& a, const std::string& callee) {
  const Symbol& p = a.get("base");
  if (!p.is_value() || !l.type(p.value).is_pointer() || l.type(p.value).is_tile())
    error_at(a.loc("base"), Diag::WrongArgumentKind,
             "the base of " + callee + " must be a pointer, but it is " + l.describe(p),
             "pass the tensor's pointer argument (not a tile of pointers)");
  return p.value;
}

// An integer scalar: the shape, a stride or an offset.
ir::ValueId int_scalar(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& what) {
  if (s.is_const() && s.constant.kind == ConstValue::Kind::Int) return l.to_value(s, loc, what);
  if (!s.is_value() || l.type(s.value).is_tile() || l.type(s.value).is_pointer() ||
      !ir::is_integer(l.type(s.value).scalar) || l.type(s.value).scalar == Scalar::I1)
    error_at(loc, Diag::NotInteger, what + " must be an integer scalar, but it is " + l.describe(s));
  return s.value;
}

// Shapes and strides keep their signed type (an int argument is i32 unless it
// needs 64 bits); unsigned ones become int64 so comparisons with the signed
// offsets are defined.
ir::ValueId extent_value(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& what) {
  ir::ValueId v = int_scalar(l, s, loc, what);
  return ir::is_signed(l.type(v).scalar) ? v : l.cast(v, Scalar::I64, loc);
}

// Offsets are int32, as in Triton (the block's element positions are int32).
ir::ValueId offset_value(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& what) {
  ir::ValueId v = int_scalar(l, s, loc, what);
  if (ir::bit_width(l.type(v).scalar) > 32)
    error_at(loc, Diag::NotInteger, what + " must be a 32-bit integer, but it is " + l.describe(Symbol::of(v)),
             "block offsets are int32 as in Triton: convert with .to(tl.int32), or index with a pointer tile");
  return l.cast(v, Scalar::I32, loc);
}

std::vector<ir::ValueId> int_list(Lowerer& l, const BoundArgs& a, const std::string& param, size_t rank,
                                  const std::string& callee, bool offsets) {
  std::vector<Symbol> list = items(a.get(param));
  if (list.size() != rank)
    error_at(a.loc(param), Diag::WrongRank, "`" + param + "` of " + callee + " has " + std::to_string(list.size()) +
                               " elements but the block has rank " + std::to_string(rank),
             "give one entry per dimension of `block_shape`");
  std::vector<ir::ValueId> out;
  for (size_t d = 0; d < rank; ++d) {
    std::string what = "`" + param + "[" + std::to_string(d) + "]` of " + callee;
    out.push_back(offsets ? offset_value(l, list[d], a.loc(param), what)
                          : extent_value(l, list[d], a.loc(param), what));
  }
  return out;
}

std::vector<int64_t> const_ints(Lowerer& l, const BoundArgs& a, const std::string& param, const std::string& callee) {
  std::vector<int64_t> out;
  std::vector<Symbol> list = items(a.get(param));
  for (size_t d = 0; d < list.size(); ++d) {
    const Symbol& s = list[d];
    if (!s.is_const() || (s.constant.kind != ConstValue::Kind::Int && s.constant.kind != ConstValue::Kind::Bool))
      error_at(a.loc(param), Diag::NotConstexpr,
               "`" + param + "` of " + callee + " must be compile-time integers, but element " +
                                 std::to_string(d) + " is " + l.describe(s),
               "use literals or `tl.constexpr` parameters, e.g. block_shape=(BLOCK_M, BLOCK_K)");
    out.push_back(l.to_int_const(s, a.loc(param), "element " + std::to_string(d) + " of `" + param + "`"));
  }
  return out;
}

std::vector<int64_t> block_shape_arg(Lowerer& l, const BoundArgs& a, const std::string& callee) {
  std::vector<int64_t> shape = const_ints(l, a, "block_shape", callee);
  if (shape.empty()) error_at(a.loc("block_shape"), Diag::WrongRank, "`block_shape` of " + callee + " is empty");
  l.check_shape(shape, a.loc("block_shape"));
  return shape;
}

std::string padding_arg(Lowerer& l, const BoundArgs& a, const std::string& callee, Scalar element,
                        const std::string& fallback) {
  if (!a.has("padding_option")) return fallback;
  const Symbol& p = a.get("padding_option");
  if (!p.is_const() || p.constant.kind != ConstValue::Kind::Str ||
      (p.constant.s != "" && p.constant.s != "zero" && p.constant.s != "nan"))
    error_at(a.loc("padding_option"), Diag::InvalidOption,
             "`padding_option` of " + callee + " must be \"zero\", \"nan\" or \"\", not " +
                                          l.describe(p));
  if (p.constant.s == "nan" && !ir::is_float(element))
    error_at(a.loc("padding_option"), Diag::NotFloatingPoint,
             "padding_option=\"nan\" needs floating-point elements, but they are " +
                                          triton_name(element),
             "use padding_option=\"zero\"");
  return p.constant.s;
}

// boundary_check: an int or a tuple of distinct ints in [0, rank); the
// dimensions to mask.
std::vector<bool> boundary_check_arg(Lowerer& l, const BoundArgs& a, size_t rank) {
  std::vector<bool> checked(rank, false);
  if (!a.has("boundary_check")) return checked;
  for (int64_t d : const_ints(l, a, "boundary_check", "a block pointer access")) {
    if (d < 0 || static_cast<size_t>(d) >= rank)
      error_at(a.loc("boundary_check"), Diag::ArgumentOutOfRange, "boundary_check dimension " + std::to_string(d) +
                                            " is out of range for a block of rank " + std::to_string(rank),
               "dimensions are numbered from 0 to " + std::to_string(rank - 1));
    if (checked[static_cast<size_t>(d)])
      error_at(a.loc("boundary_check"), Diag::ArgumentOutOfRange,
               "boundary_check names dimension " + std::to_string(d) + " twice");
    checked[static_cast<size_t>(d)] = true;
  }
  return checked;
}

// --- the expansion --------------------------------------------------------------------------

// The strided block a block pointer (or a descriptor at its offsets) names.
ir::StridedBlock strided_block(const Symbol& bp) {
  ir::StridedBlock block;
  block.base = base_of(bp);
  for (size_t d = 0; d < rank_of(bp); ++d) {
    block.shape.push_back(shape_of(bp, d));
    block.strides.push_back(stride_of(bp, d));
    block.offsets.push_back(offset_of(bp, d));
  }
  block.block = bp.block->block_shape;
  return block;
}

ir::BlockPointerTile expand(Lowerer& l, const Symbol& bp, const std::vector<bool>& checked, const SourceLoc& loc) {
  l.builder().set_loc(loc);
  return ir::expand_block(l.builder(), strided_block(bp), checked);
}

// The operands of desc_load / desc_store / desc_atomic (ir/descriptor.h):
// base, shape, strides, offsets.
std::vector<ir::ValueId> descriptor_operands(const Symbol& bp) {
  ir::StridedBlock block = strided_block(bp);
  std::vector<ir::ValueId> out = {block.base};
  for (const auto* part : {&block.shape, &block.strides, &block.offsets}) out.insert(out.end(), part->begin(), part->end());
  return out;
}

Symbol block_pointer_of(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& callee) {
  if (s.kind != Symbol::Kind::BlockPointer)
    error_at(loc, Diag::WrongArgumentKind,
             callee + " needs a block pointer made by tl.make_block_ptr, but it got " + l.describe(s));
  return s;
}

const Symbol& descriptor_of(Lowerer& l, const Symbol& s, const SourceLoc& loc, const std::string& callee) {
  if (s.kind != Symbol::Kind::TensorDescriptor)
    error_at(loc, Diag::WrongArgumentKind,
             callee + " needs a tensor descriptor (tl.make_tensor_descriptor or a host TensorDescriptor), "
                           "but it got " + l.describe(s));
  return s;
}

// The value stored through a block: a scalar is broadcast, a tile must have
// the block's exact shape (as in Triton); either is converted to the element type.
ir::ValueId block_value(Lowerer& l, const Symbol& v, const SourceLoc& loc, Scalar element,
                        const std::vector<int64_t>& block, const std::string& callee) {
  ir::ValueId value = v.is_const() && v.constant.is_numeric() ? l.constant(v.constant, ir::Type::of(element), loc)
                                                              : l.to_value(v, loc, "the value of " + callee);
  if (l.type(value).is_pointer()) error_at(loc, Diag::PointerConversion, "storing pointers is not supported");
  if (l.type(value).is_tile() && l.type(value).shape != block)
    error_at(loc, Diag::ShapeMismatch,
             "the value stored by " + callee + " has shape " + shape_text(l.type(value).shape) +
                      " but the block is " + shape_text(block),
             "store a tile of exactly the block's shape (or a scalar)");
  return l.broadcast_to(l.cast(value, element, loc), block, loc);
}

// The block of `desc` at `offsets`, as a block pointer.
Symbol descriptor_block(Lowerer& l, const Symbol& desc, const Symbol& offsets, const SourceLoc& loc,
                        const std::string& callee) {
  size_t rank = rank_of(desc);
  std::vector<Symbol> list = items(offsets);
  if (list.size() != rank)
    error_at(loc, Diag::WrongRank,
             callee + " got " + std::to_string(list.size()) + " offsets for a descriptor of rank " +
                      std::to_string(rank));
  Symbol bp = desc;
  bp.kind = Symbol::Kind::BlockPointer;
  BlockAccess block = *desc.block;
  block.descriptor_block = true;
  bp.block = std::make_shared<const BlockAccess>(std::move(block));
  for (size_t d = 0; d < rank; ++d)
    bp.elements.push_back(
        Symbol::of(offset_value(l, list[d], loc, "`offsets[" + std::to_string(d) + "]` of " + callee)));
  return bp;
}

Symbol every_dimension(size_t rank) {
  std::vector<Symbol> dims;
  for (size_t d = 0; d < rank; ++d) dims.push_back(Symbol::of(ConstValue::integer(static_cast<int64_t>(d))));
  return Symbol::tuple(std::move(dims));
}

Symbol method(const Symbol& receiver, const std::string& name) {
  Symbol m;
  m.kind = Symbol::Kind::Method;
  m.name = name;
  m.receiver = std::make_shared<Symbol>(receiver);
  return m;
}

}  // namespace

// --- handlers -------------------------------------------------------------------------------------

Symbol lower_make_block_ptr(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"base", "shape", "strides", "offsets", "block_shape", "?order"}, c);
  const std::string callee = "tl.make_block_ptr";
  ir::ValueId base = pointer_base(l, a, callee);
  BlockAccess block;
  block.block_shape = block_shape_arg(l, a, callee);
  size_t rank = block.block_shape.size();
  std::vector<ir::ValueId> parts = {base};
  for (const char* param : {"shape", "strides"})
    for (ir::ValueId v : int_list(l, a, param, rank, callee, false)) parts.push_back(v);
  for (ir::ValueId v : int_list(l, a, "offsets", rank, callee, true)) parts.push_back(v);
  if (a.has("order")) {
    block.order = const_ints(l, a, "order", callee);
    std::vector<int64_t> sorted = block.order;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = sorted.size() == rank;
    for (size_t d = 0; permutation && d < rank; ++d) permutation = sorted[d] == static_cast<int64_t>(d);
    if (!permutation)
      error_at(a.loc("order"), Diag::ArgumentOutOfRange,
               "`order` of tl.make_block_ptr must be a permutation of 0.." + std::to_string(rank - 1),
               "order lists the dimensions from the fastest-varying in memory, e.g. (1, 0) for a row-major matrix");
  } else {
    for (size_t d = rank; d-- > 0;) block.order.push_back(static_cast<int64_t>(d));
  }
  return make_symbol(Symbol::Kind::BlockPointer, std::move(parts), std::move(block));
}

Symbol lower_advance(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"base", "offsets"}, c);
  Symbol bp = block_pointer_of(l, a.get("base"), a.loc("base"), "tl.advance");
  size_t rank = rank_of(bp);
  std::vector<Symbol> deltas = items(a.get("offsets"));
  if (deltas.size() != rank)
    error_at(a.loc("offsets"), Diag::WrongRank,
             "tl.advance got " + std::to_string(deltas.size()) + " offsets for a block of rank " +
                                   std::to_string(rank));
  for (size_t d = 0; d < rank; ++d) {
    std::string what = "`offsets[" + std::to_string(d) + "]` of tl.advance";
    ir::ValueId delta = offset_value(l, deltas[d], a.loc("offsets"), what);
    if (known_int(l, delta) == 0) continue;
    size_t index = 1 + 2 * rank + d;
    bp.elements[index] = Symbol::of(l.create(OpKind::Add, {offset_of(bp, d), delta}, ir::Type::of(Scalar::I32), c.loc));
  }
  return bp;
}

Symbol lower_make_tensor_descriptor(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"base", "shape", "strides", "block_shape", "?padding_option"}, c);
  const std::string callee = "tl.make_tensor_descriptor";
  ir::ValueId base = pointer_base(l, a, callee);
  BlockAccess block;
  block.block_shape = block_shape_arg(l, a, callee);
  size_t rank = block.block_shape.size();
  if (rank > kMaxDescriptorRank)
    error_at(a.loc("block_shape"), Diag::WrongRank,
             "a tensor descriptor has at most " + std::to_string(kMaxDescriptorRank) +
                                       " dimensions, not " + std::to_string(rank));
  std::vector<ir::ValueId> parts = {base};
  for (const char* param : {"shape", "strides"})
    for (ir::ValueId v : int_list(l, a, param, rank, callee, false)) parts.push_back(v);
  if (known_int(l, parts.back()) != 1)
    error_at(a.loc("strides"), Diag::ArgumentOutOfRange,
             "the last stride of a tensor descriptor must be the constant 1 (its innermost "
                               "dimension is contiguous), as in Triton",
             "an int argument equal to 1 is specialized as the constant 1 unless do_not_specialize names it");
  block.padding = padding_arg(l, a, callee, l.type(base).scalar, "zero");
  if (block.padding.empty()) block.padding = "zero";
  return make_symbol(Symbol::Kind::TensorDescriptor, std::move(parts), std::move(block));
}

// desc.load(offsets) is tl.load of the block at `offsets`, every dimension
// checked and padded with the descriptor's padding.
Symbol lower_descriptor_load(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"desc", "offsets", "?cache_modifier", "?eviction_policy"}, c);
  const Symbol& desc = descriptor_of(l, a.get("desc"), a.loc("desc"), "load_tensor_descriptor");
  CallArgs load;
  load.loc = c.loc;
  load.positional = {descriptor_block(l, desc, a.get("offsets"), a.loc("offsets"), "desc.load")};
  load.positional_locs = {a.loc("desc")};
  load.keywords = {{"boundary_check", every_dimension(rank_of(desc))},
                   {"padding_option", Symbol::of(ConstValue::string(desc.block->padding))}};
  load.keyword_locs = {c.loc, c.loc};
  for (const char* hint : {"cache_modifier", "eviction_policy"}) {
    if (!a.has(hint)) continue;
    load.keywords.emplace_back(hint, a.get(hint));
    load.keyword_locs.push_back(a.loc(hint));
  }
  return l.call_builtin("load", load);
}

Symbol lower_descriptor_store(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"desc", "offsets", "value", "?cache_modifier", "?eviction_policy"}, c);
  const Symbol& desc = descriptor_of(l, a.get("desc"), a.loc("desc"), "store_tensor_descriptor");
  Symbol bp = descriptor_block(l, desc, a.get("offsets"), a.loc("offsets"), "desc.store");
  ir::ValueId value = block_value(l, a.get("value"), a.loc("value"), l.type(base_of(desc)).scalar,
                                  desc.block->block_shape, "desc.store");
  CallArgs store;
  store.loc = c.loc;
  store.positional = {bp, Symbol::of(value)};
  store.positional_locs = {a.loc("desc"), a.loc("value")};
  store.keywords = {{"boundary_check", every_dimension(rank_of(desc))}};
  store.keyword_locs = {c.loc};
  for (const char* hint : {"cache_modifier", "eviction_policy"}) {
    if (!a.has(hint)) continue;
    store.keywords.emplace_back(hint, a.get(hint));
    store.keyword_locs.push_back(a.loc(hint));
  }
  return l.call_builtin("store", store);
}

// desc.atomic_add(offsets, value) and friends: one desc_atomic op
// (ir/descriptor.h), the atomic on the block's elements inside the tensor.
// Like Triton, they return nothing.
Symbol lower_descriptor_atomic(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::string name = n.substr(n.find('.') + 1);  // "atomic_add"
  const std::string callee = "desc." + name;
  BoundArgs a(callee, {"desc", "offsets", "value"}, c);
  const Symbol& desc = descriptor_of(l, a.get("desc"), a.loc("desc"), callee);
  std::optional<ir::AtomicOp> op = ir::parse_atomic_op(name.substr(std::string("atomic_").size()));
  TEGULA_ASSERT(op.has_value(), "not a descriptor atomic: " + n);
  Scalar element = l.type(base_of(desc)).scalar;
  check_atomic_element(*op, element, a.loc("desc"), callee);
  Symbol bp = descriptor_block(l, desc, a.get("offsets"), a.loc("offsets"), callee);
  ir::ValueId value = block_value(l, a.get("value"), a.loc("value"), element, desc.block->block_shape, callee);
  std::vector<ir::ValueId> operands = descriptor_operands(bp);
  operands.push_back(value);
  l.builder().set_loc(c.loc);
  l.builder().create(OpKind::DescAtomic, operands, {}, {{"op", ir::Attr{std::string(ir::to_string(*op))}}});
  return Symbol::of(ConstValue::none());
}

// desc.gather(x_offsets, y_offset) and desc.scatter(value, x_offsets, y_offset)
// on a 2-D descriptor of [1, BLOCK_Y] blocks: the rows x_offsets[i] from column
// y_offset on, as one [len(x_offsets), BLOCK_Y] tile (Triton's TMA gather and
// scatter). Lowered to pointer accesses masked to the tensor: rows or columns
// outside it read the descriptor's padding and are not written.
namespace {

struct GatherAccess {
  Symbol pointers, mask;
  std::vector<int64_t> shape;  // [rows, BLOCK_Y]
};

GatherAccess gather_access(Lowerer& l, const BoundArgs& a, const Symbol& desc, const std::string& callee,
                           const SourceLoc& loc) {
  if (rank_of(desc) != 2 || desc.block->block_shape[0] != 1)
    error_at(a.loc("desc"), Diag::WrongRank,
             callee + " needs a 2-D tensor descriptor whose blocks are one row ([1, BLOCK_Y]), but it is " +
                 l.describe(desc));
  ir::ValueId x = l.to_value(a.get("x_offsets"), a.loc("x_offsets"), "the x_offsets of " + callee);
  const ir::Type& xt = l.type(x);
  if (xt.rank() != 1 || !ir::is_integer(xt.scalar) || xt.scalar == Scalar::I1)
    error_at(a.loc("x_offsets"), Diag::WrongRank, callee + " takes the rows as a 1-D tile of integers, but x_offsets is " +
                                                      l.describe(Symbol::of(x)));
  ir::ValueId y = l.to_value(a.get("y_offset"), a.loc("y_offset"), "the y_offset of " + callee);
  if (l.type(y).is_tile() || !ir::is_integer(l.type(y).scalar))
    error_at(a.loc("y_offset"), Diag::NotInteger, callee + " takes y_offset as an integer scalar, but it is " +
                                                      l.describe(Symbol::of(y)));
  int64_t block_y = desc.block->block_shape[1];
  auto call = [&](const std::string& name, std::vector<Symbol> args) {
    CallArgs c;
    c.loc = loc;
    c.positional = std::move(args);
    c.positional_locs.assign(c.positional.size(), loc);
    return l.call_builtin(name, c);
  };
  auto num = [](int64_t v) { return Symbol::of(ConstValue::integer(v)); };
  auto op = [&](ast::BinaryOp o, const Symbol& p, const Symbol& q) { return l.binary(o, p, q, loc); };
  auto cmp = [&](ast::CmpOp o, const Symbol& p, const Symbol& q) { return l.compare(o, p, q, loc); };
  // In int64: a row times a row stride may pass 2^31.
  auto wide = [&](const Symbol& s) {
    CallArgs c;
    c.loc = loc;
    c.positional = {s, Symbol::of(ConstValue::type(Scalar::I64))};
    c.positional_locs = {loc, loc};
    return l.call_builtin("to", c);
  };
  Symbol rows = call("expand_dims", {wide(Symbol::of(x)), num(1)});                                     // [N, 1]
  Symbol cols = call("expand_dims", {op(ast::BinaryOp::Add, wide(Symbol::of(y)), call("arange", {num(0), num(block_y)})),
                                     num(0)});                                                         // [1, BY]
  const Symbol &base = desc.elements[0], &rows_extent = desc.elements[1], &cols_extent = desc.elements[2],
               &row_stride = desc.elements[3], &col_stride = desc.elements[4];
  Symbol offsets = op(ast::BinaryOp::Add, op(ast::BinaryOp::Mul, rows, wide(row_stride)),
                      op(ast::BinaryOp::Mul, cols, wide(col_stride)));
  Symbol in_rows = op(ast::BinaryOp::BitAnd, cmp(ast::CmpOp::GtE, rows, num(0)), cmp(ast::CmpOp::Lt, rows, rows_extent));
  Symbol in_cols = op(ast::BinaryOp::BitAnd, cmp(ast::CmpOp::GtE, cols, num(0)), cmp(ast::CmpOp::Lt, cols, cols_extent));
  GatherAccess out;
  out.shape = {xt.shape[0], block_y};
  Symbol mask = op(ast::BinaryOp::BitAnd, in_rows, in_cols);
  out.mask = call("broadcast_to", {mask, num(out.shape[0]), num(out.shape[1])});
  out.pointers = op(ast::BinaryOp::Add, base, offsets);
  return out;
}

}  // namespace

Symbol lower_descriptor_gather(Lowerer& l, const CallArgs& c, const std::string&) {
  BoundArgs a("desc.gather", {"desc", "x_offsets", "y_offset"}, c);
  const Symbol& desc = descriptor_of(l, a.get("desc"), a.loc("desc"), "desc.gather");
  GatherAccess g = gather_access(l, a, desc, "desc.gather", c.loc);
  Scalar element = l.type(base_of(desc)).scalar;
  bool nan = desc.block->padding == "nan";
  ir::ValueId fill = nan ? l.constant(ConstValue::real(std::nan("")), ir::Type::of(element), c.loc)
                         : l.constant(ConstValue::integer(0), ir::Type::of(element), c.loc);
  CallArgs load;
  load.loc = c.loc;
  load.positional = {g.pointers, g.mask, Symbol::of(l.broadcast_to(fill, g.shape, c.loc))};
  load.positional_locs.assign(3, c.loc);
  return l.call_builtin("load", load);
}

Symbol lower_descriptor_scatter(Lowerer& l, const CallArgs& c, const std::string&) {
  BoundArgs a("desc.scatter", {"desc", "value", "x_offsets", "y_offset"}, c);
  const Symbol& desc = descriptor_of(l, a.get("desc"), a.loc("desc"), "desc.scatter");
  GatherAccess g = gather_access(l, a, desc, "desc.scatter", c.loc);
  ir::ValueId value = block_value(l, a.get("value"), a.loc("value"), l.type(base_of(desc)).scalar, g.shape,
                                  "desc.scatter");
  CallArgs store;
  store.loc = c.loc;
  store.positional = {g.pointers, Symbol::of(value), g.mask};
  store.positional_locs = {c.loc, a.loc("value"), c.loc};
  return l.call_builtin("store", store);
}

bool is_block_access(const Symbol& s) {
  return s.kind == Symbol::Kind::BlockPointer || s.kind == Symbol::Kind::TensorDescriptor;
}

Symbol lower_block_load(Lowerer& l, const BoundArgs& a, const SourceLoc& loc, std::vector<ir::NamedAttr> attrs) {
  Symbol bp = block_pointer_of(l, a.get("pointer"), a.loc("pointer"), "tl.load");
  if (a.has("mask") || a.has("other"))
    error_at(a.loc(a.has("mask") ? "mask" : "other"), Diag::ArgumentWithoutEffect,
             "`mask` and `other` cannot be used with a block pointer",
             "use boundary_check=(0, 1, ...) to mask the tensor's edges and padding_option=\"zero\" or \"nan\" "
             "for the value there");
  Scalar element = l.type(base_of(bp)).scalar;
  std::string padding = padding_arg(l, a, "tl.load", element, "");
  if (bp.block->descriptor_block) {
    attrs.insert(attrs.begin(), {"padding", ir::Attr{padding}});
    ir::Type result = ir::Type::tile(element, bp.block->block_shape);
    return Symbol::of(l.create(OpKind::DescLoad, descriptor_operands(bp), result, loc, std::move(attrs)));
  }
  ir::BlockPointerTile tile = expand(l, bp, boundary_check_arg(l, a, rank_of(bp)), loc);
  std::vector<ir::ValueId> operands = {tile.pointers};
  if (tile.mask.valid()) {
    operands.push_back(tile.mask);
    if (!padding.empty()) {
      double fill = padding == "nan" ? std::nan("") : 0.0;
      ir::ValueId other = padding == "nan" ? l.constant(ConstValue::real(fill), ir::Type::of(element), loc)
                                           : l.constant(ConstValue::integer(0), ir::Type::of(element), loc);
      operands.push_back(l.broadcast_to(other, bp.block->block_shape, loc));
    }
  }
  ir::Type result = l.type(tile.pointers).with_scalar(element);
  return Symbol::of(l.create(OpKind::Load, operands, result, loc, std::move(attrs)));
}

Symbol lower_block_store(Lowerer& l, const BoundArgs& a, const SourceLoc& loc, std::vector<ir::NamedAttr> attrs) {
  Symbol bp = block_pointer_of(l, a.get("pointer"), a.loc("pointer"), "tl.store");
  if (a.has("mask"))
    error_at(a.loc("mask"), Diag::ArgumentWithoutEffect, "`mask` cannot be used with a block pointer",
             "use boundary_check=(0, 1, ...) to leave out the elements outside the tensor");
  Scalar element = l.type(base_of(bp)).scalar;
  ir::ValueId value = block_value(l, a.get("value"), a.loc("value"), element, bp.block->block_shape, "tl.store");
  if (bp.block->descriptor_block) {
    std::vector<ir::ValueId> operands = descriptor_operands(bp);
    operands.push_back(value);
    l.builder().set_loc(loc);
    l.builder().create(OpKind::DescStore, operands, {}, std::move(attrs));
    return Symbol::of(ConstValue::none());
  }
  ir::BlockPointerTile tile = expand(l, bp, boundary_check_arg(l, a, rank_of(bp)), loc);
  std::vector<ir::ValueId> operands = {tile.pointers, value};
  if (tile.mask.valid()) operands.push_back(tile.mask);
  l.builder().set_loc(loc);
  l.builder().create(OpKind::Store, operands, {}, std::move(attrs));
  return Symbol::of(ConstValue::none());
}

Symbol block_access_attribute(Lowerer& l, const Symbol& base, const std::string& attr, const SourceLoc& loc) {
  if (base.kind == Symbol::Kind::BlockPointer) {
    if (attr == "advance") return method(base, "advance");
    // A pointer dtype: `.dtype.element_ty` and `.type.element_ty` are the element's. (Triton's are a
    // block type of it, which tl.cast and .to() read as its element, the one use kernels make of them.)
    if (attr == "dtype" || attr == "type") {
      ConstValue t = ConstValue::type(l.type(base_of(base)).scalar);
      t.pointer = true;
      return Symbol::of(t);
    }
    error_at(loc, Diag::NoSuchAttribute, "a block pointer has no attribute `" + attr + "`",
             "block pointers have dtype and type, and support tl.advance, tl.load and tl.store");
  }
  size_t rank = rank_of(base);
  if (attr == "load") return method(base, "load_tensor_descriptor");
  if (attr == "store") return method(base, "store_tensor_descriptor");
  if ((attr.rfind("atomic_", 0) == 0 || attr == "gather" || attr == "scatter") &&
      find_builtin("tensor_descriptor." + attr) != nullptr)
    return method(base, "tensor_descriptor." + attr);
  if (attr == "shape" || attr == "strides") {
    std::vector<Symbol> parts(base.elements.begin() + 1 + (attr == "shape" ? 0 : static_cast<std::ptrdiff_t>(rank)),
                              base.elements.begin() + 1 + static_cast<std::ptrdiff_t>(attr == "shape" ? rank : 2 * rank));
    return Symbol::tuple(std::move(parts));
  }
  if (attr == "block_shape") {
    std::vector<Symbol> dims;
    for (int64_t d : base.block->block_shape) dims.push_back(Symbol::of(ConstValue::integer(d)));
    return Symbol::tuple(std::move(dims));
  }
  if (attr == "dtype") return Symbol::of(ConstValue::type(l.type(base_of(base)).scalar));
  error_at(loc, Diag::NoSuchAttribute, "a tensor descriptor has no attribute `" + attr + "`",
           "descriptors have load, store, gather, scatter, atomic_add/min/max/and/or/xor, shape, strides, "
           "block_shape and dtype");
}

std::string describe_block_access(const Lowerer& l, const Symbol& s) {
  std::string blocks = shape_text(s.block->block_shape) + " " + triton_name(l.type(base_of(s)).scalar) + " blocks";
  return s.kind == Symbol::Kind::BlockPointer ? "a block pointer to " + blocks : "a tensor descriptor of " + blocks;
}

Symbol bind_descriptor_param(Lowerer& l, const std::string& name, const ArgSpec& spec, const SourceLoc& loc) {
  size_t rank = spec.block_shape.size();
  if (rank == 0 || rank > kMaxDescriptorRank || spec.parts.size() != 2 * rank)
    error_at(loc, Diag::WrongRank,
             "the TensorDescriptor passed as `" + name + "` has rank " + std::to_string(rank) + " and " +
                      std::to_string(spec.parts.size()) + " shape and stride entries",
             "a descriptor has 1 to 5 dimensions, with one shape and one stride entry each");
  l.check_shape(spec.block_shape, loc);
  ir::Function& fn = l.function();
  auto param = [&](const std::string& part, ir::Type type, int64_t divisibility) {
    fn.params.push_back(ir::Param{name + "__" + part, type, divisibility});
    return fn.add_block_arg(fn.body(), type);
  };
  std::vector<ir::ValueId> parts = {param("base", ir::Type::ptr(spec.dtype), spec.divisibility)};
  for (size_t i = 0; i < 2 * rank; ++i) {
    const ArgSpec& p = spec.parts[i];
    if (p.kind != ArgSpec::Kind::Int || !ir::is_integer(p.dtype) || p.dtype == Scalar::I1)
      error_at(loc, Diag::NotInteger,
               "the shape and strides of the TensorDescriptor passed as `" + name + "` must be integers");
    std::string label = (i < rank ? "shape" : "stride") + std::to_string(i % rank);
    ir::ValueId v = param(label, ir::Type::of(p.dtype), p.divisibility);
    // Specialized like an int argument: 1 is the constant 1 (a contiguous innermost stride).
    if (p.is_one) v = l.constant(ConstValue::integer(1), ir::Type::of(p.dtype), loc);
    parts.push_back(ir::is_signed(p.dtype) ? v : l.cast(v, Scalar::I64, loc));
  }
  BlockAccess block;
  block.block_shape = spec.block_shape;
  block.padding = spec.value.kind == GlobalValue::Kind::Str && spec.value.text == "nan" ? "nan" : "zero";
  if (block.padding == "nan" && !ir::is_float(spec.dtype))
    error_at(loc, Diag::NotFloatingPoint,
             "the TensorDescriptor passed as `" + name + "` pads with NaN but its elements are " +
                      triton_name(spec.dtype));
  return make_symbol(Symbol::Kind::TensorDescriptor, std::move(parts), std::move(block));
}

}  // namespace tegula::frontend
