# Sourced by the GPU machine's scripts (check_all.sh, stage.sh, and others):
# bounded, timed steps with one summary line each.
# shellcheck shell=bash
#
# After sourcing it, a script calls steps_begin LOG DEADLINE: the log file (emptied, its folder made)
# and the seconds since the script began by which every step must be done. BUILD (default build/gpu;
# BIN is its bin/), STEP_WIDTH (the name column, default 34) and STEP_MIN_LEFT (below this many
# seconds left a step is skipped, default 15) are optional. STEP_DRY_RUN=1 logs
# each step's command instead of running it: a script's plumbing checked on a
# machine without a GPU.

BUILD=${BUILD:-build/gpu}
BIN=${BIN:-$BUILD/bin}

# steps_begin LOG DEADLINE: where the steps log, and by when they must be done.
steps_begin() {
  LOG=$1
  DEADLINE=$2
  SUMMARY=()
  mkdir -p "$(dirname "$LOG")"
  : >"$LOG"
}

say() { echo "$*" | tee -a "$LOG"; }

# step NAME MAX_SECONDS COMMAND...: runs COMMAND (output to the log) under a
# timeout of MAX_SECONDS or what is left before the deadline, and records
# NAME, its verdict and its time for the summary. Always returns 0: a failed
# step is reported, and the steps after it still run.
step() {
  local name=$1 max=$2
  shift 2
  local width=${STEP_WIDTH:-34} left=$((DEADLINE - SECONDS))
  if ((left < ${STEP_MIN_LEFT:-15})); then
    SUMMARY+=("$(printf "%-${width}s skipped: the %ss deadline is near" "$name" "$DEADLINE")")
    say "==> $name: skipped, ${left}s left"
    return 0
  fi
  local limit=$((max < left ? max : left))
  say ""
  say "==> $name (limit ${limit}s): $*"
  local start=$SECONDS
  if [ "${STEP_DRY_RUN:-0}" = 1 ]; then
    SUMMARY+=("$(printf "%-${width}s %-18s %4ss" "$name" "dry run" 0)")
    return 0
  fi
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$? took=$((SECONDS - start)) verdict=ok
  ((rc == 124 || rc == 137)) && verdict="TIMED OUT"
  ((rc != 0 && rc != 124 && rc != 137)) && verdict="FAILED (exit $rc)"
  SUMMARY+=("$(printf "%-${width}s %-18s %4ss" "$name" "$verdict" "$took")")
  say "<== $name: $verdict after ${took}s"
  return 0
}
