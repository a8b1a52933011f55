#include "backends/cache_key.h"

#include <bit>

namespace tegula::backends {

void CacheKey::field(std::string_view tag, std::string_view value) {
  hasher_.update(tag);
  hasher_.update(":" + std::to_string(value.size()) + ":");
  hasher_.update(value);
  hasher_.update("\n");
}

void CacheKey::field(std::string_view tag, double value) {
  field(tag, static_cast<int64_t>(std::bit_cast<uint64_t>(value)));
}

}  // namespace tegula::backends
