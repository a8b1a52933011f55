// Textual form of the tile IR (parsable back by ir/parser.h).
//
//   kernel @add(%x: ptr<f32> div(16), %n: i32) {
//     %0 = program_id {axis = 0} : i32                          // add.py:3:11
//     %1 = arange {start = 0, end = 1024} : tile<1024xi32>      // add.py:3:23
//     ...
//     %9 = for %lb, %ub, %st, %acc0 : tile<1024xf32> {
//     ^bb(%10: i32, %11: tile<1024xf32>):
//       ...
//       yield %12
//     }
//     return
//   }
//
// docs/ir.md specifies the syntax.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

struct PrintOptions {
  bool locations = true;  // trailing `// file:line:col` comments
};

std::string print(const Function& fn, const PrintOptions& options = {});

// One op on one line, its values named as print(fn) names them, regions shown
// as `{ ... }`. For error messages (the verifier's, the passes').
std::string print_op(const Function& fn, OpId op);

// The word between the closing brace of region `index - 1` and the opening
// brace of region `index` (`else`, `do`), so that `if` and `while` read as
// they do in source; "" where there is none. The parser reads the same words.
const char* region_label(OpKind kind, size_t index);

}  // namespace tegula::ir
