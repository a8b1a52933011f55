// Canonicalization driver.
//
// Algorithm: sweep the function in program order; at each op try the rule
// groups in a fixed order and apply the first one that matches (a rule
// rewrites the op and the new ops go before it, with its location). Then drop
// pure ops left without users. Repeat until a sweep changes nothing, bounded
// by kMaxSweeps: every rule either removes an op, replaces it by a constant or
// a splat, or puts it in a normal form that no rule undoes, so the bound is
// only a guard against a future rule pair that fights.
//
// The rules themselves live in rules_*.cpp, one topic per file.
#include "passes/canonicalize.h"

#include "passes/canonicalize_rules.h"
#include "passes/rewrite_utils.h"
#include "support/diagnostic.h"

namespace tegula::passes {

namespace {

constexpr int kMaxSweeps = 32;

using RuleGroup = bool (*)(ir::Function&, ir::OpId);

// Folding comes first (the strongest rewrite); identities before splat
// sinking so that add(splat x, zeros) becomes splat x, not splat(x + 0).
constexpr RuleGroup kRuleGroups[] = {
    rules::fold_constants,
    rules::simplify_shapes,
    rules::simplify_algebra,
    rules::sink_splats,
    rules::simplify_control_flow,
};

bool sweep(ir::Function& fn) {
  bool changed = false;
  fn.walk([&](ir::OpId op) {
    SourceLoc loc = fn.op(op).loc;  // a copy: rules may grow the op table
    // An internal error in a rule names the kernel line of the op it rewrote.
    at_source(loc, [&] {
      for (RuleGroup group : kRuleGroups) {
        if (group(fn, op)) {
          changed = true;
          return;
        }
      }
    });
  });
  return changed;
}

}  // namespace

bool canonicalize(ir::Function& fn) {
  bool changed = false;
  for (int i = 0; i < kMaxSweeps; ++i) {
    bool swept = sweep(fn);
    bool erased = erase_unused_pure_ops(fn);
    if (!swept && !erased) break;
    changed = true;
  }
  return changed;
}

}  // namespace tegula::passes
