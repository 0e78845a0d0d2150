# shellcheck shell=bash
# Sourced by tools/gpu/stage.sh 09, which has read the stage's folder and targets from the stage list.
# Stage 09 on a GPU machine, in one call: find NCCL, configure, build what stage
# 09 needs, run its tests (with one GPU the world-of-one ones; those that need two
# skip and say so), train with --gpus 1 alone and through the launcher (and, on a
# machine of two GPUs or more, with --gpus 2: weak and strong scaling, both
# all-reduce schedules), time the all-reduce of every model's gradient, and print a summary. Every step is timed
# and bounded: about 5 to 6 minutes on an H100 machine with 16 cores, and
# then, if time is left, the proof that every exercise hole of the stage fails its tests.
# What every stage's run shares is tools/gpu/stage.sh.
#
#   OUT=/some/folder tools/gpu/stage.sh 09        (run from anywhere; it works in the repository root)
#   OUT=/some/folder STAGE09_PROOF=0 tools/gpu/stage.sh 09   on two GPUs: the 13 two-rank runs
#                                                  take the proof's minutes (a one-GPU call proves it)
#
# NCCL: a system NCCL (nccl.h and libnccl.so where CMake looks) is used when
# there is one; else PyTorch's wheel's libnccl.so.2 (python3 -c 'import
# nvidia.nccl'), with the wheel's nccl.h or, when the wheel has none, the one
# in .carry/include (copy it there from a machine with NCCL:
# cp /usr/local/cuda/include/nccl.h .carry/include/). The trainer prints both
# versions (header and library) and refuses a library older than 2.14.
#
# Needs besides: CLI11 and nlohmann-json in .carry/include; GoogleTest (the
# system, or .carry/prefix: tools/gpu/carry_test_libs.sh); Fashion-MNIST in
# data/fashion-mnist (otherwise the trainer says so and uses the synthetic set).
#
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): exported here, and set by
# the trainer and its launcher for every rank (solutions/09_multi_gpu/communicator.hpp says why).
#
# What comes back under $OUT:
#   stage09.log        everything, step by step, the summary at its end
#   allreduce.csv      the all-reduce sweep's figures (s09_allreduce_sweep)
#   results.tar.gz     the trainer's JSON files, the test report, the scaling table and chart
#
# When it passes, the summary's steps all say "ok", the test line reads
# "[  PASSED  ] N tests" with the 2-GPU tests listed as skipped ("needs 2 GPUs,
# and CUDA shows 1 here") on one GPU and run on two, the epoch lines of s09 --gpus 1 sit beside stage
# 06's, the sweep ends "every result the mean of the ranks' inputs: yes", and
# the proof says "5 task(s) proven: 9.1 9.2 9.3 9.4 9.5".
export NCCL_NVLS_ENABLE=0
stage_begin 520  # seconds: under the device call's 10 minutes, with room for the summary
nvidia-smi topo -m 2>&1 | tee -a "$LOG"

# ---- NCCL: the system's library, else PyTorch's wheel's; the header next to it, else .carry/include's
first_file() { for f in "$@"; do [ -f "$f" ] && { echo "$f"; return; }; done; }
WHEEL=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
NCCL_LIB=$(first_file /usr/lib/x86_64-linux-gnu/libnccl.so /usr/lib/x86_64-linux-gnu/libnccl.so.2 \
  /usr/local/cuda/lib64/libnccl.so /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so \
  ${WHEEL:+"$WHEEL/lib/libnccl.so.2"})
NCCL_HEADER=$(first_file /usr/include/nccl.h /usr/local/cuda/include/nccl.h ${WHEEL:+"$WHEEL/include/nccl.h"} \
  "$PWD/.carry/include/nccl.h")
NCCL_ARGS=()
if [ -n "$NCCL_LIB" ] && [ -n "$NCCL_HEADER" ]; then
  NCCL_ARGS=(-DNCCL_LIBRARY="$NCCL_LIB" -DNCCL_INCLUDE_DIR="$(dirname "$NCCL_HEADER")")
  say "NCCL: library $NCCL_LIB, header $NCCL_HEADER ($(grep -hE '^#define NCCL_(MAJOR|MINOR|PATCH) ' "$NCCL_HEADER" | awk '{print $3}' | paste -sd.))"
