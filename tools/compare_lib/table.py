"""The comparison table: speedups between stages, the text table, and its CSV, JSON and SVG."""
import csv
import io
import json

from . import svg
from .peers import PYTORCH_ROWS
from course_lib.gpu import left_out_line  # noqa: E402  (tools/ is on sys.path)

RUN_ANYWAY = "--gpu-stages runs their trainers anyway: each says why it cannot run"

CSV_FIELDS = ["stage", "device", "model", "status", "reason", "seconds_per_epoch", "images_per_second",
              "speedup_vs_prev", "vs_prev_stage", "speedup_vs_first", "vs_first_stage", "test_accuracy",
              "images_measured", "images_per_epoch", "epochs", "epoch_seconds_measured", "scaled", "threads", "dataset",
              "synthetic_data", "peer", "speedup_vs_peer_best", "peer_best_row", "variant_of", "setup_seconds"]
PEER_NAMES = {"pytorch": "PyTorch"}   # a peer framework's name in headers and notes


def compute_speedups(runs):
    """Sets run.vs_prev and run.vs_first of every ok run: (stage id, seconds of that stage / seconds of
    this one), comparing seconds per epoch of the same model only. "prev" is the closest earlier stage
    that ran the model (stages that skipped it are passed over); "first" is the earliest stage that ran
    it: stage 01 for the MLP, the first stage with conv layers for a CNN.

    A stage's Variant rows ("07_fast_gemm tf32", run.variant_of "07_fast_gemm") read "prev" against its own row
    (what the setting buys; none when that row did not run) and "first" as every row; no stage takes one
    of them as its "prev", so stage 08 reads against 07's own row. Rows of a peer framework (run.peer)
    stand outside the chain of stages too: they get "first" (the same base stage) but no "prev". Every
    ok row, stage or peer, gets run.vs_peer: (the fastest peer row of the model, its seconds / this row's)."""
    for model in dict.fromkeys(r.model for r in runs):
        ok = [r for r in runs if r.model == model and r.status == "ok"]
        ran = sorted((r for r in ok if not r.peer and not r.variant_of), key=lambda r: r.stage)
        for i, r in enumerate(ran):
            r.vs_first = (ran[0].stage, ran[0].seconds_per_epoch / r.seconds_per_epoch)
            r.vs_prev = (ran[i - 1].stage, ran[i - 1].seconds_per_epoch / r.seconds_per_epoch) if i else None
        own = {r.stage: r for r in ran}
        for r in ok:
            if r.variant_of:
                base = own.get(r.variant_of)
                r.vs_prev = (base.stage, base.seconds_per_epoch / r.seconds_per_epoch) if base else None
        peers = [r for r in ok if r.peer]
        for r in peers + [r for r in ok if r.variant_of]:
            r.vs_first = (ran[0].stage, ran[0].seconds_per_epoch / r.seconds_per_epoch) if ran else None
        for r in peers:
            r.vs_prev = None
        if peers:
            best = min(peers, key=lambda r: r.seconds_per_epoch)
            for r in ok:
                r.vs_peer = (best.stage, best.seconds_per_epoch / r.seconds_per_epoch)
    return runs


def order_rows(runs, models):
    """Rows grouped by model (in the order asked for), the stages in stage order, each stage's Variant rows
    right after its own row (in the order they ran), then the rows of a peer framework in the order of
    peers.PYTORCH_ROWS (eager, graph, compile, then the CPU)."""
    peer_rank = {p.id: i for i, p in enumerate(PYTORCH_ROWS)}
    return sorted(runs, key=lambda r: (models.index(r.model) if r.model in models else len(models), bool(r.peer),
                                       peer_rank.get(r.stage, len(peer_rank)) if r.peer else 0,
                                       r.variant_of or r.stage, bool(r.variant_of)))


def short_name(r):
    """A stage row's name under its bar: "05", or "07 tf32" for a Variant row."""
    return r.stage[:2] + (r.stage[len(r.variant_of):] if r.variant_of else "")


def times(v):
    """3.14x, 31.4x, 314x: three significant figures at most, never '1x' for 1.00."""
    return f"{v:.2f}x" if v < 10 else (f"{v:.1f}x" if v < 100 else f"{v:,.0f}x")


