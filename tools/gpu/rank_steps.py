#!/usr/bin/env python3
"""Where a data-parallel step's time goes on each GPU, from one kernel trace per rank
(tools/gpu/kernel_trace.cpp with KERNEL_TRACE_OUT=dir/%p.csv).

    CUDA_INJECTION64_PATH=$PWD/kernel_trace.so KERNEL_TRACE_OUT=out/%p.csv \\
        build/gpu/bin/s09_train_solution --model cnn --gpus 2 --batch 128 --allreduce peer --epochs 2
    python3 tools/gpu/rank_steps.py out/*.csv

A step starts at each batch gather. Per rank: the median span of a step on the GPU,
split into the kernels that compute, the all-reduce's kernels (NCCL's or the peer
sum's) and the time no kernel ran; then how far apart the ranks start their
all-reduce in the same step (each waits there for the others). Steps 1 to 20
(warm-up and capture) and the last are left out; a file with fewer steps (the
launcher's own process) is skipped.
"""
import csv
import statistics
import sys


def is_allreduce(name):
    return "peer_sum" in name or name.startswith("nccl")


def steps_of(path, skip=20):
    steps, current = [], None
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if "gather" in r["name"]:
                current = []
                steps.append(current)
            if current is not None:
                current.append((int(r["start_ns"]) / 1e3, int(r["end_ns"]) / 1e3, r["name"]))
    return steps[skip:-1]


def anatomy(steps):
    """Medians over the steps, in microseconds: (span, compute, all-reduce, no kernel)."""
    spans = [b[0][0] - a[0][0] for a, b in zip(steps, steps[1:])]
    comm = statistics.median(sum(e - s for s, e, n in step if is_allreduce(n)) for step in steps)
    compute = statistics.median(sum(e - s for s, e, n in step if not is_allreduce(n)) for step in steps)
    span = statistics.median(spans)
    return span, compute, comm, span - compute - comm


def start_skew(a, b):
    """Median over the steps of how far apart two ranks start their all-reduce (us); None without one."""
    def first(step):
        return min((s for s, _, n in step if is_allreduce(n)), default=None)
    pairs = ((first(x), first(y)) for x, y in zip(a, b))
    skew = [abs(x - y) for x, y in pairs if x is not None and y is not None]
    return statistics.median(skew) if skew else None


def main(paths):
    ranks = []
    for path in paths:
        steps = steps_of(path)
        if len(steps) < 3:
            continue
        span, compute, comm, idle = anatomy(steps)
        print(f"{path}: {len(steps)} steps, {statistics.median(len(s) for s in steps):.0f} kernels a step; "
              f"median span {span:.1f} us = compute {compute:.1f} + all-reduce {comm:.1f} + no kernel {idle:.1f}")
        ranks.append(steps)
    if len(ranks) == 2 and start_skew(*ranks) is not None:
        print(f"the ranks start their all-reduce {start_skew(*ranks):.1f} us apart (median over steps)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
