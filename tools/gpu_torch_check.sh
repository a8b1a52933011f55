#!/usr/bin/env bash
# tegula.torch on the GPU (issue 17) in one 10-minute command: build, the
# torch tests, the attention sweep, the torch benchmark rows and the
# training example, each step under a time limit and whatever happened to
# the ones before (the style of tools/gpu_check.sh).
#
# The GPU machine is offline; its python3 holds torch, triton and pytest. So
# this builds with that python3 (pip install --no-build-isolation --no-deps
# --no-index -e .), never creates a venv and never downloads.
#
#   1. build     the editable install                                      -> log.txt
#   2. pytest    test_torch_ops, test_torch_add_rms_norm, test_torch_ops_cuda, test_torch_custom_op,
#                test_train_gpt, test_torch_rotary_attention, --backend cuda   -> log.txt
#   3. sweep     tools/attention_sweep.py (attention configs against SDPA) -> log.txt, sweep.json
#   4. bench     benchmarks/run.py --gpu --only torch_ops --only
#                torch_attention --only train_gpt                         -> log.txt, bench_torch.json
#   5. train     examples/train_gpt.py, 200 steps of GPU_CONFIG, both
#                variants, --plot; then their final losses (the mean of
#                the last 10 steps) must agree within 1%                  -> train_gpt.png, train_gpt.json
#   6. train-compile  the same compiled (torch.compile(fullgraph=True))   -> train_gpt_compile.json
#   with one line per step (status, seconds) and the tails of failures   -> summary.txt
#
# Everything lands in $OUT (default ./gpu-torch-check-out): at most 8 files,
# logs merged into log.txt. The whole run stays under $GPU_CHECK_BUDGET
# seconds (default 540): a step gets what is left minus a reserve for the
# later ones. SKIP_BUILD=1 (tegula already installed), SKIP_PYTEST=1, SKIP_SWEEP=1,
# SKIP_BENCH=1 or SKIP_TRAIN=1 leave a step out; SWEEP_ARGS adds options to the sweep (e.g.
# "--dims 128" or "--fwd 128x64w8s3"); TRAIN_STEPS changes the 200 steps.
# GPU_CHECK_DEVICE=cpu runs every step on the CPU at small sizes (--quick, the
# CPU's training defaults): a dry run of this script on a machine without a
# GPU, with PY=.venv/bin/python. Exit status: 0 when every step that ran passed.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-python3}"
OUT="${OUT:-$ROOT/gpu-torch-check-out}"
BUDGET="${GPU_CHECK_BUDGET:-540}"
JOBS="$(nproc 2>/dev/null || echo 8)"
mkdir -p "$OUT"
export TEGULA_CACHE_DIR="${TEGULA_CACHE_DIR:-$ROOT/.cache/tegula}"
DEVICE="${GPU_CHECK_DEVICE:-cuda}"
STEPS="${TRAIN_STEPS:-200}"
export TEGULA_TEST_BACKEND="$DEVICE"
if [ "$DEVICE" = cuda ]; then
  BENCH_WHERE=(--gpu)
  SWEEP_WHERE=(--device cuda)
else
  BENCH_WHERE=(--cpu --quick)
  SWEEP_WHERE=(--device cpu --quick)
fi
export CMAKE_BUILD_PARALLEL_LEVEL="$JOBS"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

LOG="$OUT/log.txt"
: >"$LOG"
source "$ROOT/tools/gpu_steps.sh"


begin_summary gpu-torch-check
{
  echo "### machine"
  timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  timeout 60 "$PY" -c "import torch, sys; print('python', sys.version.split()[0], '| torch', torch.__version__,
'| cuda', torch.version.cuda, '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')" 2>&1
} >>"$LOG" 2>&1

# --- 1. build --------------------------------------------------------------------------------------
build_tegula "$LOG" 240 300

