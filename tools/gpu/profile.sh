#!/usr/bin/env bash
# Where the time goes, on the GPU machine: the kernels of one CNN training step
# of stages 05 and 06 (Nsight Compute, each kernel timed alone, caches not
# flushed), and the phases of stage 03's data-parallel step on every core
# (Google Benchmark). Logs and tables land in $OUT. About 3 minutes after the build.
#
#   OUT=/some/folder tools/gpu/profile.sh
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-profile}
BUILD=${BUILD:-build/gpu}
BIN=$BUILD/bin
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/profile.log"; }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)

log "configure and build ($(date -u +%T))"
cmake -S . -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 -DCOURSE_TRACKS=solution >"$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD" -j16 --target ${TARGETS:-s05_train_solution s06_train_solution s03_bench} >>"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
log "built ($(date -u +%T))"

# ncu_step NAME BINARY ARGS...: every kernel of the first training steps, then the per-step table.
ncu_step() {
  local name=$1
  shift
  [ -n "$NCU" ] || { log "ncu not found"; return 0; }
  timeout 150 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --page raw \
    --launch-count "${LAUNCHES:-1500}" "$@" --model cnn --limit 1280 --epochs 1 --no-progress \
    >"$OUT/$name.csv" 2>"$OUT/$name.err"
  python3 tools/gpu/kernel_table.py "$OUT/$name.csv" | tee "$OUT/$name.txt"
}
log "stage 05 kernels"; ncu_step s05_kernels "$BIN/s05_train_solution"
log "stage 05 kernels, cuBLAS"; ncu_step s05_kernels_cublas "$BIN/s05_train_solution" --kernel 0
log "stage 06 kernels, --conv-algos exact"; LAUNCHES=2500 ncu_step s06_kernels_exact "$BIN/s06_train_solution" --graph off --conv-algos exact
log "stage 06 kernels, --conv-algos fastest"; LAUNCHES=2500 ncu_step s06_kernels_fastest "$BIN/s06_train_solution" --graph off --conv-algos fastest
log "stage 03 phases ($(date -u +%T))"
"$BIN/s03_bench" --benchmark_filter='DataStepPhase_CNN|TrainStep_CNN/data' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.3s 2>&1 | grep -E "median|^---|Benchmark" | tee "$OUT/s03_phases.txt"
log "done ($(date -u +%T))"
