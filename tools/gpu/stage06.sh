#!/usr/bin/env bash
# Stage 06 (06_cudnn) on a GPU machine, in one go: configure and build, the
# tests, compute-sanitizer memcheck on the layer and graph tests, the
# benchmarks, the trainer (CNN with and without the CUDA graph, per-layer
# profiles of cnn and cnn-deep beside stage 05's), and the exercise proof.
# Every log goes to $OUT; a summary table comes last. About 5 to 8 minutes on
# an H100 with 16 cores.
#
#   tools/gpu/stage06.sh                  from the repository root
#   OUT=/tmp/s06 tools/gpu/stage06.sh     logs elsewhere (default: results/stage06)
#
# What the machine needs besides CUDA, cuDNN and CMake:
#   .carry/include     CLI11 and nlohmann-json headers (and zlib.h)
#   data/fashion-mnist the four IDX files (else the trainer falls back to the synthetic set, and says so)
#   GoogleTest and Google Benchmark: installed, or in .carry/prefix, which
#     `tools/gpu/stage06.sh --prepare-carry` fills from a Debian/Ubuntu machine
#     that has libgtest-dev, libgmock-dev and libbenchmark-dev (about 3 MB).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
PREFIX=$ROOT/.carry/prefix
ARCH_LIB=lib/x86_64-linux-gnu

# ---- --prepare-carry: copy this machine's GoogleTest and Google Benchmark into .carry/prefix
if [ "${1:-}" = "--prepare-carry" ]; then
  set -e
  dest=${2:-$PREFIX}
  mkdir -p "$dest/include" "$dest/$ARCH_LIB/cmake"
  cp -r /usr/include/gtest /usr/include/gmock /usr/include/benchmark "$dest/include/"
  cp -a /usr/$ARCH_LIB/libgtest.a /usr/$ARCH_LIB/libgtest_main.a /usr/$ARCH_LIB/libgmock.a \
        /usr/$ARCH_LIB/libgmock_main.a /usr/$ARCH_LIB/libbenchmark.so* /usr/$ARCH_LIB/libbenchmark_main.a "$dest/$ARCH_LIB/"
  cp -r /usr/$ARCH_LIB/cmake/GTest /usr/$ARCH_LIB/cmake/benchmark "$dest/$ARCH_LIB/cmake/"
  du -sh "$dest"
  echo "carry .carry (with prefix/) to the GPU machine; this script finds it there"
  exit 0
fi

OUT=${OUT:-$ROOT/results/stage06}
mkdir -p "$OUT"
BUILD=$ROOT/build/gpu
BIN=$BUILD/bin
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
step() { echo; echo "==== $* [$(elapsed) s]"; }
STATUS=()  # one line per step for the summary
record() { STATUS+=("$(printf '%-34s %s' "$1" "$2")"); }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/gpu.txt"
nvcc --version | tail -1
grep -h "define CUDNN_M\(AJOR\|INOR\)\|define CUDNN_PATCHLEVEL" /usr/include/x86_64-linux-gnu/cudnn_version*.h \
  /usr/include/cudnn_version*.h /usr/local/cuda/include/cudnn_version*.h 2>/dev/null | sort -u | tee -a "$OUT/gpu.txt"

# ---- configure
step "configure $BUILD"
extra=()
if [ -d "$PREFIX" ]; then
  extra+=("-DCMAKE_PREFIX_PATH=$PREFIX" "-DGTest_DIR=$PREFIX/$ARCH_LIB/cmake/GTest"
          "-Dbenchmark_DIR=$PREFIX/$ARCH_LIB/cmake/benchmark")
  export LD_LIBRARY_PATH="$PREFIX/$ARCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# Warnings are errors on the development machine (COURSE_WERROR there); here
# another compiler version must not stop the measurements.
if ! cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DCOURSE_WERROR=OFF "${extra[@]}" >"$OUT/configure.log" 2>&1; then
  tail -30 "$OUT/configure.log"; echo "configure failed: $OUT/configure.log"; exit 1
fi
grep "\[course\]" "$OUT/configure.log"
if ! grep -q "stage 06_cudnn: tasks" "$OUT/configure.log"; then
  echo "stage 06 is not configured (no cuDNN found?): $OUT/configure.log"; exit 1
fi
if grep -q "GoogleTest: NOT found" "$OUT/configure.log"; then
  echo "GoogleTest is not installed here and .carry/prefix is missing: run 'tools/gpu/stage06.sh --prepare-carry' on the development machine and carry .carry"
fi

# ---- build the solution track
step "build (solution track)"
targets=(s06_train_solution s06_tests_solution s06_bench s05_train_solution)
if cmake --build "$BUILD" -j16 --target "${targets[@]}" >"$OUT/build.log" 2>&1; then
  record "build" "ok ($(elapsed) s)"
else
  grep -E "error|Error" "$OUT/build.log" | head -30
  record "build" "FAILED: $OUT/build.log"
fi
ls "$BIN" 2>/dev/null

# ---- tests
step "tests"
if [ -x "$BIN/s06_tests_solution" ]; then
  timeout 300 "$BIN/s06_tests_solution" --gtest_color=no --gtest_output="json:$OUT/tests.json" >"$OUT/tests.log" 2>&1
  rc=$?
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==========\]|Failure|error:" "$OUT/tests.log" | head -60
  grep -E "^\[       OK \]" "$OUT/tests.log" | sed 's/^\[       OK \] //' | awk '{print "  " $0}' >"$OUT/tests_times.txt"
  record "tests" "exit $rc ($(grep -c '^\[       OK \]' "$OUT/tests.log") passed, $(grep -c '^\[  FAILED  \].*ms)' "$OUT/tests.log") failed)"
