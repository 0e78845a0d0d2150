#!/usr/bin/env bash
# The GPU stages' safety on the GPU machine, in one bounded call (about 5 to 7
# minutes on an H100 with 16 cores, the build included): checkpoint and resume
# bit for bit (after an epoch, after Ctrl-C at chosen steps, after a real SIGINT
# to each trainer inside an epoch), a diverging run stopped within a few steps
# of its first NaN with exit code 4, a GPU fault in a learner's kernel
# explained (planted faults: an illegal address, a refused launch, a kernel
# that never returns; through tools/course check too), and compute-sanitizer's
# verdicts (a spent budget and a filter that matches nothing are no failures;
# a real error is one, reported at its source line).
#
#   OUT=/some/folder tools/gpu/robustness.sh
#
# Needs what tools/gpu/check_all.sh needs: CLI11 and nlohmann-json in
# .carry/include, GoogleTest installed or in .carry/prefix. Logs land in $OUT
# (all.log, one JSON report per test step); the summary, one line per step,
# comes last, followed by the failures' first lines.
set -u -o pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$PWD/out-robustness}
STEP_MIN_LEFT=10
. tools/gpu/steps.sh
steps_begin "$OUT/all.log" "${DEADLINE:-420}"

say "robustness on $(hostname), $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$LOG" 2>&1

# ---- configure and build: the solution track (the folder check_all.sh uses; only the targets needed)
extra=()
PREFIX=$ROOT/.carry/prefix
ARCH_LIB=lib/x86_64-linux-gnu
if [ -d "$PREFIX" ]; then
  extra+=("-DCMAKE_PREFIX_PATH=$PREFIX" "-DGTest_DIR=$PREFIX/$ARCH_LIB/cmake/GTest"
          "-Dbenchmark_DIR=$PREFIX/$ARCH_LIB/cmake/benchmark")
  export LD_LIBRARY_PATH="$PREFIX/$ARCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
generator=()
command -v ninja >/dev/null && [ ! -f "$BUILD/Makefile" ] && generator=(-G Ninja)
step "configure" 90 cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCOURSE_TRACKS=solution -DCOURSE_WERROR=OFF "${extra[@]}"
# The stage test binaries pull in their trainers and bin/s04_planted_faults.
step "build" 300 cmake --build "$BUILD" -j16 --target s04_tests_solution s05_tests_solution s06_tests_solution \
  common_tests

# ---- the tests: each stage's safety suites, with a JSON report
gtest_step() {  # gtest_step NAME SECONDS BINARY FILTER
  local name=$1 limit=$2 exe=$3 filter=$4
  [ -x "$exe" ] || { SUMMARY+=("$(printf '%-34s not built' "$name")"); return 0; }
  step "$name" "$limit" "$exe" --gtest_color=no --gtest_filter="$filter" \
    --gtest_output="json:$OUT/$(basename "$exe").json"
}
gtest_step "common: late loss check, messages" 60 "$BIN/common_tests" \
  'DelayedLossCheck.*:TrainStepsChecked.*:TrainerLateLossCheck.*:GpuFaultMessage.*:TrainerResume.*:TrainerDivergence.*'
# The safety suite of every GPU stage (tests/gpu_stages/): each stage's binary runs its own row.
gtest_step "stage 04: safety, fault messages" 120 "$BIN/s04_tests_solution" '*GpuTrainer_Safety.*:Stage04_FaultMessages.*'
gtest_step "stage 05: safety" 120 "$BIN/s05_tests_solution" '*GpuTrainer_Safety.*'
gtest_step "stage 06: safety" 120 "$BIN/s06_tests_solution" '*GpuTrainer_Safety.*:Stage06_Safety.*'

# ---- a fault as `tools/course check` shows it: its check_tasks() on the planted binary
step "tools/course check on planted faults" 60 env COURSE_GPU_TEST_TIMEOUT=5 \
  python3 tools/gpu/course_check_faults.py "$BIN/s04_planted_faults"

# ---- compute-sanitizer's verdicts
# A budget that runs out (racecheck on the tiled kernels in 20 s) and filters that match
# no test of s05 and s06: reported as such, and no failure.
budget_and_empty_filters() {
  SANITIZE_LOG_DIR=$OUT/sanitize SANITIZE_TOOLS=racecheck SANITIZE_TIMEOUT=20 SANITIZE_FILTER='Task4_4*:Task4_5*' \
    tools/gpu/sanitize.sh "$BUILD" | tee "$OUT/sanitize_budget.txt"
  local rc=${PIPESTATUS[0]}
  grep -q "s05_tests_solution   no test matches the filter: not run" "$OUT/sanitize_budget.txt" &&
    grep -q "s06_tests_solution   no test matches the filter: not run" "$OUT/sanitize_budget.txt" &&
    grep -Eq "racecheck  s04_tests_solution .*(budget of 20s spent: [0-9]+ of [0-9]+ tests covered|clean)" \
      "$OUT/sanitize_budget.txt" && return "$rc"
  echo "the lines above lack 'no test matches the filter' for s05 and s06, or a budget/clean verdict for s04"
  return 1
}
# A real error still fails, named at its line: memcheck on the planted out-of-bounds write.
real_error_fails() {
  local log=$OUT/sanitize/planted.memcheck.log out=$OUT/sanitize/planted.memcheck.out
  mkdir -p "$OUT/sanitize"
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  COURSE_GPU_TEST_TIMEOUT=0 timeout 60 "$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 20 \
    --log-file "$log" "$BIN/s04_planted_faults" --gtest_color=no \
    --gtest_filter='Task4_2_PlantedOutOfBounds.WritesPastTheEndOfC' >"$out" 2>&1
  local rc=$?
  python3 tools/gpu/sanitizer_verdict.py --tool memcheck --binary s04_planted_faults --log "$log" --out "$out" \
    --rc "$rc" --timeout 60 --listed 1 --seconds 0 && { echo "a real error was not a failure"; return 1; }
  grep -m 3 -E "Invalid __global__ (write|read)|planted_kernels.cu:[0-9]+" "$log"
  grep -q "planted_kernels.cu:[0-9]" "$log" || { echo "memcheck named no source line (built without -lineinfo?)"; return 1; }
}
export ROOT OUT BUILD BIN
export -f budget_and_empty_filters real_error_fails
step "sanitize: budget, empty filters" 90 bash -c budget_and_empty_filters
step "sanitize: a real error fails, with its line" 70 bash -c real_error_fails

# ---- for the record: epoch times with the loss check (the README's tables were measured before it)
train() {  # train NAME BINARY ARGS...
  local name=$1 exe=$2
  shift 2
  step "train $name" 60 "$exe" "$@" --no-progress --json "$OUT/$name.json"
}
train s04_mlp "$BIN/s04_train_solution" --model mlp --epochs 3
train s06_cnn "$BIN/s06_train_solution" --model cnn --epochs 3
for f in "$OUT"/s04_mlp.json "$OUT"/s06_cnn.json; do
  [ -f "$f" ] && python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], 'data', j['data']['train_examples'], 'seconds per epoch', [round(e['seconds'], 3) for e in j['epochs']])" "$f" | tee -a "$LOG"
done

say ""
say "summary (robustness, ${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
failures=$(grep -E "^\[  FAILED  \] .*\([0-9]+ ms\)|Failure$|^GPU fault|NOT the faults|lacks|was not a failure|named no source" "$LOG" | head -20)
if [ -n "$failures" ]; then
  say ""
  say "first failure lines (all in $LOG):"
  say "$failures"
fi
