#!/usr/bin/env python3
"""Compares every stage of the course on the same work: seconds per epoch, images/s, speedups, accuracy.

    python3 tools/compare.py                      every stage this build has, the MLP and the CNN
    python3 tools/compare.py --stages 01,02 --models mlp --epochs 3 --full
    python3 tools/compare.py --sweep-threads      stage 03 on 1, 2, 4, ... cores, and the Amdahl fit
    python3 tools/compare.py --sweep-matmul       the matmul kernels at sizes 128 ... 4096 against cuBLAS: stage 04's,
                                                  and stage 07's in FP32, TF32 and BF16 (each against cuBLAS of its own)
    python3 tools/compare.py --all                all three
    python3 tools/compare.py --stages 07 --variants none     stage 07 in FP32 only, without its tf32 and bf16 rows
    python3 tools/compare.py --peer pytorch       the comparison with PyTorch's rows beside the stages
    python3 tools/compare.py --peer pytorch --self-test --build-dir build/gpu
                                                  PyTorch against every GPU stage: same accuracy, same 20 steps

Each stage's reference trainer (build/default/bin/sNN_train_solution) trains the same model on
the same data with the same seed, batch size and learning rate, and writes its figures to JSON;
this script reads them. By default the CNN on a CPU stage trains on the first 6,000 of the 60,000
training images (one pass) and its seconds are scaled to a whole epoch; everything else trains
one whole epoch. The table marks every scaled figure, and --full times whole epochs everywhere.
So that one epoch is a steady epoch, a GPU trainer pays its one-off costs before the first (the
training set's upload, each batch size's setup: cuDNN's algorithm search, stage 07's autotuning;
a pass of the step and its capture as a CUDA graph) and times them apart: the "setup s" column.
A stage the machine cannot run is a "skipped" row with the reason; a model a stage cannot train
is "n/a". Stage 07 has two more rows per model, "07_fast_gemm tf32" and "07_fast_gemm bf16" (its
trainer with --precision tf32 or bf16; its own row is FP32): each reads "vs prev" against the FP32 row,
so the table says what the precision buys beside the accuracy it costs (--variants picks them).
Outputs: results/compare.{csv,json,svg} (and sweep_threads.*, sweep_matmul.*, sweep_fast_gemm.*),
with the trainers' logs in results/logs/. Exit code 1 when a trainer failed.

--peer pytorch adds PyTorch's rows (eager, CUDA graph, torch.compile + CUDA graph on the GPU; one
thread and every core on the CPU) on the same work from the same initial weights, and a column that
reads every row against PyTorch's fastest (tools/compare_lib/peers.py). Where PyTorch is not
installed, or has no GPU, those rows are skipped with the reason.
"""
import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from compare_lib import machine, peer_parity, peers, sweeps, table  # noqa: E402
from compare_lib.runs import as_variant, left_out_row, run_from_dict, run_stage  # noqa: E402
from course_lib import gpu as course_gpu  # noqa: E402
from course_lib.common import exit_with  # noqa: E402
from compare_lib.stages import CONV_MODELS, all_stages, select_models, select_stages, select_variants  # noqa: E402

