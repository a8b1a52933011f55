// Textual form of the tile IR (parsable back by ir/parser.h).
//
//   kernel @add(%x: ptr<f32> div(16), %n: i32) {
//     %0 = program_id {axis = 0} : i32                      // add.py:3:11
//     %1 = arange {start = 0, end = 1024} : tile<1024xi32>  // add.py:3:23
//     ...
//     %9 = for %lb, %ub, %st, %acc0 -> (tile<...>) {
//     ^(%i: i32, %acc: tile<...>):
//       ...
//       yield %a
//     }
//     return
//   }
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

struct PrintOptions {
  bool locations = true;  // trailing `// file:line:col` comments
};

std::string print(const Function& fn, const PrintOptions& options = {});

}  // namespace tegula::ir
