"""The companion sweeps: stage 03's threads (with the Amdahl fit), and the matmul sizes of stage 04's
kernels and of stage 07's in each precision."""
import csv
import io
import json
import math
import re
import subprocess
from pathlib import Path

from . import svg
from .amdahl import amdahl_speedup, describe_fit, fit_parallel_fraction
from .stages import not_built_reason


# ---- stage 03: threads --------------------------------------------------------

def thread_counts(cores):
    """1, 2, 4, ... up to the cores, and the core count itself when it is not a power of two."""
    counts, n = [], 1
    while n <= cores:
        counts.append(n)
        n *= 2
    if counts[-1] != cores:
        counts.append(cores)
    return counts


def thread_sweep_summary(runs, baselines):
    """Speedups and Amdahl fits of a thread sweep.

    runs: stage 03 Runs with options {"parallel", "threads"}; baselines: {model: stage 02 Run}.
    Returns {"rows": [dict per run], "fits": [dict per (model, parallel)]}; a speedup is None where
    its reference did not run."""
    rows, fits = [], []
    keys = list(dict.fromkeys((r.model, r.options["parallel"]) for r in runs))
    for model, mode in keys:
        series = sorted((r for r in runs if r.model == model and r.options["parallel"] == mode),
                        key=lambda r: r.options["threads"])
        one = next((r for r in series if r.options["threads"] == 1 and r.status == "ok"), None)
        base = baselines.get(model)
        base = base if base is not None and base.status == "ok" else None
        points = []
        for r in series:
            ok = r.status == "ok"
            vs_one = one.seconds_per_epoch / r.seconds_per_epoch if ok and one else None
            vs_02 = base.seconds_per_epoch / r.seconds_per_epoch if ok and base else None
            if vs_one is not None:
                points.append((r.options["threads"], vs_one))
            rows.append({"model": model, "parallel": mode, "threads": r.options["threads"], "status": r.status,
                         "reason": r.reason, "device": r.device,
                         "seconds_per_epoch": r.seconds_per_epoch if ok else None,
                         "images_per_second": r.images_per_second if ok else None,
                         "speedup_vs_1_thread": vs_one, "speedup_vs_stage02": vs_02,
                         "test_accuracy": r.test_accuracy if ok else None,
                         "images_measured": r.images if ok else None, "images_per_epoch": r.images_per_epoch or None,
                         "scaled": r.scaled, "command": r.command})
        fit = None
        if len([p for p in points if p[0] > 1]) >= 1:
            fit = fit_parallel_fraction(points)
        fits.append({"model": model, "parallel": mode, "fit": fit,
                     "stage02_seconds_per_epoch": base.seconds_per_epoch if base else None})
    return {"rows": rows, "fits": fits}


def _num(v, f):
    return "-" if v is None else format(v, f)


