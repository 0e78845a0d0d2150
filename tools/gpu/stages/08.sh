# shellcheck shell=bash
# Sourced by tools/gpu/stage.sh 08, which has read the stage's folder and targets from the stage list.
# Stage 08 (08_fused) on the GPU machine, in one call: configure and build what it
# needs, the tests, the trainer beside stage 06 on the same work (cnn, cnn-deep and
# the mlp at batch 64; 15 epochs of cnn for the accuracy target), the benchmark,
# the per-kernel traces of a step of both stages, compute-sanitizer memcheck,
# racecheck and synccheck on bounded subsets, and the exercise proof. Every step is
# timed and bounded (tools/gpu/steps.sh), all of it by STAGE08_DEADLINE (470 s): a step
# that would start after it is listed as skipped in the summary. What every stage's run
# shares is tools/gpu/stage.sh.
#
#   OUT=/some/folder tools/gpu/stage.sh 08        (run from anywhere; it works in the repository root)
#
# Needs: nvcc, cmake (ninja if there), CUPTI (with the CUDA toolkit) for the traces;
# CLI11 and nlohmann-json in .carry/include; GoogleTest and Google Benchmark where
# CMake finds them (the system, or .carry/prefix: tools/gpu/carry_test_libs.sh);
# Fashion-MNIST in data/fashion-mnist (otherwise the trainers say so and use the
# synthetic set, and the accuracy figures mean nothing).
#
# What comes back under $OUT:
#   stage08.log      everything, step by step, with the summary at its end
#   bench.json       Google Benchmark's figures of one training step (BM_TrainStep_CNN, ... as stages 05 and 06)
#   bench_s06.json   stage 06's BM_TrainStep_* on the same machine, in the same run
#   results.tar.gz   the trainers' JSON files, the traces and their tables, the test report, the sanitizer logs
stage_begin 470

# ---- build: the solution track first; the exercise track later, beside the sanitizers.
# Warnings are errors on the development machine; another compiler here must not stop the measurements.
# Both tracks and the benchmarks are named: build/gpu may have been configured by another stage's script without them.
stage_configure 90 -DCOURSE_WERROR=OFF -DCOURSE_TRACKS="solution;exercise" -DCOURSE_BUILD_BENCHMARKS=ON
grep -E "\[course\] .*(06_cudnn|[Bb]enchmark)" "$LOG" | tail -n 3
stage_build 240 s08_bench s06_train_solution s06_bench

# The kernel tracer (tools/gpu/kernel_trace.cpp): CUPTI, found as profile.sh finds it.
CUPTI_SO=$(find /usr/local/cuda/ /usr/local/cuda-*/ /usr/lib -name libcupti.so 2>/dev/null | head -n 1)
CUPTI_H=$(find /usr/local/cuda/ /usr/local/cuda-*/ /usr/include -name cupti.h 2>/dev/null | head -n 1)
TRACER=""
if [ -n "$CUPTI_SO" ] && [ -n "$CUPTI_H" ]; then
  step "build kernel tracer" 60 g++ -O2 -shared -fPIC -I"$(dirname "$CUPTI_H")" tools/gpu/kernel_trace.cpp \
    -o "$BUILD/kernel_trace.so" -L"$(dirname "$CUPTI_SO")" -lcupti -Wl,-rpath,"$(dirname "$CUPTI_SO")"
  [ -f "$BUILD/kernel_trace.so" ] && TRACER=$PWD/$BUILD/kernel_trace.so
else
  say "CUPTI not found (libcupti.so, cupti.h): no kernel traces"
fi

stage_tests 150

# ---- epochs, stage 06 beside stage 08 on the same work, batch 64. Three epochs: the
# first includes the upload of the data set and the capture; the third is the figure.
train() {  # train NAME BINARY ARGS...
  stage_train "$1" 90 "$2" "${@:3}" --batch 64
}
for model in cnn cnn-deep mlp; do
  train "s06_$model" "$BIN/s06_train_solution" --model "$model" --epochs 3
  train "s08_$model" "$BIN/s08_train_solution" --model "$model" --epochs 3 --verbose
done
for model in cnn cnn-deep mlp; do  # the same graph, each kernel launched only once the one before has finished
  train "s08_${model}_late" "$BIN/s08_train_solution" --model "$model" --epochs 3 --early-launch off
