#!/usr/bin/env bash
# Where the time goes, on the GPU machine: the kernels of one CNN training step
# of stage 05 (Nsight Compute, each kernel timed alone, caches not flushed) and
# of stages 05, 06 and 07 in a real run (tools/gpu/kernel_trace.cpp, CUPTI: each
# kernel's start and end, the gaps between them, CUDA graphs included), and
# the phases of stage 03's data-parallel step on every core (Google
# Benchmark). Logs and tables land in $OUT. About 3 minutes after the build.
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
  cmake --build "$BUILD" -j16 --target ${TARGETS:-s05_train_solution s06_train_solution s07_train_solution s03_bench} >>"$OUT/build.log" 2>&1 ||
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
# Stage 06 measures its algorithms (cudnnFind) when it starts. Under ncu every kernel
# of that measurement runs alone, slowly, and cudnnFind then chooses other algorithms
# (ALGO_1 over the multi-kernel FFT): ncu would profile another configuration. So
# stage 06 is traced instead, at full speed, in one epoch of the real trainer.
if tools/gpu/build_kernel_trace.sh "$BUILD/kernel_trace.so"; then
  # trace_step NAME BINARY ARGS...: one epoch traced, then the per-step table (steps 21 on).
  # The model is MODEL's (default cnn).
  trace_step() {
    local name=$1
    shift
    CUDA_INJECTION64_PATH=$PWD/$BUILD/kernel_trace.so KERNEL_TRACE_OUT="$OUT/$name.trace.csv" \
      timeout 120 "$@" --model "${MODEL:-cnn}" --epochs 1 --no-progress --verbose >"$OUT/$name.log" 2>&1
    grep -h "batch 64" "$OUT/$name.log" | tee -a "$OUT/profile.log"
    python3 tools/gpu/kernel_table.py "$OUT/$name.trace.csv" --skip 20 | tee "$OUT/$name.txt"
  }
  log "stage 05 kernels, traced"; trace_step s05_trace "$BIN/s05_train_solution"
  for rule in deterministic direct fastest; do
    log "stage 06 kernels, --conv-algos $rule, graph on, traced"
    trace_step "s06_trace_$rule" "$BIN/s06_train_solution" --graph on --conv-algos "$rule"
  done
  log "stage 06 kernels, --conv-algos deterministic, graph off, traced"
  trace_step s06_trace_deterministic_nograph "$BIN/s06_train_solution" --graph off
  # Stage 07 against stage 06, both with their defaults (graph on), for lesson 07's "Every stage on
  # the same work": stage 06's cnn with its defaults is s06_trace_deterministic above.
  log "stage 07 kernels, cnn, defaults, traced"
  trace_step s07_trace_default_cnn "$BIN/s07_train_solution"
  for binary in s06 s07; do
    log "stage ${binary#s} kernels, mlp, defaults, traced"
    MODEL=mlp trace_step "${binary}_trace_default_mlp" "$BIN/${binary}_train_solution"
  done
else
  log "no kernel traces: the tracer could not be built (above)"
fi
log "stage 03 phases ($(date -u +%T))"
# --benchmark_min_time in plain seconds: the "0.3s" form needs Google Benchmark 1.8 (Debian 12 has 1.7).
"$BIN/s03_bench" --benchmark_filter='DataStepPhase_CNN|TrainStep_CNN/data' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.3 >"$OUT/s03_phases.log" 2>&1 ||
  { log "s03_bench failed (exit $?):"; tail -5 "$OUT/s03_phases.log"; }
grep -E "median|^---|Benchmark" "$OUT/s03_phases.log" | tee "$OUT/s03_phases.txt"
log "done ($(date -u +%T))"
