# shellcheck shell=bash
# Sourced by tools/gpu/stage.sh 07, which has read the stage's folder and targets from the stage list.
# Stage 07 (07_fast_gemm) on the GPU machine in one bounded call: build, the tests of
# stages 04, 05 and 07 (04 and 05 because stage 07 adds to their GEMM and split-K),
# the exercise proof, the matmul sweep against cuBLAS of each precision, training
# epochs in FP32, TF32 and BF16, compute-sanitizer on the kernel tests, and Nsight
# Compute on the best kernels, in three modes that each fit one call (what every
# stage's run shares: tools/gpu/stage.sh). The log is $OUT/stage07.log; the
# sweeps, trainer JSON and Nsight reports come back in $OUT/results.tar.gz; one
# summary line per step last.
#
#   OUT=/some/folder tools/gpu/stage.sh 07 [quick|perf|sanitize]
#
# quick:    build, tests, exercise proof, sweep at 1024 to 4096, a few epochs (about 4 minutes on an H100)
# perf:     build, tests, proof, the full sweep and the course's GEMM shapes, the benchmarks, epochs at
#           batch 64 and 256 in every precision, 15-epoch accuracy runs (about 7 minutes)
# sanitize: build, compute-sanitizer memcheck, racecheck and synccheck on the kernel tests, Nsight
#           Compute (full set) on kernels 10 and 13 at 4096 (about 7 minutes)
#
# Needs CLI11 and nlohmann-json in .carry/include, GoogleTest and Google Benchmark in
# .carry/prefix (tools/gpu/carry_test_libs.sh), Fashion-MNIST in data/fashion-mnist.
MODE=${1:-quick}
case $MODE in
  quick | perf | sanitize) ;;
  *) echo "usage: tools/gpu/stage.sh 07 [quick|perf|sanitize]" >&2; exit 2 ;;
esac
stage_begin 560
say "mode: $MODE"
stage_configure 60 -DCOURSE_WERROR=OFF
stage_build 240 s07_matmul_sweep s07_bench s07_tests_exercise s04_tests_solution s05_tests_solution

tests() {  # tests NAME BINARY LIMIT [gtest args]: one test binary, its summary line kept
  local name=$1 exe=$2 limit=$3
  shift 3
  step "$name" "$limit" "$exe" --gtest_color=no --gtest_brief=1 "$@"
}
train() {  # train NAME ARGS...: one trainer run, its JSON kept
  stage_train "$1" 90 "$BIN/s07_train_solution" "${@:2}"
}
ncu=$(command -v ncu || find /opt/nvidia/nsight-compute -name ncu -type f 2>/dev/null | head -n 1)
profile() {  # profile NAME KERNEL_REGEX ONLY [SET]: Nsight Compute on one launch at 4096 (after its warm-up)
  [ -n "$ncu" ] || return 0
  step "ncu $1" 120 "$ncu" --set "${4:-basic}" --section WarpStateStats --launch-skip 1 --launch-count 1 \
    -k "regex:$2" -o "$WORK/ncu_$1" "$BIN/s07_matmul_sweep" --sizes 4096 --only "$3" --min-runs 1 --min-ms 0
  "$ncu" --import "$WORK/ncu_$1.ncu-rep" --page details --csv >"$WORK/ncu_$1.csv" 2>/dev/null
}

if [ "$MODE" = quick ] || [ "$MODE" = perf ]; then
  tests "s07 tests" "$BIN/s07_tests_solution" 150
  tests "s04 tests" "$BIN/s04_tests_solution" 90 --gtest_filter='-*LargeSizes*'
  tests "s05 tests" "$BIN/s05_tests_solution" 120
  stage_prove 90
fi
if [ "$MODE" = quick ]; then
  step "sweep square" 150 "$BIN/s07_matmul_sweep" --roofline --sizes 1024,2048,4096 --layouts NN,TN --min-ms 60 \
    --csv "$WORK/sweep_square.csv"
  for model in mlp cnn; do
    for p in fp32 tf32 bf16; do train "${model}_${p}_b64" --model $model --precision $p --epochs 2 --batch 64; done
  done
fi
if [ "$MODE" = perf ]; then
  step "sweep square" 150 "$BIN/s07_matmul_sweep" --roofline --layouts NN,NT,TN --min-ms 40 --csv "$WORK/sweep_square.csv"
  step "sweep course shapes" 150 "$BIN/s07_matmul_sweep" --sizes 4096 --course --min-ms 20 --csv "$WORK/sweep_course.csv"
  step "benchmarks" 120 "$BIN/s07_bench" --benchmark_min_time=0.1 --benchmark_out="$WORK/s07_bench.json" \
    --benchmark_out_format=json
  for model in mlp cnn; do
    for p in fp32 tf32 bf16; do
      for batch in 64 256; do train "${model}_${p}_b${batch}" --model $model --precision $p --epochs 2 --batch $batch; done
    done
  done
  for p in fp32 tf32 bf16; do train "cnn_${p}_15" --model cnn --precision $p --epochs 15; done
  for p in fp32 tf32 bf16; do train "mlp_${p}_10" --model mlp --precision $p --epochs 10; done
fi
if [ "$MODE" = sanitize ]; then
  stage_sanitize memcheck 200 'Task7_*:Stage07_TmaTf32.*:-*Large*:*Kernel10*:*TunesEachShape*:*NoCorrectCandidate*'
  # racecheck checks every shared-memory access: the tests' 17 shape classes x 8 layouts take more than
  # 200 s under it, so it runs the sweep in every layout at 64 and 128 (every tile full: kernel 10's
  # full-tile instances) and 200 (partial tiles), every kernel (and each of kernel 10's candidates,
  # which it tunes) once.
  step racecheck 200 "$SANITIZER" --tool racecheck --error-exitcode 99 --print-limit 20 --log-file "$WORK/racecheck.log" \
    "$BIN/s07_matmul_sweep" --sizes 64,128,200 --layouts NN,NT,TN,TT --min-runs 1 --min-ms 0
  stage_sanitize synccheck 120 'Task7_*EveryShapeClass*:Stage07_TmaTf32.EveryShapeClass*'
  stage_sanitizer_tails 15
  profile k10 matmul_async_copy 10 full
  profile k13 matmul_wgmma_kernel 13 full
fi

grep -E "^\[  FAILED  \]|FAILED TEST|Failure|WRONG|error:" "$LOG" | head -30
stage_summary
stage_epochs
stage_end
