// The expansion of a strided block into pointers and a mask. The ops come
// in the order the front end has always emitted them (a refactor must not
// change generated code): operands are converted left to right, then
// brought to a common shape, then combined; a product's stride is
// converted before its index tile.
#include "ir/block_access.h"

#include <limits>

#include "support/error.h"

namespace tegula::ir {

namespace {

bool fits_i32(int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); }

// Emits ops for one block; every helper follows the front end's rules for
// integer operands (the wider signed type wins, a literal takes the other
// operand's type, scalars splat to the tile's shape).
class Expander {
 public:
  explicit Expander(Builder& b) : b_(b), fn_(b.function()) {}

  ValueId cast(ValueId v, Scalar to) {
    const Type& t = fn_.type(v);
    if (t.scalar == to) return v;
    return b_.create1(OpKind::Cast, {v}, t.with_scalar(to));
  }

  // `kind` of two integer values of signed (or i1) types.
  ValueId binary(OpKind kind, ValueId a, ValueId c, std::vector<NamedAttr> attrs = {}) {
    Scalar common = wider(fn_.type(a).scalar, fn_.type(c).scalar);
    ValueId x = cast(a, common), y = cast(c, common);
    return combine(kind, x, y, std::move(attrs));
  }

  // `kind` of an integer value and an integer literal of its type.
  ValueId binary_literal(OpKind kind, ValueId a, int64_t literal, std::vector<NamedAttr> attrs = {}) {
    ValueId y = b_.int_constant(literal, Type::of(fn_.type(a).scalar));
    return combine(kind, a, y, std::move(attrs));
  }

  ValueId compare(const char* pred, ValueId a, ValueId c) {
    return binary(OpKind::Cmp, a, c, {{"pred", Attr{std::string(pred)}}});
  }

 private:
  static Scalar wider(Scalar a, Scalar c) {
    TEGULA_ASSERT((is_signed(a) || a == Scalar::I1) && (is_signed(c) || c == Scalar::I1),
                  "block extents, strides and offsets are signed integers");
    return bit_width(c) > bit_width(a) ? c : a;
  }

  // Brings x and y to one shape (splat or broadcast, x first) and applies `kind`.
  ValueId combine(OpKind kind, ValueId x, ValueId y, std::vector<NamedAttr> attrs) {
    std::vector<int64_t> shape = broadcast_shape(fn_.type(x).shape, fn_.type(y).shape);
    ValueId rx = b_.broadcast_to(x, shape);
    ValueId ry = b_.broadcast_to(y, shape);
    Type result = fn_.type(rx);
    if (kind == OpKind::Cmp) result = result.with_scalar(Scalar::I1);
    return b_.create1(kind, {rx, ry}, result, std::move(attrs));
  }

  static std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& c) {
    if (a.empty()) return c;
    if (c.empty()) return a;
    TEGULA_ASSERT(a.size() == c.size(), "block tiles share their rank");
    std::vector<int64_t> out(a.size());
    for (size_t d = 0; d < a.size(); ++d) out[d] = a[d] == 1 ? c[d] : a[d];
    return out;
  }

  Builder& b_;
  Function& fn_;
};

// arange(0, n) laid along dimension `d` of a rank-`rank` tile: [1, .., n, .., 1].
ValueId range_along(Builder& b, int64_t n, size_t d, size_t rank) {
  ValueId v = b.create1(OpKind::Arange, {}, Type::tile(Scalar::I32, {n}),
                        {{"start", Attr{int64_t{0}}}, {"end", Attr{n}}});
  for (size_t axis = 0; axis < rank; ++axis) {
    if (axis == d) continue;
    std::vector<int64_t> shape = b.function().type(v).shape;
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), 1);
    v = b.create1(OpKind::ExpandDims, {v}, b.function().type(v).with_shape(shape), {{"axis", Attr{int64_t(axis)}}});
  }
  return v;
}

}  // namespace

