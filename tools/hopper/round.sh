#!/usr/bin/env bash
# One device call of a session: build, then the steps named in $STEPS (space-separated), each under a
# time limit, output to $OUT/<step>.txt. Not a check: a convenience for few, full calls.
set -u
cd "$(dirname "$0")/../.."
export TEGULA_CACHE_DIR=$PWD/.cache/tegula TEGULA_TEST_BACKEND=cuda
OUT=${OUT:-/tmp/round-out}; mkdir -p "$OUT"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" bash -c "$*" > "$OUT/$name.txt" 2>&1; local rc=$?
  echo "$name rc $rc $((SECONDS - t0)) s" | tee -a "$OUT/summary.txt"; tail -4 "$OUT/$name.txt"; }
step build 200 "python3 -m pip install -q --no-build-isolation --no-deps --no-index -e ."
for s in ${STEPS:-}; do
  case $s in
    tma) step tma 200 "python3 -m pytest -q -x tests/python/test_tma_gpu.py -p no:cacheprovider" ;;
    torchops) step torchops 300 "python3 -m pytest -q tests/python/test_torch_ops.py -k cuda -p no:cacheprovider" ;;
    opscuda) step opscuda 200 "python3 -m pytest -q tests/python/test_torch_ops_cuda.py -p no:cacheprovider" ;;
    probe) step probe 150 "python3 tools/hopper/tma_reduce_probe.py" ;;
    torchtests) step torchtests 240 "python3 -m pytest -q tests/python/test_torch_rotary_attention.py tests/python/test_torch_add_rms_norm.py tests/python/test_torch_custom_op.py -p no:cacheprovider" ;;
    profile) step profile 240 "python3 tools/profile_train_step.py --compile --rows 45" ;;
    graphs) step graphs 240 "python3 examples/train_gpt.py --steps 100 --compile-mode reduce-overhead --json $OUT/graphs.json --log-every 50" ;;
    ptxas) step ptxas 200 "python3 tools/hopper/attention_ptxas.py" ;;
    bwdprobe) step bwdprobe 400 "python3 tools/hopper/attention_bwd_probe.py ${PROBE_ARGS:-}" ;;
    matmul) step matmul 300 "python3 benchmarks/run.py --gpu --only matmul_tma --only matmul_persistent --json $OUT/matmul.json" ;;
    parts) step parts 300 "python3 tools/hopper/attention_bwd_parts.py ${PARTS_ARGS:-}" ;;
    attn) step attn 240 "python3 benchmarks/run.py --gpu --only torch_attention --json $OUT/attn.json" ;;
    ncu) step ncu 400 "ncu --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section SourceCounters -o $OUT/attention_bwd -f python3 tools/hopper/attention_bwd_ncu.py ${NCU_ARGS:-} && ncu -i $OUT/attention_bwd.ncu-rep --page details > $OUT/attention_bwd_details.txt" ;;
    pytest) step pytest 400 "python3 -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-}" ;;
    stepab) step stepab 300 "python3 tools/hopper/step_ab.py --rounds 12 ${STEPAB_ARGS:-}" ;;
    ewprobe) step ewprobe 200 "python3 tools/hopper/elementwise_probe.py ${EW_ARGS:-}" ;;
    rotarybwd) step rotarybwd 200 "python3 tools/hopper/rotary_bwd_probe.py --reps 20 ${ROTARYBWD_ARGS:-}" ;;
    # Triton's files come from .triton-tests (a copy of the ones run_test_core.py reads, carried: the
    # machine has no Triton checkout), else the default checkout.
    printcuda) step printcuda 200 "python3 tools/conformance/run_test_core.py \$( [ -d .triton-tests ] && echo --triton .triton-tests ) --device cuda --every-test --module test_subprocess -n 4 --json $OUT/subprocess.json; python3 -m pytest -q -p no:cacheprovider --backend cuda tests/python/test_debug_mode.py tests/python/test_fstring.py -k 'print or fstring'" ;;
    coremath) step coremath 200 "python3 tools/conformance/run_test_core.py \$( [ -d .triton-tests ] && echo --triton .triton-tests ) --device cuda --module test_core -n 8 --json $OUT/coremath.json -- -k '${COREMATH_K:-math or exp or softmax}'" ;;
    lce) step lce 200 "python3 tools/hopper/lce_probe.py ${LCE_ARGS:-} && python3 -m pytest -q -p no:cacheprovider --backend cuda tests/python/test_torch_ops.py -k linear_cross_entropy" ;;
    ops) step ops 200 "python3 benchmarks/run.py --gpu --only torch_ops --no-md --json $OUT/ops.json" ;;
    fwd512) step fwd512 240 "python3 tools/hopper/attention_tma_probe.py --dims 64 --shape 32x8x512 --reps 20 --configs ${FWD512_CONFIGS:-64x64s3 128x64s3 64x128s2 64x128s3 64x32s3}" ;;
  esac
done
