# shellcheck shell=bash
# Sourced by tools/gpu/stage.sh 06, which has read the stage's folder and targets from the stage list.
# Stage 06 (06_cudnn) on a GPU machine, in one call: configure and build, the
# tests, the benchmarks, the trainer (CNN with and without the CUDA graph,
# per-layer profiles of cnn and cnn-deep beside stage 05's), compute-sanitizer
# memcheck on the layer and graph tests, and the exercise proof. Every step is
# timed and bounded (what every stage's run shares: tools/gpu/stage.sh); a
# summary table comes last. About 5 to 8 minutes on an H100 with 16 cores.
#
#   OUT=/some/folder tools/gpu/stage.sh 06        (run from anywhere; default folder: out-stage06)
#   tools/gpu/stage.sh 06 --prepare-carry         on the development machine: tools/gpu/carry_test_libs.sh
#
# What the machine needs besides CUDA, cuDNN and CMake:
#   .carry/include     CLI11 and nlohmann-json headers (and zlib.h)
#   data/fashion-mnist the four IDX files (else the trainer falls back to the synthetic set, and says so)
#   GoogleTest and Google Benchmark: installed, or in .carry/prefix (tools/gpu/carry_test_libs.sh fills it
#     from a Debian/Ubuntu machine that has libgtest-dev, libgmock-dev and libbenchmark-dev; about 3 MB).
#
# What comes back under $OUT: stage06.log (everything, the summary at its end), s06_bench.json, and
# results.tar.gz (the trainer's JSON files, the test report, the memcheck log).
if [ "${1:-}" = "--prepare-carry" ]; then
  exec "$(dirname "$0")/carry_test_libs.sh"
fi
stage_begin 560
grep -h "define CUDNN_M\(AJOR\|INOR\)\|define CUDNN_PATCHLEVEL" /usr/include/x86_64-linux-gnu/cudnn_version*.h \
  /usr/include/cudnn_version*.h /usr/local/cuda/include/cudnn_version*.h 2>/dev/null | sort -u | tee -a "$LOG"

# Warnings are errors on the development machine; here another compiler version must not stop the measurements.
stage_configure 150 -DCOURSE_WERROR=OFF
if [ "${STEP_DRY_RUN:-0}" != 1 ] && ! grep -q "stage 06_cudnn: tasks" "$LOG"; then
  say "stage 06 is not configured (no cuDNN found?): the configure step's output is in $LOG"
  stage_summary
  stage_end
  exit 1
fi
grep -q "GoogleTest: NOT found" "$LOG" &&
  say "GoogleTest is not installed here and .carry/prefix is missing: run tools/gpu/carry_test_libs.sh on the development machine and carry .carry"
stage_build 300 s06_bench s05_train_solution
stage_tests 300

step benchmarks 120 "$BIN/s06_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/s06_bench.json" \
  --benchmark_out_format=json

# The trainer: the graph on and off for each model, profiled epochs, and stage 05 beside it on the same runs.
train06() { stage_train "$1" 120 "$BIN/s06_train_solution" "${@:2}"; }
train06 cnn_graph_on --model cnn --epochs 2 --graph on --verbose
train06 cnn_graph_off --model cnn --epochs 2 --graph off
train06 cnn_deep_graph_on --model cnn-deep --epochs 2 --graph on
train06 cnn_deep_graph_off --model cnn-deep --epochs 2 --graph off
train06 mlp_graph_on --model mlp --epochs 2 --graph on
train06 mlp_graph_off --model mlp --epochs 2 --graph off
train06 cnn_profile --model cnn --profile --epochs 1
train06 cnn_deep_profile --model cnn-deep --profile --epochs 1
stage_train s05_cnn_profile 120 "$BIN/s05_train_solution" --model cnn --profile --epochs 1
stage_train s05_cnn_deep_profile 120 "$BIN/s05_train_solution" --model cnn-deep --profile --epochs 1
stage_train s05_cnn 120 "$BIN/s05_train_solution" --model cnn --epochs 2

# compute-sanitizer memcheck: the layer tests, the graph tests and the small engine tests
# (the batch-64 layer shapes and the two-epoch graph comparison are left out for time)
filter='Task6_*:Stage06_Engine.EveryLayerKindMatchesStage02:Stage06_Engine.RefusesWhatItCannotRun'
filter+=':-*CnnLayersAtBatch64:Stage06_StepCapture.EngineGivesTheSameParametersWithAndWithoutTheGraph'
stage_sanitize memcheck 150 "$filter"
stage_sanitizer_tails 5

# The exercise track: every Task 6.x test must fail on the untouched holes, naming its task.
step "build exercises" 150 cmake --build "$BUILD" -j16 --target s06_tests_exercise
stage_prove 120

stage_summary
python3 - "$WORK" "$OUT" <<'PY' 2>&1 | tee -a "$LOG"
import json, os, sys
work, out = sys.argv[1:]
rows = []
for name in ["cnn_graph_on", "cnn_graph_off", "cnn_deep_graph_on", "cnn_deep_graph_off", "mlp_graph_on",
             "mlp_graph_off", "s05_cnn", "cnn_profile", "cnn_deep_profile", "s05_cnn_profile", "s05_cnn_deep_profile"]:
    path = os.path.join(work, f"train_{name}.json")
    if not os.path.exists(path):
        continue
    j = json.load(open(path))
    eps = j.get("epochs", [])
    secs = " ".join(f"{e.get('seconds', 0):.3f}" for e in eps)
    acc = eps[-1].get("test_accuracy") if eps else None
    rows.append(f"{name:22} {j.get('stage', {}).get('id', '?'):15} epoch s: {secs:16} "
                f"test acc {acc * 100 if acc is not None else float('nan'):.2f}%")
    prof = j.get("profile")
    if prof and prof.get("layers"):
        for l in prof["layers"]:
            rows.append(f"    {l['layer']:28} fwd {l['forward_ms_per_batch']:.4f} ms  bwd {l['backward_ms_per_batch']:.4f} ms")
        rows.append(f"    {'total':28} fwd {prof['total_forward_ms_per_batch']:.4f} ms  bwd {prof['total_backward_ms_per_batch']:.4f} ms")
print("\n".join(rows))
bench = os.path.join(out, "s06_bench.json")
if os.path.exists(bench):
    for b in json.load(open(bench)).get("benchmarks", []):
        if "error_message" in b:
            print(f"{b['name']:42} ERROR {b['error_message']}")
        else:
            print(f"{b['name']:42} {b['real_time']:10.2f} {b['time_unit']}  {b.get('label', '')}")
PY
stage_end