bool known_int(const Function& fn, ValueId v, int64_t* out) {
  const Value& value = fn.value(v);
  if (!value.def.valid()) return false;
  const Op& op = fn.op(value.def);
  const Type& type = fn.type(v);
  if (op.kind != OpKind::Constant || !is_integer(type.scalar) || type.is_tile()) return false;
  *out = op.int_attr("value");
  return true;
}

BlockPointerTile expand_block(Builder& b, const StridedBlock& access, const std::vector<bool>& checked) {
  const Function& fn = b.function();
  const std::vector<int64_t>& block = access.block;
  size_t rank = block.size();
  TEGULA_ASSERT(access.shape.size() == rank && access.strides.size() == rank && access.offsets.size() == rank &&
                    checked.size() == rank,
                "a strided block needs one shape, stride, offset and check per dimension");
  Expander e(b);
  auto is_constant = [&](ValueId v, int64_t value) {
    int64_t k;
    return known_int(fn, v, &k) && k == value;
  };

  // The block's first element, with int64 products so large tensors cannot wrap.
  ValueId start = access.base, total;
  for (size_t d = 0; d < rank; ++d) {
    if (is_constant(access.offsets[d], 0) || is_constant(access.strides[d], 0)) continue;
    ValueId offset = e.cast(access.offsets[d], Scalar::I64);
    ValueId stride = e.cast(access.strides[d], Scalar::I64);
    ValueId term = b.create1(OpKind::Mul, {offset, stride}, Type::of(Scalar::I64));
    total = total.valid() ? b.create1(OpKind::Add, {total, term}, Type::of(Scalar::I64)) : term;
  }
  if (total.valid()) start = b.create1(OpKind::AddPtr, {start, total}, fn.type(start));

  // Each element's distance from the start: sum of position * stride per dimension.
  std::vector<ValueId> ranges(rank);
  ValueId within;
  for (size_t d = 0; d < rank; ++d) {
    ranges[d] = range_along(b, block[d], d, rank);
    if (block[d] == 1) continue;
    int64_t stride = 0;
    ValueId term;
    if (known_int(fn, access.strides[d], &stride) && fits_i32(stride) && fits_i32((block[d] - 1) * stride)) {
      if (stride == 0) continue;
      term = stride == 1 ? ranges[d] : e.binary_literal(OpKind::Mul, ranges[d], stride);
    } else {
      ValueId wide_stride = e.cast(access.strides[d], Scalar::I64);
      ValueId wide_range = e.cast(ranges[d], Scalar::I64);
      term = e.binary(OpKind::Mul, wide_range, wide_stride);
    }
    within = within.valid() ? e.binary(OpKind::Add, within, term) : term;
  }
  BlockPointerTile tile;
  ValueId pointers = start;
  if (within.valid()) {
    std::vector<int64_t> shape = fn.type(within).shape;
    pointers = b.create1(OpKind::AddPtr, {b.broadcast_to(start, shape), within}, fn.type(start).with_shape(shape));
  }
  tile.pointers = b.broadcast_to(pointers, block);

  // 0 <= offset + position < shape along every checked dimension.
  ValueId mask;
  auto conjoin = [&](ValueId m) { mask = mask.valid() ? e.binary(OpKind::And, mask, m) : m; };
  for (size_t d = 0; d < rank; ++d) {
    if (!checked[d]) continue;
    ValueId position = e.binary(OpKind::Add, access.offsets[d], ranges[d]);
    int64_t offset = 0, shape = 0;
    bool offset_known = known_int(fn, access.offsets[d], &offset);
    if (!offset_known || offset < 0) conjoin(e.binary_literal(OpKind::Cmp, position, 0, {{"pred", Attr{std::string("ge")}}}));
    bool shape_known = known_int(fn, access.shape[d], &shape);
    if (!offset_known || !shape_known || offset + block[d] > shape) conjoin(e.compare("lt", position, access.shape[d]));
  }
  if (mask.valid()) tile.mask = b.broadcast_to(mask, block);
  return tile;
}

}  // namespace tegula::ir
