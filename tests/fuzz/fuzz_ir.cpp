// libFuzzer target for the IR text parser, the verifier and the passes:
// arbitrary bytes are taken as printed IR (fuzz_inputs.h says what is done
// with them and what counts as a bug).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tegula::fuzz::check_ir_text(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