def speedup_text(pair):
    if not pair:
        return "-"
    stage, ratio = pair
    return f"{ratio:.2f}x vs {stage[:2]}"


def images_text(r):
    if r.status != "ok":
        return ""
    ep = f" x{r.epochs} ep" if r.epochs > 1 else ""
    if r.scaled:
        return f"{r.images:,} of {r.images_per_epoch:,}{ep}, scaled"
    if r.synthetic:
        return f"{r.images:,}{ep} (synthetic set)"
    return f"{r.images:,} (1 epoch){ep}" if not ep else f"{r.images:,}{ep}"


def split_reason(reason):
    """(what the row shows, its explanation or ""): a reason that explains itself in words after the message
    it quotes ('no usable GPU: ...runtime version (this machine has no NVIDIA driver...): stages 01-03 run
    here...', common/gpu/cuda_check.hpp) shows the quoted message in its row and the explanation once below."""
    cut = reason.find(" (")
    if cut < 0 or len(reason) <= 120:
        return reason, ""
    return reason[:cut], reason[cut + 1:]


def peer_name(rows):
    """The peer framework's name ("PyTorch") when some row of `rows` is one of its, else None."""
    return next((PEER_NAMES.get(r.peer, r.peer) for r in rows if r.peer), None)


def peer_column(rows):
    """The header of the "vs the framework's best" column, or None when no peer row ran."""
    name = peer_name(r for r in rows if r.status == "ok")
    return f"vs {name} best" if name else None


def row_cells(r, with_peer=False, with_setup=False):
    mark = "*" if r.scaled else ""
    if r.status != "ok":
        shown, explained = split_reason(r.reason)
        return [r.stage, r.device, r.model, f"{r.status}: {shown}" + (" (what it means: below)" if explained else "")]
    acc = f"{100 * r.test_accuracy:.2f}%{mark}" + (" (synthetic data)" if r.synthetic else "")
    cells = [r.stage, r.device, r.model, f"{r.seconds_per_epoch:.2f}{mark}"]
    if with_setup:
        cells.append(f"{r.setup_seconds:.2f}" if r.setup_seconds > 0 else "-")
    cells += [f"{r.images_per_second:,.0f}", speedup_text(r.vs_prev), speedup_text(r.vs_first)]
    if with_peer:
        cells.append(f"{r.vs_peer[1]:.2f}x" if r.vs_peer else "-")
    return cells + [acc, images_text(r)]


HEADERS = ["stage", "device", "model", "s/epoch", "img/s", "speedup vs prev", "speedup vs first", "test acc",
           "trained on (images)"]
LEFT = {"stage", "device", "model", "trained on (images)"}


SETUP = "setup s"


def shows_setup(rows):
    """Whether some row paid one-off costs before its first epoch (Run.setup_seconds): the table then shows them
    in a column of their own. Rows read from a comparison made before trainers timed them apart show none."""
    return any(r.status == "ok" and r.setup_seconds > 0 for r in rows)


def headers(rows):
    """The table's columns: HEADERS, with "setup s" after s/epoch when a row paid one-off costs before its first
    epoch, and the "vs PyTorch best" column after the speedups when a peer row ran."""
    column = peer_column(rows)
    head = HEADERS[:7] + [column] + HEADERS[7:] if column else list(HEADERS)
    return head[:4] + [SETUP] + head[4:] if shows_setup(rows) else head


