#!/usr/bin/env bash
# Stage 04 on the GPU machine, in one call: configure, build, test, train,
# sweep the matmul kernels, sanitize, benchmark and prove the exercise holes.
# Every step is timed and bounded so the whole run stays under 8 minutes.
#
#   OUT=/some/folder tools/gpu/stage04.sh        (run from anywhere; it works in the repository root)
#
# Needs: nvcc and cmake (the GPU image has both); CLI11 and nlohmann-json in
# .carry/include; GoogleTest and Google Benchmark where CMake finds them (the
# system, or .carry/prefix, which tools/gpu/carry_test_libs.sh fills on a
# Debian machine); Fashion-MNIST in data/fashion-mnist (otherwise the trainer
# says so and falls back to the synthetic set).
#
# What comes back under $OUT (at most 8 files, the device tool's limit):
#   stage04.log       everything, step by step, with the summary at its end
#   matmul_sweep.csv  every kernel at every size (and the MLP's GEMMs): GFLOP/s, % of cuBLAS, error
#   bench.json        Google Benchmark's figures (BM_Matmul, BM_Dense*, BM_TrainStep_MLP*)
#   results.tar.gz    the trainer's JSON files, the test report, the sanitizer logs
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-stage04}
mkdir -p "$OUT"
WORK=$(mktemp -d)
LOG="$OUT/stage04.log"
BUILD=build/gpu
BIN=$BUILD/bin
DEADLINE=${STAGE04_DEADLINE:-460}  # seconds; the device call allows 480 for this script
SUMMARY=()
: >"$LOG"

STEP_WIDTH=28
. tools/gpu/steps.sh

say "stage 04 on $(hostname) at $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee -a "$LOG"
say "nvcc: $(nvcc --version 2>&1 | tail -n 2 | head -n 1)"
say "cmake: $(cmake --version | head -n 1)"

GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
DATA_ARGS=()
[ -d data/fashion-mnist ] && DATA_ARGS=(--data-dir data/fashion-mnist)

step configure 150 cmake -S . -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DCOURSE_WERROR=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$PWD/.carry/prefix"
step build 300 cmake --build "$BUILD" -j16 --target s04_train_solution s04_tests_solution s04_tests_exercise \
  s04_bench s04_matmul_sweep

# The tests first: nothing below means anything if they fail.
step tests 180 "$BIN/s04_tests_solution" --gtest_color=no --gtest_output="json:$WORK/tests.json"

# The epoch times of the issue: batch 64 and 256 on the default kernel; then cuBLAS and the
# tiled kernel for comparison, and a profiled epoch (per-layer GPU times).
for run in "b64 --epochs 2 --batch 64" "b256 --epochs 2 --batch 256" "b64_cublas --epochs 2 --batch 64 --kernel 0" \
           "b256_cublas --epochs 2 --batch 256 --kernel 0" "b64_tiled32 --epochs 2 --batch 64 --kernel 5" \
           "b64_profile --epochs 1 --batch 64 --profile"; do
  set -- $run
  name=$1
  shift
  step "train $name" 90 "$BIN/s04_train_solution" --model mlp "$@" "${DATA_ARGS[@]}" --no-progress \
    --json "$WORK/train_$name.json"
done

step "matmul sweep" 180 "$BIN/s04_matmul_sweep" --mlp --csv "$OUT/matmul_sweep.csv"
step "matmul sweep, one block" 30 "$BIN/s04_matmul_sweep" --sizes 16,32 --kernels 0,1,2,3,4,5,6 --csv "$WORK/matmul_sweep_small.csv"

# compute-sanitizer: memcheck on every test but the 1000-1025 cubes (minutes under the tool)
# and the suites that start other processes (trainers; the planted faults, errors on purpose),
# racecheck and synccheck on the kernels that use shared memory and __syncthreads.
step memcheck 150 "$SANITIZER" --tool memcheck --error-exitcode 99 --print-limit 50 --log-file "$WORK/memcheck.log" \
  "$BIN/s04_tests_solution" --gtest_color=no --gtest_brief=1 --gtest_filter='-*LargeSizes*:*_Safety.*:*_FaultMessages.*'
step racecheck 90 "$SANITIZER" --tool racecheck --error-exitcode 99 --print-limit 50 --log-file "$WORK/racecheck.log" \
  "$BIN/s04_tests_solution" --gtest_color=no --gtest_brief=1 --gtest_filter='Task4_4_*Small*:Task4_5_*Small*'
step synccheck 60 "$SANITIZER" --tool synccheck --error-exitcode 99 --print-limit 50 --log-file "$WORK/synccheck.log" \
  "$BIN/s04_tests_solution" --gtest_color=no --gtest_brief=1 --gtest_filter='Task4_4_*Small*:Task4_5_*Small*'
for tool in memcheck racecheck synccheck; do
  [ -f "$WORK/$tool.log" ] && { say "--- $tool.log (last 15 lines)"; tail -n 15 "$WORK/$tool.log" | tee -a "$LOG"; }
done

step benchmarks 120 "$BIN/s04_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/bench.json" \
  --benchmark_out_format=json

step "prove exercises" 120 python3 tools/prove_exercises.py --build-dir "$BUILD" --stage 04_cuda_matmul

# ---- summary: step verdicts, the test tally, the epoch lines
say ""
say "================ summary (${SECONDS}s) ================"
for line in "${SUMMARY[@]}"; do say "$line"; done
say ""
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$LOG" | head -n 40 | tee -a "$WORK/summary_tests.txt"
say ""
for f in "$WORK"/train_*.json; do
  [ -f "$f" ] || continue
  python3 - "$f" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
r = json.load(open(sys.argv[1]))
name = sys.argv[1].rsplit("/", 1)[-1][6:-5]
for e in r.get("epochs", []):
    print(f"{name:12s} epoch {e['epoch']}: {e.get('seconds', 0):.3f} s  {e.get('images_per_second', 0):9.0f} img/s  "
          f"loss {e.get('loss') or float('nan'):.4f}  test {100 * e.get('test_accuracy', 0):.2f}%  "
          f"({r.get('device', '?')}, {r.get('data', {}).get('dataset', '?')})")
PY
done
tar -czf "$OUT/results.tar.gz" -C "$WORK" . 2>>"$LOG"
rm -rf "$WORK"
say "logs in $OUT"
