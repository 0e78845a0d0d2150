"""The experiments that run the stages' trainers: E1 (Figs 5.1-5.2), E2 (Fig 5.3), E3 (Fig 5.4),
E4 (Table 5.1) and E6 (the practice's network). Each returns a payload (a dict) that tables.py,
charts.py and doc.py read, and that replicate.py writes as JSON: so every figure the doc shows is one
a trainer's --json held.

Every run goes through compare_lib.runs.run_stage, as tools/compare.py's do: the same command line,
logs and --json reading. The thesis's models train with the thesis's batch, images per epoch and
learning rate (studies.THESIS_MODELS), on the data set made the model's input (--resize, --channels);
an epoch is the thesis's, those images, so nothing is scaled. A CPU run's figure is its last epoch
of two; a GPU run's the median of its epochs after the first (which carries cuDNN's autotuning, the
CUDA graph's capture and the first touches of memory)."""
import csv
import dataclasses
import re
import statistics
import subprocess
import sys
from pathlib import Path

from compare_lib.amdahl import fit_parallel_fraction
from compare_lib.runs import run_stage, static_row
from compare_lib.stages import all_stages

from . import studies

EXIT_USAGE = 2


def stage_table(root):
    """{stage id: Stage} of the stages' one-GPU rows, each allowed to run the thesis's models."""
    out = {}
    for s in all_stages(root):
        if s.gpus > 1:
            continue
        models = tuple(s.models)
        if "cnn" in models:
            models += tuple(studies.THESIS_MODELS)
        out[s.id] = dataclasses.replace(s, models=models)
    return out


@dataclasses.dataclass
class Context:
    """What every run of one invocation shares."""
    root: Path
    build_dir: Path
    out_dir: Path
    dataset: str = "fashion-mnist"
    seed: int = 42
    cpu_epochs: int = 2
    gpu_epochs: int = 3
    images_scale: float = 1.0          # --quick and the tests train on fewer images than the thesis (said so)
    timeout: int = 900
    gpu_usable: bool = False
    gpu_reason: str = ""               # why the GPU stages are left out
    progress: object = print
    said: set = dataclasses.field(default_factory=set)   # reasons printed once already

    def images(self, model):
        return max(32, int(round(studies.THESIS_MODELS[model]["images"] * self.images_scale)))


def model_args(model):
    """--lr, --resize and --channels of a thesis model: its learning rate and its input."""
    m = studies.THESIS_MODELS[model]
    c, h, w = m["input"]
    return ["--lr", f"{m['lr']:g}", "--resize", f"{h}x{w}", "--channels", str(c)]


def figure_seconds(run, gpu):
    """(seconds of one epoch, how they were taken) from a Run: the last epoch on a CPU, the median of the
    epochs after the first on a GPU."""
    secs = run.epoch_seconds
    if not secs:
        return None, ""
    if gpu and len(secs) > 1:
        rest = secs[1:]
        return statistics.median(rest), (f"median of epochs 2-{len(secs)}" if len(rest) > 1 else "epoch 2")
    return secs[-1], (f"the last of {len(secs)} epochs" if len(secs) > 1 else "one epoch")


def run_trainer(ctx, stage, model, *, tag, extra=(), threads=0, images=None, batch=None, epochs=None, dataset=None,
                median_after_first=False):
    """One trainer run of a thesis model (or of `model` with its own flags in `extra`); returns a row. With
    median_after_first, a CPU's figure is taken as a GPU's is (the median of the epochs after the first)."""
    gpu = stage.gpu
    if gpu and not ctx.gpu_usable:
        run = static_row(stage, model, "skipped", ctx.gpu_reason)
    else:
        spec = studies.THESIS_MODELS.get(model)
        run = run_stage(ctx.root, ctx.build_dir, stage, model, out_dir=ctx.out_dir,
                        epochs=epochs or (ctx.gpu_epochs if gpu else ctx.cpu_epochs),
                        batch=batch or (spec["batch"] if spec else 32),
                        limit=images if images is not None else (ctx.images(model) if spec else 0),
                        seed=ctx.seed, dataset=dataset or ctx.dataset, threads=threads,
                        extra=(model_args(model) if spec else []) + list(extra), timeout=ctx.timeout, tag=tag)
    seconds, how = figure_seconds(run, gpu or median_after_first) if run.status == "ok" else (None, "")
    row = {"stage": stage.id, "model": model, "status": run.status, "reason": run.reason, "device": run.device,
           "gpu": gpu, "threads": run.threads if run.status == "ok" else (threads or None),
           "seconds": seconds, "seconds_taken_as": how, "epoch_seconds": run.epoch_seconds,
           "images": run.images if run.status == "ok" else None,
           "images_per_second": run.images / seconds if seconds else None,
           "test_accuracy": run.test_accuracy if run.status == "ok" else None,
           "synthetic": run.synthetic, "dataset": run.dataset, "command": run.command, "log": str(run.log),
           "tag": tag}
    what = f"{stage.id} {model}" + (f" {tag}" if tag else "")
    if run.status == "ok":
        ctx.progress(f"  {what}: {seconds:.3f} s an epoch of {row['images']:,} images ({how}), "
                     f"{run.wall_seconds:.1f} s in all")
    elif gpu and not ctx.gpu_usable:
        if ctx.gpu_reason not in ctx.said:
            ctx.said.add(ctx.gpu_reason)
            ctx.progress(f"  the GPU stages' runs are left out: {ctx.gpu_reason}")
    else:
        ctx.progress(f"  {what}: {run.status}: {run.reason}")
    return row, run