else
  say "NCCL: library '${NCCL_LIB:-none found}', header '${NCCL_HEADER:-none found}' (python3's nvidia.nccl: '${WHEEL:-none}');" \
      "copy nccl.h into .carry/include if only the header is missing: stage 09 is skipped otherwise"
fi

# Warnings are errors on the development machine; another compiler here must not stop the measurements.
stage_configure 120 -DCOURSE_WERROR=OFF -DCOURSE_BUILD_BENCHMARKS=OFF "${NCCL_ARGS[@]}"
grep -E "\[course\] NCCL" "$LOG" | tail -n 1
stage_build 240 s09_allreduce_sweep s06_train_solution

# ---- the tests: with one GPU, the world-of-one tests; the 2-GPU ones skip with the reason
stage_tests 200

# ---- the trainer, Fashion-MNIST: stage 06 and stage 09 with one GPU side by side (two
# epochs; the first also captures the graph), the launcher path, every model at batch
# 64 (the 1-GPU point of the weak-scaling table) and 256 (of the strong-scaling table),
# and --profile runs with each all-reduce schedule (the all-reduce's rows per step).
WIDE="conv64k3p1,relu,pool2,conv128k3p1,relu,pool2,conv128k3p1,relu,pool2,flatten,fc128,relu,fc10"
model_args() {  # model_args MODEL: sets MARGS to the trainer's flags for MODEL (wide is an --arch)
  MARGS=(--model "$1")
  [ "$1" = wide ] && MARGS=(--arch "$WIDE")
  return 0
}
train() {  # train NAME BINARY ARGS...
  stage_train "$1" 60 "$2" "${@:3}"
}
train s06_cnn_b64 "$BIN/s06_train_solution" --model cnn --epochs 2
train s09_cnn_b64 "$BIN/s09_train_solution" --model cnn --epochs 2
train s09_cnn_b64_spawn "$BIN/s09_train_solution" --model cnn --epochs 2 --gpus 1 --spawn
train s09_cnn_b64_flat "$BIN/s09_train_solution" --model cnn --epochs 2 --allreduce flat
train s09_cnn-deep_b64 "$BIN/s09_train_solution" --model cnn-deep --epochs 2
train s09_wide_b64 "$BIN/s09_train_solution" --arch "$WIDE" --epochs 2
train s09_mlp_b64 "$BIN/s09_train_solution" --model mlp --epochs 2
train s09_cnn_b256 "$BIN/s09_train_solution" --model cnn --epochs 2 --batch 256
train s09_cnn-deep_b256 "$BIN/s09_train_solution" --model cnn-deep --epochs 2 --batch 256
train s09_wide_b256 "$BIN/s09_train_solution" --arch "$WIDE" --epochs 2 --batch 256
for model in cnn cnn-deep wide; do
  model_args "$model"
  train "s09_${model}_profile_buckets" "$BIN/s09_train_solution" "${MARGS[@]}" --epochs 1 --profile --allreduce buckets
  train "s09_${model}_profile_flat" "$BIN/s09_train_solution" "${MARGS[@]}" --epochs 1 --profile --allreduce flat
done

# ---- with two GPUs or more: the same models on two ranks, weak scaling (64 a GPU: a global
# batch of 128) and strong (256 shared by two), the flat schedule beside the default buckets,
# and the buckets' all-reduce rows under --profile
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
say "GPUs here: $GPUS"
if ((GPUS >= 2)); then
  for model in cnn cnn-deep wide mlp; do
    model_args "$model"
    train "s09_${model}_b128_g2" "$BIN/s09_train_solution" "${MARGS[@]}" --epochs 2 --gpus 2 --batch 128 \
      --allreduce buckets
    [ "$model" = mlp ] && continue
    train "s09_${model}_b256_g2" "$BIN/s09_train_solution" "${MARGS[@]}" --epochs 2 --gpus 2 --batch 256 \
      --allreduce buckets
    train "s09_${model}_b128_g2_flat" "$BIN/s09_train_solution" "${MARGS[@]}" --epochs 2 --gpus 2 --batch 128 \
      --allreduce flat
    train "s09_${model}_g2_profile_buckets" "$BIN/s09_train_solution" "${MARGS[@]}" --epochs 1 --gpus 2 \
      --batch 128 --profile --allreduce buckets
  done
