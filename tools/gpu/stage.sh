#!/usr/bin/env bash
# One stage on the GPU machine, in one bounded call of the device tool: configure, build, tests, the
# stage's trainer runs and sweeps, compute-sanitizer, benchmarks, the exercise proof, a summary.
#
#   OUT=/some/folder tools/gpu/stage.sh NN [ARGS...]      NN: 04 ... 09; ARGS go to the stage's runs
#
# What every stage does the same way is written here once; a stage's own runs are tools/gpu/stages/NN.sh
# (sourced, with ARGS as its arguments), which read like this:
#
#   stage_begin 460                     the deadline (STAGENN_DEADLINE overrides it) and the header; the
#                                       stage's folder, targets and proof follow from the stage list (stages/NN_*)
#   stage_configure 150 -DCOURSE_WERROR=ON
#   stage_build 300 s05_bench           the stage's trainer and test binaries of both tracks, and these
#   stage_tests 180                     its test binary, every test, a JSON report
#   stage_train NAME LIMIT BINARY ARGS  one trainer run, its JSON kept as train_NAME.json
#   stage_sanitize TOOL LIMIT FILTER    compute-sanitizer's TOOL on the test binary, the tests of FILTER
#   stage_prove 120                     every exercise hole of the stage fails its tests
#   stage_summary                       the steps' verdicts, the test tally, the epochs of every run
#   stage_end                           results.tar.gz of the work folder, which is then removed
#
# Everything goes to $OUT/stageNN.log (OUT defaults to out-stageNN in the repository root); a step is bounded
# by its limit and by the deadline (tools/gpu/steps.sh). The stage's files, kept in $WORK, come back in
# $OUT/results.tar.gz (the device tool returns at most 8 files). Variables a stage's runs may read after
# stage_begin: NN, STAGE_ID, ROOT, OUT, WORK, LOG, BUILD, BIN, SANITIZER, GENERATOR, DATA_ARGS, CARRY_ARGS.
# STEP_DRY_RUN=1 logs every step's command instead of running it (tools/tests/test_gpu_stage_scripts.py).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# stage_begin DEADLINE: the stage of the stage list (stages/NN_*), the folders, the log and the machine.
stage_begin() {
  STAGE_ID=$(cd "$ROOT/stages" && find . -maxdepth 1 -type d -name "${NN}_*" | sed 's#^\./##' | head -n 1)
  if [ -z "$STAGE_ID" ]; then
    echo "no stage $NN: no folder stages/${NN}_* in $ROOT" >&2
    exit 2
  fi
  cd "$ROOT" || exit 1
  OUT=${OUT:-$ROOT/out-stage$NN}
  WORK=$(mktemp -d)
  BUILD=build/gpu
  BIN=$BUILD/bin
  STEP_WIDTH=${STEP_WIDTH:-34}
  # shellcheck source=tools/gpu/steps.sh
  . "$ROOT/tools/gpu/steps.sh"
  local override=STAGE${NN}_DEADLINE
  steps_begin "$OUT/stage$NN.log" "${!override:-$1}"  # seconds since the script began; under the device call's limit

  say "stage $NN ($STAGE_ID) on $(hostname) at $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv 2>&1 | tee -a "$LOG"
  say "nvcc: $(nvcc --version 2>&1 | tail -n 2 | head -n 1)"
  say "cmake: $(cmake --version | head -n 1)"
  say "cpu: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

  # A build folder that exists keeps its generator (CMake refuses another); a new one gets ninja if there.
  GENERATOR=()
  [ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null && GENERATOR=(-G Ninja)
  SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  DATA_ARGS=()
  if [ -d data/fashion-mnist ]; then
    DATA_ARGS=(--data-dir data/fashion-mnist)
  else
    say "WARNING: no data/fashion-mnist: the trainers fall back to the synthetic set, and the accuracy figures mean nothing"
  fi
  # GoogleTest and Google Benchmark where the machine has none: .carry/prefix (tools/gpu/carry_test_libs.sh).
  local prefix=$ROOT/.carry/prefix arch_lib=lib/x86_64-linux-gnu
  CARRY_ARGS=(-DCMAKE_PREFIX_PATH="$prefix")
  if [ -d "$prefix" ]; then
    export LD_LIBRARY_PATH="$prefix/$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    CARRY_ARGS+=(-DGTest_DIR="$prefix/$arch_lib/cmake/GTest" -Dbenchmark_DIR="$prefix/$arch_lib/cmake/benchmark")
  fi
}

# stage_configure LIMIT [CMAKE ARGS...]: build/gpu for sm_90, Release; the stage adds what it needs
# (-DCOURSE_WERROR=..., tracks, benchmarks, NCCL).
stage_configure() {
  local limit=$1
  shift
  step configure "$limit" cmake -S . -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${CARRY_ARGS[@]}" "$@"
  grep -E "\[course\] stage $STAGE_ID" "$LOG" | tail -n 1
}

# stage_build LIMIT [TARGETS...]: the stage's trainer and solution tests, and the targets named.
stage_build() {
  local limit=$1
  shift
  step build "$limit" cmake --build "$BUILD" -j16 --target "s${NN}_train_solution" "s${NN}_tests_solution" "$@"
}

# stage_tests LIMIT [GTEST ARGS...]: the tests first; nothing after them means much if they fail.
stage_tests() {
  local limit=$1
  shift
  step tests "$limit" "$BIN/s${NN}_tests_solution" --gtest_color=no --gtest_output="json:$WORK/tests.json" "$@"
}

# stage_train NAME LIMIT BINARY ARGS...: one run on Fashion-MNIST (if here), its JSON in $WORK/train_NAME.json.
stage_train() {
  local name=$1 limit=$2 exe=$3
  shift 3
  step "train $name" "$limit" "$exe" "$@" "${DATA_ARGS[@]}" --no-progress --json "$WORK/train_$name.json"
}

# stage_sanitize TOOL LIMIT FILTER [BINARY]: compute-sanitizer's TOOL (memcheck, racecheck, synccheck) on the
# tests of FILTER, its report in $WORK/TOOL.log; any error it finds fails the step.
stage_sanitize() {
  local tool=$1 limit=$2 filter=$3 exe=${4:-$BIN/s${NN}_tests_solution}
  step "$tool" "$limit" "$SANITIZER" --tool "$tool" --error-exitcode 99 --print-limit 50 \
    --log-file "$WORK/$tool.log" "$exe" --gtest_color=no --gtest_brief=1 --gtest_filter="$filter"
}

# stage_sanitizer_tails LINES: the end of each sanitizer's report, in the log and on screen.
stage_sanitizer_tails() {
  local tool
  for tool in memcheck racecheck synccheck; do
    [ -f "$WORK/$tool.log" ] && { say "--- $tool.log (last $1 lines)"; tail -n "$1" "$WORK/$tool.log" | tee -a "$LOG"; }
  done
  return 0
}

# stage_prove LIMIT: every hole of the stage's exercises fails its tests (the exercise tests must be built).
stage_prove() {
  step "prove exercises" "$1" python3 tools/prove_exercises.py --build-dir "$BUILD" --stage "$STAGE_ID"
}

# stage_summary: the steps' verdicts, then the test tally of the log.
stage_summary() {
  say ""
  say "================ summary (${SECONDS}s) ================"
  local line
  for line in "${SUMMARY[@]}"; do say "$line"; done
  say ""
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST|exercise holes caught|passed, .* failed" "$LOG" |
    head -n 40 | tee -a "$WORK/summary_tests.txt"
  say ""
}

# stage_epochs: one line per epoch of every train_*.json (seconds, images/s, loss, test accuracy, the data).
stage_epochs() {
  python3 tools/gpu/epoch_lines.py "$WORK"/train_*.json 2>&1 | tee -a "$LOG"
}

# stage_end: the work folder into $OUT/results.tar.gz, then removed.
stage_end() {
  tar -czf "$OUT/results.tar.gz" -C "$WORK" . 2>>"$LOG"
  rm -rf "$WORK"
  say "logs in $OUT"
}

NN=${1:-}
RUNS=$ROOT/tools/gpu/stages/$NN.sh
if [ -z "$NN" ] || [ ! -f "$RUNS" ]; then
  echo "usage: tools/gpu/stage.sh NN [ARGS...], NN one of: $(cd "$ROOT/tools/gpu/stages" && ls -- *.sh | sed 's/\.sh$//' | paste -sd ' ')" >&2
  exit 2
fi
shift
# shellcheck source=/dev/null
. "$RUNS"
