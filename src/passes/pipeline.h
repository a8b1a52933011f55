// The optimization pipeline as one readable list of named stages, with the
// verifier after each stage. Callers may ask for the IR after every stage
// (for `inspect`, the CLI and TEGULA_DUMP_DIR).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "passes/lower_descriptors.h"

namespace tegula::passes {

struct StageDump {
  std::string stage;  // "lowered", "canonicalize", "cse", ...
  std::string ir;
};

struct PipelineOptions {
  // Which desc ops to keep for a code generator that copies blocks whole
  // (TMA), and which to keep under a runtime check of their offsets;
  // lower_descriptors lowers the others before the other stages. Empty:
  // lower them all.
  DescriptorFilter keep_descriptor_op;
};

// Runs lower_descriptors (on the ops the options do not keep), then canonicalize,
// cse, licm, dce (to a fixed point, bounded). When `dumps` is non-null,
// appends the printed IR after each stage.
void optimize(ir::Function& fn, std::vector<StageDump>* dumps = nullptr, const PipelineOptions& options = {});

}  // namespace tegula::passes
