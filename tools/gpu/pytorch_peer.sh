#!/usr/bin/env bash
# PyTorch beside the stages on the GPU machine, bounded so each call fits one device run. With a
# fresh build the three parts take about 8 to 10 minutes on an H100 with 16 cores, so run it as two
# calls, `selftest` then `compare` (the second finds build/gpu built); `all` stops at DEADLINE.
#
#   1. build the trainers (solution track) in build/gpu;
#   2. the parity self-test: PyTorch evaluates a model saved by each GPU stage on one GPU (04 MLP,
#      05 to 09 MLP and CNN; stage 07 in FP32) and must count the same correct predictions, and takes the same 20 SGD steps
#      from the same weights to within 5e-4 + 1e-3|p| of each stage's parameters;
#   3. the comparison of every stage with PyTorch's rows (eager, CUDA graph, torch.compile + CUDA
#      graph, CPU one thread, CPU every core), three epochs per row (the median epoch is then
#      never the first one, which carries one-off costs such as stage 06's graph capture).
#
#   OUT=/some/folder tools/gpu/pytorch_peer.sh            all three
#   OUT=/some/folder tools/gpu/pytorch_peer.sh selftest   build and self-test only
#   OUT=/some/folder tools/gpu/pytorch_peer.sh compare    build and comparison only
#
# Needs python3 with PyTorch (CUDA), CLI11 and nlohmann-json in .carry/include, and Fashion-MNIST
# in data/fashion-mnist (as tools/gpu/check_all.sh). Logs, the self-test's parity.json and the
# comparison's compare.{csv,json,svg} land in $OUT; the summary at the end says what passed.
set -u -o pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-all}
OUT=${OUT:-$PWD/results/pytorch_peer}
EPOCHS=${EPOCHS:-3}
STEP_MIN_LEFT=10
. tools/gpu/steps.sh
steps_begin "$OUT/pytorch_peer.log" "${DEADLINE:-540}"

say "pytorch_peer $MODE on $(hostname), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN',
torch.backends.cudnn.version(), 'GPU', torch.cuda.is_available() and torch.cuda.get_device_name(0))" 2>&1 | tee -a "$LOG"
ls data/fashion-mnist >>"$LOG" 2>&1 || say "warning: no data/fashion-mnist: the PyTorch rows will say so"

step "configure" 90 cmake -S . -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 -DCOURSE_TRACKS=solution
step "build the trainers" 300 cmake --build "$BUILD" -j16 --target s01_train_solution s02_train_solution \
  s03_train_solution s04_train_solution s05_train_solution s06_train_solution \
  s07_train_solution s08_train_solution s09_train_solution
if [ "$MODE" = all ] || [ "$MODE" = selftest ]; then
  step "parity self-test" 200 python3 tools/compare.py --peer pytorch --self-test --build-dir "$BUILD" \
    --out "$OUT/selftest"
  # Its lines: one per check ([pass] / [fail] / [error] / [skipped]) and the verdict, which must
  # count only passes ("PyTorch parity self-test: 16 pass"), never "skipped: ...".
  grep -E "^  \[(pass|fail|error|skipped)\]|^PyTorch parity self-test: [0-9s]" "$LOG" >"$OUT/selftest_summary.txt"
fi
if [ "$MODE" = all ] || [ "$MODE" = compare ]; then
  step "compare with PyTorch" 420 python3 tools/compare.py --peer pytorch --epochs "$EPOCHS" \
    --build-dir "$BUILD" --out "$OUT/compare"
fi
# The model files (about 1 MB each) are inputs and outputs of the checks, rebuilt by any rerun.
rm -f "$OUT"/compare/logs/*.bin "$OUT"/selftest/self_test/*.bin "$OUT"/selftest/self_test/logs/*.bin
say ""
say "summary ($MODE, ${SECONDS}s):"
for line in "${SUMMARY[@]}"; do say "  $line"; done
[ -f "$OUT/selftest_summary.txt" ] && say "" && say "$(cat "$OUT/selftest_summary.txt")"
exit 0
