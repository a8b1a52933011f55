// How the runtime reports a problem it finds itself (not one the front end
// found in the kernel): a runtime::Error rendered like every other
// diagnostic, without a source location.
#pragma once

#include <string>

#include "runtime/compiler.h"
#include "support/diagnostic.h"

namespace tegula::runtime {

[[noreturn]] inline void fail(ErrorKind kind, Diag code, std::string message, std::string hint = {}) {
  throw to_error(Diagnostic{SourceLoc{}, code, std::move(message), std::move(hint), kind}, nullptr);
}

}  // namespace tegula::runtime