def peer_notes(rows):
    """What the peer rows are, how they were run, and how to read "vs ... best"."""
    peers = [r for r in rows if r.peer]
    if not peers:
        return []
    name = peer_name(peers)
    ran = [r for r in peers if r.status == "ok"]
    info = next((r.options for r in ran if r.options.get("torch")), {})
    notes = []
    versions = (f"{name} {info['torch']} (CUDA {info.get('cuda') or '-'}, cuDNN {info.get('cudnn') or '-'})"
                if info else name)
    written_by = sorted({r.options.get("init_written_by") for r in ran if r.options.get("init_written_by")})
    notes.append(f"{name} rows: {versions} on the same work as the stages: the same model from the same initial "
                 f"weights (written by the {'/'.join(written_by) or 'course'} trainer with --epochs 0 --save), the "
                 "same IDX files and pixel floats, the same batches (the course's shuffle), the trainers' learning "
                 "rate, schedule and momentum; FP32 throughout (TF32 off in cuBLAS and cuDNN). The GPU rows keep "
                 "the data set on the device and gather each batch there, as the GPU stages do; each row runs a "
                 "few untimed steps first (cuDNN autotuning, compilation, graph capture), then restores the "
                 "initial weights.")
    by_config = {}
    for r in peers:
        by_config.setdefault(r.stage, r)
    whats = [p.what for p in PYTORCH_ROWS if p.id in by_config]
    if whats:
        notes.append(f"The {name} rows one by one: " + "; ".join(whats) + ".")
    if ran:
        bests = {}
        for r in rows:
            if r.status == "ok" and r.vs_peer:
                bests.setdefault(r.model, r.vs_peer[0])
        fastest = ", ".join(f"{m}: {b}" for m, b in bests.items())
        notes.append(f"vs {name} best = seconds per epoch of the fastest {name} row of the same model ({fastest}) / "
                     f"this row's: 0.95x is 5% slower than {name} at its fastest, 2.00x twice as fast.")
    return notes


def variant_notes(rows):
    """What each stage's Variant rows ran, and how their speedups read."""
    bases = list(dict.fromkeys(r.variant_of for r in rows if r.variant_of))
    if not bases:
        return []
    parts = []
    for base in bases:
        ran = {r.stage: " ".join([f"{k}={v}" for k, v in r.options.get("variant_env", {}).items()]
                                 + r.options.get("variant_args", [])) for r in rows if r.variant_of == base}
        own = next((r.options["precision"] for r in rows if r.stage == base and r.options.get("precision")), None)
        parts.append(" and ".join(f"'{name}'" for name in ran) + f": stage {base[:2]}'s trainer with "
                     + ", ".join(args for args in ran.values() if args)
                     + f" ('{base}' ran its defaults" + (f": precision {own})" if own else ")"))
    return ["; ".join(parts) + ". Such a row reads 'vs prev' against its stage's own row (what the setting buys: "
            "read its accuracy too) and 'vs first' as every row; the next stage reads 'vs prev' against the "
            "stage's own row, never against these."]


def weak_scaling_notes(rows):
    """What a row whose batch is each GPU's share ran (stage 09 on 2 GPUs), for its accuracy to be read right."""
    notes = []
    for r in rows:
        rule = r.options.get("weak_scaling")
        if r.status != "ok" or not rule or any(rule in n for n in notes):
            continue
        notes.append(f"'{r.stage}' on {r.device}: {rule}; an epoch is the same images in fewer, larger steps, so "
                     "its accuracy is that of the larger batch (lesson 09).")
    return notes


def footnotes(rows):
    notes = []
    scaled = [r for r in rows if r.scaled]
    if scaled:
        sizes = sorted({(r.images, r.images_per_epoch) for r in scaled})
        which = ", ".join(f"{n:,} of the {full:,}" for n, full in sizes)
        notes.append(f"* measured on the first {which} training images of an epoch and scaled to the whole epoch "
                     f"(seconds x {sizes[0][1] / sizes[0][0]:g}); the test accuracy is after those images only, "
                     f"so compare it only with rows trained on as many.")
    notes.append("s/epoch and img/s time training only (not the test pass); speedup = seconds per epoch of the "
                 "stage named / this stage's, same model. 'vs prev' is the closest earlier stage that ran the "
                 "model; 'vs first' the earliest (stage 01 for the MLP; for a CNN the first stage with conv layers).")
    if shows_setup(rows):
        notes.append("Not in any epoch's seconds: the one-off costs a row pays before its first epoch, shown apart as "
                     "'setup s': a GPU stage's upload of the training set, the setup of each batch size (cuDNN's "
                     "algorithm search, stage 07's autotuning), one uncounted pass of the step and its capture as a "
                     "CUDA graph; a peer's untimed warm-up steps (its compilation and captures). '-': none (the CPU "
                     "stages, whose first epoch costs what every other one does).")
    notes += variant_notes(rows)
    notes += weak_scaling_notes(rows)
    if any(r.epochs > 1 for r in rows if r.status == "ok"):
        notes.append("With several epochs, s/epoch and img/s are medians over the epochs (each epoch's seconds are in "
                     "the CSV and JSON); the accuracy is after the last.")
    for reason in dict.fromkeys(r.reason for r in rows if r.status != "ok" and not r.left_out
                                and split_reason(r.reason)[1]):
        shown, explained = split_reason(reason)
        meaning, _, rest = explained.partition("): ")
        rest = rest[:1].upper() + rest[1:]
        notes.append(f"'{shown}': {meaning.lstrip('(')}." + (f" {rest}." if rest else ""))
    if any(r.synthetic for r in rows):
        notes.append("Some rows ran on the built-in synthetic set (the data set was not found): their accuracy "
                     "says nothing about the real data, and with --limit their seconds are for the images trained, "
                     "not scaled (the trainer does not say how large the set is).")
    return notes + peer_notes(rows)


