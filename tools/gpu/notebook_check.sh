#!/usr/bin/env bash
# The Colab notebook (docs/colab.ipynb) on the GPU machine, so that what a learner without a GPU of their own
# runs is tested: tools/run_notebook.py runs its code cells in order, each as `bash -euo pipefail` in the
# repository root, as a Colab runtime runs them. Here the clone cell finds the checkout, and every install cell
# finds its thing present (nvcc 13, cuDNN, NCCL, the packages, data/fashion-mnist) and does nothing: the machine
# has no network, so an install cell that tries to download fails, and the verdict names it. Then the notebook
# configures build/default, runs tools/course compare (every stage, its own rows), builds and runs the GPU
# stages' tests of the solution track, and tools/course next, as on a T4.
#
#   OUT=/some/folder tools/gpu/notebook_check.sh
#   (DEADLINE: seconds before the run is stopped, default 570; STEP_DRY_RUN=1 lists the cells, runs none)
#
# It ends with one line:
#   notebook: PASS (9 cells, N s)                    every cell passed and the comparison ran the GPU stages
#   notebook: FAIL: cell N (exit E): # N. ...        the first cell that failed, by its number and comment
#   notebook: FAIL: the comparison left ...          every cell passed, but the GPU stages were left out
#   notebook: TIMED OUT in cell N: ...               the first run of a fresh machine builds the most: call it
#                                                    again on the warm machine; build/default carries on
# Everything the cells printed is in $OUT/notebook.log.
#
# What the machine lacks comes as for the other scripts here, through CMAKE_PREFIX_PATH (which CMake and the
# notebook's install cell both read): GoogleTest from .carry/prefix (tools/gpu/carry_test_libs.sh); NCCL, where
# the system has no nccl.h, from PyTorch's wheel with its header or .carry/include's (as tools/gpu/stage.sh 09).
# CLI11 and nlohmann-json in .carry/include are found by the configure step itself.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/out-notebook}
mkdir -p "$OUT"
LOG=$OUT/notebook.log
DEADLINE=${DEADLINE:-570}
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
first_file() { for f in "$@"; do [ -f "$f" ] && { echo "$f"; return; }; done; }

PREFIXES=()
ENV=()
if [ -d .carry/prefix ]; then
  PREFIXES+=("$PWD/.carry/prefix")
  ENV+=(--env "LD_LIBRARY_PATH=$PWD/.carry/prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
if [ -z "$(first_file /usr/include/nccl.h /usr/include/x86_64-linux-gnu/nccl.h /usr/local/cuda/include/nccl.h)" ]; then
  WHEEL=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
  [ -n "$WHEEL" ] && PREFIXES+=("$WHEEL")
  [ -f .carry/include/nccl.h ] && PREFIXES+=("$PWD/.carry")
fi
if [ ${#PREFIXES[@]} -gt 0 ]; then
  ENV+=(--env "CMAKE_PREFIX_PATH=$(IFS=:; echo "${PREFIXES[*]}")${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}")
fi

say "notebook_check on $(hostname), $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$LOG"
say "data: $(ls -d data/fashion-mnist 2>/dev/null || echo 'no data/fashion-mnist (cell 5 would download it, and fails without a network)')"
say "python3 tools/run_notebook.py docs/colab.ipynb ${ENV[*]}"
LIST=()
[ "${STEP_DRY_RUN:-0}" = 1 ] && LIST=(--list)
timeout --kill-after=10 "$DEADLINE" python3 tools/run_notebook.py docs/colab.ipynb "${LIST[@]}" "${ENV[@]}" >>"$LOG" 2>&1
rc=$?

# What the cells said, in short: each cell's verdict, the comparison's table, the tests' tally.
grep -E '^<== cell ' "$LOG"
awk '/^Seconds per training epoch/{n=60} n&&n--{print} /^wrote results\//{n=0}' "$LOG"
grep -E '^GPU stages? [0-9]|tests passed|tests failed' "$LOG"
last=$(grep -oE '^==> cell [0-9]+' "$LOG" | tail -n 1 | awk '{print $3}')
comment=$(sed -n "/^==> cell ${last:-0} of /{n;s/^    | //p;q;}" "$LOG")
cells=$(grep -oE '^==> cell [0-9]+ of [0-9]+' "$LOG" | tail -n 1 | awk '{print $5}')
if [ "${STEP_DRY_RUN:-0}" = 1 ]; then
  verdict="dry run: ${cells:-0} cells listed, none run (rc $rc)"
elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  verdict="TIMED OUT in cell $last after ${DEADLINE}s: $comment (call it again on the warm machine: build/default carries on)"
elif [ "$rc" != 0 ]; then
  verdict="FAIL: cell ${last:-?} (exit $rc): ${comment:-$(tail -n 1 "$LOG")}"
elif grep -qE '^GPU stages? [0-9]' "$LOG"; then
  verdict="FAIL: the comparison left GPU stages out: $(grep -m 1 -E '^GPU stages? [0-9]' "$LOG")"
else
  verdict="PASS (${cells:-?} cells, ${SECONDS} s)"
fi
say ""
say "notebook: $verdict"
say "log: $LOG"
case "$verdict" in PASS*|dry*) exit 0 ;; *) exit 1 ;; esac
