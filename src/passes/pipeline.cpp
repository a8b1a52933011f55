// The optimization pipeline: one list of named stages, run in rounds until a
// round changes nothing, with the verifier after every stage.
//
// Dumps stay readable: "lowered" first, "lower_descriptors" when it ran,
// then one dump per stage in the first round for the stages that changed
// something, then always one "optimized" dump of the final IR (what the
// backend receives).
#include "passes/pipeline.h"

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/licm.h"
#include "passes/lower_descriptors.h"

namespace tegula::passes {

namespace {

struct Stage {
  const char* name;
  bool (*run)(ir::Function&);
};

constexpr Stage kStages[] = {
    {"canonicalize", canonicalize},
    {"cse", cse},
    {"licm", licm},
    {"dce", dce},
};

// Each round can only shrink the function or move ops out of loops, so a few
// rounds reach the fixed point; the bound keeps compile time predictable.
constexpr int kMaxRounds = 4;

}  // namespace

void optimize(ir::Function& fn, std::vector<StageDump>* dumps, const PipelineOptions& options) {
  if (dumps) dumps->push_back({"lowered", ir::print(fn)});
  // Once, before the rounds: what it makes is ordinary IR for the stages below.
  if (lower_descriptors(fn, options.keep_descriptor_op)) {
    ir::verify_or_throw(fn, "lower_descriptors");
    if (dumps) dumps->push_back({"lower_descriptors", ir::print(fn)});
  }
  for (int round = 0; round < kMaxRounds; ++round) {
    bool round_changed = false;
    for (const Stage& stage : kStages) {
      bool changed = stage.run(fn);
      ir::verify_or_throw(fn, stage.name);
      round_changed = round_changed || changed;
      if (changed && round == 0 && dumps) dumps->push_back({stage.name, ir::print(fn)});
    }
    if (!round_changed) break;
  }
  if (dumps) dumps->push_back({"optimized", ir::print(fn)});
}

}  // namespace tegula::passes
