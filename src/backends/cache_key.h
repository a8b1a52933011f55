// The cache key of a compile: a SHA-256 over a canonical serialization of
// everything that decides the code it produces. The compile driver writes
// the request's fields, each backend's Target adds its own (toolchain
// identity, architecture, options).
//
// Every field is written as `tag:length:bytes\n`, so no two different inputs
// serialize to the same byte string (a source containing "\n" or ":" cannot
// impersonate a following field).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/sha256.h"

namespace tegula::backends {

class CacheKey {
 public:
  void field(std::string_view tag, std::string_view value);
  void field(std::string_view tag, int64_t value) { field(tag, std::to_string(value)); }
  // The bit pattern: exact, and distinguishes -0.0 and NaN payloads.
  void field(std::string_view tag, double value);
  // The key, as 64 hex digits.
  std::string finish() { return hasher_.finish_hex(); }

 private:
  Sha256 hasher_;
};

}  // namespace tegula::backends