def format_thread_table(summary, baselines, header_lines=()):
    out = list(header_lines)
    heads = ["model", "parallel", "threads", "s/epoch", "img/s", "vs 1 thread", "vs stage 02", "test acc"]
    body = []
    for row in summary["rows"]:
        if row["status"] != "ok":
            body.append([row["model"], row["parallel"], str(row["threads"]), f"{row['status']}: {row['reason']}"])
            continue
        mark = "*" if row["scaled"] else ""
        body.append([row["model"], row["parallel"], str(row["threads"]), f"{row['seconds_per_epoch']:.2f}{mark}",
                     f"{row['images_per_second']:,.0f}", _num(row["speedup_vs_1_thread"], ".2f") + "x",
                     _num(row["speedup_vs_stage02"], ".2f") + "x", f"{100 * row['test_accuracy']:.2f}%{mark}"])
    widths = [max([len(h)] + [len(b[i]) for b in body if len(b) == len(heads)]) for i, h in enumerate(heads)]

    def line(c):
        if len(c) < len(heads):
            return "  ".join(x.ljust(w) for x, w in zip(c[:3], widths[:3])) + "  " + c[3]
        return "  ".join(x.rjust(w) if i >= 2 else x.ljust(w) for i, (x, w) in enumerate(zip(c, widths)))

    out += [line(heads), "  ".join("-" * w for w in widths)]
    prev = None
    for row, b in zip(summary["rows"], body):
        if prev and (row["model"], row["parallel"]) != prev:
            out.append("")
        prev = (row["model"], row["parallel"])
        out.append(line(b))
    out.append("")
    for model, base in baselines.items():
        if base.status == "ok":
            out.append(f"stage 02 (one thread, no OpenMP), {model}: {base.seconds_per_epoch:.2f} s/epoch"
                       + ("*" if base.scaled else ""))
        else:
            out.append(f"stage 02, {model}: {base.status}: {base.reason}")
    out.append("")
    out.append("Amdahl's law S(n) = 1 / ((1 - p) + p / n), p fitted by least squares on the speedup over 1 thread:")
    for f in summary["fits"]:
        text = describe_fit(f["fit"]) if f["fit"] else "no fit (needs the 1-thread run and one with more threads)"
        out.append(f"  {f['model']}, {f['parallel']}: {text}")
    if any(r["scaled"] for r in summary["rows"]):
        r = next(r for r in summary["rows"] if r["scaled"])
        out.append(f"* measured on the first {r['images_measured']:,} of {r['images_per_epoch']:,} training images "
                   "and scaled to a whole epoch; the accuracy is after those images only.")
    return "\n".join(out)


def thread_sweep_csv(summary):
    fields = ["model", "parallel", "threads", "status", "reason", "device", "seconds_per_epoch", "images_per_second",
              "speedup_vs_1_thread", "speedup_vs_stage02", "test_accuracy", "images_measured", "images_per_epoch",
              "scaled", "amdahl_p"]
    fit_of = {(f["model"], f["parallel"]): f["fit"] for f in summary["fits"]}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for row in summary["rows"]:
        fit = fit_of.get((row["model"], row["parallel"]))
        w.writerow({**{k: ("" if v is None else (f"{v:.4f}" if isinstance(v, float) else v)) for k, v in row.items()},
                    "scaled": str(row["scaled"]).lower(), "amdahl_p": f"{fit['p']:.4f}" if fit else ""})
    return buf.getvalue()


def thread_sweep_svg(summary, *, machine_line, date, command):
    series, counts = [], sorted({r["threads"] for r in summary["rows"]})
    for i, f in enumerate(summary["fits"]):
        colour = svg.PALETTE[i % len(svg.PALETTE)]
        pts = [(r["threads"], r["speedup_vs_1_thread"]) for r in summary["rows"]
               if r["model"] == f["model"] and r["parallel"] == f["parallel"] and r["speedup_vs_1_thread"]]
        name = f"{f['model']}, --parallel {f['parallel']}"
        if f["fit"]:
            name += f" (p = {f['fit']['p']:.3f})"
        series.append({"name": name, "points": pts, "colour": colour, "dash": "",
                       "attrs": {"data_model": f["model"], "data_parallel": f["parallel"]}})
        if f["fit"] and counts:
            p = f["fit"]["p"]
            curve = [(n, amdahl_speedup(p, n)) for n in _fine_range(counts)]
            series.append({"name": f"Amdahl fit, {f['model']} {f['parallel']}", "points": curve, "colour": colour,
                           "dash": "5,4", "markers": False, "attrs": {"data_fit": f"{p:.4f}"}})
    if counts:
        series.append({"name": "ideal (S = n)", "points": [(n, n) for n in _fine_range(counts)], "colour": "#999999",
                       "dash": "2,3", "markers": False})
    return svg.line_chart(series, title="Stage 03: speedup over one thread (OpenMP)", subtitle=[
        "seconds per epoch at 1 thread / at n threads; dashed: Amdahl's law with the fitted parallel fraction p"],
        x_label="threads (log scale)", y_label="speedup over 1 thread", x_ticks=counts, x_log2=True,
        footnotes=[f"Machine: {machine_line}.", f"Date: {date}.  Command: {command}"] +
                  (["Runs timed on part of an epoch were scaled to a whole one; each ratio compares runs on the same "
                    "images."] if any(r["scaled"] for r in summary["rows"]) else []))


