#include "backends/cuda/tma_plan.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "ir/atomic.h"
#include "ir/descriptor.h"
#include "passes/lower_bounds.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

constexpr int64_t kMaxBox = 256;
constexpr int64_t kMaxDim = int64_t{1} << 32;

// Where an extent operand comes from: a kernel parameter (the body's block
// argument), an integer constant, or a product of those the kernel computes
// (`Z * H * N_CTX`: the launcher multiplies them as the kernel does);
// nullopt for anything else computed.
std::optional<TensorMapExtent> extent_of(const ir::Function& fn, ir::ValueId v) {
  const ir::Value& value = fn.value(v);
  if (!value.def.valid()) {
    if (value.block != fn.body()) return std::nullopt;  // a loop's carried value
    return TensorMapExtent{static_cast<int>(value.position), 0};
  }
  const ir::Op& def = fn.op(value.def);
  ir::Scalar scalar = fn.type(v).scalar;
  if (!ir::is_integer(scalar) || fn.type(v).is_tile()) return std::nullopt;
  if (def.kind == ir::OpKind::Constant) return TensorMapExtent{-1, def.int_attr("value")};
  if (def.kind != ir::OpKind::Mul || (scalar != ir::Scalar::I32 && scalar != ir::Scalar::I64)) return std::nullopt;
  std::optional<TensorMapExtent> a = extent_of(fn, def.operands[0]), b = extent_of(fn, def.operands[1]);
  if (!a || !b) return std::nullopt;
  std::vector<int> params;
  int64_t scale = 1;
  for (const TensorMapExtent* e : {&*a, &*b}) {
    if (e->param >= 0) params.push_back(e->param);
    else if (__builtin_mul_overflow(scale, e->value, &scale)) return std::nullopt;
    params.insert(params.end(), e->factors.begin(), e->factors.end());
    if (__builtin_mul_overflow(scale, e->scale, &scale)) return std::nullopt;
  }
  if (params.empty()) return std::nullopt;  // constants the front end folds
  TensorMapExtent product{params.front(), 0, {params.begin() + 1, params.end()}, scale,
                          static_cast<int>(ir::byte_size(scalar) * 8)};
  return product;
}

// Whether `bytes` times the extent is a multiple of 16: for a parameter, its
// known divisibility says so; for a constant, its value; for a product, the
// product of its factors' (modulo 16 is all that matters).
bool multiple_of_16_bytes(const ir::Function& fn, const TensorMapExtent& e, int64_t bytes) {
  if (e.param < 0 && e.value == 0) return false;
  auto mod16 = [](int64_t x) { return static_cast<uint64_t>(x) % 16; };
  auto known = [&](int param) { return mod16(fn.params[static_cast<size_t>(param)].divisibility); };
  uint64_t k = e.param >= 0 ? known(e.param) : mod16(e.value);
  for (int f : e.factors) k = k * known(f) % 16;
  k = k * mod16(e.scale) % 16;
  return k * mod16(bytes) % 16 == 0;
}

}  // namespace

bool tma_reduces(ir::AtomicOp op, ir::Scalar s) {
  using ir::Scalar;
  bool word = s == Scalar::I32 || s == Scalar::U32;
  bool wide = s == Scalar::I64 || s == Scalar::U64;
  switch (op) {
    case ir::AtomicOp::Add: return s == Scalar::F32 || word || s == Scalar::U64;
    case ir::AtomicOp::Max:
    case ir::AtomicOp::Min:
    case ir::AtomicOp::And:
    case ir::AtomicOp::Or:
    case ir::AtomicOp::Xor: return word || wide;
    default: return false;
  }
}

