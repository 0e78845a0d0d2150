#!/usr/bin/env bash
# What a learner meets on a GPU, checked in one call of the GPU machine: every GPU stage's
# tests on both tracks (the solutions pass; every exercise hole fails naming its task, with
# the message a learner reads), the failure messages on planted mistakes
# (tools/gpu/planted_messages), and the GPU suite again, in parallel, to catch a flaky test.
#
#   OUT=/some/folder tools/gpu/learner_checks.sh [build|tests|planted|all]
#   (ROUNDS: how many times the GPU tests run, default 2; PLANTED: which planted mistakes, default all)
#
# `build` configures build/gpu (both tracks, sm_90) and builds the test programs of every stage
# and the programs tools/replicate.py runs; `tests` runs the solution track's GPU tests twice with ctest -j6 and the exercise
# proof; `planted` runs tools/gpu/planted_messages/run.sh; `all` does the three. Each step is
# bounded (DEADLINE, default 560 s) so one call of the device tool holds it; on a warm machine
# the next call finds build/gpu as this one left it.
set -u -o pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-all}
OUT=${OUT:-$PWD/out-learner}
. tools/gpu/steps.sh
steps_begin "$OUT/learner_checks_$MODE.log" "${DEADLINE:-560}"

GENERATOR=()
KEEP_GOING=(-- -k)  # one failure does not stop the rest of the build
command -v ninja >/dev/null && GENERATOR=(-G Ninja) && KEEP_GOING=(-- -k 0)
TARGETS=()
for s in 01 02 03 04 05 06 07 08 09; do TARGETS+=(s${s}_tests_solution s${s}_tests_exercise); done
TARGETS+=(common_tests)
# And what tools/replicate.py runs (the trainers, the pooling study), so that tools/gpu/replicate.sh run
# finds them in the same build.
TARGETS+=($(python3 -c 'import sys; sys.path.insert(0, "tools"); import replicate; print(" ".join(replicate.targets_for("", True)))'))

say "learner_checks $MODE on $(hostname), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$LOG" 2>&1
if [ "$MODE" = build ] || [ "$MODE" = all ]; then
  step configure 120 cmake -S . -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DCOURSE_WERROR=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCOURSE_BUILD_BENCHMARKS=OFF -DCMAKE_PREFIX_PATH="$PWD/.carry/prefix"
  step build 480 cmake --build "$BUILD" -j16 --target "${TARGETS[@]}" "${KEEP_GOING[@]}"
  grep -E "error|Error" "$LOG" | head -40 >"$OUT/build_errors.txt"
fi
if [ "$MODE" = tests ] || [ "$MODE" = all ]; then
  for round in $(seq "${ROUNDS:-2}"); do
    step "ctest GPU solution, round $round" 200 ctest --test-dir "$BUILD" -L solution -R "^s0[4-9]/" -j6 \
      --timeout 180 --output-on-failure
  done
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|\*\*\*" "$LOG" | tail -40 >"$OUT/ctest_summary.txt"
  step "exercise proof (04-09)" 240 bash -c 'for s in 04_cuda_matmul 05_im2col_gemm 06_cudnn 07_fast_gemm 08_fused 09_multi_gpu; do
      python3 tools/prove_exercises.py --build-dir '"$BUILD"' --stage $s || exit 1; done'
  # The first lines of every exercise test's failure: what a learner reads for each untouched task.
  step "exercise messages" 120 bash -c 'for s in 04 05 06 07 08 09; do
      '"$BUILD"'/bin/s${s}_tests_exercise --gtest_brief=1 --gtest_color=no 2>&1 | grep -v "^\[" | head -400; done' 
  sed -n '/==> exercise messages/,/<== exercise messages/p' "$LOG" >"$OUT/exercise_messages.txt"
fi
if [ "$MODE" = planted ] || [ "$MODE" = all ]; then
  # PLANTED names some of the patches (the 07 and 08 ones rebuild the most).
  # shellcheck disable=SC2086
  step "planted mistakes" 420 env OUT="$OUT" BUILD="$BUILD" JOBS=16 tools/gpu/planted_messages/run.sh ${PLANTED:-}
fi
say ""
say "summary ($MODE, ${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
