#include "backends/cuda/tensor_map.h"

#include <functional>

#include "support/error.h"

namespace tegula::backends::cuda {

namespace {

constexpr int64_t kMaxStrideBytes = int64_t{1} << 40;
constexpr int64_t kMaxDim = int64_t{1} << 32;

// CUtensorMapDataType. Integers and 8-bit floats travel as their bits.
int data_type(ir::Scalar s) {
  switch (s) {
    case ir::Scalar::F16: return 6;
    case ir::Scalar::BF16: return 9;
    case ir::Scalar::F32: return 7;
    case ir::Scalar::F64: return 8;
    case ir::Scalar::I32: return 3;
    case ir::Scalar::I64: return 5;
    default: break;
  }
  switch (ir::byte_size(s)) {
    case 1: return 0;  // UINT8
    case 2: return 1;  // UINT16
    case 4: return 2;  // UINT32
    default: return 4; // UINT64
  }
}

int swizzle_span(TmaSwizzle s) { return s == TmaSwizzle::None ? 0 : 16 << static_cast<int>(s); }

std::string list(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

void hash_combine(size_t& seed, uint64_t v) { seed ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

}  // namespace

size_t TensorMapKeyHash::operator()(const TensorMapKey& key) const {
  size_t seed = std::hash<uint64_t>{}(key.base);
  hash_combine(seed, static_cast<uint64_t>(key.dtype));
  for (const auto* part : {&key.shape, &key.strides, &key.box})
    for (int64_t v : *part) hash_combine(seed, static_cast<uint64_t>(v));
  hash_combine(seed, static_cast<uint64_t>(key.swizzle));
  hash_combine(seed, key.nan_fill ? 1 : 0);
  return seed;
}

std::string tma_problem(const TensorMapKey& key) {
  size_t rank = key.shape.size();
  if (rank == 0 || rank > kTmaMaxRank)
    return "the tensor has " + std::to_string(rank) + " dimensions; TMA copies tensors of 1 to 5";
  if (key.strides.size() != rank || key.box.size() != rank)
    return "the tensor needs one stride and one block size per dimension";
  int64_t element = ir::byte_size(key.dtype);
  if (key.base % 16 != 0)
    return "the tensor's base address " + std::to_string(key.base) + " is not a multiple of 16 bytes";
  if (key.strides[rank - 1] != 1)
    return "the innermost stride is " + std::to_string(key.strides[rank - 1]) + ", not 1";
  for (size_t d = 0; d < rank; ++d) {
    if (key.shape[d] < 1 || key.shape[d] > kMaxDim)
      return "dimension " + std::to_string(d) + " has " + std::to_string(key.shape[d]) +
             " elements; TMA takes 1 to 2^32";
    if (key.box[d] < 1 || key.box[d] > kTmaMaxBox)
      return "the block shape " + list(key.box) + " has " + std::to_string(key.box[d]) + " elements along dimension " +
             std::to_string(d) + "; TMA boxes take 1 to 256";
    if (d + 1 == rank) continue;
    int64_t bytes = key.strides[d] * element;
    if (key.strides[d] < 1 || bytes % 16 != 0 || bytes >= kMaxStrideBytes)
      return "the stride of dimension " + std::to_string(d) + " is " + std::to_string(key.strides[d]) +
             " elements (" + std::to_string(bytes) + " bytes); TMA needs positive multiples of 16 bytes";
  }
  int64_t row = key.box[rank - 1] * element;
  if (row % 16 != 0)
    return "a block row is " + std::to_string(row) + " bytes (" + std::to_string(key.box[rank - 1]) +
           " elements); TMA needs a multiple of 16 bytes";
  int span = swizzle_span(key.swizzle);
  if (span != 0 && row > span)
    return "a block row is " + std::to_string(row) + " bytes, more than the " + std::to_string(span) +
           "-byte swizzle span";
  if (key.nan_fill && !ir::is_float(key.dtype)) return "NaN padding needs floating-point elements";
  return "";
}

TiledEncoding tiled_encoding(const TensorMapKey& key) {
  TEGULA_ASSERT(tma_problem(key).empty(), "tiled_encoding of a tensor the TMA cannot take");
  size_t rank = key.shape.size();
  TiledEncoding e;
  e.data_type = data_type(key.dtype);
  e.rank = static_cast<uint32_t>(rank);
  e.base = key.base;
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i;  // driver dim i is Tegula's dim d
    e.dims[i] = static_cast<uint64_t>(key.shape[d]);
    e.box[i] = static_cast<uint32_t>(key.box[d]);
    e.element_strides[i] = 1;
    if (i > 0) e.byte_strides[i - 1] = static_cast<uint64_t>(key.strides[d] * ir::byte_size(key.dtype));
  }
  e.swizzle = static_cast<int>(key.swizzle);
  e.oob_fill = key.nan_fill ? 1 : 0;
  return e;
}

TensorMap TensorMapCache::get(const TensorMapKey& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = maps_.find(key);
    if (it != maps_.end()) return it->second;
  }
  if (std::string problem = tma_problem(key); !problem.empty())
    fail(ErrorKind::Value, Diag::InvalidTensorDescriptor, "a TensorDescriptor cannot be copied by TMA: " + problem,
         "keep base addresses and the strides of outer dimensions multiples of 16 bytes, block sizes at most 256 "
         "and block rows a multiple of 16 bytes");
  TensorMap map;
  check(encoder_(&map, tiled_encoding(key)), "cuTensorMapEncodeTiled");
  std::lock_guard<std::mutex> lock(mutex_);
  if (maps_.size() >= kMaxEntries) maps_.clear();
  return maps_.emplace(key, map).first->second;
}

size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return maps_.size();
}

TensorMapCache& tensor_maps() {
  static TensorMapCache cache([](TensorMap* out, const TiledEncoding& e) -> CUresult {
    const DriverApi& api = driver();
    if (!api.cuTensorMapEncodeTiled)
      fail_driver(Diag::CudaDriverError,
                  "the CUDA driver " + std::to_string(api.version) + " has no cuTensorMapEncodeTiled",
                  "TMA needs a CUDA 12.0 or later driver");
    return api.cuTensorMapEncodeTiled(out, e.data_type, e.rank, reinterpret_cast<void*>(e.base), e.dims.data(),
                                      e.byte_strides.data(), e.box.data(), e.element_strides.data(), e.interleave,
                                      e.swizzle, e.l2_promotion, e.oob_fill);
  });
  return cache;
}

}  // namespace tegula::backends::cuda