def left_out_text(rows):
    """The one line, under the table, that stands for every row of the GPU stages left out (runs.left_out_row).
    It names the stages, not how many rows they would have had: that count grows with every setting a stage
    gains a row for, so a table kept in the docs would soon contradict the command run today."""
    left = [r for r in rows if r.left_out]
    if not left:
        return ""
    stages = list(dict.fromkeys((r.variant_of or r.stage).split()[0] for r in left))
    return left_out_line(stages, left[0].reason, RUN_ANYWAY)


def format_table(rows, header_lines=()):
    """The table as text: fixed-width columns; a row that did not run spans the figure columns. The rows of GPU
    stages left out (no usable GPU here) are one line under the table, not a row each."""
    left = left_out_text(rows)
    rows = [r for r in rows if not r.left_out]
    head = headers(rows)
    with_setup = SETUP in head
    with_peer = len(head) > len(HEADERS) + with_setup
    cells = [row_cells(r, with_peer, with_setup) for r in rows]
    widths = [len(h) for h in head]
    for c in cells:
        if len(c) == len(head):
            widths = [max(w, len(x)) for w, x in zip(widths, c)]
        else:
            widths[:3] = [max(w, len(x)) for w, x in zip(widths[:3], c[:3])]

    def line(c):
        if len(c) < len(head):
            return "  ".join(x.ljust(w) for x, w in zip(c[:3], widths[:3])) + "  " + c[3]
        return "  ".join(x.ljust(w) if h in LEFT else x.rjust(w) for h, x, w in zip(head, c, widths)).rstrip()

    out = list(header_lines)
    out.append(line(head))
    out.append("  ".join("-" * w for w in widths))
    prev_model = None
    for r, c in zip(rows, cells):
        if prev_model is not None and r.model != prev_model:
            out.append("")
        prev_model = r.model
        out.append(line(c))
    out.append("")
    if left:
        out += [left, ""]
    out += footnotes(rows)
    return "\n".join(out)


