#!/usr/bin/env python3
"""Where a GPU training step's time goes, kernel by kernel, from an Nsight Compute CSV
or a kernel trace (tools/gpu/kernel_trace.cpp).

    ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \\
        --launch-count 2000 build/gpu/bin/s05_train_solution --model cnn --limit 1280 --graph off ... > s05.csv
    python3 tools/gpu/kernel_table.py s05.csv --step-marker gather

    CUDA_INJECTION64_PATH=$PWD/kernel_trace.so KERNEL_TRACE_OUT=s06.csv build/gpu/bin/s06_train_solution ...
    python3 tools/gpu/kernel_table.py s06.csv

ncu runs every kernel alone, so each duration is the kernel's own GPU time with
no launch gaps and nothing overlapping: the sum per step is the floor that a
CUDA graph could reach. But it slows the program's own timing (stage 06's
cudnnFind then chooses other algorithms). A trace records the kernels of the
real run instead, with their start and end on the GPU: the table then also
gives each step's span on the GPU (one batch gather to the next) and the part
of it no kernel ran (the gaps: the GPU waiting for the host or for launches).

A step starts at each kernel whose name contains the marker (the batch
gather); the first `--skip` steps (warm-up) and the last (cut short, or followed
by the test pass) are left out, and the table gives, per kernel name, the
launches per step and the median microseconds per step over the rest.
"""
import argparse
import csv
import statistics
import sys


def read_trace(path):
    """[(name, microseconds, start_us)] in start order, from kernel_trace.cpp's CSV."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            start, end = int(r["start_ns"]), int(r["end_ns"])
            out.append((r["name"], (end - start) / 1e3, start / 1e3))
    return out


def read_kernels(path):
    """[(name, microseconds, start_us or None)] in launch order."""
    with open(path) as f:
        if f.readline().startswith("start_ns,"):
            return read_trace(path)
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own ==PROF== lines too
    rows = list(csv.reader(lines))
    head = rows[0]
    name_col, time_col = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    unit = "nsecond"
    out = []
    for r in rows[1:]:
        if r[name_col] == "" or not r[time_col].replace(".", "").replace(",", "").isdigit():
            unit = r[time_col] or unit  # the units row
            continue
        value = float(r[time_col].replace(",", ""))
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
        out.append((r[name_col], value * scale, None))
    return out


def short(name, width):
    base = name.split("(")[0]
    return base if len(base) <= width else base[: width - 3] + "..."


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--step-marker", default="gather", help="a kernel whose name contains this starts a step")
    ap.add_argument("--skip", type=int, default=2, help="warm-up steps left out (default 2)")
    ap.add_argument("--width", type=int, default=70)
    a = ap.parse_args(argv)
    kernels = read_kernels(a.csv)
    steps, starts, current = [], [], None
    for name, us, start in kernels:
        if a.step_marker in name:
            current = []
            steps.append(current)
            starts.append(start)
        if current is not None:
            current.append((name, us))
    # A step's span: from its marker to the next step's (traces only).
    spans = [b - a_ for a_, b in zip(starts, starts[1:])] if starts and starts[0] is not None else []
    spans = spans[a.skip:]
    steps = steps[a.skip:-1]  # the last one may be cut short by --launch-count
    if not steps:
        sys.exit(f"{a.csv}: fewer than {a.skip + 2} steps (marker '{a.step_marker}', {len(kernels)} kernels)")
    names = []
    for s in steps:
        for n, _ in s:
            if n not in names:
                names.append(n)
    totals = [sum(us for _, us in s) for s in steps]
    print(f"{len(steps)} steps, {statistics.median(len(s) for s in steps):.0f} kernels per step, "
          f"median {statistics.median(totals):.1f} us of kernel time per step")
    if spans:
        span = statistics.median(spans)
        print(f"median span of a step on the GPU {span:.1f} us: kernels {statistics.median(totals):.1f} us, "
              f"no kernel running {span - statistics.median(totals):.1f} us")
    print(f"{'kernel':<{a.width}} {'per step':>8} {'us/step':>9} {'share':>6}")
    rows = []
    for n in names:
        per = [sum(us for m, us in s if m == n) for s in steps]
        count = statistics.median(sum(1 for m, _ in s if m == n) for s in steps)
        rows.append((statistics.median(per), count, n))
    total = statistics.median(totals)
    for med, count, n in sorted(rows, reverse=True):
        print(f"{short(n, a.width):<{a.width}} {count:>8.0f} {med:>9.1f} {100 * med / total:>5.1f}%")


if __name__ == "__main__":
    main()
