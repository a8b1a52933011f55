// Tensor maps for Hopper's tensor-copy engine (TMA): the 128-byte
// descriptor (the driver's CUtensorMap) a kernel names in
// cp.async.bulk.tensor, encoded on the host with cuTensorMapEncodeTiled
// and passed as a `const __grid_constant__` parameter.
//
// What the hardware takes (the driver refuses anything else, with nothing
// better than CUDA_ERROR_INVALID_VALUE, so tma_problem says which rule a
// tensor breaks first): rank 1 to 5; a base address and every stride but
// the innermost a multiple of 16 bytes (strides below 2^40); the innermost
// stride 1; every dim at most 2^32 elements; a box of 1 to 256 elements per
// dim whose innermost row is a multiple of 16 bytes and, when swizzled, no
// longer than the swizzle span (32, 64 or 128 bytes); NaN fill for floats.
//
// Dims are in Tegula's order, outermost first, as a TensorDescriptor lists
// them; the driver's arrays run innermost first (tiled_encoding reverses).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/driver_api.h"
#include "ir/type.h"

namespace tegula::backends::cuda {

inline constexpr size_t kTmaMaxRank = 5;
inline constexpr int64_t kTmaMaxBox = 256;

// CUtensorMapSwizzle: how 16-byte chunks of each box row are XORed with row
// bits in shared memory (the 128-byte mode matches the wgmma operand layout,
// shared_tile.h).
enum class TmaSwizzle : int { None = 0, Bytes32 = 1, Bytes64 = 2, Bytes128 = 3 };

// Everything a tensor map encodes: the key of the cache.
struct TensorMapKey {
  uint64_t base = 0;             // device address of element (0, .., 0)
  ir::Scalar dtype = ir::Scalar::F32;
  std::vector<int64_t> shape;    // elements per dim, outermost first
  std::vector<int64_t> strides;  // elements per dim, outermost first (innermost 1)
  std::vector<int64_t> box;      // the block shape, outermost first
  TmaSwizzle swizzle = TmaSwizzle::None;
  bool nan_fill = false;         // out-of-bounds elements load as NaN (else 0)

  bool operator==(const TensorMapKey&) const = default;
};

struct TensorMapKeyHash {
  size_t operator()(const TensorMapKey& key) const;
};

// "" when the TMA can copy boxes of `key`; otherwise the first rule it
// breaks, as a sentence naming the values (for a launch error).
std::string tma_problem(const TensorMapKey& key);

// The map as the kernel receives it.
struct alignas(64) TensorMap {
  std::array<uint64_t, 16> opaque{};
};
static_assert(sizeof(TensorMap) == 128, "CUtensorMap is 128 bytes");

// cuTensorMapEncodeTiled's arguments for a key, innermost dim first.
struct TiledEncoding {
  int data_type = 0;  // CUtensorMapDataType
  uint32_t rank = 0;
  uint64_t base = 0;
  std::array<uint64_t, kTmaMaxRank> dims{};
  std::array<uint64_t, kTmaMaxRank - 1> byte_strides{};  // of dims 1 .. rank-1
  std::array<uint32_t, kTmaMaxRank> box{};
  std::array<uint32_t, kTmaMaxRank> element_strides{};  // all 1: every element of the box
  int interleave = 0;                                   // CU_TENSOR_MAP_INTERLEAVE_NONE
  int swizzle = 0;
  int l2_promotion = 2;                                 // CU_TENSOR_MAP_L2_PROMOTION_L2_128B, as Triton
  int oob_fill = 0;                                     // 1: NAN_REQUEST_ZERO_FMA
};
// Asserts tma_problem(key) is "".
TiledEncoding tiled_encoding(const TensorMapKey& key);

// Encoded maps by key, each encoded once; thread-safe. A loop of launches
// over the same tensors encodes once. Bounded: past kMaxEntries maps (a
// program cycling through fresh allocations) the cache starts over.
class TensorMapCache {
 public:
  static constexpr size_t kMaxEntries = 4096;
  using Encoder = std::function<CUresult(TensorMap* out, const TiledEncoding& encoding)>;

  explicit TensorMapCache(Encoder encoder) : encoder_(std::move(encoder)) {}

  // The map of `key`. Throws Error (E0711, ValueError) naming the broken rule
  // when the TMA cannot take the tensor, DriverError when the encoder fails.
  TensorMap get(const TensorMapKey& key);
  size_t size() const;

 private:
  Encoder encoder_;
  mutable std::mutex mutex_;
  std::unordered_map<TensorMapKey, TensorMap, TensorMapKeyHash> maps_;
};

// The process-wide cache, encoding through the driver's
// cuTensorMapEncodeTiled (CUDA 12.0 and later; a DriverError on older ones).
TensorMapCache& tensor_maps();

}  // namespace tegula::backends::cuda