# --- 2. the torch tests on the CUDA backend ---------------------------------------------------------
if ((BUILT)) && [[ "${SKIP_PYTEST:-0}" == 0 ]]; then
  PYTEST_ARGS=(-q -rfE --durations=10 -p no:cacheprovider --backend "$DEVICE")
  "$PY" -c "import xdist" 2>/dev/null && PYTEST_ARGS+=(-n "$((JOBS / 2 > 2 ? JOBS / 2 : 2))")
  step pytest "$LOG" "$(allowance 150 260)" "$PY" -m pytest "${PYTEST_ARGS[@]}" tests/python/test_torch_ops.py tests/python/test_torch_add_rms_norm.py \
    tests/python/test_torch_ops_cuda.py tests/python/test_torch_custom_op.py tests/python/test_train_gpt.py \
    tests/python/test_torch_rotary_attention.py
  sed -n '/^### pytest/,$p' "$LOG" | grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" | tail -30 |
    cut -c1-300 | sed 's/^/      /' >>"$SUMMARY"
else
  skip pytest "no build or SKIP_PYTEST=1"
fi

# --- 3. attention configurations against SDPA --------------------------------------------------------
if ((BUILT)) && [[ "${SKIP_SWEEP:-0}" == 0 ]]; then
  limit=$(allowance 170 190)
  # The sweep stops measuring (rows say so) 20 s before its limit, so its table and JSON still come back.
  # shellcheck disable=SC2086
  step sweep "$LOG" "$limit" "$PY" tools/attention_sweep.py "${SWEEP_WHERE[@]}" --budget $((limit - 20)) \
    --json "$OUT/sweep.json" ${SWEEP_ARGS:-}
  sed -n '/^### sweep/,$p' "$LOG" | grep -E "^fastest" | sed 's/^/      /' >>"$SUMMARY"
else
  skip sweep "no build or SKIP_SWEEP=1"
fi

# --- 4. the torch benchmark rows ------------------------------------------------------------------
if ((BUILT)) && [[ "${SKIP_BENCH:-0}" == 0 ]]; then
  # Attention first (issue 17's target), the ops last: the JSON is rewritten after every case, so a
  # step cut short by its limit keeps what it measured.
  step bench "$LOG" "$(allowance 220 130)" "$PY" benchmarks/run.py "${BENCH_WHERE[@]}" --only torch_attention \
    --only train_gpt --only torch_ops --no-md --json "$OUT/bench_torch.json"
else
  skip bench "no build or SKIP_BENCH=1"
fi

# --- 5. the training example, both variants, 200 steps ------------------------------------------------
if ((BUILT)) && [[ "${SKIP_TRAIN:-0}" == 0 ]]; then
  step train "$LOG" "$(allowance 110 60)" "$PY" examples/train_gpt.py --device "$DEVICE" --steps "$STEPS" --log-every 50 \
    --plot "$OUT/train_gpt.png" --json "$OUT/train_gpt.json"
  if [ -f "$OUT/train_gpt.json" ]; then
    step train-curves-agree "$LOG" 20 "$PY" - "$OUT/train_gpt.json" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
final = run["final_mean_loss"]
gap = abs(final["tegula"] / final["torch"] - 1)
print(f"final loss (mean of the last 10 steps): torch {final['torch']:.4f}, tegula {final['tegula']:.4f}, "
      f"differ by {gap:.2%} (at most 1%); tokens/s " + ", ".join(f"{k} {v:.0f}" for k, v in run["tokens_per_s"].items() if v))
sys.exit(0 if gap <= 0.01 else 1)
EOF
    grep -E "^final loss" "$LOG" | tail -1 | sed 's/^/      /' >>"$SUMMARY"
  fi
  step train-compile "$LOG" "$(allowance 140 0)" "$PY" examples/train_gpt.py --device "$DEVICE" --steps "$STEPS" --log-every 50 \
    --compile --json "$OUT/train_gpt_compile.json"
  sed -n '/^### train-compile/,$p' "$LOG" | grep -E "tokens/s after the first step|differs from torch" |
    sed 's/^/      compiled: /' >>"$SUMMARY"
else
  skip train "no build or SKIP_TRAIN=1"
fi

note "done in $(elapsed)s; $FAILED step(s) failed; files: $(cd "$OUT" && ls | tr '\n' ' ')"
exit $((FAILED > 0))