# ---- E1: Figs 5.1-5.2, sequential against OpenMP -------------------------------------------------

def e1_threads(ctx, stages, models, counts, parallel="data"):
    rows, fits = [], []
    for model in models:
        base, _ = run_trainer(ctx, stages["02_conv_pool"], model, tag="e1")
        base["threads"] = 1
        rows.append(base)
        series = []
        for n in counts:
            row, _ = run_trainer(ctx, stages["03_openmp"], model, tag=f"e1_{n}t", threads=n,
                                 extra=["--parallel", parallel])
            row["threads"] = n
            rows.append(row)
            series.append(row)
        fits.append(threads_fit(model, base, series))
    return {"rows": rows, "fits": fits, "thread_counts": counts, "parallel": parallel}


def threads_fit(model, base, series):
    """Speedups of stage 03's runs over its own 1-thread run and over stage 02, and Amdahl's p fitted to
    the former (the sweep's rule, compare_lib/sweeps.py)."""
    one = next((r for r in series if r["threads"] == 1 and r["status"] == "ok"), None)
    for r in series:
        ok = r["status"] == "ok"
        r["speedup_vs_1_thread"] = one["seconds"] / r["seconds"] if ok and one else None
        r["speedup_vs_stage02"] = base["seconds"] / r["seconds"] if ok and base["status"] == "ok" else None
    points = [(r["threads"], r["speedup_vs_1_thread"]) for r in series if r.get("speedup_vs_1_thread")]
    fit = fit_parallel_fraction(points) if any(n > 1 for n, _ in points) else None
    best = max((r for r in series if r["status"] == "ok"), key=lambda r: r["threads"], default=None)
    thesis = studies.THESIS_OPENMP.get(model)
    out = {"model": model, "fit": fit, "stage02_seconds": base["seconds"],
           "most_threads": best["threads"] if best else None,
           "speedup_at_most_threads": best["speedup_vs_stage02"] if best else None}
    if thesis:
        s = thesis["sequential_s"] / thesis["openmp_s"]
        out["thesis"] = {**thesis, "speedup": s, "p": studies.implied_parallel_fraction(s, thesis["threads"])}
    return out


# ---- E2: Fig 5.3, OpenMP, CUDA, cuDNN and the fused step per model -------------------------------

E2_STAGES = ("02_conv_pool", "03_openmp", "05_im2col_gemm", "06_cudnn", "08_fused")


def e2_stages(ctx, stages, models, e1=None, cores=1):
    """Per model: stage 02 and stage 03 on every core (from E1 when it ran), 05, 06 (its CUDA graph on)
    and 08."""
    rows = []
    for model in models:
        for sid in E2_STAGES:
            reused = None
            if e1 and sid in ("02_conv_pool", "03_openmp"):
                want = 1 if sid == "02_conv_pool" else cores
                reused = next((r for r in e1["rows"] if r["model"] == model and r["stage"] == sid
                               and r["threads"] == want), None)
            if reused:
                rows.append({**reused, "reused_from": "E1"})
                continue
            row, _ = run_trainer(ctx, stages[sid], model, tag="e2", threads=cores if sid == "03_openmp" else 0)
            rows.append(row)
    for model in models:
        ref = {r["stage"]: r for r in rows if r["model"] == model}
        omp = ref.get("03_openmp")
        for r in rows:
            if r["model"] == model:
                ok = r["status"] == "ok" and omp and omp["status"] == "ok"
                r["speedup_vs_openmp"] = omp["seconds"] / r["seconds"] if ok else None
    return {"rows": rows, "stages": list(E2_STAGES)}


