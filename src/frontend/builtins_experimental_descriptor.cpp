// Triton 3.2/3.3's experimental descriptor API (builtins_experimental_descriptor.h):
// compositions of tl.load / tl.store of the descriptor's words, int <->
// pointer casts and tl.make_tensor_descriptor, so no IR op of their own.
#include "frontend/builtins_experimental_descriptor.h"

#include <vector>

#include "frontend/builtins.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::Scalar;
namespace layout = legacy_descriptor;

namespace {

Symbol xd_int(int64_t v) { return Symbol::of(ConstValue::integer(v)); }

Symbol xd_pointer_type(Scalar element) {
  ConstValue t = ConstValue::type(element);
  t.pointer = true;
  return Symbol::of(t);
}

Symbol xd_call(Lowerer& l, const char* name, std::vector<Symbol> args, const SourceLoc& loc) {
  CallArgs c;
  c.loc = loc;
  c.positional_locs.assign(args.size(), loc);
  c.positional = std::move(args);
  return l.call_builtin(name, c);
}

std::vector<Symbol> xd_items(const Symbol& s) {
  if (s.kind == Symbol::Kind::Tuple) return s.elements;
  return {s};
}

// `desc_ptr` as a pointer to the descriptor's int64 words. Triton types it a
// pointer (to int8 in a workspace, or the by-value CUtensorMap parameter);
// an integer is refused as there: the address it would hold is the host's.
Symbol xd_words(Lowerer& l, const BoundArgs& a, const char* param, const std::string& callee) {
  const Symbol& p = a.get(param);
  if (!p.is_value() || !l.type(p.value).is_pointer() || l.type(p.value).is_tile())
    error_at(a.loc(param), Diag::WrongArgumentKind,
             callee + " needs `" + param + "` to be a pointer to a descriptor's 128 bytes, but it got " +
                 l.describe(p),
             "pass the descriptor from triton.tools.experimental_descriptor.create_1d/2d_tma_descriptor, or a "
             "128-byte workspace that experimental_device_tensormap_create1d/2d wrote");
  return xd_call(l, "to", {p, xd_pointer_type(Scalar::I64)}, a.loc(param));
}

Symbol xd_word_address(Lowerer& l, const Symbol& words, int index, const SourceLoc& loc) {
  return index == 0 ? words : xd_call(l, "__add__", {words, xd_int(index)}, loc);
}

Symbol xd_load_word(Lowerer& l, const Symbol& words, int index, const SourceLoc& loc) {
  return xd_call(l, "load", {xd_word_address(l, words, index, loc)}, loc);
}

// The static block shape of a descriptor access: 1 to kMaxRank constants.
std::vector<int64_t> xd_block_shape(Lowerer& l, const std::vector<Symbol>& dims, const SourceLoc& loc,
                                 const std::string& callee) {
  if (dims.empty() || dims.size() > static_cast<size_t>(layout::kMaxRank))
    error_at(loc, Diag::WrongRank,
             callee + " accesses blocks of 1 to " + std::to_string(layout::kMaxRank) + " dimensions, not " +
                 std::to_string(dims.size()));
  std::vector<int64_t> shape;
  for (size_t d = 0; d < dims.size(); ++d)
    shape.push_back(l.to_int_const(dims[d], loc, "`shape[" + std::to_string(d) + "]` of " + callee));
  return shape;
}

// The descriptor at `words` seen as tl.make_tensor_descriptor(base of `element`, its global sizes, its strides,
// `block`): the rank is the block's (Triton's TMA reads a rank-n box from a rank-n map; the words' rank is the
// creator's, not checked at run time), the last stride the constant 1 every creator writes.
Symbol xd_rebuild(Lowerer& l, const Symbol& words, Scalar element, const std::vector<int64_t>& block,
               const SourceLoc& loc) {
  Symbol base = xd_call(l, "to", {xd_load_word(l, words, layout::kBaseWord, loc), xd_pointer_type(element)}, loc);
  std::vector<Symbol> shape, strides, box;
  for (size_t d = 0; d < block.size(); ++d) {
    shape.push_back(xd_load_word(l, words, layout::kShapeWord + static_cast<int>(d), loc));
    strides.push_back(d + 1 == block.size() ? xd_int(1)
                                            : xd_load_word(l, words, layout::kStrideWord + static_cast<int>(d), loc));
    box.push_back(xd_int(block[d]));
  }
  return xd_call(l, "make_tensor_descriptor",
              {base, Symbol::tuple(std::move(shape)), Symbol::tuple(std::move(strides)), Symbol::tuple(std::move(box))},
              loc);
}

Symbol xd_as_i64(Lowerer& l, const Symbol& v, const SourceLoc& loc) {
  if (v.is_const()) return v;
  return xd_call(l, "to", {v, Symbol::of(ConstValue::type(Scalar::I64))}, loc);
}

void xd_store_word(Lowerer& l, const Symbol& words, int index, const Symbol& value, const SourceLoc& loc) {
  xd_call(l, "store", {xd_word_address(l, words, index, loc), xd_as_i64(l, value, loc)}, loc);
}

}  // namespace

