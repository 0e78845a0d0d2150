#!/usr/bin/env bash
# Every GPU test binary under compute-sanitizer: memcheck (out-of-bounds and
# misaligned device accesses, leaks of device memory, errors of CUDA calls),
# racecheck (shared-memory races) and synccheck (__syncthreads in divergent
# code). One line per tool and binary, then the exit status: 0 when every run
# is clean, 1 when any tool reported an error, a test failed or a run timed out.
#
#   tools/gpu/sanitize.sh [BUILD_DIR]          (default build/gpu, as tools/gpu/stage0N.sh build it)
#
# The binaries are BUILD_DIR/bin/s0[456]_tests_solution, whichever exist.
# Without an NVIDIA GPU or driver it prints one line and exits 77 (skipped).
#
# Environment:
#   SANITIZE_TOOLS     the tools to run (default "memcheck racecheck synccheck")
#   SANITIZE_FILTER    a gtest filter for every binary (default: every test)
#   SANITIZE_TIMEOUT   seconds per tool and binary (default 1800); a run past it counts as a failure
#   SANITIZE_LEAK_CHECK memcheck's --leak-check (default no: handles of cuBLAS and cuDNN that a
#                      test binary keeps until exit would be reported; "full" to look anyway)
#   SANITIZE_LOG_DIR   where the full logs go (default $OUT if set, else BUILD_DIR/sanitize)
set -u -o pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build/gpu}
TOOLS=${SANITIZE_TOOLS:-memcheck racecheck synccheck}
TIMEOUT=${SANITIZE_TIMEOUT:-1800}
LOGS=${SANITIZE_LOG_DIR:-${OUT:-$BUILD/sanitize}}

if ! command -v nvidia-smi >/dev/null || ! gpus=$(nvidia-smi -L 2>&1) || [ -z "$gpus" ]; then
  echo "sanitize: skipped: no NVIDIA GPU or driver on $(hostname) (${gpus:-nvidia-smi not found})"
  exit 77
fi
SANITIZER=$(command -v compute-sanitizer || true)
[ -z "$SANITIZER" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && SANITIZER=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$SANITIZER" ]; then
  echo "sanitize: compute-sanitizer not found (it comes with the CUDA toolkit, in /usr/local/cuda/bin)"
  exit 2
fi
shopt -s nullglob
binaries=("$BUILD"/bin/s0[456]_tests_solution)
if [ ${#binaries[@]} -eq 0 ]; then
  echo "sanitize: no GPU test binaries in $BUILD/bin (build s04_tests_solution, s05_tests_solution or s06_tests_solution first)"
  exit 2
fi
mkdir -p "$LOGS"
echo "sanitize: $(head -n 1 <<<"$gpus"); $("$SANITIZER" --version | tail -n 1); logs in $LOGS"

failed=0
for binary in "${binaries[@]}"; do
  name=$(basename "$binary")
  for tool in $TOOLS; do
    log=$LOGS/$name.$tool.log
    out=$LOGS/$name.$tool.out
    extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check "${SANITIZE_LEAK_CHECK:-no}")
    start=$SECONDS
    timeout --kill-after=20 "$TIMEOUT" "$SANITIZER" --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      --print-limit 100 --log-file "$log" "$binary" --gtest_color=no --gtest_brief=1 \
      ${SANITIZE_FILTER:+--gtest_filter="$SANITIZE_FILTER"} >"$out" 2>&1
    rc=$?
    took=$((SECONDS - start))
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" 2>/dev/null | tail -n 1)
    passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
    failing=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
    skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
    if ((rc == 124 || rc == 137)); then
      verdict="TIMED OUT after ${TIMEOUT}s"
    elif ((rc == 99)) || [ "${errors:-0}" != 0 ]; then
      verdict="${errors:-some} ERRORS"
    elif ((rc != 0)); then
      verdict="FAILED (exit $rc)"
    else
      verdict="clean"
    fi
    [ "$verdict" = clean ] || failed=1
    printf 'sanitize: %-10s %-20s %-24s %4s passed %3s failed %3s skipped  %5ss  %s\n' "$tool" "$name" "$verdict" \
      "${passed:-0}" "${failing:-0}" "${skipped:-0}" "$took" "$log"
  done
done
exit $failed