std::string tma_refusal(const ir::Function& fn, const ir::Op& op) {
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  const ir::Type& block = fn.type(ir::descriptor_block_value(op));
  ir::Scalar element = block.scalar;
  int64_t bytes = ir::byte_size(element);
  if (d.rank > kTmaMaxCopyRank)
    return "the block has " + std::to_string(d.rank) + " dimensions (TMA copies here take 1 to 3)";
  if (element == ir::Scalar::I1) return "the elements are booleans";
  if (op.kind == ir::OpKind::DescAtomic) {
    const std::string& atomic = op.str_attr("op");
    if (std::optional<ir::AtomicOp> a = ir::parse_atomic_op(atomic); !a || !tma_reduces(*a, element))
      return "the TMA has no " + atomic + " reduction of " + ir::to_string(ir::Type::of(element)) + " elements";
  }
  std::optional<TensorMapExtent> base = extent_of(fn, d.base);
  if (!base || base->param < 0) return "the base pointer is not a kernel argument";
  if (fn.params[static_cast<size_t>(base->param)].divisibility % 16 != 0)
    return "the base pointer is not known to be 16-byte aligned";
  for (size_t k = 0; k < d.rank; ++k) {
    std::optional<TensorMapExtent> size = extent_of(fn, d.shape[k]), stride = extent_of(fn, d.strides[k]);
    if (!size || !stride) return "dimension " + std::to_string(k) + "'s size or stride is computed in the kernel";
    if (size->param < 0 && (size->value < 1 || size->value > kMaxDim))
      return "dimension " + std::to_string(k) + " has " + std::to_string(size->value) + " elements";
    if (block.shape[k] > kMaxBox)
      return "the block has " + std::to_string(block.shape[k]) + " elements along dimension " + std::to_string(k) +
             " (at most 256)";
    bool innermost = k + 1 == d.rank;
    if (innermost && (stride->param >= 0 || stride->value != 1)) return "the innermost stride is not known to be 1";
    if (!innermost && !multiple_of_16_bytes(fn, *stride, bytes))
      return "the stride of dimension " + std::to_string(k) + " is not known to be a multiple of 16 bytes";
  }
  if (block.shape.back() * bytes % 16 != 0)
    return "a block row is " + std::to_string(block.shape.back() * bytes) + " bytes, not a multiple of 16";
  return "";
}


std::string tma_offset_refusal(const ir::Function& fn, const ir::Op& op, const passes::AxisInfoAnalysis& axes) {
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  int64_t bytes = ir::byte_size(fn.type(ir::descriptor_block_value(op)).scalar);
  int64_t divisibility = axes.get(d.offsets.back()).divisibility[0];
  // divisibility is a power of two (or 0's huge one): elements times bytes is a multiple of 16 iff
  // their product's power of two is.
  if (divisibility < 16 && divisibility * bytes % 16 != 0)
    return "the innermost offset is not known to be a multiple of " +
           std::to_string(16 / std::gcd<int64_t>(16, bytes)) + " elements (16 bytes; the TMA needs it)";
  return "";
}

std::string tma_sign_doubt(const ir::Function& fn, const ir::Op& op) {
  if (op.kind == ir::OpKind::DescLoad) return "";
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  std::vector<int> extents;
  for (ir::ValueId size : d.shape)
    if (std::optional<TensorMapExtent> e = extent_of(fn, size); e && e->param >= 0 && e->factors.empty())
      extents.push_back(e->param);
  passes::LowerBounds bounds(fn, std::move(extents));
  for (size_t k = 0; k < d.rank; ++k)
    if (std::optional<int64_t> bound = bounds.of(d.offsets[k]); !bound || *bound < 0)
      return "offset " + std::to_string(k) + " is not known to be >= 0";
  return "";
}

std::string descriptor_op_name(const ir::Function& fn, const ir::Op& op) {
  std::string text = ir::name(op.kind);
  if (!op.loc.valid()) return text;
  size_t file = static_cast<size_t>(op.loc.file);
  return text + " at " + (file < fn.files.size() ? fn.files[file] : "<unknown>") + ":" + std::to_string(op.loc.line) +
         ":" + std::to_string(op.loc.col);
}

TensorMapParam tma_map_param(const ir::Function& fn, const ir::Op& op) {
  TEGULA_ASSERT(tma_refusal(fn, op).empty(), "tma_map_param of a desc op the TMA cannot copy");
  ir::DescriptorOperands d = ir::descriptor_operands(op);
  TensorMapParam map;
  map.base = extent_of(fn, d.base)->param;
  for (size_t k = 0; k < d.rank; ++k) {
    map.shape.push_back(*extent_of(fn, d.shape[k]));
    map.strides.push_back(*extent_of(fn, d.strides[k]));
  }
  map.box = fn.type(ir::descriptor_block_value(op)).shape;
  map.nan_fill = op.kind == ir::OpKind::DescLoad && op.str_attr("padding") == "nan";
  return map;
}

}  // namespace tegula::backends::cuda
