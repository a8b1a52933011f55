// libFuzzer target for the IR text parser, the verifier and the passes:
// arbitrary bytes are parsed as printed IR; what parses and verifies is
// optimized and must still verify. A UserError from the parser is the expected
// answer to malformed text and is rendered. An invalid function from the
// parser is fine (the verifier's job is to say so); an InternalError after a
// pass, any other exception, a crash, a sanitizer report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "support/diagnostic.h"
#include "support/source.h"

using namespace tegula;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ir::Function fn = ir::parse(text);
    if (!ir::verify(fn).empty()) return 0;
    // Printing must handle anything the verifier accepts.
    (void)ir::print(fn);
    passes::optimize(fn);
    ir::verify_or_throw(fn, "optimized");
    (void)ir::print(fn);
  } catch (const UserError& e) {
    SourceManager sources;
    sources.add("<ir>", text);
    (void)render(e.diagnostic(), &sources);
  }
  return 0;
}
