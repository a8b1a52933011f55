#include "runtime/backend_registry.h"

#include <array>

#include "backends/cpu/backend.h"
#include "runtime/errors.h"
#ifdef TEGULA_HAVE_CUDA_BACKEND
#include "backends/cuda/backend.h"
#endif

namespace tegula::runtime {

namespace {

// The backend a build configured without src/backends/cuda lacks.
constexpr std::string_view kOptionalCuda = "cuda";

}  // namespace

std::span<const backends::Backend* const> all_backends() {
#ifdef TEGULA_HAVE_CUDA_BACKEND
  static const std::array<const backends::Backend*, 2> list = {&backends::cpu::backend(),
                                                               &backends::cuda::backend()};
#else
  static const std::array<const backends::Backend*, 1> list = {&backends::cpu::backend()};
#endif
  return list;
}

const backends::Backend* find_backend(std::string_view name) {
  for (const backends::Backend* backend : all_backends())
    if (backend->name() == name) return backend;
  return nullptr;
}

const backends::Backend& backend_named(std::string_view name) {
  if (const backends::Backend* backend = find_backend(name)) return *backend;
  if (name == kOptionalCuda) fail_backend_not_built();
  fail(ErrorKind::Value, Diag::InvalidCompileOption, "backend '" + std::string(name) + "' is not available",
       "use backend " + backend_names());
}

const backends::Backend& host_backend() { return *all_backends().front(); }

std::string backend_names(std::string_view quote) {
  std::string out;
  std::span<const backends::Backend* const> list = all_backends();
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += i + 1 == list.size() ? " or " : ", ";
    out += std::string(quote) + std::string(list[i]->name()) + std::string(quote);
  }
  return out;
}

}  // namespace tegula::runtime
