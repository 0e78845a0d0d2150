#!/usr/bin/env bash
# Every stage on the GPU machine in one call, bounded so it fits one device
# run: build the solution track, run every test (CPU and GPU), run the GPU
# tests under compute-sanitizer, and train for the figures the lessons quote.
#
#   OUT=/some/folder tools/gpu/check_all.sh verify    tests, sanitizers, trainer figures
#   OUT=/some/folder tools/gpu/check_all.sh compare   the stage comparison and both sweeps
#
# Needs CLI11 and nlohmann-json in .carry/include and Fashion-MNIST in
# data/fashion-mnist (carried with the call). Logs and figures land in $OUT.
set -u -o pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-verify}
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/figures"
STEP_MIN_LEFT=10
. tools/gpu/steps.sh
steps_begin "$OUT/all.log" "${DEADLINE:-555}"

train() {  # train NAME BINARY ARGS...: one trainer run, its JSON kept among the figures
  local name=$1 exe=$2
  shift 2
  [ -x "$exe" ] || { SUMMARY+=("$(printf '%-34s not built' "train $name")"); return 0; }
  step "train $name" 90 "$exe" "$@" --no-progress --json "$OUT/figures/$name.json"
}

# sanitize_step NAME MAX_SECONDS VAR=VALUE...: tools/gpu/sanitize.sh with those settings
# (SANITIZE_TOOLS, SANITIZE_FILTER, SANITIZE_TIMEOUT) as one step; its line per tool and
# binary (clean, errors, a budget spent with the tests it covered, no test matched) joins
# the summary. The step fails only when sanitize.sh does: an error, a failed test, a crash.
sanitize_step() {
  local name=$1 max=$2
  shift 2
  local lines=$OUT/sanitize_${#SUMMARY[@]}.txt
  step "$name" "$max" env "$@" SANITIZE_LOG_DIR="$OUT/sanitize" \
    bash -c 'set -o pipefail; tools/gpu/sanitize.sh "$0" | tee "$1"' "$BUILD" "$lines"
  while IFS= read -r line; do SUMMARY+=("    ${line#sanitize: }"); done \
    < <(grep -E '^sanitize: (memcheck|racecheck|synccheck|initcheck|-) ' "$lines" 2>/dev/null)
}

say "check_all $MODE on $(hostname), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1
step "configure" 90 cmake -S . -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 -DCOURSE_TRACKS=solution
if [ "$MODE" = sanitize ]; then
  # The sanitizer runs that need minutes, and the im2col workspace trade-off.
  step "build" 300 cmake --build "$BUILD" -j16 --target s04_tests_solution s05_tests_solution \
    s06_tests_solution s05_train_solution
  # Budgets per tool and binary; a binary the filter selects nothing of is not run.
  sanitize_step "racecheck (stage 04, 05)" 220 SANITIZE_TOOLS=racecheck SANITIZE_TIMEOUT=95 \
    SANITIZE_FILTER='Task4_4*:Task4_5*:Task5_*:-*Engine*:*Training*:*Steps*:*AllSizes*'
  sanitize_step "memcheck (stage 06)" 130 SANITIZE_TOOLS=memcheck SANITIZE_TIMEOUT=90 \
    SANITIZE_FILTER='Task6_*:Stage06_*:-*Batch64*:*TwoEpochs*'
  train s05_unroll_image "$BIN/s05_train_solution" --model cnn --epochs 2 --unroll image
  train s05_unroll_batch "$BIN/s05_train_solution" --model cnn --epochs 2 --unroll batch
  train s05_unroll_image_cublas "$BIN/s05_train_solution" --model cnn --epochs 2 --unroll image --kernel 0
elif [ "$MODE" = compare ]; then
  step "build" 300 cmake --build "$BUILD" -j16
  step "ctest -L gpu" 120 ctest --test-dir "$BUILD" -L gpu -j4 --timeout 100 --output-on-failure
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$LOG" | tail -20 >"$OUT/ctest_summary.txt"
  # The default recipe's accuracy: stage 01's MLP for 10 epochs (CPU, in the background
  # while the GPU trains) and the CNN for 15 epochs on stage 06.
  "$BIN/s01_train_solution" --model mlp --epochs 10 --no-progress --json "$OUT/figures/s01_mlp_10.json" \
    >"$OUT/figures/s01_mlp_10.log" 2>&1 &
  train s06_cnn_15 "$BIN/s06_train_solution" --model cnn --epochs 15
  train s06_cnn_nograph "$BIN/s06_train_solution" --model cnn --epochs 3 --graph off
  train s06_cnn_deep_profile "$BIN/s06_train_solution" --model cnn-deep --epochs 1 --profile --graph off
  train s06_cnn_profile "$BIN/s06_train_solution" --model cnn --epochs 1 --profile --graph off
  train s05_cnn_profile "$BIN/s05_train_solution" --model cnn --epochs 1 --profile
  wait
  step "compare --all" 330 python3 tools/compare.py --all --epochs 2 --build-dir "$BUILD" --out "$OUT/figures/compare"
else
  step "build" 300 cmake --build "$BUILD" -j16
  step "ctest -L solution" 200 ctest --test-dir "$BUILD" -L solution -j6 --timeout 180 --output-on-failure
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$LOG" | tail -40 >"$OUT/ctest_summary.txt"
  # Budgets per tool and binary (45 s, 15 s): a budget spent is reported with the tests it
  # covered, and is no failure; s06 has no test the second filter selects, and is not run.
  sanitize_step "memcheck (GPU tests)" 170 SANITIZE_TOOLS=memcheck SANITIZE_TIMEOUT=45 \
    SANITIZE_FILTER='-*Batch64*:*TwoEpochs*:*AllSizes*'
  sanitize_step "racecheck+synccheck (kernels)" 100 SANITIZE_TOOLS="racecheck synccheck" SANITIZE_TIMEOUT=15 \
    SANITIZE_FILTER='Task4_4*:Task4_5*:Task5_*:-*Engine*:*Training*:*Steps*'
  train s04_mlp_b64 "$BIN/s04_train_solution" --model mlp --epochs 2 --batch 64
  train s04_mlp_b256 "$BIN/s04_train_solution" --model mlp --epochs 2 --batch 256
  train s05_cnn "$BIN/s05_train_solution" --model cnn --epochs 2
  train s05_cnn_cublas "$BIN/s05_train_solution" --model cnn --epochs 2 --kernel 0
  train s06_cnn_graph "$BIN/s06_train_solution" --model cnn --epochs 15 --graph on
  train s06_cnn_nograph "$BIN/s06_train_solution" --model cnn --epochs 2 --graph off
  train s05_cnn_deep_profile "$BIN/s05_train_solution" --model cnn-deep --epochs 1 --profile
  train s06_cnn_deep_profile "$BIN/s06_train_solution" --model cnn-deep --epochs 1 --profile --graph off
  step "matmul sweep" 60 "$BIN/s04_matmul_sweep" --csv "$OUT/figures/matmul_sweep.csv"
fi
tar -czf "$OUT/figures.tar.gz" -C "$OUT" figures sanitize 2>/dev/null || tar -czf "$OUT/figures.tar.gz" -C "$OUT" figures
rm -rf "$OUT/figures" "$OUT/sanitize"
say ""
say "summary ($MODE, ${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
