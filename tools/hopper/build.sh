#!/usr/bin/env bash
# Compiles every variant of ws_matmul.cu and ws_attention.cu (the lists are VARIANTS in bench_proto.py and
# bench_attention.py) with
#   nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -O3 -Xptxas -v -D...
# into tools/hopper/out/NAME.cubin (logs beside them), checks each variant's PTX for the instructions it must
# contain, and prints ptxas' registers and spills per entry point. Exits non-zero when a variant does not build
# or ptxas' report shows a problem (spills, a register count setmaxnreg does not assume, a C75xx remark).
#   NVCC=/path/to/nvcc tools/hopper/build.sh [--rebuild]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
status=0
python3 "$here/bench_proto.py" --build-only --ptx-check "$@" || status=1
python3 "$here/bench_attention.py" --build-only --ptx-check "$@" || status=1
exit $status
