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

// E0804, raised only by builds configured without src/backends/cuda; here
// rather than inline at its one caller so that tests of full builds can check
// the message too.
[[noreturn]] inline void fail_backend_not_built() {
  fail(ErrorKind::Value, Diag::BackendNotBuilt,
       "this build of Tegula has no CUDA code generator (src/backends/cuda was not built)", "use backend 'cpu'");
}

}  // namespace tegula::runtime
