#!/usr/bin/env python3
"""Reproduces the experiments of the three studies the course grew out of, on the machine at hand, and
writes the tables of docs/replication.md (the studies' setups and figures: tools/replicate_lib/studies.py).

    python3 tools/replicate.py                         every experiment (the GPU parts skipped, with the
                                                       reason, where there is no usable GPU)
    python3 tools/replicate.py --only e1,e5            some of them
    python3 tools/replicate.py --quick                 fewer thread counts, models and sizes
    python3 tools/replicate.py --save-figures vm       also copy the figures to docs/figures/replication_vm_*
                                                       and rewrite docs/replication.md's tables
    python3 tools/replicate.py --tables [--check]      rewrite (check) docs/replication.md from docs/figures
    python3 tools/replicate.py --replot                redraw docs/figures/replication_*.svg from their JSON, then
                                                       the tables (after a change to the charts' code)

The experiments (the thesis's models m0 .. m4 train with its batch, 32, its images per epoch and its learning
rates, on Fashion-MNIST resized to the model's input: the timings depend on the shapes, not the pictures):
  e1  thesis Figs 5.1-5.2: stage 02 (one thread) and stage 03 on 1, 2, 4, ... threads, m0, m1, m2; Amdahl's p
  e2  thesis Fig 5.3: stages 02, 03 (every core), 05 (CUDA), 06 (cuDNN) and 08 (fused) per model
  e3  thesis Fig 5.4: stage 05 against stage 06 with and without its CUDA graph over m0 .. m4; the crossover
  e4  thesis Table 5.1: ms per layer of m2, forward and backward, stage 05 against stage 06 (--profile)
  e5  the max-pooling study: one N x N image, N = 4 ... 2048, k2 s2 p0, k2 s1 p0, k2 s2 p1 (p2 refused),
      serial, OpenMP, and the GPU's kernel alone, with the copies, and a copy per window
  e6  the CUDA practice: its network (--layers D,16,8,K, leaky ReLU, a sigmoid output, MSE) on a tabular
      set, stage 04 against stage 01
Each writes E.json, E.csv and (where a chart helps) E.svg in --out (default results/replication), the
trainers' logs in --out/logs. Exit code 1 when a run failed (a skipped one is no failure).
"""
import argparse
import csv
import io
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from compare_lib import machine  # noqa: E402
from compare_lib.sweeps import thread_counts  # noqa: E402
from course_lib import gpu as course_gpu  # noqa: E402
from course_lib.common import exit_with  # noqa: E402
from replicate_lib import charts, doc, experiments, pooling, studies, tables  # noqa: E402

EXPERIMENTS = doc.EXPERIMENTS
# The programs each experiment runs (tools/course replicate builds these).
TARGETS = {"e1": ["s02_train_solution", "s03_train_solution"],
           "e2": ["s02_train_solution", "s03_train_solution", "s05_train_solution", "s06_train_solution",
                  "s08_train_solution"],
           "e3": ["s05_train_solution", "s06_train_solution"],
           "e4": ["s05_train_solution", "s06_train_solution"],
           "e5": ["s03_pool_study", "s05_pool_study"],
           "e6": ["s01_train_solution", "s04_train_solution"]}
GPU_TARGETS = {"s04_train_solution", "s05_train_solution", "s06_train_solution", "s08_train_solution",
               "s05_pool_study"}


