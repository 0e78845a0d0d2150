#!/usr/bin/env bash
# tools/compare.py with stage 07 on the GPU machine, in one bounded call: its precision rows
# (07_fast_gemm, "07_fast_gemm tf32", "07_fast_gemm bf16") beside stages 05 and 06, and both
# matmul sweeps (stage 04's, and stage 07's by precision with the GPU's ceilings). First the
# comparison's own tests (tools/tests) on this build, whose end-to-end tests then train stage 07
# for real (500 images, each precision) and run both sweeps at 128 and 256. Logs, the tables and
# their CSV/JSON/SVG go to $OUT; one summary line per step last. About 6 minutes on an H100.
#
#   OUT=/some/folder tools/gpu/compare07.sh
#
# Needs CLI11 and nlohmann-json in .carry/include (tools/gpu/carry_test_libs.sh), Fashion-MNIST in
# data/fashion-mnist.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/out-gpu}
. tools/gpu/steps.sh
steps_begin "$OUT/compare07.log" "${DEADLINE:-540}"
PREFIX=$PWD/.carry/prefix

say "compare07 on $(hostname), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$LOG"
step "configure" 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCOURSE_WERROR=OFF -DCOURSE_TRACKS=solution -DCMAKE_PREFIX_PATH="$PREFIX"
step "build" 240 cmake --build "$BUILD" -j16 --target s01_train_solution s02_train_solution s05_train_solution \
  s06_train_solution s07_train_solution s04_matmul_sweep s07_matmul_sweep
step "tools/tests on $BUILD" 150 env COMPARE_BUILD_DIR="$BUILD" python3 -m unittest discover -s tools/tests -v
step "compare 05,06,07" 150 python3 tools/compare.py --stages 05,06,07 --models mlp,cnn --build-dir "$BUILD" \
  --out "$OUT/compare"
step "sweep-matmul --course-gemms" 200 python3 tools/compare.py --sweep-matmul --course-gemms --build-dir "$BUILD" \
  --out "$OUT/sweep"

# What comes back is at most 8 files: the tables in the log, everything else in one archive.
for f in "$OUT"/compare/compare.csv "$OUT"/sweep/sweep_fast_gemm.csv; do
  [ -f "$f" ] && { say ""; say "== $f"; head -40 "$f" | tee -a "$LOG" >/dev/null; }
done
archive=$(mktemp -d)/results.tar.gz
(cd "$OUT" && tar -czf "$archive" --exclude=compare07.log . && find . -mindepth 1 -maxdepth 1 ! -name compare07.log \
  -exec rm -rf {} + && mv "$archive" "$OUT/results.tar.gz")
grep -E "^(FAIL|ERROR):|WRONG|^error:" "$LOG" | head -30
say ""
say "summary (${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
