// Internal to the CUDA backend: an operand tile of a tensor-core dot in
// shared memory, as the dot (codegen_mma.cpp) reads it and the loads that a
// pipelined loop issues ahead (codegen_pipeline.cpp) write it.
//
// The tile is `rows` rows of `row_elements` elements; a row is whole 16-byte
// chunks whose index is XORed with a few bits of the row number
// (tg_swizzle, prelude_mma.h): rows shorter than 128 bytes share a 128-byte
// line (PER_PHASE rows per phase), and up to 8 phases permute the chunks of
// a line. Eight consecutive rows' chunk c then fall in eight distinct bank
// groups, for ldmatrix's row reads and for 16-byte writes alike. Rows run
// along K ("k-major": A as [M][K], B as [N][K]) or along M / N.
//
// Rows longer than 128 bytes are cut into 128-byte blocks, block j of every
// row stored together (all of block 0, then all of block 1, ...). Each block
// is then exactly the "swizzle atom" layout of Hopper's wgmma descriptors
// (8 rows of 32, 64 or 128 bytes, chunk ^= row bits: the hardware's
// 32/64/128-byte swizzle modes), given tiles start on 1024-byte lines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace tegula::backends::cuda {

struct SharedTile {
  int k_dim = 0;        // the operand dim that is K (1 for a, 0 for b)
  bool k_major = true;  // rows run along K
  int64_t rows = 0, row_elements = 0;
  int element_bytes = 0;
  std::string offset = "0";  // bytes into tg_smem: a constant, or an expression of the ring stage
  std::string c_type;        // element type in registers and shared memory

  int row_dim() const { return k_major ? 1 - k_dim : k_dim; }
  int col_dim() const { return k_major ? k_dim : 1 - k_dim; }
  // The same elements where they lie, read as operand `index` of a dot (a:
  // 0, b: 1): rows that run along K for one role run along M/N for the other.
  SharedTile as_operand(size_t index) const {
    SharedTile t = *this;
    t.k_dim = index == 0 ? 1 : 0;
    t.k_major = row_dim() == 1 - t.k_dim;
    return t;
  }
  // The tile of the transposed value: the same bytes, its dims swapped.
  SharedTile transposed() const {
    SharedTile t = *this;
    t.k_major = !k_major;
    return t;
  }
  int64_t row_bytes() const { return row_elements * element_bytes; }
  int64_t bytes() const { return rows * row_bytes(); }
  // Bytes of one row in one block (the swizzle width), and between blocks.
  int64_t block_bytes() const { return std::min<int64_t>(row_bytes(), 128); }
  int64_t block_stride() const { return rows * block_bytes(); }

  std::string swizzle() const {
    int64_t chunks = block_bytes() / 16;
    int64_t max_phase = std::min<int64_t>(chunks, 8), per_phase = std::max<int64_t>(1, 8 / chunks);
    return "tg_swizzle<" + std::to_string(block_bytes()) + ", " + std::to_string(per_phase) + ", " +
           std::to_string(max_phase) + ", " + std::to_string(block_stride()) + ">";
  }
  // Byte offset (from tg_smem) of chunk `chunk` of row `row`.
  std::string chunk_at(const std::string& row, const std::string& chunk) const {
    return offset + " + " + swizzle() + "(" + row + ", " + chunk + ")";
  }
  // How far (in bytes) the element `rows` rows and `col_bytes` bytes of
  // columns further lies, when that is the same from every element: whole
  // swizzle periods of rows, whole blocks of columns. Nothing otherwise.
  std::optional<int64_t> constant_step(int64_t rows_further, int64_t col_bytes) const {
    int64_t chunks = block_bytes() / 16;
    int64_t period = std::min<int64_t>(chunks, 8) * std::max<int64_t>(1, 8 / chunks);
    if (rows_further % period != 0 || col_bytes % block_bytes() != 0) return std::nullopt;
    return rows_further * block_bytes() + col_bytes / block_bytes() * block_stride();
  }
  // Byte offset of the element at (row, col).
  std::string element_at(const std::string& row, const std::string& col) const {
    std::string byte = element_bytes == 1 ? col : "(" + col + ") * " + std::to_string(element_bytes);
    return chunk_at(row, "(" + byte + ") >> 4") + " + ((" + byte + ") & 15)";
  }
};

// Bytes from `offset` rounded up so the next tile starts on a 1024-byte line
// (a whole period of every swizzle pattern, as wgmma descriptors need).
inline int64_t next_line(int64_t offset) { return (offset + 1023) / 1024 * 1024; }

}  // namespace tegula::backends::cuda
