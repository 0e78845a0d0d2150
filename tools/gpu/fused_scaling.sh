#!/usr/bin/env bash
# Stage 09 on the fused step: two GPUs against stage 08 on one, in one call of a two-GPU machine
# (lesson 09, "The fused step on two GPUs"): build, stage 09's tests, the all-reduce sweep, then
# `cnn` and `cnn-deep` twice each: stage 08 at batch 64, stage 09 on two GPUs at 64 each (buckets,
# flat and peer), four epochs a run; a --profile epoch of `cnn` on two GPUs; last, kernel traces of
# both models on two GPUs with flat and peer (tools/gpu/rank_steps.py: each rank's step split into
# compute, all-reduce and idle time). Prints the median of epochs 2 to 4 of both runs of each row
# (the first epoch carries the capture).
#
#   OUT=/some/folder tools/gpu/fused_scaling.sh        (NCCL_NVLS_ENABLE=0 is set here)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-fused-scaling}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
start=$(date +%s)
nvidia-smi topo -m | head -4
G=(); command -v ninja >/dev/null && G=(-G Ninja)
cmake -S . -B build/gpu "${G[@]}" -DCMAKE_BUILD_TYPE=Release -DCOURSE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCOURSE_BUILD_BENCHMARKS=OFF -DCOURSE_TRACKS=solution -DCMAKE_PREFIX_PATH="$PWD/.carry/prefix" >"$OUT/configure.log" 2>&1
cmake --build build/gpu -j"$(nproc)" --target s09_tests_solution s09_train_solution s08_train_solution \
  s09_allreduce_sweep >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head; exit 1; }
echo "built after $(($(date +%s) - start)) s"
timeout 200 build/gpu/bin/s09_tests_solution --gtest_brief=1 --gtest_color=no >"$OUT/s09_tests.log" 2>&1
echo "stage 09's tests: exit $?"; grep -E "FAILED|Failure|PASSED|SKIPPED|Skipped" "$OUT/s09_tests.log" | head -20
B=build/gpu/bin
timeout 60 "$B/s09_allreduce_sweep" 2>&1 | head -30
run() {  # a name, then the command
  local name=$1
  shift
  timeout 120 "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1 || { echo "$name failed"; tail -5 "$OUT/$name.log"; }
}
for round in 1 2; do
  for model in cnn cnn-deep; do
    run "s08_${model}_$round" "$B/s08_train_solution" --model "$model" --batch 64 --epochs 4
    run "s09-2gpu-buckets_${model}_$round" "$B/s09_train_solution" --model "$model" --gpus 2 --batch 128 --epochs 4 \
      --allreduce buckets
    run "s09-2gpu-flat_${model}_$round" "$B/s09_train_solution" --model "$model" --gpus 2 --batch 128 --epochs 4 \
      --allreduce flat
    run "s09-2gpu-peer_${model}_$round" "$B/s09_train_solution" --model "$model" --gpus 2 --batch 128 --epochs 4 \
      --allreduce peer
  done
done
timeout 60 "$B/s09_train_solution" --model cnn --gpus 2 --batch 128 --epochs 1 --profile --allreduce buckets 2>&1 |
  sed -n '/^profile:/,$p'
timeout 60 "$B/s09_train_solution" --model cnn --gpus 2 --batch 128 --epochs 1 --profile --allreduce peer 2>&1 |
  sed -n '/^profile:/,$p'
python3 - "$OUT" <<'PY'
import json, pathlib, statistics, sys
rows = {}
for f in sorted(pathlib.Path(sys.argv[1]).glob("s0*_*.json")):
    epochs = json.loads(f.read_text()).get("epochs", [])
    rows.setdefault(f.stem.rsplit("_", 1)[0], []).extend(e["seconds"] for e in epochs[1:] if e.get("seconds"))
for name, secs in rows.items():
    m = statistics.median(secs)
    print(f"{name:28s} median {m:.4f} s/epoch over {len(secs)} epochs -> {60000 / m:,.0f} images/s")
PY
if tools/gpu/build_kernel_trace.sh build/gpu/kernel_trace.so; then
  for model in cnn cnn-deep; do
    for schedule in flat peer; do
      dir="$OUT/trace_${model}_$schedule"
      mkdir -p "$dir"
      echo "kernel trace, $model, two GPUs, --allreduce $schedule:"
      CUDA_INJECTION64_PATH=$PWD/build/gpu/kernel_trace.so KERNEL_TRACE_OUT="$dir/%p.csv" timeout 60 "$B/s09_train_solution" \
        --model "$model" --gpus 2 --batch 128 --allreduce "$schedule" --epochs 2 --no-progress >"$dir.log" 2>&1
      python3 tools/gpu/rank_steps.py "$dir"/*.csv
    done
  done
else
  echo "no kernel traces: the tracer could not be built (above)"
fi
echo "done after $(($(date +%s) - start)) s"
