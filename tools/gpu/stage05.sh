#!/usr/bin/env bash
# Stage 05 on the GPU machine, in one call: configure, build, test, sanitize,
# benchmark, train on Fashion-MNIST and prove the exercise holes. Every step is
# timed and bounded so the whole run stays under 8 minutes.
#
#   OUT=/some/folder tools/gpu/stage05.sh        (run from anywhere; it works in the repository root)
#
# Needs: nvcc and cmake (the GPU image has both); CLI11 and nlohmann-json in
# .carry/include; GoogleTest and Google Benchmark where CMake finds them (the
# system, or .carry/prefix, which tools/gpu/carry_test_libs.sh fills on a
# Debian machine); Fashion-MNIST in data/fashion-mnist (otherwise the trainer
# says so and falls back to the synthetic set).
#
# What comes back under $OUT (at most 8 files, the device tool's limit):
#   stage05.log         everything, step by step, with the summary at its end
#   bench.json          Google Benchmark's figures (names end in /manual_time: CUDA-event timing)
#   bench_compare.json  the same without the /manual_time suffix, so that
#                       compare.py benchmarks s02.json bench_compare.json lines them up with stage 02
#   results.tar.gz      the trainer's JSON files, the test report, the sanitizer logs
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-stage05}
mkdir -p "$OUT"
WORK=$(mktemp -d)
LOG="$OUT/stage05.log"
BUILD=build/gpu
BIN=$BUILD/bin
DEADLINE=${STAGE05_DEADLINE:-460}  # seconds; the device call allows 480 for this script
SUMMARY=()
: >"$LOG"

STEP_WIDTH=30
. tools/gpu/steps.sh

say "stage 05 on $(hostname) at $(date -u +%FT%TZ)"
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
step build 300 cmake --build "$BUILD" -j16 --target s05_train_solution s05_tests_solution s05_tests_exercise s05_bench

# The tests first: nothing below means anything if they fail.
step tests 180 "$BIN/s05_tests_solution" --gtest_color=no --gtest_output="json:$WORK/tests.json"

# The epochs of the issue, batch 64: the own GEMM (kernel 6) and cuBLAS, each
# with the batch unrolled at once and one image at a time; the own GEMM with
# each weight gradient as one GEMM (--split-k 1) and in at most 8 chunks;
# profiled epochs of cnn and cnn-deep (per-layer GPU times); the MLP.
# Two epochs where the time is the point: the first includes the upload of the
# data set and the first use of every kernel (and of cuBLAS).
for run in "cnn_own_batch --model cnn --epochs 2" \
           "cnn_cublas_batch --model cnn --epochs 2 --kernel 0" \
           "cnn_own_image --model cnn --epochs 1 --unroll image" \
           "cnn_cublas_image --model cnn --epochs 1 --unroll image --kernel 0" \
           "cnn_own_batch_split1 --model cnn --epochs 1 --split-k 1" \
           "cnn_own_batch_split8 --model cnn --epochs 1 --split-k 8" \
           "cnn_profile --model cnn --epochs 1 --profile" \
           "cnn-deep_profile --model cnn-deep --epochs 1 --profile" \
           "cnn-deep_cublas_profile --model cnn-deep --epochs 1 --profile --kernel 0" \
           "mlp_own --model mlp --epochs 2"; do
  set -- $run
  name=$1
  shift
  step "train $name" 90 "$BIN/s05_train_solution" "$@" --batch 64 "${DATA_ARGS[@]}" --no-progress --verbose \
    --json "$WORK/train_$name.json"
done

# compute-sanitizer: memcheck on the tests (the trainer test and the three-channel
# cnn-deep comparison take minutes under the tool and add no new kernel; the safety
# tests start trainer processes), racecheck
# and synccheck on the kernels with shared memory: the bias reduction, and the
# GEMM tiles under the conv products and split-K.
step memcheck 150 "$SANITIZER" --tool memcheck --error-exitcode 99 --print-limit 50 --log-file "$WORK/memcheck.log" \
  "$BIN/s05_tests_solution" --gtest_color=no --gtest_brief=1 --gtest_filter='-Stage05_Trainer*:*CnnDeep*:*_Safety.*'
RACE_FILTER='Task5_6_*:Task5_3_*CnnLayers*:Task5_5_*CnnLayersWithSplitK*:Stage05_SplitK*'
step racecheck 90 "$SANITIZER" --tool racecheck --error-exitcode 99 --print-limit 50 --log-file "$WORK/racecheck.log" \
  "$BIN/s05_tests_solution" --gtest_color=no --gtest_brief=1 --gtest_filter="$RACE_FILTER"
step synccheck 60 "$SANITIZER" --tool synccheck --error-exitcode 99 --print-limit 50 --log-file "$WORK/synccheck.log" \
  "$BIN/s05_tests_solution" --gtest_color=no --gtest_brief=1 --gtest_filter="$RACE_FILTER"
for tool in memcheck racecheck synccheck; do
  [ -f "$WORK/$tool.log" ] && { say "--- $tool.log (last 15 lines)"; tail -n 15 "$WORK/$tool.log" | tee -a "$LOG"; }
done

step benchmarks 120 "$BIN/s05_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/bench.json" \
  --benchmark_out_format=json
[ -f "$OUT/bench.json" ] && sed 's#/manual_time"#"#' "$OUT/bench.json" >"$OUT/bench_compare.json"

step "prove exercises" 120 python3 tools/prove_exercises.py --build-dir "$BUILD" --stage 05_im2col_gemm

# ---- summary: step verdicts, the test tally, the epoch lines, the workspace
say ""
say "================ summary (${SECONDS}s) ================"
for line in "${SUMMARY[@]}"; do say "$line"; done
say ""
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$LOG" | head -n 40
say ""
for f in "$WORK"/train_*.json; do
  [ -f "$f" ] || continue
  python3 - "$f" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
r = json.load(open(sys.argv[1]))
name = sys.argv[1].rsplit("/", 1)[-1][6:-5]
w = r.get("stage_results", {})
ws = f"workspace {w.get('workspace_bytes', 0) / 1e6:.2f} MB, split-K {w.get('split_k_chunks', '?')}" if w else ""
for e in r.get("epochs", []):
    print(f"{name:24s} epoch {e['epoch']}: {e.get('seconds', 0):.3f} s  {e.get('images_per_second', 0):9.0f} img/s  "
          f"loss {e.get('loss') or float('nan'):.4f}  test {100 * e.get('test_accuracy', 0):.2f}%  {ws}  "
          f"({r.get('device', '?')}, {r.get('data', {}).get('dataset', '?')})")
PY
done
say ""
grep -E "^BM_" "$LOG" | head -n 40
tar -czf "$OUT/results.tar.gz" -C "$WORK" . 2>>"$LOG"
rm -rf "$WORK"
say "logs in $OUT"
