// TEGULA_DUMP_DIR: every compile (successful or not) may leave the IR of
// each stage and the generated source in a folder, for debugging the
// compiler. Best effort: dumping never turns a result into a failure.
#pragma once

#include <string>

#include "backends/backend.h"
#include "runtime/compiler.h"

namespace tegula::runtime {

// $TEGULA_DUMP_DIR, or "" when unset.
std::string dump_directory();

// Writes <kernel>-<key8>.<NN>-<stage>.txt per IR stage (numbered: a stage
// may run more than once), <kernel>-<key8>.source.<the backend's source
// extension>, and .layouts.txt, .ptx and .log.txt for what `stages` holds.
void write_dumps(const backends::Backend& backend, const std::string& kernel, const std::string& key,
                 const Stages& stages);

}  // namespace tegula::runtime
