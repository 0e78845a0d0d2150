"""The comparison table: speedups between stages, the text table, and its CSV, JSON and SVG."""
import csv
import io
import json

from . import svg

CSV_FIELDS = ["stage", "device", "model", "status", "reason", "seconds_per_epoch", "images_per_second",
              "speedup_vs_prev", "vs_prev_stage", "speedup_vs_first", "vs_first_stage", "test_accuracy",
              "images_measured", "images_per_epoch", "epochs", "epoch_seconds_measured", "scaled", "threads", "dataset",
              "synthetic_data"]


def compute_speedups(runs):
    """Sets run.vs_prev and run.vs_first of every ok run: (stage id, seconds of that stage / seconds of
    this one), comparing seconds per epoch of the same model only. "prev" is the closest earlier stage
    that ran the model (stages that skipped it are passed over); "first" is the earliest stage that ran
    it: stage 01 for the MLP, the first stage with conv layers for a CNN."""
    for model in dict.fromkeys(r.model for r in runs):
        ran = sorted((r for r in runs if r.model == model and r.status == "ok"), key=lambda r: r.stage)
        for i, r in enumerate(ran):
            r.vs_first = (ran[0].stage, ran[0].seconds_per_epoch / r.seconds_per_epoch)
            r.vs_prev = (ran[i - 1].stage, ran[i - 1].seconds_per_epoch / r.seconds_per_epoch) if i else None
    return runs


def order_rows(runs, models):
    """Rows grouped by model (in the order asked for), then in stage order."""
    return sorted(runs, key=lambda r: (models.index(r.model) if r.model in models else len(models), r.stage))


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
    here...', common/cuda_check.hpp) shows the quoted message in its row and the explanation once below."""
    cut = reason.find(" (")
    if cut < 0 or len(reason) <= 120:
        return reason, ""
    return reason[:cut], reason[cut + 1:]


def row_cells(r):
    mark = "*" if r.scaled else ""
    if r.status != "ok":
        shown, explained = split_reason(r.reason)
        return [r.stage, r.device, r.model, f"{r.status}: {shown}" + (" (what it means: below)" if explained else "")]
    acc = f"{100 * r.test_accuracy:.2f}%{mark}" + (" (synthetic data)" if r.synthetic else "")
    return [r.stage, r.device, r.model, f"{r.seconds_per_epoch:.2f}{mark}", f"{r.images_per_second:,.0f}",
            speedup_text(r.vs_prev), speedup_text(r.vs_first), acc, images_text(r)]


HEADERS = ["stage", "device", "model", "s/epoch", "img/s", "speedup vs prev", "speedup vs first", "test acc",
           "trained on (images)"]
RIGHT = {3, 4, 5, 6, 7}


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
    if any(r.epochs > 1 for r in rows if r.status == "ok"):
        notes.append("With several epochs, s/epoch and img/s are medians over the epochs (each epoch's seconds are in "
                     "the CSV and JSON); the accuracy is after the last.")
    for reason in dict.fromkeys(r.reason for r in rows if r.status != "ok" and split_reason(r.reason)[1]):
        shown, explained = split_reason(reason)
        meaning, _, rest = explained.partition("): ")
        rest = rest[:1].upper() + rest[1:]
        notes.append(f"'{shown}': {meaning.lstrip('(')}." + (f" {rest}." if rest else ""))
    if any(r.synthetic for r in rows):
        notes.append("Some rows ran on the built-in synthetic set (the data set was not found): their accuracy "
                     "says nothing about the real data, and with --limit their seconds are for the images trained, "
                     "not scaled (the trainer does not say how large the set is).")
    return notes


def format_table(rows, header_lines=()):
    """The table as text: fixed-width columns; a row that did not run spans the figure columns."""
    cells = [row_cells(r) for r in rows]
    widths = [len(h) for h in HEADERS]
    for c in cells:
        if len(c) == len(HEADERS):
            widths = [max(w, len(x)) for w, x in zip(widths, c)]
        else:
            widths[:3] = [max(w, len(x)) for w, x in zip(widths[:3], c[:3])]

    def line(c):
        if len(c) < len(HEADERS):
            return "  ".join(x.ljust(w) for x, w in zip(c[:3], widths[:3])) + "  " + c[3]
        return "  ".join(x.rjust(w) if i in RIGHT else x.ljust(w) for i, (x, w) in enumerate(zip(c, widths))).rstrip()

    out = list(header_lines)
    out.append(line(HEADERS))
    out.append("  ".join("-" * w for w in widths))
    prev_model = None
    for r, c in zip(rows, cells):
        if prev_model is not None and r.model != prev_model:
            out.append("")
        prev_model = r.model
        out.append(line(c))
    out.append("")
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
        })
    return buf.getvalue()


def to_json(rows, *, machine, command, date, settings):
    return json.dumps({
        "what": "seconds per training epoch of every stage on the same workloads (tools/compare.py)",
        "date": date,
        "command": command,
        "machine": machine,
        "settings": settings,
        "notes": footnotes(rows),
        "rows": [r.to_dict() for r in rows],
    }, indent=2) + "\n"


def to_svg(rows, models, stages, *, machine_line, date, command, dataset, batch):
    """One group of bars per model: each stage's speedup over the first stage that ran the model."""
    by_id = {s.id: s for s in stages}
    groups = []
    for model in models:
        model_rows = [r for r in rows if r.model == model]
        if not model_rows:
            continue
        first = next((r.vs_first[0] for r in model_rows if r.vs_first), None)
        bars = []
        for r in model_rows:
            stage = by_id.get(r.stage)
            if r.status == "ok":
                bars.append({"label": r.stage[:2], "value": r.vs_first[1],
                             "text": times(r.vs_first[1]) + ("*" if r.scaled else ""),
                             "note": f"{r.seconds_per_epoch:.3g} s/ep",
                             "colour": svg.DEVICE_COLOURS.get(stage.device if stage else "", svg.PALETTE[4]),
                             "attrs": {"data_stage": r.stage, "data_model": r.model,
                                       "data_speedup": f"{r.vs_first[1]:.4f}"}})
            else:
                bars.append({"label": r.stage[:2], "value": None,
                             "text": "n/a" if r.status == "n/a" else r.status,
                             "note": "", "attrs": {"data_stage": r.stage, "data_model": r.model}})
        label = f"{model.upper()}: speedup over stage {first}" if first else f"{model.upper()}: no stage ran it"
        groups.append({"label": label, "bars": bars})
    present = {by_id[r.stage].device for r in rows if r.status == "ok" and r.stage in by_id}
    legend = [(c, d, None) for d, c in svg.DEVICE_COLOURS.items() if d in present]
    notes = [f"Machine: {machine_line}.", f"Date: {date}.  Command: {command}"]
    if any(r.scaled for r in rows):
        notes.append("* timed on part of an epoch and scaled to a whole one. Bars grow up from 1x when faster, "
                     "down when slower; the label under a bar is seconds per epoch.")
    else:
        notes.append("Bars grow up from 1x when faster, down when slower; the label under a bar is seconds per epoch.")
    return svg.bar_chart(groups, title=f"Training speed of every stage on the same work ({dataset}, batch {batch})",
                         subtitle=["speedup in seconds per epoch over the first stage that ran the model (log scale)"],
                         y_label="speedup (log scale)", legend=legend, footnotes=notes)
