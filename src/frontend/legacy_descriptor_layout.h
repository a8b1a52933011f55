// The layout of a Triton 3.2/3.3 TMA descriptor in Tegula (builtins_experimental_descriptor.h reads and
// writes it in kernels; the launcher reads a host descriptor's base address to place the launch).
#pragma once

#include <cstdint>

namespace tegula::frontend {

// The descriptor's int64 words (128 bytes, Triton's TMA_SIZE; keep in step
// with python/tegula/experimental_descriptor.py). Dimensions are outer first,
// as Triton's global_size and load shapes list them.
namespace legacy_descriptor {
inline constexpr int64_t kMagic = 0x3143534544474c54;  // "TLGDESC1" little-endian: a written descriptor
inline constexpr int kMagicWord = 0;
inline constexpr int kBaseWord = 1;         // the global address, in bytes
inline constexpr int kRankWord = 2;
inline constexpr int kElementSizeWord = 3;  // bytes
inline constexpr int kShapeWord = 4;        // kMaxRank words: global sizes, in elements
inline constexpr int kStrideWord = 8;       // kMaxRank words: strides, in elements (the last is 1)
inline constexpr int kBlockWord = 12;       // kMaxRank words: the box the descriptor was made for
inline constexpr int kMaxRank = 4;
inline constexpr int kWords = 16;
inline constexpr int64_t kBytes = kWords * 8;  // what a host descriptor passes by value
}  // namespace legacy_descriptor

}  // namespace tegula::frontend