else
  record "tests" "not built"
fi

# ---- benchmarks
step "benchmarks"
if [ -x "$BIN/s06_bench" ]; then
  timeout 120 "$BIN/s06_bench" --benchmark_min_time=0.2 --benchmark_out="$OUT/s06_bench.json" \
    --benchmark_out_format=json 2>&1 | tee "$OUT/bench.log" | grep -E "^BM_|ERROR"
  record "benchmarks" "exit ${PIPESTATUS[0]}: $OUT/s06_bench.json"
fi

# ---- the trainer
train() {  # name, stage binary, args...
  local name=$1 exe=$2; shift 2
  step "train $name: $(basename "$exe") $*"
  timeout 120 "$exe" --no-progress --json "$OUT/$name.json" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  grep -E "^(data|graph|shared|epoch|final test|profile|layer|conv|relu|pool|flatten|fc|batch gather|loss|sgd|total)" "$OUT/$name.log"
  [ $rc -ne 0 ] && tail -5 "$OUT/$name.log"
  record "train $name" "exit $rc"
}
if [ -x "$BIN/s06_train_solution" ]; then
  train cnn_graph_on "$BIN/s06_train_solution" --model cnn --epochs 2 --graph on --verbose
  train cnn_graph_off "$BIN/s06_train_solution" --model cnn --epochs 2 --graph off
  train cnn_deep_graph_on "$BIN/s06_train_solution" --model cnn-deep --epochs 2 --graph on
  train cnn_deep_graph_off "$BIN/s06_train_solution" --model cnn-deep --epochs 2 --graph off
  train mlp_graph_on "$BIN/s06_train_solution" --model mlp --epochs 2 --graph on
  train mlp_graph_off "$BIN/s06_train_solution" --model mlp --epochs 2 --graph off
  train cnn_profile "$BIN/s06_train_solution" --model cnn --profile --epochs 1
  train cnn_deep_profile "$BIN/s06_train_solution" --model cnn-deep --profile --epochs 1
fi
if [ -x "$BIN/s05_train_solution" ]; then  # stage 05 beside stage 06, same runs
  train s05_cnn_profile "$BIN/s05_train_solution" --model cnn --profile --epochs 1
  train s05_cnn_deep_profile "$BIN/s05_train_solution" --model cnn-deep --profile --epochs 1
  train s05_cnn "$BIN/s05_train_solution" --model cnn --epochs 2
fi

# ---- compute-sanitizer memcheck: the layer tests, the graph tests and the small engine tests
# (the batch-64 layer shapes and the two-epoch graph comparison are left out for time)
step "compute-sanitizer memcheck"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ] && [ -x "$BIN/s06_tests_solution" ]; then
  filter='Task6_*:Stage06_Engine.EveryLayerKindMatchesStage02:Stage06_Engine.RefusesWhatItCannotRun'
  filter+=':-*CnnLayersAtBatch64:Task6_10_CudaGraph.EngineGivesTheSameParametersWithAndWithoutTheGraph'
  timeout 150 "$sanitizer" --tool memcheck --leak-check no --error-exitcode 99 \
    "$BIN/s06_tests_solution" --gtest_color=no --gtest_filter="$filter" >"$OUT/memcheck.log" 2>&1
  rc=$?
  tail -5 "$OUT/memcheck.log"
  grep -E "ERROR SUMMARY|^\[  FAILED  \]" "$OUT/memcheck.log" | head -10
  case $rc in
    0) record "memcheck" "clean (ERROR SUMMARY: 0 errors)" ;;
    124) record "memcheck" "TIMED OUT after 150 s (partial log: $OUT/memcheck.log)" ;;
    99) record "memcheck" "ERRORS: $OUT/memcheck.log" ;;
    *) record "memcheck" "exit $rc: $OUT/memcheck.log" ;;
  esac
else
  record "memcheck" "not run (no compute-sanitizer or no test binary)"
fi

# ---- the exercise track: every Task 6.x test must fail on the untouched holes, naming its task
step "exercise proof"
if [ "$(elapsed)" -lt 360 ]; then
  if cmake --build "$BUILD" -j16 --target s06_tests_exercise >"$OUT/build_exercise.log" 2>&1; then
    timeout 120 python3 "$ROOT/tools/prove_exercises.py" --build-dir "$BUILD" --stage 06_cudnn 2>&1 | tee "$OUT/prove.log"
    record "exercise proof" "$(tail -1 "$OUT/prove.log")"
  else
    grep -E "error" "$OUT/build_exercise.log" | head -10
    record "exercise proof" "exercise build FAILED: $OUT/build_exercise.log"
  fi
else
  record "exercise proof" "skipped: $(elapsed) s used, no time left"
fi

# ---- summary
step "summary"
python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
rows = []
for name in ["cnn_graph_on", "cnn_graph_off", "cnn_deep_graph_on", "cnn_deep_graph_off", "mlp_graph_on",
             "mlp_graph_off", "s05_cnn", "cnn_profile", "cnn_deep_profile", "s05_cnn_profile", "s05_cnn_deep_profile"]:
    path = os.path.join(out, name + ".json")
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
EOF
echo
for line in "${STATUS[@]}"; do echo "$line"; done
echo "total $(elapsed) s; logs in $OUT"
