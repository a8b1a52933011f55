#!/usr/bin/env bash
# Warps sweep on the GPU machine, after `make gpu-check` built the package:
# runs the benchmark command for each WORKLOAD=W1,W2,... given, Tegula and
# Triton side by side (same kernel source, same num_warps), and appends the
# tables to $OUT/sweep.txt. Used to pick the NUM_WARPS defaults of
# benchmarks/tegula_bench/gpu_workloads.py from measurements.
#   tools/gpu_sweep.sh fused_chain=2,4,8 layer_norm=4,8,16
set -u
OUT="${OUT:-./gpu-check-out}"
PY="${PY:-python3}"
mkdir -p "$OUT"
export TEGULA_CACHE_DIR="${TEGULA_CACHE_DIR:-$(pwd)/.cache/tegula}"
for spec in "$@"; do
  workload="${spec%%=*}"
  for w in $(echo "${spec#*=}" | tr ',' ' '); do
    echo "### $workload num_warps=$w" >>"$OUT/sweep.txt"
    timeout 120 "$PY" benchmarks/run.py --gpu --only "$workload" --variant tegula --variant triton \
      --num-warps "$workload=$w" --no-md 2>&1 | grep -E "tegula|triton|copy|Copy" >>"$OUT/sweep.txt"
  done
done