def _fine_range(counts):
    lo, hi = math.log2(min(counts)), math.log2(max(counts))
    return [2 ** (lo + (hi - lo) * i / 40) for i in range(41)] if hi > lo else list(counts)


# ---- stage 04: matmul sizes ---------------------------------------------------

SWEEP_BINARY = "s04_matmul_sweep"


def parse_matmul_csv(text):
    """The rows s04_matmul_sweep --csv writes, with numbers as numbers."""
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        rows.append({"table": r["table"], "shape": r["shape"], "M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"]),
                     "trans_a": r["trans_a"] in ("1", "true"), "trans_b": r["trans_b"] in ("1", "true"),
                     "kernel": int(r["kernel"]), "kernel_name": r["kernel_name"], "median_ms": float(r["median_ms"]),
                     "gflops": float(r["gflops"]), "fraction_of_cublas": float(r["fraction_of_cublas"]),
                     "rel_error": float(r["rel_error"])})
    return rows


def run_matmul_sweep(root, build_dir, stage04, out_dir, sizes=None, mlp=False, timeout=1200):
    """Runs s04_matmul_sweep; returns {status: ok|skipped|error, reason, rows, output, command}."""
    args = ["--sizes", ",".join(str(s) for s in sizes)] if sizes else []
    return run_sweep(root, build_dir, stage04, SWEEP_BINARY, "sweep_matmul", args + (["--mlp"] if mlp else []),
                     parse_matmul_csv, out_dir, timeout)


def run_sweep(root, build_dir, stage, binary_name, name, args, parse, out_dir, timeout):
    """Runs one sweep binary of `stage` with --csv and `args` (its output in out_dir/logs/NAME.log, its
    CSV in NAME_raw.csv); returns interpret_matmul()'s verdict on what it did, with its rows read by
    `parse`. Skipped, with the reason, where the binary was not built."""
    binary = Path(build_dir) / "bin" / binary_name
    if not binary.is_file():
        reason = not_built_reason(root, build_dir, stage)
        if reason.startswith("not built in"):
            reason = f"not built in {build_dir} (cmake --build {build_dir} --target {binary_name})"
        return {"status": "skipped", "reason": reason, "rows": [], "output": "", "command": []}
    raw = (Path(out_dir) / "logs" / f"{name}_raw.csv").resolve()
    raw.parent.mkdir(parents=True, exist_ok=True)
    if raw.exists():
        raw.unlink()
    cmd = [str(binary), "--csv", str(raw)] + list(args)
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout)
        code, output, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        code, output, err = -1, "", f"timed out after {timeout} s"
    (Path(out_dir) / "logs" / f"{name}.log").write_text("$ " + " ".join(cmd) + "\n" + output + err)
    try:
        rows = parse(raw.read_text()) if raw.is_file() else []
    except (KeyError, ValueError) as e:   # a CSV of another version of the binary, or cut short
        code, rows, err = code or 1, [], f"{err}\ncannot read {raw}: {type(e).__name__}: {e}"
    return interpret_matmul(code, output, err, rows, cmd)


def interpret_matmul(code, output, err, rows, cmd=()):
    lines = [l.strip() for l in (err or "").splitlines() if l.strip()] or \
            [l.strip() for l in (output or "").splitlines() if l.strip()]
    message = lines[-1] if lines else "no output"
    if code == 0 and rows:
        return {"status": "ok", "reason": "", "rows": rows, "output": output, "command": list(cmd)}
    if not rows and ("needs a CUDA GPU" in message or ("GPU" in message and ("no " in message or "none" in message))):
        return {"status": "skipped", "reason": message, "rows": [], "output": output, "command": list(cmd)}
    return {"status": "error", "reason": f"{message} (exit code {code})", "rows": rows, "output": output,
            "command": list(cmd)}