done
train s08_cnn_persistent "$BIN/s08_train_solution" --model cnn --epochs 3 --persistent
train s08_mlp_persistent "$BIN/s08_train_solution" --model mlp --epochs 3 --persistent
# The mlp runs as the dense chain (two kernels, dense_chain.cu); off: Tasks 8.4 to 8.7's kernels.
train s08_mlp_chain_off "$BIN/s08_train_solution" --model mlp --epochs 3 --dense-chain off
train s08_cnn-deep_persistent "$BIN/s08_train_solution" --model cnn-deep --epochs 3 --persistent
train s08_cnn_nograph "$BIN/s08_train_solution" --model cnn --epochs 2 --graph off
train s08_cnn_profile "$BIN/s08_train_solution" --model cnn --epochs 1 --profile
# One training step, Google Benchmark, the same names in both stages (plain seconds for
# --benchmark_min_time: the "0.2s" form needs Google Benchmark 1.8; Debian 12 carries 1.7).
step "benchmarks s08" 100 "$BIN/s08_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/bench.json" \
  --benchmark_out_format=json
step "benchmarks s06 (TrainStep)" 45 "$BIN/s06_bench" --benchmark_filter='BM_TrainStep' --benchmark_min_time=0.2 \
  --benchmark_out="$OUT/bench_s06.json" --benchmark_out_format=json

# ---- the kernels of a step, traced during real runs (one epoch; steps 21 on)
trace() {  # trace NAME MARKER BINARY ARGS...
  local name=$1 marker=$2 exe=$3
  shift 3
  [ -n "$TRACER" ] || return 0
  step "trace $name" 60 env CUDA_INJECTION64_PATH="$TRACER" KERNEL_TRACE_OUT="$WORK/$name.trace.csv" \
    "$exe" "$@" --epochs 1 --batch 64 "${DATA_ARGS[@]}" --no-progress
  [ -f "$WORK/$name.trace.csv" ] &&
    python3 tools/gpu/kernel_table.py "$WORK/$name.trace.csv" --skip 20 --step-marker "$marker" >"$WORK/$name.table.txt" 2>&1
}
trace s08_cnn gather "$BIN/s08_train_solution" --model cnn
trace s06_cnn gather "$BIN/s06_train_solution" --model cnn
trace s08_cnn_persistent persistent_step "$BIN/s08_train_solution" --model cnn --persistent
trace s08_cnn-deep gather "$BIN/s08_train_solution" --model cnn-deep
trace s06_cnn-deep gather "$BIN/s06_train_solution" --model cnn-deep
trace s08_mlp dense_chain_kernel "$BIN/s08_train_solution" --model mlp
trace s08_mlp_chain_off gather "$BIN/s08_train_solution" --model mlp --dense-chain off
trace s06_mlp gather "$BIN/s06_train_solution" --model mlp

# ---- from here on the exercise track builds in the background, on the CPU: the runs below
# are for accuracy and the sanitizers' verdicts, not for their times
# (bounded by the deadline, so that no build outlives the script)
build_exercises() {
  [ "${STEP_DRY_RUN:-0}" = 1 ] && { echo "dry run: cmake --build $BUILD --target s08_tests_exercise"; return 0; }
  timeout $((DEADLINE - SECONDS > 1 ? DEADLINE - SECONDS : 1)) cmake --build "$BUILD" -j12 --target s08_tests_exercise
  echo "exit $?"
}
build_exercises >"$WORK/build_exercise.log" 2>&1 &
EXERCISE_BUILD=$!

# ---- the accuracy target: 15 epochs of cnn, the default recipe
train s08_cnn_15 "$BIN/s08_train_solution" --model cnn --epochs 15

# ---- compute-sanitizer on bounded subsets: every kernel on the small shapes and the
# engine on every layer kind it fuses (the full shape grid under memcheck would not fit
# the time; the plain test run above covers it). racecheck and synccheck, which slow a
# kernel with shared memory by a hundred times and more, on the small shapes alone.
MEMCHECK_FILTER='*OnSmallShapes*:Task8_1_ConvBlockForward.Ties*:Task8_3_ConvBlockInputGradient.RunsBeside*'
MEMCHECK_FILTER+=':Task8_4_*:Task8_5_*:Task8_6_*:Task8_7_*:Task8_8_*'
MEMCHECK_FILTER+=':Stage08_Engine.EveryLayerKind*:Stage08_Engine.RefusesWhatItCannotRun:-*TheSameBitsEveryRun'
stage_sanitize memcheck 90 "$MEMCHECK_FILTER"
RACE_FILTER='*OnSmallShapes*:Task8_4_DenseForward.MatchesStage01WithTheSumSplit:Task8_5_*:Task8_6_*:Task8_7_*'
RACE_FILTER+=':Task8_8_PersistentStep.EachPhase*'
stage_sanitize racecheck 75 "$RACE_FILTER"
stage_sanitize synccheck 45 "$RACE_FILTER"
stage_sanitizer_tails 6