# ---- E3: Fig 5.4, stage 05 against stage 06 over five models --------------------------------------

E3_VARIANTS = (("05_im2col_gemm", "", ()), ("06_cudnn", "graph on", ("--graph", "on")),
               ("06_cudnn", "graph off", ("--graph", "off")))


def e3_crossover(ctx, stages, models):
    rows = []
    for model in models:
        for sid, label, extra in E3_VARIANTS:
            row, _ = run_trainer(ctx, stages[sid], model, tag="e3" + ("_" + label.replace(" ", "_") if label else ""),
                                 extra=extra)
            row["variant"] = label
            row["flops"] = studies.THESIS_MODELS[model]["flops"]
            rows.append(row)
    return {"rows": rows, "models": list(models), "crossover": crossover(rows, models)}


def crossover(rows, models):
    """Per cuDNN variant: the ratios t(05) / t(06) by model (above 1: cuDNN faster) and where the faster
    side changes, in the order of the models' work."""
    out = {}
    for label in ("graph on", "graph off"):
        ratios = []
        for m in models:
            a = next((r for r in rows if r["model"] == m and r["stage"] == "05_im2col_gemm"), None)
            b = next((r for r in rows if r["model"] == m and r["stage"] == "06_cudnn" and r["variant"] == label), None)
            ok = a and b and a["status"] == "ok" and b["status"] == "ok"
            ratios.append({"model": m, "ratio": a["seconds"] / b["seconds"] if ok else None})
        known = [r for r in ratios if r["ratio"] is not None]
        changes = [(p["model"], q["model"]) for p, q in zip(known, known[1:]) if (p["ratio"] > 1) != (q["ratio"] > 1)]
        if not known:
            verdict = "not measured"
        elif changes:
            verdict = "; ".join(f"between {a} and {b}" for a, b in changes)
        elif all(r["ratio"] > 1 for r in known):
            verdict = "none: cuDNN ahead on every model"
        else:
            verdict = "none: stage 05 ahead on every model"
        out[label] = {"ratios": ratios, "changes": changes, "verdict": verdict}
    return out


# ---- E4: Table 5.1, ms per layer -----------------------------------------------------------------

def e4_layers(ctx, stages, model=studies.TABLE51_MODEL):
    rows, layers = [], {}
    for sid in ("05_im2col_gemm", "06_cudnn"):
        row, run = run_trainer(ctx, stages[sid], model, tag="e4_profile", extra=["--profile"])
        rows.append(row)
        layers[sid] = profile_layers(run) if run.status == "ok" else {}
    table = []
    for kind, index, direction, cudnn_ms, cuda_ms in studies.THESIS_TABLE51:
        name = studies.table51_layer(kind, index)
        key = "forward_ms_per_batch" if direction == "forward" else "backward_ms_per_batch"
        ours = {sid: (layers[sid].get(name) or {}).get(key) for sid in layers}
        table.append({"layer": f"{kind} {direction} {index}", "course_layer": name, "direction": direction,
                      "thesis_cudnn_ms": cudnn_ms, "thesis_cuda_ms": cuda_ms,
                      "stage06_ms": ours.get("06_cudnn"), "stage05_ms": ours.get("05_im2col_gemm")})
    return {"rows": rows, "table": table, "model": model, "layers": layers}


def profile_layers(run):
    """{'conv1': {forward_ms_per_batch, backward_ms_per_batch, label}} from a trainer's --json profile
    (its layers are labelled 'conv1 (conv16k3p1)')."""
    import json
    path = Path(run.log).with_suffix(".json")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for layer in (data.get("profile") or {}).get("layers", []):
        name = layer["layer"].split(" ")[0]
        out[name] = {"forward_ms_per_batch": layer.get("forward_ms_per_batch"),
                     "backward_ms_per_batch": layer.get("backward_ms_per_batch"), "label": layer["layer"]}
    return out


# ---- E6: the practice's network, stage 01 against stage 04 ---------------------------------------

PRACTICE_FLAGS = ["--activation", "leaky", "--leaky-slope", "0.1", "--output", "sigmoid", "--loss", "mse"]
# The practice's own small network, and a wider one of the same kind: where a GPU starts to pay.
PRACTICE_HIDDEN = ("16,8", "256,256")