def format_matmul_table(rows, header_lines=()):
    """Per table (square sizes; the MLP's GEMMs): one line per shape, one column per kernel,
    GFLOP/s and the percentage of cuBLAS."""
    out = list(header_lines)
    for table in dict.fromkeys(r["table"] for r in rows):
        trows = [r for r in rows if r["table"] == table]
        kernels = sorted({(r["kernel"], r["kernel_name"]) for r in trows})
        shapes = list(dict.fromkeys(r["shape"] for r in trows))
        cell = {(r["shape"], r["kernel"]): r for r in trows}
        heads = ["shape"] + [f"{k} {name}" for k, name in kernels]
        body = []
        for s in shapes:
            line = [s]
            for k, _ in kernels:
                r = cell.get((s, k))
                if r is None:
                    line.append("n/a")
                else:
                    pct = "" if k == 0 else f" ({100 * r['fraction_of_cublas']:.0f}%)"
                    bad = "WRONG " if not r["rel_error"] <= 1e-5 else ""
                    line.append(f"{bad}{r['gflops']:,.0f}{pct}")
            body.append(line)
        out.append(f"{table}: GFLOP/s (% of cuBLAS)")
        out += _aligned(heads, body) + [""]
    shapes = {(r["table"], r["shape"]) for r in rows}
    if {(r["table"], r["shape"]) for r in rows if r["kernel"] == 1} != shapes:
        out.append("Kernel 1 (single block) runs one thread per output in one block, so it is timed only where C has "
                   "at most 1,024 outputs; elsewhere its cell is n/a or its column is missing.")
    return "\n".join(out)


def _aligned(heads, body):
    """A text table's lines: the first column left-aligned, the others right-aligned."""
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(heads)]

    def line(cells):
        return "  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(cells, widths)))
    return [line(heads), "  ".join("-" * w for w in widths)] + [line(b) for b in body]


def sweep_gpu(output):
    """The GPU's name from a matmul sweep's output: its line "<GPU>; ... median of ...", or None."""
    for line in (output or "").splitlines():
        if ";" in line and "median of" in line:
            return line.split(";")[0].strip()
    return None


