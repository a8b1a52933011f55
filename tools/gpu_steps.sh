# The budget and step bookkeeping of the GPU check scripts (tools/gpu_check.sh,
# gpu_torch_check.sh, gpu_ddp_check.sh), sourced by each after it has set OUT,
# BUDGET (seconds for the whole run), PY and JOBS. Starts the clock and an empty
# $OUT/summary.txt; FAILED counts the failed steps.

START=$(date +%s)
FAILED=0
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

elapsed() { echo $(($(date +%s) - START)); }
# Seconds a step may take: what is left of the budget minus `reserve` for the
# steps after it, capped at `cap`, at least 10.
allowance() {
  local cap=$1 reserve=$2 left=$((BUDGET - $(elapsed) - $2))
  ((left > cap)) && left=$cap
  ((left < 10)) && left=10
  echo "$left"
}
note() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME LOG SECONDS COMMAND...: runs COMMAND under a time limit, appends its
# output to LOG, records the outcome (and the tail of LOG when it failed) in the
# summary; never stops the script.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local t0=$(date +%s) status
  {
    echo "### $name: $* (limit ${limit}s)"
    timeout --kill-after=10 "$limit" "$@"
  } >>"$log" 2>&1
  status=$?
  local took=$(($(date +%s) - t0))
  if ((status == 0)); then
    note "PASS  $name (${took}s)"
  else
    FAILED=$((FAILED + 1))
    local why="exit $status"
    ((status == 124 || status == 137)) && why="timed out after ${limit}s"
    note "FAIL  $name (${took}s, $why; log: $(basename "$log"))"
    tail -n 25 "$log" | cut -c1-300 | sed 's/^/      | /' >>"$SUMMARY"
  fi
  return 0
}
skip() { note "SKIP  $1 ($2)"; }

# begin_summary NAME [MORE]: the summary's first lines: what ran, when, with what, at which commit.
# The GPU machine may get a copy of the working tree without its .git (or a stale one): pass
# GPU_CHECK_COMMIT=<hash> to record the commit.
begin_summary() {
  note "tegula $1: $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${BUDGET}s, $JOBS cores, python: $(command -v "$PY")"
  local commit="${GPU_CHECK_COMMIT:-}"
  if [ -z "$commit" ] && commit=$(git rev-parse --short HEAD 2>/dev/null); then
    git diff --quiet HEAD 2>/dev/null || commit="$commit (+ uncommitted changes)"
  fi
  note "commit: ${commit:-unknown}${2:+; $2}"
}

# build_tegula LOG CAP RESERVE: the editable install with $PY (offline: no build isolation, no
# downloads) unless SKIP_BUILD=1, then whether tegula and tegula.torch import: sets BUILT to 1 or 0.
build_tegula() {
  if [[ "${SKIP_BUILD:-0}" == 0 ]]; then
    step build "$1" "$(allowance "$2" "$3")" "$PY" -m pip install --no-build-isolation --no-deps --no-index -e .
  else
    skip build "SKIP_BUILD=1"
  fi
  if "$PY" -c "import tegula, tegula._C, tegula.torch" >>"$1" 2>&1; then
    BUILT=1
  else
    note "      tegula (or tegula.torch) does not import after the build; the other steps are skipped"
    BUILT=0
  fi
}
