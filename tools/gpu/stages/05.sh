# shellcheck shell=bash
# Sourced by tools/gpu/stage.sh 05, which has read the stage's folder and targets from the stage list.
# Stage 05 on the GPU machine, in one call: configure, build, test, sanitize,
# benchmark, train on Fashion-MNIST and prove the exercise holes. Every step is
# timed and bounded so the whole run stays under 8 minutes (what every stage's
# run shares: tools/gpu/stage.sh).
#
#   OUT=/some/folder tools/gpu/stage.sh 05        (run from anywhere; it works in the repository root)
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
STEP_WIDTH=30
stage_begin 460  # the device call allows 480 for this script
stage_configure 150 -DCOURSE_WERROR=ON
stage_build 300 s05_tests_exercise s05_bench
stage_tests 180

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
  read -r -a args <<<"$run"
  stage_train "${args[0]}" 90 "$BIN/s05_train_solution" "${args[@]:1}" --batch 64 --verbose
done

# compute-sanitizer: memcheck on the tests (the trainer test and the three-channel
# cnn-deep comparison take minutes under the tool and add no new kernel; the safety
# tests start trainer processes), racecheck
# and synccheck on the kernels with shared memory: the bias reduction, and the
# GEMM tiles under the conv products and split-K.
stage_sanitize memcheck 150 '-Stage05_Trainer*:*CnnDeep*:*_Safety.*'
RACE_FILTER='Task5_6_*:Task5_3_*CnnLayers*:Task5_5_*CnnLayersWithSplitK*:Stage05_SplitK*'
stage_sanitize racecheck 90 "$RACE_FILTER"
stage_sanitize synccheck 60 "$RACE_FILTER"
stage_sanitizer_tails 15

step benchmarks 120 "$BIN/s05_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/bench.json" \
  --benchmark_out_format=json
[ -f "$OUT/bench.json" ] && sed 's#/manual_time"#"#' "$OUT/bench.json" >"$OUT/bench_compare.json"
stage_prove 120

stage_summary
stage_epochs
say ""
grep -E "^BM_" "$LOG" | head -n 40
stage_end