def tabular_shape(data_dir):
    """(features, classes) of DIR/train.csv and DIR/test.csv: columns less one, and the largest label + 1
    (a line whose last field is no integer, a header, is passed over)."""
    features, top = None, -1
    for name in ("train.csv", "test.csv"):
        with open(Path(data_dir) / name, newline="") as f:
            for fields in csv.reader(f):
                if not fields:
                    continue
                try:
                    label = int(float(fields[-1]))
                except ValueError:
                    continue
                features = len(fields) - 1
                top = max(top, label)
    if features is None:
        raise ValueError(f"{data_dir}: no examples in train.csv or test.csv")
    return features, top + 1


def e6_practice(ctx, stages, epochs=5, batch=64, lr=0.5, script=None):
    data_dir = ctx.out_dir / "tabular"
    script = Path(script) if script else ctx.root / "tools" / "make_tabular.py"
    payload = {"rows": [], "data_dir": str(data_dir), "flags": PRACTICE_FLAGS, "epochs": epochs, "batch": batch,
               "lr": lr}
    if not script.is_file():
        payload["status"] = "skipped"
        payload["reason"] = ("tools/make_tabular.py is not in this checkout (it comes with the trainers' --output, "
                             "--leaky-slope and MAE)")
        return payload
    made = subprocess.run([sys.executable, str(script), "--out", str(data_dir), "--seed", str(ctx.seed)],
                          cwd=ctx.root, capture_output=True, text=True)
    if made.returncode != 0:
        payload["status"], payload["reason"] = "error", "tools/make_tabular.py failed: " + \
            ((made.stderr or made.stdout).strip().splitlines() or ["no output"])[-1]
        return payload
    d, k = tabular_shape(data_dir)
    payload["networks"], payload["speedups"] = [], {}
    for hidden in PRACTICE_HIDDEN:
        layers = f"{d},{hidden},{k}"
        payload["networks"].append(layers)
        extra = ["--data-dir", str(data_dir), "--layers", layers, "--lr", f"{lr:g}"] + PRACTICE_FLAGS
        for sid in ("01_fc_softmax", "04_cuda_matmul"):
            stage = stages[sid]
            tag = "e6" if hidden == PRACTICE_HIDDEN[0] else "e6-" + hidden.replace(",", "-")
            # An epoch of the small set takes milliseconds: both stages' figure is the median of the epochs
            # after the first, which carries the first touches of memory (and the GPU's start).
            row, run = run_trainer(ctx, stage, "mlp", tag=tag, extra=extra, images=0, batch=batch, epochs=epochs,
                                   dataset="csv", median_after_first=True)
            row["layers"] = layers
            refusal = flags_refused(run)
            if refusal:
                row["status"] = "skipped"
                row["reason"] = f"this trainer does not take the practice's flags yet ({refusal})"
            row["mae"] = last_mae(run)
            payload["rows"].append(row)
        a, b = (next((r for r in payload["rows"] if r["stage"] == s and r["layers"] == layers), None)
                for s in ("01_fc_softmax", "04_cuda_matmul"))
        payload["speedups"][layers] = a["seconds"] / b["seconds"] if a and b and a["seconds"] and b["seconds"] else None
    payload["layers"] = payload["networks"][0]  # the practice's own network
    payload["speedup"] = payload["speedups"][payload["layers"]]
    statuses = {r["status"] for r in payload["rows"]}
    payload["status"] = "ok" if statuses == {"ok"} else ("skipped" if "ok" not in statuses else "partial")
    if payload["status"] == "skipped" and all("practice's flags" in r["reason"] for r in payload["rows"]
                                              if r["status"] != "ok"):
        payload["reason"] = payload["rows"][0]["reason"]
    return payload


def flags_refused(run):
    """The trainer's words when it refused one of the practice's flags (a usage error naming one), else ""."""
    if run.status == "ok" or run.exit_code != EXIT_USAGE:
        return ""
    try:
        log = Path(run.log).read_text(errors="replace")
    except OSError:
        return ""
    for line in log.splitlines():
        line = line.strip()
        if line.startswith("error:") and re.search(r"--output|--loss|--activation|sigmoid|leaky|mse|not expected", line):
            return line[len("error:"):].strip()
    return ""


def last_mae(run):
    """The test MAE of the last epoch (--loss mse runs write train_mae and test_mae per epoch), or None."""
    import json
    try:
        data = json.loads(Path(run.log).with_suffix(".json").read_text())
        return data["epochs"][-1].get("test_mae")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