Symbol lower_experimental_descriptor_load(Lowerer& l, const CallArgs& c, const std::string& n) {
  const std::string callee = "tl._experimental_descriptor_load";
  BoundArgs a(callee, {"desc_pointer", "offsets", "shape", "dtype"}, c);
  Scalar element = l.to_dtype(a.get("dtype"), a.loc("dtype"), "the dtype of " + callee);
  std::vector<int64_t> block = xd_block_shape(l, xd_items(a.get("shape")), a.loc("shape"), callee);
  Symbol desc = xd_rebuild(l, xd_words(l, a, "desc_pointer", callee), element, block, c.loc);
  return xd_call(l, "load_tensor_descriptor", {desc, a.get("offsets")}, c.loc);
}

Symbol lower_experimental_descriptor_store(Lowerer& l, const CallArgs& c, const std::string& n) {
  const std::string callee = "tl._experimental_descriptor_store";
  BoundArgs a(callee, {"desc_pointer", "value", "offsets"}, c);
  // Triton takes the block's shape and dtype from the value, so it must be a tile.
  const Symbol& value = a.get("value");
  if (!value.is_value() || !l.type(value.value).is_tile() || l.type(value.value).is_pointer())
    error_at(a.loc("value"), Diag::WrongRank,
             callee + " stores a tile (its shape and dtype are the block's), but it got " + l.describe(value));
  const ir::Type& type = l.type(value.value);
  std::vector<Symbol> dims;
  for (int64_t d : type.shape) dims.push_back(xd_int(d));
  std::vector<int64_t> block = xd_block_shape(l, dims, a.loc("value"), callee);
  Symbol desc = xd_rebuild(l, xd_words(l, a, "desc_pointer", callee), type.scalar, block, c.loc);
  CallArgs store;
  store.loc = c.loc;
  store.positional = {desc, a.get("offsets"), value};
  store.positional_locs = {a.loc("desc_pointer"), a.loc("offsets"), a.loc("value")};
  return l.call_builtin("store_tensor_descriptor", store);
}

