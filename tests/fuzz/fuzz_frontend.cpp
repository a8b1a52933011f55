// libFuzzer target for the front end and the code generators: arbitrary
// bytes are taken as the source of one kernel (fuzz_inputs.h says what is
// done with them and what counts as a bug).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tegula::fuzz::compile_kernel_source(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
