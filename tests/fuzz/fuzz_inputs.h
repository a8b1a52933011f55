// What the fuzz targets do with one input, shared by the libFuzzer targets
// (fuzz_frontend.cpp, fuzz_ir.cpp) and the regression test that replays the
// seed corpora and every input that ever crashed them
// (tests/cpp/test_fuzz_regressions.cpp), so a replay takes exactly the path
// the fuzzer took.
//
// Both functions return normally for any input the compiler handles as it
// should, bad input included (a UserError is rendered and swallowed; they
// return false then, true when the input went all the way through). A
// compiler bug escapes: an InternalError or other exception, or a crash or
// sanitizer report in the process.
#pragma once

#include <string_view>

namespace tegula::fuzz {

// `text` as the source of one @jit kernel: parse; when that succeeds, lower
// with guessed arguments, verify, optimize, verify, and generate the CPU and
// CUDA sources (debug mode and sm_80/sm_90 chosen by the input's length).
bool compile_kernel_source(std::string_view text);

// `text` as printed tile IR: parse, verify; when valid, print, optimize,
// verify again and print. False for text that does not parse or verify.
bool check_ir_text(std::string_view text);

}  // namespace tegula::fuzz
