#!/usr/bin/env bash
# Every GPU test binary under compute-sanitizer: memcheck (out-of-bounds and
# misaligned device accesses, leaks of device memory, errors of CUDA calls),
# racecheck (shared-memory races) and synccheck (__syncthreads in divergent
# code). One line per tool and binary (tools/gpu/sanitizer_verdict.py): clean,
# the errors found, the tests that failed, a crash, or the time budget spent
# with the number of tests it covered. Exit status 1 when a run found an
# error, a test failed or a binary crashed; a budget spent is no failure (what
# it covered was clean), nor is a filter that matches no test of a binary
# (that binary is not run).
#
#   tools/gpu/sanitize.sh [BUILD_DIR]          (default build/gpu, as tools/gpu/stage0N.sh build it)
#
# The binaries are BUILD_DIR/bin/s0[456]_tests_solution, whichever exist.
# Without an NVIDIA GPU or driver it prints one line and exits 77 (skipped).
#
# Left out of every run: the suites *_Safety and *_FaultMessages, which start
# other processes (trainers; bin/s04_planted_faults, whose faults are planted
# on purpose and would count as errors). tools/gpu/robustness.sh runs them.
#
# Environment:
#   SANITIZE_TOOLS     the tools to run (default "memcheck racecheck synccheck")
#   SANITIZE_FILTER    a gtest filter for every binary (default: every test)
#   SANITIZE_TIMEOUT   seconds per tool and binary (default 1800): the budget; a run past it stops
#                      and reports the tests it covered
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

# The filter every run gets: SANITIZE_FILTER, less the suites that start other processes.
LEFT_OUT='*_Safety.*:*_FaultMessages.*'
case "${SANITIZE_FILTER:-*}" in
  *-*) FILTER="${SANITIZE_FILTER}:${LEFT_OUT}" ;;
  *) FILTER="${SANITIZE_FILTER:-*}-${LEFT_OUT}" ;;
esac
echo "sanitize: filter $FILTER; budget ${TIMEOUT}s per tool and binary"

failed=0
for binary in "${binaries[@]}"; do
  name=$(basename "$binary")
  # The tests the filter selects (GoogleTest lists them as "  Name" under "Suite.").
  listed=$("$binary" --gtest_list_tests --gtest_filter="$FILTER" 2>/dev/null | grep -c '^  ')
  if [ "${listed:-0}" -eq 0 ]; then
    printf 'sanitize: %-10s %-20s no test matches the filter: not run\n' "-" "$name"
    continue
  fi
  for tool in $TOOLS; do
    log=$LOGS/$name.$tool.log
    out=$LOGS/$name.$tool.out
    extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check "${SANITIZE_LEAK_CHECK:-no}")
    start=$SECONDS
    # COURSE_GPU_TEST_TIMEOUT=0: the budget here is the limit, not the tests' own
    # (tests/support/gpu_fault_report.cpp), which the sanitizer's slowness would trip.
    COURSE_GPU_TEST_TIMEOUT=0 timeout --kill-after=20 "$TIMEOUT" "$SANITIZER" --tool "$tool" "${extra[@]}" \
      --error-exitcode 99 --print-limit 100 --log-file "$log" "$binary" --gtest_color=no \
      --gtest_filter="$FILTER" >"$out" 2>&1
    rc=$?
    python3 tools/gpu/sanitizer_verdict.py --tool "$tool" --binary "$name" --log "$log" --out "$out" --rc "$rc" \
      --timeout "$TIMEOUT" --listed "$listed" --seconds $((SECONDS - start)) || failed=1
  done
done
exit $failed