# ---- the exercise proof: every Task 8.x test fails on the untouched holes, naming its task
step "wait for the exercise build" 120 bash -c "while kill -0 $EXERCISE_BUILD 2>/dev/null; do sleep 2; done"
tail -n 3 "$WORK/build_exercise.log" | tee -a "$LOG"
stage_prove 60

stage_summary
python3 - "$WORK" <<'PY' 2>&1 | tee -a "$LOG"
import glob, json, os, sys
work = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(work, "train_*.json"))):
    try:
        runs[os.path.basename(path)[6:-5]] = json.load(open(path))
    except Exception as e:
        print(f"{path}: {e}")
def last(name, key="seconds"):
    r = runs.get(name)
    eps = r.get("epochs", []) if r else []
    return eps[-1].get(key) if eps else None
print("epochs (batch 64; the last epoch of each run):")
for name, r in runs.items():
    eps = r.get("epochs", [])
    secs = " ".join(f"{e.get('seconds', 0):.3f}" for e in eps)
    sr = r.get("stage_results") or {}
    extra = f"  kernels/step {sr['kernels_per_step']}" if "kernels_per_step" in sr else ""
    acc = eps[-1].get("test_accuracy") if eps else None
    print(f"  {name:26s} s/epoch {secs:40s} test {100 * acc if acc is not None else float('nan'):6.2f}%"
          f"  {r.get('data', {}).get('dataset', '?')}{extra}  [{r.get('status', '?')}]")
print()
print("stage 06 against stage 08 (graph), the last epoch:")
targets = {"cnn": "<= 0.10 s (stretch 0.05)", "cnn-deep": ">= 2x stage 06", "mlp": ">= 2x stage 06"}
for model in ("cnn", "cnn-deep", "mlp"):
    a, b, p = last(f"s06_{model}"), last(f"s08_{model}"), last(f"s08_{model}_persistent")
    late, off = last(f"s08_{model}_late"), last(f"s08_{model}_chain_off")
    if a and b:
        ls = f", without early launch {late:.4f} s ({a / late:.2f}x)" if late else ""
        ps = f", persistent {p:.4f} s ({a / p:.2f}x)" if p else ""
        cs = f", dense chain off {off:.4f} s ({a / off:.2f}x)" if off else ""
        print(f"  {model:9s} stage 06 {a:.4f} s, stage 08 {b:.4f} s: {a / b:.2f}x{ls}{ps}{cs}   target {targets[model]}")
acc = last("s08_cnn_15", "test_accuracy")
if acc is not None:
    print(f"  cnn, 15 epochs of the default recipe on stage 08: test accuracy {100 * acc:.2f}% (target >= 91.5%;"
          " its epochs ran beside the exercise build: their seconds are not figures)")
for name in ("s08_cnn", "s08_cnn_persistent"):
    sr = (runs.get(name) or {}).get("stage_results") or {}
    st, lw = sr.get("step", {}), sr.get("layer_by_layer", {})
    if st:
        print(f"  {name}: {sr.get('kernels_per_step')} kernels a step, {st['bytes_read'] / 1e6:.2f} MB read and "
              f"{st['bytes_written'] / 1e6:.2f} MB written (computed); layer by layer {lw.get('kernels')} kernels, "
              f"{lw.get('bytes_read', 0) / 1e6:.2f} MB and {lw.get('bytes_written', 0) / 1e6:.2f} MB")
prof = (runs.get("s08_cnn_profile") or {}).get("profile")
if prof:
    print("\nprofile of s08 cnn (ms per batch, kernels launched one by one between events):")
    for l in prof.get("layers", []):
        print(f"  {l['layer']:48s} fwd {l['forward_ms_per_batch']:.4f}  bwd {l['backward_ms_per_batch']:.4f}")
PY
# The kernel tables: stage 08's and stage 06's cnn on screen, every one in the log.
for f in "$WORK"/*.table.txt; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .table.txt)
  { echo ""; echo "--- kernel trace $name"; cat "$f"; } >>"$LOG"
  case $name in
    s08_cnn | s06_cnn | s08_cnn_persistent) echo; echo "--- kernel trace $name"; cat "$f" ;;
  esac
done
say ""
grep -E "^BM_" "$LOG" | head -n 20
stage_end
