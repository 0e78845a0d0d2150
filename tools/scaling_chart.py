#!/usr/bin/env python3
"""Stage 09's scaling table and chart, from the trainer's --json files.

Each file is one run of s09_train_solution: its JSON says the model, the ranks (GPUs), the global
batch and each epoch's images per second. A run belongs to

  weak scaling    when its global batch is --per-gpu-batch times its GPUs (each GPU keeps its batch),
  strong scaling  when its global batch is --global-batch (the GPUs share one batch),

or to both (one GPU at batch 64 is the first point of weak scaling at 64). The speedup of a run is
its images per second over the same model's one-GPU run of the same kind; ideal is the number of
GPUs. Images per second are the median over the epochs after the first (the first also captures the
CUDA graph and uploads the data), or the only epoch's.

    python3 tools/scaling_chart.py results/s09_*.json --svg scaling.svg --csv scaling.csv
    python3 tools/scaling_chart.py runs/*.json --per-gpu-batch 64 --global-batch 256
"""
import argparse
import csv
import io
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_lib import svg  # noqa: E402

WIDE = "conv64k3p1,relu,pool2,conv128k3p1,relu,pool2,conv128k3p1,relu,pool2,flatten,fc128,relu,fc10"


def model_label(results):
    """The model's name: the named model, `wide` (solutions/09_multi_gpu/scaling_models.hpp), else the spec."""
    arch = results.get("arch", {})
    if arch.get("spec") == WIDE:
        return "wide"
    return arch.get("model") if arch.get("model") not in (None, "custom") else arch.get("spec", "?")


def read_run(path):
    """One run as a dict, or None (with the reason) when it is not a finished stage 09 run."""
    results = json.loads(Path(path).read_text())
    if results.get("stage", {}).get("id") != "09_multi_gpu":
        return None, f"{path}: not a stage 09 run"
    if results.get("status") != "ok" or not results.get("epochs"):
        return None, f"{path}: the run did not finish (status {results.get('status')!r})"
    epochs = results["epochs"]
    timed = epochs[1:] if len(epochs) > 1 else epochs
    facts = results.get("stage_results") or {}
    return {"file": Path(path).name, "model": model_label(results), "gpus": int(facts.get("ranks", 1)),
            "global_batch": int(results.get("options", {}).get("batch", facts.get("global_batch", 0))),
            "allreduce": facts.get("allreduce", "?"), "device": results.get("device", "?"),
            "images_per_second": statistics.median(float(e["images_per_second"]) for e in timed),
            "epochs": len(epochs)}, ""


def scaling_rows(runs, per_gpu_batch, global_batch):
    """[{kind, model, gpus, global_batch, images_per_second, speedup, efficiency, ...}] for both kinds."""
    rows = []
    for kind in ("weak", "strong"):
        def belongs(r):
            return r["global_batch"] == (per_gpu_batch * r["gpus"] if kind == "weak" else global_batch)
        chosen = [r for r in runs if belongs(r)]
        for model in sorted({r["model"] for r in chosen}):
            mine = sorted((r for r in chosen if r["model"] == model), key=lambda r: r["gpus"])
            base = next((r for r in mine if r["gpus"] == 1), None)
            for r in mine:
                speedup = r["images_per_second"] / base["images_per_second"] if base else None
                rows.append(dict(r, kind=kind, speedup=speedup,
                                 efficiency=speedup / r["gpus"] if speedup is not None else None))
    return rows


def format_table(rows):
    out = [f"{'kind':6s} {'model':9s} {'GPUs':>4s} {'batch':>6s} {'all-reduce':>10s} {'img/s':>10s} "
           f"{'speedup':>8s} {'per GPU':>8s}"]
    for r in rows:
        sp = f"{r['speedup']:.2f}x" if r["speedup"] is not None else "no 1-GPU run"
        eff = f"{100 * r['efficiency']:.0f}%" if r["efficiency"] is not None else ""
        out.append(f"{r['kind']:6s} {r['model']:9s} {r['gpus']:4d} {r['global_batch']:6d} {r['allreduce']:>10s} "
                   f"{r['images_per_second']:10.0f} {sp:>8s} {eff:>8s}")
    return "\n".join(out)


def to_csv(rows):
    buf = io.StringIO()
    fields = ["kind", "model", "gpus", "global_batch", "allreduce", "images_per_second", "speedup", "efficiency",
              "device", "epochs", "file"]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def to_svg(rows, *, per_gpu_batch, global_batch, machine=""):
    """Speedup against GPUs: one line per model and kind (weak solid, strong dashed), and the ideal."""
    series = []
    gpus = sorted({r["gpus"] for r in rows}) or [1, 2]
    models = sorted({r["model"] for r in rows})
    for i, model in enumerate(models):
        for kind, dash in (("weak", ""), ("strong", "6 4")):
            pts = [(r["gpus"], r["speedup"]) for r in rows
                   if r["model"] == model and r["kind"] == kind and r["speedup"] is not None]
            if pts:
                series.append({"name": f"{model}, {kind}", "points": pts, "colour": svg.PALETTE[i % 7],
                               "dash": dash, "attrs": {"data_model": model, "data_kind": kind}})
    series.append({"name": "ideal (speedup = GPUs)", "points": [(g, float(g)) for g in gpus], "colour": svg.GREY,
                   "dash": "2 3", "markers": False})
    notes = [f"Weak scaling: batch {per_gpu_batch} per GPU (--batch {per_gpu_batch} x GPUs); strong scaling: "
             f"--batch {global_batch} shared by the GPUs. Speedup: images/s over the same model's 1-GPU run."]
    if machine:
        notes.append(f"Machine: {machine}.")
    return svg.line_chart(series, title="Stage 09: data-parallel training, speedup by GPUs",
                          subtitle=["images per second over one GPU (median of the epochs after the first)"],
                          x_label="GPUs (one process each)", y_label="speedup over 1 GPU", x_ticks=gpus,
                          footnotes=notes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="the trainer's --json files")
    ap.add_argument("--per-gpu-batch", type=int, default=64, help="weak scaling's batch per GPU (default 64)")
    ap.add_argument("--global-batch", type=int, default=256, help="strong scaling's global batch (default 256)")
    ap.add_argument("--svg", help="write the chart here")
    ap.add_argument("--csv", help="write the rows here")
    ap.add_argument("--machine", default="", help="the machine, in words, for the chart's footnote")
    args = ap.parse_args(argv)
    runs = []
    for path in args.json:
        run, why = read_run(path)
        if run:
            runs.append(run)
        else:
            print(f"left out: {why}", file=sys.stderr)
    rows = scaling_rows(runs, args.per_gpu_batch, args.global_batch)
    if not rows:
        print("no run fits weak or strong scaling with these batches", file=sys.stderr)
        return 1
    print(format_table(rows))
    if args.csv:
        Path(args.csv).write_text(to_csv(rows))
    if args.svg:
        Path(args.svg).write_text(to_svg(rows, per_gpu_batch=args.per_gpu_batch, global_batch=args.global_batch,
                                         machine=args.machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
