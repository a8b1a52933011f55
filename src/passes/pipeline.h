// The optimization pipeline as one readable list of named stages, with the
// verifier after each stage. Callers may ask for the IR after every stage
// (for `inspect`, the CLI and TEGULA_DUMP_DIR).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

struct StageDump {
  std::string stage;  // "lowered", "canonicalize", "cse", ...
  std::string ir;
};

struct PipelineOptions {
  // Keep desc_load / desc_store for a code generator that copies blocks
  // whole (TMA); otherwise lower_descriptors runs before the other stages.
  bool keep_descriptor_ops = false;
};

// Runs lower_descriptors (unless the options keep the ops), then canonicalize,
// cse, licm, dce (to a fixed point, bounded). When `dumps` is non-null,
// appends the printed IR after each stage.
void optimize(ir::Function& fn, std::vector<StageDump>* dumps = nullptr, const PipelineOptions& options = {});

}  // namespace tegula::passes
