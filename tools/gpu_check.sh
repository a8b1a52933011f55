#!/usr/bin/env bash
# `make gpu-check`: everything we want to know from one run on the GPU machine.
#
# The GPU machine is offline and has no virtual environment of ours: its
# python3 already holds torch, triton, numpy, pytest, nanobind,
# scikit-build-core, cmake and ninja. So this script builds with that python3
# (pip install --no-build-isolation --no-deps --no-index -e .), never creates
# a venv, never downloads, and then runs, each step under a time limit and
# each step whatever happened to the ones before:
#
#   1. build       the extension and the CLI (editable install)     -> build.txt
#      then the wheel: built, installed in a fresh venv, examples run   -> demo.txt
#   2. pytest      tests/python on the CUDA backend (-n cores/2)          -> pytest.txt
#      then compat: tests/compat under Tegula (CUDA) and under Triton  -> pytest.txt
#   3. ctest       the C++ tests, built beside step 2               -> ctest.txt
#   4. bench       python benchmarks/run.py --gpu --json bench.json  -> bench.txt, bench.json
#      then tools/launch_overhead.py (Tegula vs Triton, tiny kernel)  -> bench.txt
#   5. demo        python examples/demo.py --json                    -> demo.txt
#      then benchmarks/roofline.py --device cuda (report's roofline)  -> roofline/
#   6. launch-probe tools/launch_probe.py (launch costs fresh, then after
#                  the memory-bound workloads; GPU_CHECK_LAUNCH_PROBE=0: skip) -> bench.txt
#   and the machine (nvidia-smi, versions, libraries)               -> env.txt
#   with one line per step (status, seconds) and the tails of failures -> summary.txt
#
# Everything lands in $OUT (default ./gpu-check-out), at most 8 files and
# the roofline folder. The
# whole run stays under $GPU_CHECK_BUDGET seconds (default 540) so it fits one
# 10-minute command: a step gets what is left, minus a reserve for the later
# steps. All of it no longer fits one command: GPU_CHECK_PART=tests runs
# steps 1-3, GPU_CHECK_PART=bench the build and steps 4-6 (two calls on a
# machine kept warm reuse the build); the default, all, runs everything and
# cuts what overruns. The wheel (1b) runs only with GPU_CHECK_WHEEL=1.
# Exit status: 0 when every step that ran passed.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-python3}"
OUT="${OUT:-$ROOT/gpu-check-out}"
BUDGET="${GPU_CHECK_BUDGET:-540}"
JOBS="$(nproc 2>/dev/null || echo 8)"
TEST_BUILD="$ROOT/build-gpu-check"
mkdir -p "$OUT"
export TEGULA_CACHE_DIR="${TEGULA_CACHE_DIR:-$ROOT/.cache/tegula}"
export TEGULA_TEST_BACKEND=cuda
export CMAKE_BUILD_PARALLEL_LEVEL="$JOBS"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

source "$ROOT/tools/gpu_steps.sh"

PART="${GPU_CHECK_PART:-all}"
case "$PART" in all | tests | bench) ;; *)
  echo "GPU_CHECK_PART=$PART: expected all, tests or bench" >&2
  exit 2
  ;;
esac
# part NAME: whether this run includes the steps of part NAME.
part() { [[ "$PART" == all || "$PART" == "$1" ]]; }

begin_summary gpu-check "part: $PART"

