// SHA-256 (FIPS 180-4), for content addressing: the runtime's cache keys and
// the integrity check of every cached shared object before it is loaded.
//
// Incremental: feed bytes with update() in any split, then finish() once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tegula {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();

  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }

  // Pads, returns the digest and leaves the object unusable until reset().
  Digest finish();
  // finish() as 64 lowercase hex digits.
  std::string finish_hex();
  void reset();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;      // bytes waiting in buffer_
  uint64_t total_bytes_ = 0; // message length so far
};

// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

// Lowercase hex of a digest.
std::string to_hex(const Sha256::Digest& digest);

}  // namespace tegula