fi

# ---- one all-reduce of each model's gradient (and 4 KiB ... 64 MiB) on every GPU here
step "all-reduce sweep" 60 "$BIN/s09_allreduce_sweep" --csv "$OUT/allreduce.csv"

# ---- last, if time is left: every hole of Tasks 9.2, 9.4 and 9.5 fails its tests (9.1 and 9.3 are
# proven in CI). With two GPUs the measurements above come first, and the proof is left out when
# STAGE09_PROOF=0 (a one-GPU call proves the same holes).
if [ "${STAGE09_PROOF:-1}" != 0 ]; then
  step "build exercises" 150 cmake --build "$BUILD" -j16 --target s09_tests_exercise
  stage_prove 90
fi

# ---- summary
stage_summary
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST|needs 2 GPUs" "$LOG" | sort | uniq -c | sort -rn | head -n 20 | tee -a "$LOG"
say ""
python3 - "$WORK" <<'PY' 2>&1 | tee -a "$LOG"
import glob, json, os, sys
work = sys.argv[1]
print(f"{'run':28s} {'device':38s} {'epoch':>5s} {'s/epoch':>8s} {'img/s':>9s} {'test acc':>8s}  all-reduce")
for path in sorted(glob.glob(os.path.join(work, "train_*.json"))):
    r = json.load(open(path))
    name = os.path.basename(path)[6:-5]
    s = r.get("stage_results") or {}
    how = f"{s.get('allreduce')}, {len(s.get('buckets', []))} bucket(s), {s.get('gradient_bytes', 0) / 1024:.0f} KiB, " \
          f"{s.get('nccl_library')}" if s else ""
    for e in r.get("epochs", []):
        print(f"{name:28s} {r.get('device', '?')[:38]:38s} {e['epoch']:5d} {e.get('seconds', 0):8.3f} "
              f"{e.get('images_per_second', 0):9.0f} {100 * e.get('test_accuracy', 0):7.2f}%  {how}")
    prof = r.get("profile")
    if prof and prof.get("layers") and r.get("epochs"):
        # --profile waits for each step's events: the epoch's seconds over its steps is a profiled step.
        step_us = r["epochs"][-1].get("seconds", 0) / max(prof.get("batches", 1), 1) * 1e6
        for l in prof["layers"]:
            if l["layer"].startswith(("all-reduce", "wait for")):
                print(f"    {l['layer']:44s} {l['backward_ms_per_batch'] * 1000:8.1f} us per step "
                      f"(a profiled step: {step_us:.0f} us)")
PY
say ""
# The scaling table from the same JSON (with one GPU, only its 1-GPU points: tools/scaling_chart.py;
# the flat and profiled runs stay out of it: they measure the schedule, not the scaling).
shopt -s nullglob
SCALING_RUNS=("$WORK"/train_s09_*_b64.json "$WORK"/train_s09_*_b256.json \
  "$WORK"/train_s09_*_b128_g2.json "$WORK"/train_s09_*_b256_g2.json)
shopt -u nullglob
python3 tools/scaling_chart.py "${SCALING_RUNS[@]}" --machine "$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd,)" \
  --svg "$WORK/scaling.svg" --csv "$WORK/scaling.csv" 2>&1 | tee -a "$LOG"
say ""
grep -A 40 "^all-reduce sweep:" "$LOG" | grep -E "^(all-reduce sweep|fit|gradient|mlp|cnn|wide|[0-9]+ KiB|every)" | head -n 20
stage_end