# --- the machine -----------------------------------------------------------------------------
{
  echo "### nvidia-smi"
  timeout 20 nvidia-smi 2>&1 || echo "(nvidia-smi unavailable)"
  echo "### nvidia-smi -q (clocks, power)"
  timeout 20 nvidia-smi -q -d CLOCK,POWER,PERFORMANCE 2>&1 | head -80
  echo "### versions"
  timeout 60 "$PY" - <<'EOF' 2>&1
import importlib, platform, sys
print("python", sys.version.split()[0], platform.platform())
for name in ("torch", "triton", "numpy", "pytest", "xdist", "pytest_timeout", "nanobind", "scikit_build_core",
             "ml_dtypes"):
    try:
        module = importlib.import_module(name)
        print(f"{name:18s} {getattr(module, '__version__', '?')}")
    except Exception as e:
        print(f"{name:18s} missing ({type(e).__name__})")
try:
    import torch
    print("torch.version.cuda", torch.version.cuda, "| cuda available:", torch.cuda.is_available(),
          "|", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
except Exception as e:
    print("torch cuda query failed:", e)
EOF
  for tool in cmake ninja g++ nvcc ccache; do
    printf '%-7s %s\n' "$tool" "$(command -v $tool >/dev/null && $tool --version 2>&1 | head -1 || echo missing)"
  done
  ls /usr/include/gtest/gtest.h 2>&1
} >"$OUT/env.txt" 2>&1

# --- 1. build ----------------------------------------------------------------------------------
step build "$OUT/build.txt" "$(allowance 300 200)" \
  "$PY" -m pip install --no-build-isolation --no-deps --no-index -v -e .
if "$PY" -c "import tegula, tegula._C" >>"$OUT/build.txt" 2>&1; then
  "$PY" - >>"$OUT/env.txt" 2>&1 <<'EOF'
import tegula, tegula._C as C, tegula._device as d
print("### tegula", tegula.__version__, "from", tegula.__file__)
print("cuda_status:", C.cuda_status())
print("cuda_libraries:", C.cuda_libraries())
try:
    print("target of device 0:", C.cuda_target(0), "| arch", C.cuda_device_arch(0), "| devices", C.cuda_device_count())
except Exception as e:
    print("cuda target query failed:", e)
EOF
  BUILT=1
else
  note "      tegula does not import after the build; the Python steps are skipped"
  BUILT=0
fi

# --- 1b. the wheel, built here and installed into a fresh environment (offline: no repair) -------
if ((BUILT)) && [[ "${GPU_CHECK_WHEEL:-0}" == 1 ]]; then
  WHEEL_DIR="$(mktemp -d)"
  step wheel "$OUT/demo.txt" "$(allowance 120 400)" bash -c "'$PY' -m pip wheel -q --no-build-isolation --no-deps \
    --no-index -w '$WHEEL_DIR' . && WHEEL_TEST_OFFLINE=1 PYTHON='$PY' tools/wheel_test.sh '$WHEEL_DIR'"
  rm -rf "$WHEEL_DIR"
else
  skip wheel "no build, or GPU_CHECK_WHEEL is not 1"
fi

# --- 3 (started now). the C++ tests build in the background while pytest runs ------------------
CPP_STATUS=skipped
if ! part tests; then
  :
elif [ -f /usr/include/gtest/gtest.h ] || [ -n "$(ls /usr/lib/*/cmake/GTest 2>/dev/null)" ]; then
  # Its own process group (setsid), so a build that overruns is stopped whole.
  setsid bash -c "echo '### configure + build the C++ tests (background, -j$((JOBS / 4)))' &&
    cmake -S . -B '$TEST_BUILD' -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEGULA_BUILD_TESTS=ON &&
    nice cmake --build '$TEST_BUILD' -j $((JOBS / 4))" >"$OUT/ctest.txt" 2>&1 &
  CPP_BUILD_PID=$!
  CPP_STATUS=building
else
  echo "GoogleTest (libgtest-dev) is not installed on this machine; the C++ tests cannot be built" >"$OUT/ctest.txt"
fi

# --- 2. pytest on the GPU ---------------------------------------------------------------------
if ! part tests; then
  :
elif ((BUILT)); then
  # The benchmark and the demo run as steps of their own below.
  # -v: a run cut short by its limit still names what failed before.
  PYTEST_ARGS=(-v -rfE --durations=15 -p no:cacheprovider --backend cuda
               --ignore=tests/python/test_bench.py --ignore=tests/python/test_demo.py)
  # Three quarters of the cores: the C++ test build runs beside it on the rest.
  "$PY" -c "import xdist" 2>/dev/null && PYTEST_ARGS+=(-n "$((JOBS * 3 / 4 > 4 ? JOBS * 3 / 4 : 4))")
  "$PY" -c "import pytest_timeout" 2>/dev/null && PYTEST_ARGS+=(--timeout 240)
  step pytest "$OUT/pytest.txt" "$(allowance 300 250)" "$PY" -m pytest "${PYTEST_ARGS[@]}" tests/python
  grep -E "^(FAILED|ERROR) | (FAILED|ERROR) tests/|[0-9]+ (passed|failed)" "$OUT/pytest.txt" | sort -u | tail -40 | sed 's/^/      /' >>"$SUMMARY"
  # The failures' own lines too: the summary is what a caller reads first.
  grep -E "^E   " "$OUT/pytest.txt" | head -30 | cut -c1-300 | sed 's/^/      /' >>"$SUMMARY"
else
  skip pytest "no build"
fi

# --- 2b. the Triton compatibility suite: the same kernel sources under Tegula and under Triton -----
# Appended to pytest.txt ($OUT holds at most 8 files). See tests/compat/conftest.py.
if ! part tests; then
  :
elif ((BUILT)); then
  COMPAT_ARGS=(-q -rfE -p no:cacheprovider)
  "$PY" -c "import xdist" 2>/dev/null && COMPAT_ARGS+=(-n 4)
  step compat-tegula "$OUT/pytest.txt" "$(allowance 90 200)" "$PY" -m pytest "${COMPAT_ARGS[@]}" \
    --backend cuda tests/compat
  if "$PY" -c "import triton" 2>/dev/null; then
    step compat-triton "$OUT/pytest.txt" "$(allowance 90 160)" "$PY" -m pytest "${COMPAT_ARGS[@]}" \
      --compat-runtime=triton tests/compat
  else
    skip compat-triton "Triton is not installed"
  fi
  sed -n '/^### compat-tegula/,$p' "$OUT/pytest.txt" | grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" |
    tail -20 | sed 's/^/      /' >>"$SUMMARY"
else
  skip compat "no build"
fi

# --- 3. ctest ---------------------------------------------------------------------------------------
if ! part tests; then
  :
elif [ "$CPP_STATUS" = building ]; then
  wait_limit=$(allowance 150 110)
  waited=0
  while kill -0 "$CPP_BUILD_PID" 2>/dev/null && ((waited < wait_limit)); do
    sleep 2
    waited=$((waited + 2))
  done
  if kill -0 "$CPP_BUILD_PID" 2>/dev/null; then
    kill -- "-$CPP_BUILD_PID" 2>/dev/null
    FAILED=$((FAILED + 1))
    note "FAIL  ctest (the C++ build did not finish in time; log: ctest.txt)"
  elif wait "$CPP_BUILD_PID"; then
    step ctest "$OUT/ctest.txt" "$(allowance 120 90)" \
      ctest --test-dir "$TEST_BUILD" --output-on-failure -j 8 --timeout 120
    grep -E "tests passed|tests failed|\*\*\*Skipped|Failed|Not Run" "$OUT/ctest.txt" | grep -v "^      " | tail -30 |
      sed 's/^/      /' >>"$SUMMARY"
  else
    FAILED=$((FAILED + 1))
    note "FAIL  ctest (the C++ tests did not build; log: ctest.txt)"
    tail -n 25 "$OUT/ctest.txt" | sed 's/^/      | /' >>"$SUMMARY"
  fi
else
  skip ctest "GoogleTest is not installed here"
fi

# --- 4. benchmarks ----------------------------------------------------------------------------
BENCH_HELP="$( ((BUILT)) && part bench && timeout 60 "$PY" benchmarks/run.py --help 2>&1)"
if ! part bench; then
  :
elif ! ((BUILT)); then
  skip bench "no build"
elif ! grep -q -- "--json" <<<"$BENCH_HELP"; then
  echo "$BENCH_HELP" >"$OUT/bench.txt"
  skip bench "benchmarks/run.py is missing or broken (see bench.txt)"
elif ! grep -q -- "--gpu" <<<"$BENCH_HELP"; then
  skip bench "benchmarks/run.py has no --gpu option yet"
else
  # --no-md: the markdown table is already in bench.txt and $OUT holds at most 8 files;
  # `python benchmarks/run.py --render bench.json` writes bench.md from the JSON later.
  # GPU_CHECK_BENCH_ARGS: extra options for the benchmark (e.g. "--num-warps fused_chain=8").
  # shellcheck disable=SC2086
  step bench "$OUT/bench.txt" "$(allowance 240 40)" "$PY" benchmarks/run.py --gpu --no-md --json "$OUT/bench.json" \
    ${GPU_CHECK_BENCH_ARGS:-}
fi

# --- 4b. host cost of one launch, against Triton ------------------------------------------------
if ! part bench; then
  :
elif ((BUILT)); then
  step launch-overhead "$OUT/bench.txt" "$(allowance 60 40)" "$PY" tools/launch_overhead.py --launches 5000
else
  skip launch-overhead "no build"
fi

# --- 5. demo ----------------------------------------------------------------------------------
if ! part bench; then
  :
elif ((BUILT)); then
  step demo "$OUT/demo.txt" "$(allowance 60 5)" "$PY" examples/demo.py --json
else
  skip demo "no build"
fi

# --- 5b. the roofline of the benchmark's four kernels (kernel.report) ---------------------------
if ! part bench; then
  :
elif ((BUILT)); then
  step roofline "$OUT/demo.txt" "$(allowance 120 5)" "$PY" benchmarks/roofline.py --device cuda --out "$OUT/roofline"
else
  skip roofline "no build"
fi

# --- 6. where launch time goes in a long-lived process (diagnostic, last: it may be cut short) ---
if ! part bench; then
  :
elif ((BUILT)) && [[ "${GPU_CHECK_LAUNCH_PROBE:-1}" != 0 ]]; then
  step launch-probe "$OUT/bench.txt" "$(allowance 150 0)" "$PY" tools/launch_probe.py
else
  skip launch-probe "no build or GPU_CHECK_LAUNCH_PROBE=0"
fi

note "done in $(elapsed)s; $FAILED step(s) failed; files: $(cd "$OUT" && ls | tr '\n' ' ')"
exit $((FAILED > 0))