def to_csv(rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        ok = r.status == "ok"
        w.writerow({
            "stage": r.stage, "device": r.device, "model": r.model, "status": r.status, "reason": r.reason,
            "seconds_per_epoch": f"{r.seconds_per_epoch:.4f}" if ok else "",
            "images_per_second": f"{r.images_per_second:.1f}" if ok else "",
            "speedup_vs_prev": f"{r.vs_prev[1]:.4f}" if r.vs_prev else "",
            "vs_prev_stage": r.vs_prev[0] if r.vs_prev else "",
            "speedup_vs_first": f"{r.vs_first[1]:.4f}" if r.vs_first else "",
            "vs_first_stage": r.vs_first[0] if r.vs_first else "",
            "test_accuracy": f"{r.test_accuracy:.4f}" if ok else "",
            "images_measured": r.images if ok else "", "images_per_epoch": r.images_per_epoch if ok else "",
            "epochs": r.epochs if ok else "",
            "epoch_seconds_measured": ";".join(f"{x:.4f}" for x in r.epoch_seconds) if ok else "",
            "scaled": str(r.scaled).lower() if ok else "",
            "threads": r.threads if ok else "", "dataset": r.dataset, "synthetic_data": str(r.synthetic).lower(),
            "peer": r.peer, "speedup_vs_peer_best": f"{r.vs_peer[1]:.4f}" if r.vs_peer else "",
            "peer_best_row": r.vs_peer[0] if r.vs_peer else "", "variant_of": r.variant_of,
            "setup_seconds": f"{r.setup_seconds:.4f}" if ok else "",
        })
    return buf.getvalue()


def to_json(rows, *, machine, command, date, settings):
    return json.dumps({
        "what": "seconds per training epoch of every stage on the same workloads (tools/compare.py)",
        "date": date,
        "command": command,
        "machine": machine,
        "settings": settings,
        "notes": ([left_out_text(rows)] if left_out_text(rows) else []) + footnotes(rows),
        "rows": [r.to_dict() for r in rows],
    }, indent=2) + "\n"


def to_svg(rows, models, stages, *, machine_line, date, command, dataset, batch):
    """One group of bars per model: each stage's speedup over the first stage that ran the model, then
    the peer framework's rows (dashed outlines) against the same stage."""
    left = left_out_text(rows)
    rows = [r for r in rows if not r.left_out]
    by_id = {s.id: s for s in stages}
    by_id.update({p.id: p for p in PYTORCH_ROWS})
    groups = []
    for model in models:
        model_rows = [r for r in rows if r.model == model]
        if not model_rows:
            continue
        first = next((r.vs_first[0] for r in model_rows if r.vs_first), None)
        bars = []
        for r in model_rows:
            stage = by_id.get(r.variant_of or r.stage)
            label = stage.label if r.peer and stage else short_name(r)
            outline = {"stroke": svg.INK, "stroke_width": 1.5, "stroke_dasharray": "4,2"} if r.peer else {}
            if r.status == "ok" and r.vs_first:
                bars.append({"label": label, "value": r.vs_first[1],
                             "text": times(r.vs_first[1]) + ("*" if r.scaled else ""),
                             "note": f"{r.seconds_per_epoch:.3g} s/ep",
                             "colour": svg.DEVICE_COLOURS.get(stage.device if stage else "", svg.PALETTE[4]),
                             "attrs": {"data_stage": r.stage, "data_model": r.model,
                                       "data_speedup": f"{r.vs_first[1]:.4f}", **outline}})
            else:
                text = {"n/a": "n/a", "ok": "no base"}.get(r.status, r.status)
                bars.append({"label": label, "value": None, "text": text,
                             "note": "", "attrs": {"data_stage": r.stage, "data_model": r.model}})
        label = f"{model.upper()}: speedup over stage {first}" if first else f"{model.upper()}: no stage ran it"
        groups.append({"label": label, "bars": bars})
    present = {by_id[r.variant_of or r.stage].device for r in rows
               if r.status == "ok" and (r.variant_of or r.stage) in by_id}
    legend = [(c, d, None) for d, c in svg.DEVICE_COLOURS.items() if d in present]
    name = peer_name(rows)
    if name:
        legend.append((svg.INK, f"dashed outline: {name}", "4,2"))
    notes = [f"Machine: {machine_line}.", f"Date: {date}.  Command: {command}"]
    if any(r.scaled for r in rows):
        notes.append("* timed on part of an epoch and scaled to a whole one. Bars grow up from 1x when faster, "
                     "down when slower; the label under a bar is seconds per epoch.")
    else:
        notes.append("Bars grow up from 1x when faster, down when slower; the label under a bar is seconds per epoch.")
    notes += variant_notes(rows) + weak_scaling_notes(rows)
    if left:
        notes.append(left.split(" (--gpu-stages")[0].split("; their")[0] + ".")
    if name:
        info = next((r.options for r in rows if r.peer and r.status == "ok" and r.options.get("torch")), {})
        version = f" {info['torch']}" if info else ""
        notes.append(f"{name}{version} rows (dashed): the same model, initial weights, data, batches, schedule and "
                     "momentum, FP32 (TF32 off); eager, graph (whole step in one CUDA graph), compile (torch.compile, "
                     "step in one CUDA graph), cpu 1t, cpu (every core).")
    slots = sum(len(g["bars"]) for g in groups) + max(len(groups) - 1, 0)
    return svg.bar_chart(groups, title=f"Training speed of every stage on the same work ({dataset}, batch {batch})",
                         subtitle=["speedup in seconds per epoch over the first stage that ran the model (log scale)"],
                         y_label="speedup (log scale)", legend=legend, footnotes=notes,
                         width=max(960, 110 + 56 * slots))
