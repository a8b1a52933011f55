// Shared driver of the golden pass tests: IR text in, one pass, IR text out
// (without locations), with the verifier run on the result.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace tegula::passes::testing {

using Pass = bool (*)(ir::Function&);

struct PassResult {
  std::string text;   // printed without locations
  bool changed = false;
  std::string verify; // empty when the output verifies
};

inline PassResult run_pass(Pass pass, const std::string& input) {
  ir::Function fn = ir::parse(input);
  PassResult result;
  result.changed = pass(fn);
  result.verify = ir::verify(fn);
  ir::PrintOptions options;
  options.locations = false;
  result.text = ir::print(fn, options);
  return result;
}

// Runs `pass` and expects the exact `expected` text, a verifying result, and a
// change report that agrees with whether the text changed.
inline void expect_pass(Pass pass, const std::string& input, const std::string& expected) {
  PassResult result = run_pass(pass, input);
  EXPECT_EQ(result.text, expected);
  EXPECT_EQ(result.verify, "");
  ir::PrintOptions options;
  options.locations = false;
  bool text_changed = ir::print(ir::parse(input), options) != result.text;
  EXPECT_EQ(result.changed, text_changed);
}

// Every value of `fn` by the name the printer gives it: "%n" for parameter n,
// "%0", "%1", ... for the rest in the printer's order (an op's results, then
// its regions' arguments and ops), so analysis tests can ask about values
// the way the IR text names them.
inline std::map<std::string, ir::ValueId> printed_names(const ir::Function& fn) {
  std::map<std::string, ir::ValueId> names;
  const ir::Block& body = fn.block(fn.body());
  for (size_t i = 0; i < body.args.size(); ++i) names["%" + fn.params[i].name] = body.args[i];
  int next = 0;
  auto number = [&](auto&& self, ir::BlockId block) -> void {
    for (ir::OpId id : fn.block(block).ops) {
      for (ir::ValueId r : fn.op(id).results) names["%" + std::to_string(next++)] = r;
      for (ir::BlockId region : fn.op(id).regions) {
        for (ir::ValueId a : fn.block(region).args) names["%" + std::to_string(next++)] = a;
        self(self, region);
      }
    }
  };
  number(number, fn.body());
  return names;
}

}  // namespace tegula::passes::testing
