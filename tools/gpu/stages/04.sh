# shellcheck shell=bash
# Sourced by tools/gpu/stage.sh 04, which has read the stage's folder and targets from the stage list.
# Stage 04 on the GPU machine, in one call: configure, build, test, train,
# sweep the matmul kernels, sanitize, benchmark and prove the exercise holes.
# Every step is timed and bounded so the whole run stays under 8 minutes
# (what every stage's run shares: tools/gpu/stage.sh).
#
#   OUT=/some/folder tools/gpu/stage.sh 04        (run from anywhere; it works in the repository root)
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
STEP_WIDTH=28
stage_begin 460  # the device call allows 480 for this script
stage_configure 150 -DCOURSE_WERROR=ON
stage_build 300 s04_tests_exercise s04_bench s04_matmul_sweep
stage_tests 180

# The epoch times of the issue: batch 64 and 256 on the default kernel; then cuBLAS and the
# tiled kernel for comparison, and a profiled epoch (per-layer GPU times).
for run in "b64 --epochs 2 --batch 64" "b256 --epochs 2 --batch 256" "b64_cublas --epochs 2 --batch 64 --kernel 0" \
           "b256_cublas --epochs 2 --batch 256 --kernel 0" "b64_tiled32 --epochs 2 --batch 64 --kernel 5" \
           "b64_profile --epochs 1 --batch 64 --profile"; do
  read -r -a args <<<"$run"
  stage_train "${args[0]}" 90 "$BIN/s04_train_solution" --model mlp "${args[@]:1}"
done

step "matmul sweep" 180 "$BIN/s04_matmul_sweep" --mlp --csv "$OUT/matmul_sweep.csv"
step "matmul sweep, one block" 30 "$BIN/s04_matmul_sweep" --sizes 16,32 --kernels 0,1,2,3,4,5,6 --csv "$WORK/matmul_sweep_small.csv"

# compute-sanitizer: memcheck on every test but the 1000-1025 cubes (minutes under the tool)
# and the suites that start other processes (trainers; the planted faults, errors on purpose),
# racecheck and synccheck on the kernels that use shared memory and __syncthreads.
stage_sanitize memcheck 150 '-*LargeSizes*:*_Safety.*:*_FaultMessages.*'
stage_sanitize racecheck 90 'Task4_4_*Small*:Task4_5_*Small*'
stage_sanitize synccheck 60 'Task4_4_*Small*:Task4_5_*Small*'
stage_sanitizer_tails 15

step benchmarks 120 "$BIN/s04_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/bench.json" \
  --benchmark_out_format=json
stage_prove 120

stage_summary
stage_epochs
stage_end
