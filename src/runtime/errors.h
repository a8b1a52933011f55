// The one runtime error that depends on how Tegula was configured.
#pragma once

#include "support/error.h"

namespace tegula::runtime {

// E0804, raised only by builds configured without src/backends/cuda; here
// rather than inline at its one caller so that tests of full builds can check
// the message too.
[[noreturn]] inline void fail_backend_not_built() {
  fail(ErrorKind::Value, Diag::BackendNotBuilt,
       "this build of Tegula has no CUDA code generator (src/backends/cuda was not built)", "use backend 'cpu'");
}

}  // namespace tegula::runtime
