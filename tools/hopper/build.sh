#!/usr/bin/env bash
# Compiles every variant of ws_matmul.cu (the list is VARIANTS in
# bench_proto.py) with
#   nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -O3 -Xptxas -v -DTG_...
# into tools/hopper/out/NAME.cubin (logs beside them), checks each variant's
# PTX for the instructions it must contain, and prints ptxas' registers and
# spills per entry point. Exits non-zero when a variant does not build.
#   NVCC=/path/to/nvcc tools/hopper/build.sh [--rebuild] [--variants a,b]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
exec python3 "$here/bench_proto.py" --build-only --ptx-check "$@"