def matmul_csv(rows):
    fields = ["table", "shape", "M", "N", "K", "trans_a", "trans_b", "kernel", "kernel_name", "median_ms", "gflops",
              "fraction_of_cublas", "rel_error"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({**r, "trans_a": int(r["trans_a"]), "trans_b": int(r["trans_b"])})
    return buf.getvalue()


def matmul_svg(rows, *, gpu, machine_line, date, command):
    square = [r for r in rows if r["table"] == "square"] or rows
    kernels = sorted({(r["kernel"], r["kernel_name"]) for r in square})
    series = []
    for i, (k, name) in enumerate(kernels):
        pts = sorted((r["M"], r["gflops"]) for r in square if r["kernel"] == k)
        series.append({"name": f"{k} {name}", "points": pts, "colour": "#000000" if k == 0 else svg.PALETTE[i % 8],
                       "dash": "", "attrs": {"data_kernel": k}})
    sizes = sorted({r["M"] for r in square})
    return svg.line_chart(series, title="Stage 04: matmul GFLOP/s by size, every kernel against cuBLAS",
                          subtitle=[f"{gpu}; C[n, n] = A[n, n] B[n, n] in FP32; median of timed calls (CUDA events)"],
                          x_label="n (log scale)", y_label="GFLOP/s (log scale)", x_ticks=sizes, x_log2=True,
                          y_log=True, footnotes=[f"Machine: {machine_line}.", f"Date: {date}.  Command: {command}"])


def write_json(path, payload):
    Path(path).write_text(json.dumps(payload, indent=2) + "\n")


# ---- stage 07: the fast GEMMs in FP32, TF32 and BF16 --------------------------

FAST_SWEEP_BINARY = "s07_matmul_sweep"
PRECISION_NAMES = {"fp32": "FP32", "tf32": "TF32", "bf16": "BF16"}
# One line of its --roofline block, printf("  %-26s %8.1f %-8s (%s)"): what, rate, unit, how it was measured.
_CEILING = re.compile(r"^\s+(.+?)\s+(\d+(?:\.\d+)?) (\S+)\s+\((.*)\)\s*$")


def fast_gemm_bound(k):
    """The bound s07_matmul_sweep holds every contender to (fast_gemm_sweep.cpp): ||C - ref|| / ||ref||
    <= 1e-6 + 8 u sqrt(K), u = 2^-24, ref = cuBLAS of the same precision on the same operand values."""
    return 1e-6 + 8 * 2.0 ** -24 * math.sqrt(max(k, 1))


def parse_fast_gemm_csv(text):
    """The rows s07_matmul_sweep --csv writes, with numbers as numbers, plus "yardstick" (the cuBLAS call
    of the row's precision, which the others are timed and checked against) and "wrong" (over the bound)."""
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        k, err = int(r["K"]), float(r["rel_error"])
        rows.append({"table": r["table"], "shape": r["shape"], "M": int(r["M"]), "N": int(r["N"]), "K": k,
                     "trans_a": r["trans_a"] in ("1", "true"), "trans_b": r["trans_b"] in ("1", "true"),
                     "split_k": r["split_k"] in ("1", "true"), "contender": r["contender"],
                     "precision": r["precision"], "median_us": float(r["median_us"]), "gflops": float(r["gflops"]),
                     "fraction_of_cublas": float(r["fraction_of_cublas"]), "rel_error": err,
                     "yardstick": "cuBLAS" in r["contender"].split(),
                     "wrong": not err <= fast_gemm_bound(k)})
    return rows


def parse_ceilings(output):
    """The GPU's ceilings that s07_matmul_sweep --roofline prints before its tables:
    [{"what", "rate", "unit", "how"}], [] when there are none."""
    ceilings, inside = [], False
    for line in (output or "").splitlines():
        if line.startswith("ceilings of this GPU"):
            inside = True
        elif inside:
            m = _CEILING.match(line)
            if not m:
                break
            ceilings.append({"what": m.group(1), "rate": float(m.group(2)), "unit": m.group(3), "how": m.group(4)})
    return ceilings


def run_fast_gemm_sweep(root, build_dir, stage07, out_dir, sizes=None, course=False, timeout=1200):
    """Runs s07_matmul_sweep --roofline (and --course); returns run_sweep()'s verdict plus "ceilings"
    (parse_ceilings) and "notes" (its "note:" lines, e.g. that wgmma fell back on a GPU before Hopper)."""
    args = ["--roofline"] + (["--sizes", ",".join(str(s) for s in sizes)] if sizes else []) + \
        (["--course"] if course else [])
    result = run_sweep(root, build_dir, stage07, FAST_SWEEP_BINARY, "sweep_fast_gemm", args, parse_fast_gemm_csv,
                       out_dir, timeout)
    result["ceilings"] = parse_ceilings(result["output"])
    result["notes"] = [l.strip() for l in result["output"].splitlines() if l.startswith("note:")]
    return result


def format_fast_gemm_table(rows, header_lines=(), ceilings=(), notes=()):
    """The sweep's notes and the GPU's ceilings, then per table (square sizes; the GEMMs of mlp and cnn)
    and precision one block: a line per shape, a column per contender, GFLOP/s and the percentage of
    that precision's cuBLAS."""
    out = list(header_lines) + list(notes) + ([""] if notes else [])
    if ceilings:
        out.append("ceilings of this GPU (each operation alone, operands in registers):")
        out += [f"  {c['what']:26s} {c['rate']:9,.1f} {c['unit']:8s} ({c['how']})" for c in ceilings]
        out.append("")
    for table in dict.fromkeys(r["table"] for r in rows):
        for precision in dict.fromkeys(r["precision"] for r in rows if r["table"] == table):
            trows = [r for r in rows if r["table"] == table and r["precision"] == precision]
            contenders = list(dict.fromkeys(r["contender"] for r in trows))   # the sweep's order: cuBLAS first
            cell = {(r["shape"], r["contender"]): r for r in trows}
            body = []
            for shape in dict.fromkeys(r["shape"] for r in trows):
                line = [shape]
                for c in contenders:
                    r = cell.get((shape, c))
                    if r is None:
                        line.append("n/a")
                    else:
                        pct = "" if r["yardstick"] else f" ({100 * r['fraction_of_cublas']:.0f}%)"
                        line.append(("WRONG " if r["wrong"] else "") + f"{r['gflops']:,.0f}{pct}")
                body.append(line)
            name = PRECISION_NAMES.get(precision, precision)
            out.append(f"{table}, {name}: GFLOP/s (% of cuBLAS {precision})")
            out += _aligned(["shape"] + contenders, body) + [""]
    if any(r["split_k"] for r in rows):
        out.append("The weight gradients of the conv layers (dW) run split-K as stage 05's engine runs them; a "
                   "contender without a split-K (BF16 in) is n/a there.")
    if any(r["precision"] == "bf16" for r in rows):
        out.append("'bf16 in': operands already BF16 (gemm_bf16); 'fp32 in': FP32 operands through gemm(), as the "
                   "trainers call it.")
    if any(r["wrong"] for r in rows):
        out.append("WRONG: ||C - C(cuBLAS)|| / ||C(cuBLAS)|| above 1e-6 + 8 u sqrt(K), u = 2^-24 (the sweep's bound).")
    return "\n".join(out).rstrip("\n")


def fast_gemm_csv(rows):
    fields = ["table", "shape", "M", "N", "K", "trans_a", "trans_b", "split_k", "contender", "precision", "median_us",
              "gflops", "fraction_of_cublas", "rel_error", "yardstick", "wrong"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({**r, **{k: int(r[k]) for k in ("trans_a", "trans_b", "split_k", "yardstick", "wrong")}})
    return buf.getvalue()


def fast_gemm_svg(rows, *, gpu, machine_line, date, command):
    """One panel per precision, on one log scale: GFLOP/s of every contender by square size, with the
    cuBLAS call of that precision (the yardstick) in black."""
    square = [r for r in rows if r["table"] == "square" and not r["trans_a"] and not r["trans_b"]]
    panels = []
    for precision in dict.fromkeys(r["precision"] for r in square):
        prows = [r for r in square if r["precision"] == precision]
        series, colours = [], iter(svg.PALETTE)
        for c in dict.fromkeys(r["contender"] for r in prows):
            yardstick = any(r["yardstick"] for r in prows if r["contender"] == c)
            pts = sorted((r["M"], r["gflops"]) for r in prows if r["contender"] == c)
            series.append({"name": c + (" (the yardstick)" if yardstick else ""), "points": pts,
                           "colour": svg.INK if yardstick else next(colours), "dash": "",
                           "attrs": {"data_contender": c, "data_precision": precision}})
        name = PRECISION_NAMES.get(precision, precision)
        panels.append({"title": f"{name}: every kernel against cuBLAS {precision}", "series": series})
    sizes = sorted({r["M"] for r in square})
    return svg.line_panels(panels, title="Stage 07: matmul GFLOP/s by size in FP32, TF32 and BF16",
                           subtitle=[f"{gpu}; C[n, n] = A[n, n] B[n, n], FP32 sums; median of timed calls "
                                     "(CUDA events); one scale for every panel"],
                           x_label="n (log scale)", y_label="GFLOP/s (log scale)", x_ticks=sizes, x_log2=True,
                           y_log=True, footnotes=[f"Machine: {machine_line}.", f"Date: {date}.  Command: {command}"])
