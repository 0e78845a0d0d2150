#!/usr/bin/env bash
# This tree's GPU stages against a baseline commit's, side by side in one call of the GPU machine:
# the comparison (tools/compare.py) run on the baseline's trainers and on this tree's, alternating,
# ROUNDS times each, so that a refactor's "nothing slower" is measured on one machine at one time.
#
#   git archive --format=tar.gz -o .carry/baseline.tgz <commit>     (on the machine you work on)
#   OUT=/some/folder tools/gpu/compare_baseline.sh                   (on the GPU machine)
#
# Env: STAGES (default 04,05,06,07,08), MODELS (default mlp,cnn), ROUNDS (default 2), EPOCHS (default 3:
# a row's seconds per epoch is then the mean of three, so one-time costs such as cuDNN's algorithm
# search, autotuning and graph capture weigh as they do in the course's tables),
# BUILD (this tree's build folder, default build/gpu: tools/gpu/learner_checks.sh build makes it),
# DEADLINE (seconds, default 560). The baseline is built in /tmp/course-baseline (outside the
# working tree), its trainers only. Each round's tables land in $OUT/{base,new}_N/compare.csv;
# one summary line per step last.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/out-baseline}
STAGES=${STAGES:-04,05,06,07,08}
MODELS=${MODELS:-mlp,cnn}
. tools/gpu/steps.sh
steps_begin "$OUT/compare_baseline.log" "${DEADLINE:-560}"
BASE=/tmp/course-baseline
TARBALL=.carry/baseline.tgz

say "compare_baseline on $(hostname), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee -a "$LOG"
[ -f "$TARBALL" ] || { say "no $TARBALL: make it with git archive (see the top of this script)"; exit 2; }
TRAINERS=()
for s in ${STAGES//,/ }; do TRAINERS+=("s${s}_train_solution"); done
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
if [ ! -x "$BASE/build/bin/${TRAINERS[0]}" ]; then
  rm -rf "$BASE" && mkdir -p "$BASE" && tar -xzf "$TARBALL" -C "$BASE"
  step "baseline configure" 120 cmake -S "$BASE" -B "$BASE/build" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCOURSE_TRACKS=solution -DCOURSE_BUILD_BENCHMARKS=OFF \
    -DCMAKE_PREFIX_PATH="$PWD/.carry/prefix"
  step "baseline build" 300 cmake --build "$BASE/build" -j16 --target "${TRAINERS[@]}"
fi
step "this tree's trainers" 300 cmake --build "$BUILD" -j16 --target "${TRAINERS[@]}"
for round in $(seq "${ROUNDS:-2}"); do
  for side in base new; do
    dir=$BUILD
    [ "$side" = base ] && dir=$BASE/build
    step "compare $side, round $round" 150 python3 tools/compare.py --stages "$STAGES" --models "$MODELS" \
      --variants none --epochs "${EPOCHS:-3}" --build-dir "$dir" --out "$OUT/${side}_$round"
  done
done
# The seconds per epoch (and test accuracy) of every row, both sides, every round, in one table.
python3 - "$OUT" "${ROUNDS:-2}" <<'EOF' | tee -a "$LOG"
import csv, sys, pathlib
out, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
rows = {}
for side in ("base", "new"):
    for r in range(1, rounds + 1):
        f = out / f"{side}_{r}" / "compare.csv"
        if not f.exists():
            continue
        for row in csv.DictReader(f.open()):
            key = (row.get("stage", "?"), row.get("model", "?"))
            rows.setdefault(key, {}).setdefault(side, []).append(
                f"{row.get('seconds_per_epoch') or row.get('status')} ({row.get('test_accuracy') or '-'})")
print(f"{'stage':<16} {'model':<9} {'baseline s/epoch (accuracy)':<40} {'this tree s/epoch (accuracy)':<40}")
for (stage, model), sides in sorted(rows.items()):
    print(f"{stage:<16} {model:<9} {', '.join(sides.get('base', [])):<40} {', '.join(sides.get('new', [])):<40}")
EOF
say ""
say "summary (${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
