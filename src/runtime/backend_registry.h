// The backends of this build, by name: the only place that maps a name
// ("cpu", "cuda") to a backends::Backend. The compile driver, the CLI and
// the Python launcher look a name up here once and then ask the Backend
// object what they need (its kind, its outputs, its descriptions); nothing
// else compares backend names.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "backends/backend.h"

namespace tegula::runtime {

// Every backend of this build, the host backend first.
std::span<const backends::Backend* const> all_backends();

// The backend called `name`, or null.
const backends::Backend* find_backend(std::string_view name);

// The backend called `name`. Throws Error (ValueError-kind, E0705) naming
// the backends there are, or E0804 for a backend this build left out.
const backends::Backend& backend_named(std::string_view name);

// The backend whose kernels run on host memory (the CPU): where a launch
// with no device arrays runs unless TEGULA_BACKEND says otherwise.
const backends::Backend& host_backend();

// "'cpu' or 'cuda'": the names, quoted as `quote` and joined for a message.
std::string backend_names(std::string_view quote = "'");

}  // namespace tegula::runtime
