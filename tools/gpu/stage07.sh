#!/usr/bin/env bash
# Stage 07 (07_fast_gemm) on the GPU machine in one bounded call: build, the tests of
# stages 04, 05 and 07 (04 and 05 because stage 07 adds to their GEMM and split-K),
# the exercise proof, the matmul sweep against cuBLAS of each precision, training
# epochs in FP32, TF32 and BF16, compute-sanitizer on the kernel tests, and Nsight
# Compute on the best kernels, in three modes that each fit one call. Logs and figures
# go to $OUT; one summary line per step last.
#
#   OUT=/some/folder tools/gpu/stage07.sh [quick|perf|sanitize]
#
# quick:    build, tests, exercise proof, sweep at 1024 to 4096, a few epochs (about 4 minutes on an H100)
# perf:     build, tests, proof, the full sweep and the course's GEMM shapes, the benchmarks, epochs at
#           batch 64 and 256 in every precision, 15-epoch accuracy runs (about 7 minutes)
# sanitize: build, compute-sanitizer memcheck, racecheck and synccheck on the kernel tests, Nsight
#           Compute (full set) on kernels 10 and 13 at 4096 (about 7 minutes)
#
# Needs CLI11 and nlohmann-json in .carry/include, GoogleTest and Google Benchmark in
# .carry/prefix (tools/gpu/carry_test_libs.sh), Fashion-MNIST in data/fashion-mnist.
set -u -o pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-quick}
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
BUILD=build/gpu
BIN=$BUILD/bin
DEADLINE=${DEADLINE:-560}
LOG=$OUT/stage07.log
SUMMARY=()
: >"$LOG"
. tools/gpu/steps.sh
PREFIX=$PWD/.carry/prefix
export LD_LIBRARY_PATH="$PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

say "stage07 $MODE on $(hostname), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee -a "$LOG"
step "configure" 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCOURSE_WERROR=OFF -DCMAKE_PREFIX_PATH="$PREFIX" -DGTest_DIR="$PREFIX/lib/x86_64-linux-gnu/cmake/GTest" \
  -Dbenchmark_DIR="$PREFIX/lib/x86_64-linux-gnu/cmake/benchmark"
step "build" 240 cmake --build "$BUILD" -j16 --target s07_tests_solution s07_train_solution s07_matmul_sweep \
  s07_bench s07_tests_exercise s04_tests_solution s05_tests_solution

tests() {  # tests NAME BINARY LIMIT [gtest args]: one test binary, its summary line kept
  local name=$1 exe=$2 limit=$3
  shift 3
  step "$name" "$limit" "$exe" --gtest_color=no --gtest_brief=1 "$@"
}
train() {  # train NAME ARGS...: one trainer run, its JSON kept
  local name=$1
  shift
  step "train $name" 90 "$BIN/s07_train_solution" "$@" --no-progress --json "$OUT/$name.json"
}
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
profile() {  # profile NAME KERNEL_REGEX ONLY [SET]: Nsight Compute on one launch at 4096 (after its warm-up)
  [ -n "$ncu" ] || return 0
  step "ncu $1" 120 "$ncu" --set "${4:-basic}" --section WarpStateStats --launch-skip 1 --launch-count 1 \
    -k "regex:$2" -o "$OUT/ncu_$1" "$BIN/s07_matmul_sweep" --sizes 4096 --only "$3" --min-runs 1 --min-ms 0
  "$ncu" --import "$OUT/ncu_$1.ncu-rep" --page details --csv >"$OUT/ncu_$1.csv" 2>/dev/null
}

if [ "$MODE" = quick ] || [ "$MODE" = perf ]; then
  tests "s07 tests" "$BIN/s07_tests_solution" 150
  tests "s04 tests" "$BIN/s04_tests_solution" 90 --gtest_filter='-*LargeSizes*'
  tests "s05 tests" "$BIN/s05_tests_solution" 120
  step "exercise proof (stage 07)" 90 python3 tools/prove_exercises.py --build-dir "$BUILD" --stage 07_fast_gemm
fi
if [ "$MODE" = quick ]; then
  step "sweep square" 150 "$BIN/s07_matmul_sweep" --roofline --sizes 1024,2048,4096 --layouts NN,TN --min-ms 60 \
    --csv "$OUT/sweep_square.csv"
  for model in mlp cnn; do
    for p in fp32 tf32 bf16; do train "${model}_${p}_b64" --model $model --precision $p --epochs 2 --batch 64; done
  done
fi
if [ "$MODE" = perf ]; then
  step "sweep square" 150 "$BIN/s07_matmul_sweep" --roofline --layouts NN,NT,TN --min-ms 40 --csv "$OUT/sweep_square.csv"
  step "sweep course shapes" 150 "$BIN/s07_matmul_sweep" --sizes 4096 --course --min-ms 20 --csv "$OUT/sweep_course.csv"
  step "benchmarks" 120 "$BIN/s07_bench" --benchmark_min_time=0.1 --benchmark_out="$OUT/s07_bench.json" \
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
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  kernels='Task7_*:Stage07_TmaTf32.*:-*Large*:*Kernel10*:*TunesEachShape*:*NoCorrectCandidate*'
  step "memcheck (s07 kernels)" 200 "$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 20 \
    "$BIN/s07_tests_solution" --gtest_brief=1 --gtest_filter="$kernels"
  # racecheck checks every shared-memory access: the tests' 17 shape classes x 8 layouts take more than
  # 200 s under it, so it runs the sweep in every layout at 64 and 128 (every tile full: kernel 10's
  # full-tile instances) and 200 (partial tiles), every kernel (and each of kernel 10's candidates,
  # which it tunes) once.
  step "racecheck (s07 kernels)" 200 "$sanitizer" --tool racecheck --error-exitcode 99 --print-limit 20 \
    "$BIN/s07_matmul_sweep" --sizes 64,128,200 --layouts NN,NT,TN,TT --min-runs 1 --min-ms 0
  step "synccheck (s07 kernels)" 120 "$sanitizer" --tool synccheck --error-exitcode 99 --print-limit 20 \
    "$BIN/s07_tests_solution" --gtest_brief=1 --gtest_filter='Task7_*EveryShapeClass*:Stage07_TmaTf32.EveryShapeClass*'
  profile k10 matmul_async_copy 10 full
  profile k13 matmul_wgmma_kernel 13 full
fi

# What comes back from the GPU machine is at most 8 files: everything but the log goes into one archive.
archive=$(mktemp -d)/results.tar.gz
(cd "$OUT" && tar -czf "$archive" --exclude=stage07.log . && find . -mindepth 1 -maxdepth 1 ! -name stage07.log \
  -exec rm -rf {} + && mv "$archive" "$OUT/results.tar.gz")
grep -E "^\[  FAILED  \]|FAILED TEST|Failure|WRONG|error:" "$LOG" | head -30
say ""
say "summary ($MODE, ${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
