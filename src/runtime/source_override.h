// TEGULA_OVERRIDE_DIR: a compile may take its generated source from a file
// instead of the code generator, to try a hand edit of the code a kernel
// compiles to before teaching the compiler to write it. The file names are
// those TEGULA_DUMP_DIR writes: <kernel>-<key8>.source.<ext> for one
// specialization, or <kernel>.source.<ext> for every specialization of the
// kernel. Everything else of the compile (parameters, block size, shared
// memory, tensor maps) still comes from the compiler, so an edit must keep
// the kernel's signature and its shared-memory layout.
#pragma once

#include <optional>
#include <string>

#include "backends/backend.h"

namespace tegula::runtime {

struct SourceOverride {
  std::string path;    // the file the source came from
  std::string source;  // its text
};

// The override for `kernel` at cache key `key` (the key the compile has
// without an override), or nullopt when TEGULA_OVERRIDE_DIR is unset or
// holds no file for it. An unreadable file is the user's error.
std::optional<SourceOverride> find_source_override(const backends::Backend& backend, const std::string& kernel,
                                                   const std::string& key);

}  // namespace tegula::runtime
