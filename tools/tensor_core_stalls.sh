#!/usr/bin/env bash
# Warp stall reasons, instructions, cycles and shared-memory bank conflicts of
# the benchmark's matmul and attention kernels, Tegula's and Triton's (same
# source), one launch each under ncu (GPU machine, after the package is built):
#   OUT=dir tools/tensor_core_stalls.sh      -> $OUT/ncu.txt
# Clocks are not locked (--clock-control none): compare cycles and per-
# instruction stalls, not durations.
set -u
OUT="${OUT:-./gpu-check-out}"
mkdir -p "$OUT"
M=""
for r in barrier long_scoreboard wait math_pipe_throttle mio_throttle lg_throttle short_scoreboard dispatch_stall \
         no_instruction branch_resolving selected not_selected drain; do
  M="$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="${M:1},sm__inst_executed.sum,sm__cycles_elapsed.max,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
timeout 400 ncu --clock-control none --kernel-name regex:'tegula_kernel|matmul_kernel|attention_fwd_kernel' \
  --metrics "$M" python3 "$(dirname "$0")/tensor_core_ab.py" --sizes 4096 --once >"$OUT/ncu.txt" 2>&1
grep -E "tegula_kernel|matmul_kernel|attention_fwd|smsp__|sm__|l1tex" "$OUT/ncu.txt" | sed -E 's/ +/ /g'