def targets_for(only, gpu_usable):
    """The build targets the experiments `only` run (every experiment when empty), less the GPU programs where
    no GPU can run them: what tools/course replicate builds."""
    wanted = [w.strip().lower() for w in (only or "").split(",") if w.strip()] or list(EXPERIMENTS)
    targets = [t for e in wanted for t in TARGETS.get(e, [])]
    return [t for t in dict.fromkeys(targets) if gpu_usable or t not in GPU_TARGETS]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="tools/replicate.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", metavar="LIST", help="experiments to run, e.g. e1,e5 (default: all)")
    ap.add_argument("--quick", action="store_true",
                    help="E1 on 1, 8 and every thread only, E3 on m0, m2 and m4, E5 on 6 sizes and 3 thread counts")
    ap.add_argument("--dataset", default="fashion-mnist", help="data set of the thesis's runs (default: fashion-mnist)")
    ap.add_argument("--images", type=int, default=None, metavar="N",
                    help="train every thesis model on the first N images an epoch instead of the thesis's 1,000 "
                         "or 2,000 (the tables say so; for tests)")
    ap.add_argument("--models", default="", metavar="LIST", help="E1 and E2's models (default: m0,m1,m2)")
    ap.add_argument("--threads", default="", metavar="LIST",
                    help="E1's thread counts (default: 1, 2, 4, ... every core, and 8, the thesis's)")
    ap.add_argument("--parallel", choices=["data", "loops"], default="data", help="stage 03's strategy (default: data)")
    ap.add_argument("--pool-sizes", default="", metavar="LIST", help="E5's sizes (default: 4, 8, ..., 2048)")
    ap.add_argument("--pool-threads", default="", metavar="LIST", help="E5's thread counts (default: as E1's)")
    ap.add_argument("--pool-min-ms", type=float, default=30, help="E5: time each figure for at least this long")
    ap.add_argument("--cpu-epochs", type=int, default=2, help="epochs of a CPU run, the last one timed (default: 2)")
    ap.add_argument("--gpu-epochs", type=int, default=3,
                    help="epochs of a GPU run, the median of all but the first timed (default: 3)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "default"), help="default: build/default")
    ap.add_argument("--out", default=str(ROOT / "results" / "replication"), help="default: results/replication")
    ap.add_argument("--timeout", type=int, default=900, help="seconds before one run is stopped (default: 900)")
    ap.add_argument("--save-figures", default="", metavar="MACHINE",
                    help="copy each experiment's JSON, CSV and SVG to docs/figures/replication_MACHINE_E.* (vm, "
                         "h100) and rewrite docs/replication.md's tables")
    ap.add_argument("--tables", action="store_true", help="only rewrite docs/replication.md's tables from docs/figures")
    ap.add_argument("--check", action="store_true", help="with --tables: exit 1 when they differ from their JSON")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the charts of docs/figures/replication_*.json, then rewrite the tables")
    args = ap.parse_args(argv)
    try:
        args.only_list = [w.strip().lower() for w in args.only.split(",") if w.strip()] or list(EXPERIMENTS)
        for w in args.only_list:
            if w not in EXPERIMENTS:
                raise ValueError(f"--only: no experiment '{w}' (experiments: {', '.join(EXPERIMENTS)})")
        args.model_list = [m.strip() for m in args.models.split(",") if m.strip()] or list(studies.THESIS_MAIN_MODELS)
        for m in args.model_list:
            if m not in studies.THESIS_MODELS:
                raise ValueError(f"--models: no thesis model '{m}' (m0 .. m4)")
        args.thread_list = ints(args.threads, "--threads")
        args.pool_size_list = ints(args.pool_sizes, "--pool-sizes")
        args.pool_thread_list = ints(args.pool_threads, "--pool-threads")
    except ValueError as e:
        ap.error(str(e))
    if args.save_figures and not args.save_figures.replace("-", "").isalnum():
        ap.error("--save-figures: a short name of letters and digits (vm, h100)")
    args.build_dir = Path(args.build_dir).resolve()
    args.out = Path(args.out).resolve()
    return args


def ints(text, flag):
    try:
        values = [int(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise ValueError(f"{flag}: a list of whole numbers, not '{text}'") from None
    if any(v < 1 for v in values):
        raise ValueError(f"{flag}: every value must be at least 1")
    return values


def thread_list(args, cores):
    if args.thread_list:
        return sorted(set(args.thread_list))
    counts = thread_counts(cores)
    if args.quick:
        counts = [1, cores]
    if cores >= 8:
        counts.append(8)   # the thesis's
    return sorted(set(counts))


def shown_path(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def machine_now(args, gpu_text, load, watch):
    info = machine.machine_info(ROOT, shown_path(args.build_dir), gpu_text)
    info["load_average_at_start"] = load
    info["load_average_at_end"] = machine.load_average()
    return watch.record(info)   # what other programs used during the experiment: the busy check


def gpu_text(payload, found):
    for r in payload.get("rows", []):
        if r.get("gpu") and r.get("status") == "ok":
            return r["device"]
    if payload.get("gpu", {}).get("status") == "ok":
        return payload["gpu"]["device"]
    return "not used" if found.usable else f"none ({found.reason.split(' (')[0]})"


def flat_rows(exp, payload):
    """The rows of an experiment's CSV."""
    if exp == "e4":
        return payload.get("table", [])
    return payload.get("rows", [])


def to_csv(rows):
    keys = list(dict.fromkeys(k for r in rows for k, v in r.items() if not isinstance(v, (dict,))))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: (";".join(map(str, v)) if isinstance(v, list) else ("" if v is None else v))
                    for k, v in r.items() if k in keys})
    return buf.getvalue()


def run_experiment(exp, args, ctx, stages, cores, done):
    if exp == "e1":
        return experiments.e1_threads(ctx, stages, args.model_list, thread_list(args, cores), args.parallel)
    if exp == "e2":
        return experiments.e2_stages(ctx, stages, args.model_list, e1=done.get("e1"), cores=cores)
    if exp == "e3":
        models = ["m0", "m2", "m4"] if args.quick else list(studies.FIG54_MODELS)
        return experiments.e3_crossover(ctx, stages, models)
    if exp == "e4":
        return experiments.e4_layers(ctx, stages)
    if exp == "e5":
        sizes = args.pool_size_list or ([4, 16, 64, 256, 1024, 2048] if args.quick else list(studies.POOL_SIZES))
        threads = args.pool_thread_list or (thread_list(args, cores) if not args.quick else sorted({1, 2, cores}))
        return pooling.run_pool_study(ctx, sizes, studies.POOL_SETTINGS, threads=threads, min_ms=args.pool_min_ms)
    if exp == "e6":
        return experiments.e6_practice(ctx, stages)
    raise ValueError(exp)


def replot():
    """Redraws every docs/figures/replication_MACHINE_E.svg from its JSON (removing one its experiment no
    longer draws), then rewrites docs/replication.md's tables."""
    for path in sorted(doc.FIGURES.glob("replication_*_e[0-9].json")):
        exp = path.stem.rsplit("_", 1)[1]
        picture = charts.chart(exp, json.loads(path.read_text()))
        target = path.with_suffix(".svg")
        if picture:
            target.write_text(picture)
            print(f"drew {shown_path(target)}")
        elif target.exists():
            target.unlink()
    return doc.write()


def main(argv=None):
    args = parse_args(argv)
    if args.tables:
        return doc.write(check=args.check)
    if args.replot:
        return replot()
    command = machine.command_line(ROOT, [sys.argv[0]] + (list(argv) if argv is not None else sys.argv[1:]))
    found = course_gpu.machine_gpu()
    cores = machine.usable_cores()
    ctx = experiments.Context(root=ROOT, build_dir=args.build_dir, out_dir=args.out, dataset=args.dataset,
                              seed=args.seed, cpu_epochs=args.cpu_epochs, gpu_epochs=args.gpu_epochs,
                              timeout=args.timeout, gpu_usable=found.usable, gpu_reason=found.reason)
    if args.images:
        ctx.images = lambda model: args.images
    stages = experiments.stage_table(ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"replicating {', '.join(args.only_list)} on {machine.cpu_model()} ({cores} cores); GPU: "
          f"{'usable' if found.usable else found.reason}; trainers from {shown_path(args.build_dir)}", flush=True)
    done, failed = {}, False
    for exp in args.only_list:
        print(f"\n== {doc.TITLES[exp]}", flush=True)
        load, watch = machine.load_average(), machine.CpuWatch()
        date = machine.now()
        result = run_experiment(exp, args, ctx, stages, cores, done)
        payload = {"experiment": exp, "title": doc.TITLES[exp], "date": date, "command": command,
                   "settings": {"dataset": args.dataset, "seed": args.seed, "images": args.images,
                                "cpu_epochs": args.cpu_epochs, "gpu_epochs": args.gpu_epochs, "quick": args.quick},
                   **result}
        payload["machine"] = machine_now(args, gpu_text(payload, found), load, watch)
        payload.setdefault("status", "ok" if all(r.get("status") == "ok" for r in payload.get("rows", [])) else
                           ("skipped" if not any(r.get("status") == "ok" for r in payload.get("rows", []))
                            else "partial"))
        done[exp] = payload
        failed |= any(r.get("status") == "error" for r in payload.get("rows", [])) or payload["status"] == "error"
        print()
        print("\n".join(tables.experiment_lines(exp, payload)))
        paths = [args.out / f"{exp}.json", args.out / f"{exp}.csv"]
        paths[0].write_text(json.dumps(payload, indent=2) + "\n")
        paths[1].write_text(to_csv(flat_rows(exp, payload)))
        picture = charts.chart(exp, payload)
        if picture:
            paths.append(args.out / f"{exp}.svg")
            paths[2].write_text(picture)
        print("wrote " + ", ".join(shown_path(p) for p in paths), flush=True)
        if args.save_figures:
            for p in paths:
                target = doc.figure_path(args.save_figures, exp, p.suffix[1:])
                shutil.copyfile(p, target)
            stale = doc.figure_path(args.save_figures, exp, "svg")
            if not picture and stale.exists():
                stale.unlink()
            # After each experiment, so that a run stopped half way leaves the page matching what it saved.
            doc.write()
    return 1 if failed else 0


if __name__ == "__main__":
    exit_with(main)
