#!/usr/bin/env bash
# The studies' experiments (tools/replicate.py, docs/replication.md) on the GPU machine, in one bounded
# call: build what they run (the trainers of stages 01 to 06 and 08, s03_pool_study and s05_pool_study),
# run every experiment, and bring the figures back. Estimated before its first run (from the 2-core
# machine's timings and the H100 host's earlier builds): 2 to 4 minutes to build from nothing on 16 cores
# and 3 to 4 minutes to run, E1's 18 CPU runs (about 110 s) the longest part; DEADLINE (560 s) bounds the
# whole. --quick runs E1 on 1, 8 and 16 threads, E3 on m0, m2 and m4 and E5 on six sizes (about a minute
# less).
#
#   OUT=/some/folder tools/gpu/replicate.sh                 build, then every experiment
#   OUT=/some/folder tools/gpu/replicate.sh all --quick     the same, shorter
#   OUT=/some/folder tools/gpu/replicate.sh build           build only (a later call on the warm machine runs)
#   OUT=/some/folder tools/gpu/replicate.sh run [OPTIONS]   run only, on build/gpu built before
#
# Options after the mode go to tools/replicate.py (--only e3,e4, --quick, ...). REPLICATE_NAME (default h100)
# names the figures: docs/figures/replication_$REPLICATE_NAME_*.{json,csv,svg}, which the call rewrites
# docs/replication.md's tables from. What comes back in $OUT: replicate.log (every step, the tables the
# experiments printed, the summary last), replication.md (the page with this machine's tables),
# figures.tar.gz (docs/figures/replication_$REPLICATE_NAME_*: unpack it at the repository's root and
# commit) and results.tar.gz (every trainer's log and --json).
#
# Needs CLI11 and nlohmann-json in .carry/include and Fashion-MNIST in data/fashion-mnist (carried with the
# call, as for tools/gpu/check_all.sh); GoogleTest is not needed (no tests are built).
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
MODE=${1:-all}
[ $# -gt 0 ] && shift
OUT=${OUT:-$PWD/out-gpu}
NAME=${REPLICATE_NAME:-h100}
. tools/gpu/steps.sh
steps_begin "$OUT/replicate.log" "${DEADLINE:-560}"

say "replicate $MODE on $(hostname), $(date -u +%FT%TZ), git $(git describe --always --dirty 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1
say "cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$MODE" = all ] || [ "$MODE" = build ]; then
  PREFIX=()
  [ -d .carry/prefix ] && PREFIX=(-DCMAKE_PREFIX_PATH="$PWD/.carry/prefix")
  step "configure" 90 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCOURSE_WERROR=OFF -DCOURSE_TRACKS=solution -DCOURSE_BUILD_TESTS=OFF -DCOURSE_BUILD_BENCHMARKS=OFF "${PREFIX[@]}"
  TARGETS=$(python3 -c 'import sys; sys.path.insert(0, "tools"); import replicate; print(" ".join(replicate.targets_for("", True)))')
  # shellcheck disable=SC2086
  # -k: a program that fails to build leaves the others to build (and the experiments that need it skip).
  step "build: $TARGETS" 330 cmake --build "$BUILD" -j"$(nproc)" $(printf -- '--target %s ' $TARGETS) -- -k
fi

if [ "$MODE" = all ] || [ "$MODE" = run ]; then
  left=$((DEADLINE - SECONDS - 25))
  step "replicate" "$left" python3 tools/replicate.py --build-dir "$BUILD" --out "$OUT/replication" \
    --save-figures "$NAME" "$@"
  cp docs/replication.md "$OUT/replication.md" 2>/dev/null
  tar -czf "$OUT/figures.tar.gz" docs/figures/replication_"$NAME"_* 2>>"$LOG"
  [ -d "$OUT/replication" ] && tar -czf "$OUT/results.tar.gz" -C "$OUT" replication && rm -rf "$OUT/replication"
fi

say ""
say "summary (${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
