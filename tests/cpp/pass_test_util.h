// Shared driver of the golden pass tests: IR text in, one pass, IR text out
// (without locations), with the verifier run on the result.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace tegula::passes::testing