Symbol lower_experimental_tensormap_create(Lowerer& l, const CallArgs& c, const std::string& n) {
  const bool two_d = n.ends_with("2d");
  const std::string callee = "tl.extra.cuda." + n;
  BoundArgs a(callee, {"desc_ptr", "global_address", "load_size", "global_size", "element_ty"}, c);
  Symbol words = xd_words(l, a, "desc_ptr", callee);
  const Symbol& address = a.get("global_address");
  if (!address.is_value() || !l.type(address.value).is_pointer() || l.type(address.value).is_tile())
    error_at(a.loc("global_address"), Diag::WrongArgumentKind,
             callee + " needs `global_address` to be a pointer, but it got " + l.describe(address));
  Scalar element = l.to_dtype(a.get("element_ty"), a.loc("element_ty"), "the element_ty of " + callee);
  const int64_t element_size = ir::byte_size(element);
  // Triton's TMA element types are 1, 2 or 4 bytes wide (_determine_elem_type).
  if (element_size != 1 && element_size != 2 && element_size != 4)
    error_at(a.loc("element_ty"), Diag::UnsupportedElementType,
             callee + " needs an element_ty of 1, 2 or 4 bytes, as Triton's, not " + triton_name(element));
  const size_t rank = two_d ? 2 : 1;
  std::vector<Symbol> load_size = xd_items(a.get("load_size"));
  std::vector<Symbol> global_size = xd_items(a.get("global_size"));
  if (load_size.size() != rank || global_size.size() != rank)
    error_at(load_size.size() != rank ? a.loc("load_size") : a.loc("global_size"), Diag::WrongRank,
             callee + " needs " + (two_d ? "two load_size and two global_size entries (outer first)"
                                         : "one load_size and one global_size"),
             "got " + std::to_string(load_size.size()) + " and " + std::to_string(global_size.size()));
  std::vector<int64_t> box = xd_block_shape(l, load_size, a.loc("load_size"), callee);
  for (int64_t b : box)
    if (b < 1 || b > 256)
      error_at(a.loc("load_size"), Diag::ArgumentOutOfRange,
               callee + ": a load_size entry must be 1 to 256 (a TMA box dimension), not " + std::to_string(b));
  // Triton's _determine_swizzle_mode_2d raises "block size too small" below a 32-byte row.
  if (two_d && box.back() * element_size < 32)
    error_at(a.loc("load_size"), Diag::ArgumentOutOfRange,
             callee + ": the block's rows are " + std::to_string(box.back() * element_size) +
                 " bytes; Triton needs at least 32 (\"block size too small\")");
  const SourceLoc& loc = c.loc;
  xd_store_word(l, words, layout::kMagicWord, xd_int(layout::kMagic), loc);
  xd_store_word(l, words, layout::kBaseWord, xd_call(l, "to", {address, Symbol::of(ConstValue::type(Scalar::I64))}, loc),
             loc);
  xd_store_word(l, words, layout::kRankWord, xd_int(static_cast<int64_t>(rank)), loc);
  xd_store_word(l, words, layout::kElementSizeWord, xd_int(element_size), loc);
  for (size_t d = 0; d < static_cast<size_t>(layout::kMaxRank); ++d) {
    const int i = static_cast<int>(d);
    const bool used = d < rank;
    xd_store_word(l, words, layout::kShapeWord + i, used ? global_size[d] : xd_int(0), loc);
    // Row-major as Triton's create2d (global_stride = element size * global_size[-1]).
    xd_store_word(l, words, layout::kStrideWord + i,
               !used ? xd_int(0) : d + 1 == rank ? xd_int(1) : global_size[d + 1], loc);
    xd_store_word(l, words, layout::kBlockWord + i, xd_int(used ? box[d] : 0), loc);
  }
  return Symbol::of(ConstValue::none());
}

// Triton's fence makes the tensormap the generic proxy wrote visible to the
// TMA (async) proxy. Here the descriptor is read by ordinary loads, which
// already see the program's own earlier stores, and a descriptor another
// program wrote is ordered by the kernel's own release/acquire atomics, as
// Triton's tests order it; so there is nothing left to fence.
Symbol lower_experimental_tensormap_fence(Lowerer& l, const CallArgs& c, const std::string& n) {
  const std::string callee = "tl.extra.cuda.experimental_tensormap_fenceproxy_acquire";
  BoundArgs a(callee, {"desc_ptr"}, c);
  xd_words(l, a, "desc_ptr", callee);
  return Symbol::of(ConstValue::none());
}

}  // namespace tegula::frontend