CPU_CONV_IMAGES = 6000   # a CNN on one CPU thread does ~1,400 img/s on a small machine: 4 s instead of 45


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="tools/compare.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_argument_group("what to compare")
    what.add_argument("--stages", default="", help="stages to run, e.g. 01,02 or 03_openmp (default: all)")
    what.add_argument("--models", default="mlp,cnn", help="models, from mlp, cnn, cnn-deep (default: mlp,cnn)")
    what.add_argument("--dataset", default="fashion-mnist", help="data set of every run (default: fashion-mnist)")
    what.add_argument("--variants", default="all", metavar="LIST",
                      help="the extra rows of a stage with another setting, by label: stage 07's tf32 and bf16 "
                           "(--precision); 'none' runs each stage's own row only (default: all)")
    what.add_argument("--track", default="solution", choices=["solution", "exercise"],
                      help="compare the reference trainers (solution) or your own (exercise)")
    what.add_argument("--gpu-stages", action="store_true",
                      help="run the GPU stages' trainers even where no usable GPU is found (each then says why it "
                           "cannot run, a row each); without it they are left out, in one line under the table")
    how = ap.add_argument_group("how much to train")
    how.add_argument("--epochs", type=int, default=1, help="epochs of every run (default: 1)")
    how.add_argument("--batch", type=int, default=64, help="minibatch size (default: 64)")
    how.add_argument("--limit", type=int, default=None,
                     help="train every run on the first N images and scale its seconds to a whole epoch "
                          f"(default: {CPU_CONV_IMAGES:,} for a CNN on a CPU stage, the whole epoch otherwise)")
    how.add_argument("--full", action="store_true", help="whole epochs everywhere, nothing scaled")
    how.add_argument("--seed", type=int, default=42, help="seed of every run (default: 42)")
    stage_opts = ap.add_argument_group("options of particular stages")
    stage_opts.add_argument("--threads", type=int, default=0, help="threads of the CPU stages that take --threads "
                            "(stage 03; default: every core)")
    stage_opts.add_argument("--parallel", choices=["data", "loops"], default=None,
                            help="stage 03's strategy (default: the trainer's, data)")
    stage_opts.add_argument("--kernel", type=int, default=None, help="stage 04's matmul kernel (default: the trainer's)")
    modes = ap.add_argument_group("companion sweeps (instead of the comparison)")
    modes.add_argument("--sweep-threads", action="store_true",
                       help="stage 03 at 1, 2, 4, ... threads, --parallel data and loops, with the Amdahl fit")
    modes.add_argument("--thread-counts", default="", help="thread counts of --sweep-threads (default: 1,2,4,... cores)")
    modes.add_argument("--sweep-matmul", action="store_true",
                       help="the matmul kernels at every size against cuBLAS (needs a GPU): stage 04's "
                            "(s04_matmul_sweep), then stage 07's in each precision with the GPU's ceilings "
                            "(s07_matmul_sweep --roofline)")
    modes.add_argument("--sizes", default="", help="matrix sizes of --sweep-matmul (default: its own, 128 ... 4096)")
    modes.add_argument("--course-gemms", "--mlp-gemms", dest="course_gemms", action="store_true",
                       help="--sweep-matmul also times the models' own GEMMs: the MLP's at stage 04 (its --mlp), "
                            "the MLP's and the CNN's at batch 64 and 256 at stage 07 (its --course)")
    modes.add_argument("--all", action="store_true", help="the comparison and both sweeps")
    peer = ap.add_argument_group("another framework beside the stages")
    peer.add_argument("--peer", choices=["pytorch"], default=None,
                      help="add PyTorch's rows to the comparison (skipped with the reason where it is not installed)")
    peer.add_argument("--peer-python", default="", metavar="COMMAND",
                      help="the Python that runs PyTorch, e.g. 'venv/bin/python' (default: this one)")
    peer.add_argument("--self-test", action="store_true",
                      help="with --peer pytorch: instead of the comparison, check PyTorch against every GPU stage "
                           "(the test accuracy of each stage's model, 20 steps from the same weights)")
    modes.add_argument("--replot", metavar="JSON", default=None,
                       help="redraw the table, CSV and SVG of a compare.json (from another machine, say) into --out")
    out = ap.add_argument_group("where")
    out.add_argument("--build-dir", default=str(ROOT / "build" / "default"),
                     help="the build folder with bin/sNN_train_solution (default: build/default)")
    out.add_argument("--out", default=str(ROOT / "results"), help="folder for the CSV, JSON, SVG and logs (default: results/)")
    out.add_argument("--timeout", type=int, default=3600, help="seconds before a trainer is stopped (default: 3600)")
    args = ap.parse_args(argv)
    if args.full and args.limit is not None:
        ap.error("--full and --limit contradict each other: --full trains whole epochs")
    for name in ("epochs", "batch"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, not {getattr(args, name)}")
    if args.limit is not None and args.limit < 0:
        ap.error(f"--limit must be at least 0 (0 = the whole epoch), not {args.limit}")
    if args.self_test and not args.peer:
        ap.error("--self-test checks a peer framework against the stages: give --peer pytorch")
    try:
        args.model_list = select_models(args.models)
        args.stage_list = select_stages(all_stages(ROOT), args.stages)
        args.variant_set = select_variants(args.stage_list, args.variants)
        args.count_list = [int(c) for c in args.thread_counts.split(",") if c.strip()]
        args.size_list = [int(c) for c in args.sizes.split(",") if c.strip()]
    except ValueError as e:
        ap.error(str(e))
    if any(c < 1 for c in args.count_list):
        ap.error("--thread-counts: every count must be at least 1")
    args.build_dir = Path(args.build_dir).resolve()
    args.out = Path(args.out).resolve()
    return args


def images_limit(stage, model, args):
    """--limit of one run: 0 trains the whole epoch. The thread sweep uses the same rule."""
    if args.full:
        return 0
    if args.limit is not None:
        return args.limit
    return CPU_CONV_IMAGES if not stage.gpu and model in CONV_MODELS else 0


def stage_extra(stage, args):
    extra = []
    if stage.id == "03_openmp" and args.parallel:
        extra += ["--parallel", args.parallel]
    if stage.id == "04_cuda_matmul" and args.kernel is not None:
        extra += ["--kernel", str(args.kernel)]
    return extra


def progress(i, total, run):
    head = f"[{i:2d}/{total}] {run.stage:17s} {run.model:8s}"
    if run.status != "ok":
        print(f"{head} {run.status}: {run.reason}", flush=True)
        return
    what = f"{run.images:,} images" + (f" x{run.epochs} epochs" if run.epochs > 1 else "")
    setup = f", {run.setup_seconds:.2f} s of setup before it" if run.setup_seconds > 0 else ""
    print(f"{head} {what}: {run.seconds_measured:.2f} s, {run.images_per_second:,.0f} img/s, "
          f"test {100 * run.test_accuracy:.2f}%  ({run.wall_seconds:.1f} s with loading{setup} and the test pass)",
          flush=True)


def gpu_of(runs):
    """The GPU's name from the first GPU trainer that ran, or why there was none."""
    for r in runs:
        if r.gpu and r.status == "ok":
            return r.device
    for r in runs:
        if r.left_out:   # the reason is said whole under the table
            return f"none ({r.reason.split(' (')[0]})"
    for r in runs:
        if r.gpu and not r.peer and r.status == "skipped" and not r.reason.startswith(("not built", "not in")):
            return f"none ({r.reason})"
    return None


def header_lines(info, args, command, date, what):
    lines = [f"{what}",
             f"machine: {machine.machine_line(info)}",
             f"build:   {info['build_dir']} ({info.get('build_type') or '?'} build, git {info.get('git') or '?'}"
             + (f", source tree {info['source_tree']}" if info.get("source_tree") else "") + ")",
             f"date:    {date}",
             f"command: {command}"]
    if info.get("peer"):
        lines.append(f"peer:    {peers.describe(info['peer'])}")
    warning = machine.info_busy_warning(info)
    return lines + ([warning] if warning else []) + [""]


def machine_now(args, gpu, load_at_start, watch):
    """machine_info() at the end of a run, with the load averages and what the other programs used meanwhile
    (`watch`, a machine.CpuWatch started with the run: the busy check)."""
    info = machine.machine_info(ROOT, args.build_dir, gpu)
    info["load_average_at_start"] = load_at_start
    info["load_average_at_end"] = machine.load_average()
    return watch.record(info)


def common_settings(args):
    return {"dataset": args.dataset, "batch": args.batch, "epochs": args.epochs, "seed": args.seed,
            "limit": args.limit, "full": args.full, "track": args.track, "threads": args.threads,
            "parallel": args.parallel, "kernel": args.kernel, "peer": args.peer, "variants": sorted(args.variant_set),
            "gpu_stages_left_out": bool(left_out_reason(args)),
            "images_rule": "whole epochs" if args.full else (
                f"the first {args.limit} images" if args.limit is not None else
                f"the first {CPU_CONV_IMAGES} images for a CNN on a CPU stage, else the whole epoch")}


def comparison_jobs(args):
    """(stage, model, variant) of every trainer run, model by model: each stage's own row (variant None),
    then its Variant rows that --variants keeps."""
    return [(s, m, v) for m in args.model_list for s in args.stage_list
            for v in [None] + [v for v in s.variants if v.label in args.variant_set]]


def left_out_reason(args):
    """Why the GPU stages are left out of this run (no usable GPU, and no --gpu-stages), or ""."""
    if args.gpu_stages:
        return ""
    found = course_gpu.machine_gpu()
    return "" if found.usable else found.reason


def compare(args, command, date):
    jobs = comparison_jobs(args)
    load, watch = machine.load_average(), machine.CpuWatch()
    why = left_out_reason(args)
    runs = [left_out_row(stage, model, why) for stage, model, variant in jobs if why and stage.gpu]
    for r, (stage, model, variant) in zip(runs, [j for j in jobs if why and j[0].gpu]):
        if variant:
            as_variant(r, stage, variant)
    jobs = [j for j in jobs if not (why and j[0].gpu)]
    print(f"running {len(jobs)} trainers from {args.build_dir} (logs in {args.out / 'logs'})"
          + ("; the GPU stages are left out (no usable GPU: the line under the table says why)" if runs else ""),
          flush=True)
    for i, (stage, model, variant) in enumerate(jobs, 1):
        run = run_stage(ROOT, args.build_dir, stage, model, out_dir=args.out, epochs=args.epochs, batch=args.batch,
                        limit=images_limit(stage, model, args), seed=args.seed, dataset=args.dataset,
                        threads=args.threads, extra=stage_extra(stage, args) + list(variant.args if variant else ()),
                        track=args.track, timeout=args.timeout, tag=f"_{variant.label}" if variant else "",
                        env=variant.env if variant else ())
        if variant:
            run = as_variant(run, stage, variant)
        runs.append(run)
        progress(i, len(jobs), run)
    peer_info = None
    if args.peer:
        print(f"PyTorch rows ({len(peers.PYTORCH_ROWS)} per model; logs in {args.out / 'logs'})", flush=True)
        counter = itertools.count(1)
        peer_runs, peer_info = peers.peer_rows(
            ROOT, args.build_dir, all_stages(ROOT), args.model_list, peers.PYTORCH_ROWS, out_dir=args.out,
            epochs=args.epochs, batch=args.batch, limit_of=lambda p, m: images_limit(p, m, args), seed=args.seed,
            dataset=args.dataset, peer_python=args.peer_python, track=args.track, timeout=args.timeout,
            progress=lambda r: progress(next(counter), len(peers.PYTORCH_ROWS) * len(args.model_list), r))
        runs += peer_runs
    rows = table.order_rows(table.compute_speedups(runs), args.model_list)
    info = machine_now(args, gpu_of(runs), load, watch)
    if peer_info is not None:
        info["peer"] = peer_info
    print()
    print(table.format_table(rows, header_lines(info, args, command, date,
                                                "Seconds per training epoch of every stage on the same work "
                                                f"({args.dataset}, batch {args.batch}, seed {args.seed})")))
    args.out.mkdir(parents=True, exist_ok=True)
    paths = [args.out / f"compare.{ext}" for ext in ("csv", "json", "svg")]
    paths[0].write_text(table.to_csv(rows))
    paths[1].write_text(table.to_json(rows, machine=info, command=command, date=date, settings=common_settings(args)))
    paths[2].write_text(table.to_svg(rows, args.model_list, args.stage_list, machine_line=machine.machine_line(info),
                                     date=date, command=command, dataset=args.dataset, batch=args.batch))
    print("\nwrote " + ", ".join(_shown(p) for p in paths))
    return 1 if any(r.status == "error" for r in rows) else 0


def replot(args):
    """The comparison's outputs again from its JSON: the same figures, today's drawing code."""
    import json
    data = json.loads(Path(args.replot).read_text())
    rows = [run_from_dict(d) for d in data["rows"]]
    models = list(dict.fromkeys(r.model for r in rows))
    info, settings = data["machine"], data.get("settings", {})
    print(table.format_table(rows, header_lines(info, args, data["command"], data["date"],
                                                "Seconds per training epoch of every stage on the same work "
                                                f"({settings.get('dataset')}, batch {settings.get('batch')}, "
                                                f"seed {settings.get('seed')})")))
    args.out.mkdir(parents=True, exist_ok=True)
    paths = [args.out / f"compare.{ext}" for ext in ("csv", "json", "svg")]
    paths[0].write_text(table.to_csv(rows))
    if paths[1].resolve() != Path(args.replot).resolve():
        paths[1].write_text(json.dumps(data, indent=2) + "\n")
    paths[2].write_text(table.to_svg(rows, models, all_stages(ROOT), machine_line=machine.machine_line(info),
                                     date=data["date"], command=data["command"], dataset=settings.get("dataset"),
                                     batch=settings.get("batch")))
    print("\nwrote " + ", ".join(_shown(p) for p in paths))
    return 0


def sweep_threads(args, command, date):
    by_id = {s.id: s for s in all_stages(ROOT)}
    s02, s03 = by_id["02_conv_pool"], by_id["03_openmp"]
    counts = args.count_list or sweeps.thread_counts(machine.usable_cores())
    modes = [args.parallel] if args.parallel else ["data", "loops"]
    jobs = [(m, mode, n) for m in args.model_list for mode in modes for n in counts]
    print(f"stage 03 thread sweep: {len(jobs)} runs at threads {counts}, plus stage 02 per model", flush=True)
    baselines, runs = {}, []
    load, watch = machine.load_average(), machine.CpuWatch()
    total = len(jobs) + len(args.model_list)
    i = 0
    for model in args.model_list:
        i += 1
        base = run_stage(ROOT, args.build_dir, s02, model, out_dir=args.out, epochs=args.epochs, batch=args.batch,
                         limit=images_limit(s02, model, args), seed=args.seed, dataset=args.dataset,
                         track=args.track, timeout=args.timeout, tag="_sweep")
        baselines[model] = base
        progress(i, total, base)
    for model, mode, n in jobs:
        i += 1
        run = run_stage(ROOT, args.build_dir, s03, model, out_dir=args.out, epochs=args.epochs, batch=args.batch,
                        limit=images_limit(s03, model, args), seed=args.seed, dataset=args.dataset,
                        threads=n, extra=["--parallel", mode], track=args.track, timeout=args.timeout,
                        tag=f"_{mode}_{n}t")
        run.options = {"parallel": mode, "threads": n}
        runs.append(run)
        print(f"  --parallel {mode} --threads {n}:", end=" ")
        progress(i, total, run)
    summary = sweeps.thread_sweep_summary(runs, baselines)
    info = machine_now(args, None, load, watch)
    print()
    print(sweeps.format_thread_table(summary, baselines, header_lines(
        info, args, command, date, f"Stage 03 thread sweep ({args.dataset}, batch {args.batch}, seed {args.seed})")))
    args.out.mkdir(parents=True, exist_ok=True)
    paths = [args.out / f"sweep_threads.{ext}" for ext in ("csv", "json", "svg")]
    paths[0].write_text(sweeps.thread_sweep_csv(summary))
    sweeps.write_json(paths[1], {"what": "stage 03 seconds per epoch by threads, with Amdahl's law fitted",
                                 "date": date, "command": command, "machine": info, "settings": common_settings(args),
                                 "thread_counts": counts, "stage02": {m: b.to_dict() for m, b in baselines.items()},
                                 **summary})
    paths[2].write_text(sweeps.thread_sweep_svg(summary, machine_line=machine.machine_line(info), date=date,
                                                command=command))
    print("\nwrote " + ", ".join(_shown(p) for p in paths))
    bad = [r for r in runs + list(baselines.values()) if r.status == "error"]
    return 1 if bad else 0


def sweep_matmul(args, command, date):
    """Both matmul sweeps, each skipped with the reason where its binary or a GPU is missing: stage 04's
    kernels against cuBLAS, then stage 07's in FP32, TF32 and BF16, each against cuBLAS of its precision."""
    by_id = {s.id: s for s in all_stages(ROOT)}
    print(f"stage 04 matmul sweep ({sweeps.SWEEP_BINARY})", flush=True)
    load, watch = machine.load_average(), machine.CpuWatch()
    result = sweeps.run_matmul_sweep(ROOT, args.build_dir, by_id["04_cuda_matmul"], args.out, sizes=args.size_list,
                                     mlp=args.course_gemms, timeout=args.timeout)
    rc = matmul_sweep_files(args, command, date, load, watch, result, name="sweep_matmul", title="Stage 04 matmul sweep",
                            what="stage 04 matmul GFLOP/s by size and kernel, against cuBLAS",
                            table=sweeps.format_matmul_table, to_csv=sweeps.matmul_csv, to_svg=sweeps.matmul_svg)
    print(f"\nstage 07 matmul sweep ({sweeps.FAST_SWEEP_BINARY} --roofline)", flush=True)
    load, watch = machine.load_average(), machine.CpuWatch()
    result = sweeps.run_fast_gemm_sweep(ROOT, args.build_dir, by_id["07_fast_gemm"], args.out, sizes=args.size_list,
                                        course=args.course_gemms, timeout=args.timeout)
    rc |= matmul_sweep_files(
        args, command, date, load, watch, result, name="sweep_fast_gemm",
        title="Stage 07 matmul sweep, each kernel against cuBLAS of its own precision",
        what="stage 07 matmul GFLOP/s by size, kernel and precision (FP32, TF32, BF16), each against cuBLAS of the "
             "same precision; the GPU's ceilings measured first",
        extra={"ceilings": result["ceilings"], "notes": result["notes"]},
        table=lambda rows, header: sweeps.format_fast_gemm_table(rows, header, result["ceilings"], result["notes"]),
        to_csv=sweeps.fast_gemm_csv, to_svg=sweeps.fast_gemm_svg)
    return rc


def matmul_sweep_files(args, command, date, load, watch, result, *, name, title, what, table, to_csv, to_svg, extra=None):
    """Prints one matmul sweep's table and writes NAME.json (always: the status and the reason), NAME.csv
    and NAME.svg (when it has rows). 1 when the sweep failed or a kernel was wrong."""
    gpu = sweeps.sweep_gpu(result["output"])
    info = machine_now(args, gpu or (f"none ({result['reason']})" if result["status"] == "skipped" else None), load,
                       watch)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"what": what, "date": date, "command": command, "machine": info, "status": result["status"],
               "reason": result["reason"], "sweep_command": result["command"], **(extra or {}), "rows": result["rows"]}
    json_path = args.out / f"{name}.json"
    sweeps.write_json(json_path, payload)
    if not result["rows"]:
        print(f"{title}: {result['status']}: {result['reason']}")
        print(f"\nwrote {_shown(json_path)}")
        return 1 if result["status"] == "error" else 0
    print()
    print(table(result["rows"], header_lines(info, args, command, date, title)))
    if result["status"] == "error":
        print(f"\nerror: {result['reason']}")
    csv_path, svg_path = args.out / f"{name}.csv", args.out / f"{name}.svg"
    csv_path.write_text(to_csv(result["rows"]))
    svg_path.write_text(to_svg(result["rows"], gpu=gpu or "GPU", machine_line=machine.machine_line(info), date=date,
                               command=command))
    print("\nwrote " + ", ".join(_shown(p) for p in (csv_path, json_path, svg_path)))
    return 1 if result["status"] == "error" else 0


def _shown(path):
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv=None):
    args = parse_args(argv)
    command = machine.command_line(ROOT, [sys.argv[0]] + (list(argv) if argv is not None else sys.argv[1:]))
    date = machine.now()
    if args.replot:
        return replot(args)
    if args.self_test:
        return peer_parity.self_test(ROOT, args, command, date)
    rc = 0
    if args.all or not (args.sweep_threads or args.sweep_matmul):
        rc |= compare(args, command, date)
    if args.all or args.sweep_threads:
        if args.all:
            print()
        rc |= sweep_threads(args, command, date)
    if args.all or args.sweep_matmul:
        if args.all:
            print()
        rc |= sweep_matmul(args, command, date)
    return rc


if __name__ == "__main__":
    exit_with(main, "interrupted: no table was written")
