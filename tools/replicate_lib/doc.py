"""docs/replication.md's generated blocks, from the runs' JSON committed in docs/figures/.

Each block sits between <!-- replication:NAME --> and <!-- /replication:NAME -->:
  replication:summary        one row per experiment: the study's figure, the course's on every machine
  replication:EXP:MACHINE    an experiment's tables on one machine (docs/figures/replication_MACHINE_EXP.json),
                             then its chart (replication_MACHINE_EXP.svg) where it has one
A machine whose JSON is not there yet gets a line saying so, and the command that measures it."""
import json
import re
from pathlib import Path

from . import pooling, prose, studies, tables

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "replication.md"
FIGURES = ROOT / "docs" / "figures"
EXPERIMENTS = ("e1", "e2", "e3", "e4", "e5", "e6")
MACHINES = {"vm": "the 2-core machine without a GPU", "h100": "the GPU machine (H100)"}
HOW_TO_MEASURE = {
    "h100": "run `tools/gpu/replicate.sh` on the GPU machine (it builds what the experiments need and runs "
            "`python3 tools/replicate.py --save-figures h100`)",
    "vm": "run `tools/course replicate --save-figures vm` on a 2-core machine",
}
TITLES = {"e1": "E1: sequential against OpenMP (thesis Figs 5.1-5.2)",
          "e2": "E2: OpenMP, CUDA, cuDNN and the fused step per model (thesis Fig 5.3)",
          "e3": "E3: CUDA against cuDNN over five models (thesis Fig 5.4)",
          "e4": "E4: milliseconds per layer, CUDA against cuDNN (thesis Table 5.1)",
          "e5": "E5: the max-pooling study",
          "e6": "E6: a network for the practice, stage 04 against stage 01"}


def figure_path(machine, exp, ext="json"):
    return FIGURES / f"replication_{machine}_{exp}.{ext}"


def load(machine, exp, figures=None):
    path = (Path(figures) if figures else FIGURES) / f"replication_{machine}_{exp}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def block(exp, machine, payload, figures=None):
    """The Markdown between an experiment's markers for one machine."""
    if payload is None:
        return [f"*To be measured on {MACHINES.get(machine, machine)}: {HOW_TO_MEASURE.get(machine, 'run tools/replicate.py there')}; "
                "then `python3 tools/replicate.py --tables` writes its tables here.*"]
    lines = tables.experiment_lines(exp, payload)
    svg = (Path(figures) if figures else FIGURES) / f"replication_{machine}_{exp}.svg"
    if svg.is_file():
        # The path from docs/replication.md's folder, which a Markdown preview follows (the docs build
        # hands Doxygen the bare name: tools/doxygen_md_filter.py).
        lines += ["", f"![{TITLES[exp]}, {MACHINES.get(machine, machine)}](figures/{svg.name})"]
    return lines


# ---- the summary: one row per experiment ------------------------------------------------------------------

def _row(payload, **match):
    for r in (payload or {}).get("rows", []):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def short(reason):
    """A reason without its explanation in brackets: 'no usable GPU (this machine has ...)' -> 'no usable GPU'."""
    return reason.split(" (")[0]


def headline(exp, payload):
    """The course's figure of an experiment in a few words, from its payload ("" where there is none)."""
    if payload is None:
        return "to be measured"
    if exp == "e1":
        fit = next((f for f in payload["fits"] if f["model"] == "m0"), None)
        base = _row(payload, model="m0", stage="02_conv_pool")
        if not fit or not base or base["status"] != "ok" or not fit.get("speedup_at_most_threads"):
            return "not run"
        top = _row(payload, model="m0", stage="03_openmp", threads=fit["most_threads"])
        points = [f"{tables.fmt_s(top['seconds'])} on {fit['most_threads']} "
                  f"({tables.fmt_x(fit['speedup_at_most_threads'])})"]
        eight = _row(payload, model="m0", stage="03_openmp", threads=8)   # the thesis's count
        if fit["most_threads"] != 8 and eight and eight["status"] == "ok" and eight.get("speedup_vs_stage02"):
            points.insert(0, f"{tables.fmt_s(eight['seconds'])} on 8 ({tables.fmt_x(eight['speedup_vs_stage02'])})")
        return f"M0: {tables.fmt_s(base['seconds'])} an epoch on 1 thread, " + ", ".join(points)
    if exp == "e2":
        parts = []
        for s in ("03_openmp", "05_im2col_gemm", "06_cudnn", "08_fused"):
            r = _row(payload, model="m0", stage=s)
            if r and r["status"] == "ok":
                parts.append(f"{s[:2]} {tables.fmt_s(r['seconds'])}")
        skipped = [s[:2] for s in ("05_im2col_gemm", "06_cudnn", "08_fused")
                   if (_row(payload, model="m0", stage=s) or {}).get("status") == "skipped"]
        text = "M0: " + ", ".join(parts) if parts else "not run"
        return text + (f" (GPU stages {', '.join(skipped)} skipped: no GPU)" if skipped else "")
    if exp == "e3":
        c = payload.get("crossover", {})
        if not any(x["ratio"] for v in c.values() for x in v["ratios"]):
            return "not run: " + short(next((r["reason"] for r in payload["rows"] if r.get("reason")), "no GPU"))
        parts = []
        for label, what in (("graph off", "graph off (like for like)"), ("graph on", "graph on")):
            ratios = [x["ratio"] for x in c[label]["ratios"] if x["ratio"]]
            if ratios:
                verdict = c[label]["verdict"]
                verdict = verdict[len("none: "):] if verdict.startswith("none: ") else "crossover " + verdict
                parts.append(f"{what} {tables.fmt_x(min(ratios))} to {tables.fmt_x(max(ratios))}, {verdict}")
        return "05 / 06, " + "; ".join(parts)
    if exp == "e4":
        t = [r for r in payload["table"] if r["stage05_ms"] and r["stage06_ms"]]
        if not t:
            return "not run: " + short(next((r["reason"] for r in payload["rows"] if r.get("reason")), "no GPU"))
        return "cuDNN faster on " + faster_layers([(r["layer"], r["stage06_ms"], r["stage05_ms"]) for r in t])
    if exp == "e5":
        s = pooling.seconds(payload, "k2s2p0", "serial", 1024)
        a = payload.get("analysis", {}).get("k2s2p0", {})
        p = (a.get("amdahl", {}).get("1024") or {}).get("p")
        parts = [f"serial at 1024: {tables.fmt_s(s)}"] if s else []
        g = a.get("beats_serial", {}).get("gpu_with_transfers", {})
        if g.get("from_size") or g.get("never"):
            parts.append("GPU + copies beats serial " + (f"from N = {g['from_size']:,}" if g.get("from_size") else "never"))
        # The study's way at 1024, or at the largest size it was timed at (--per-window-max leaves out the rest).
        timed = [n for n in sorted({r["N"] for r in payload.get("rows", [])})
                 if n <= 1024 and pooling.seconds(payload, "k2s2p0", "gpu_per_window", n)]
        if timed:
            never = a.get("beats_serial", {}).get("gpu_per_window", {}).get("never")
            parts.append(f"GPU a copy per window at {timed[-1]:,}: "
                         f"{tables.fmt_s(pooling.seconds(payload, 'k2s2p0', 'gpu_per_window', timed[-1]))}"
                         + (", never ahead of serial" if never else ""))
        if p is not None:
            parts.append(f"OpenMP p = {p:.3f} at 1024")
        return "; ".join(parts) or "not run"
    if exp == "e6":
        speedups = {k: v for k, v in (payload.get("speedups") or {payload.get("layers"): payload.get("speedup")}).items()
                     if v}
        if speedups:
            return "stage 04 / stage 01: " + ", ".join(f"{tables.fmt_x(x)} ({net})" for net, x in speedups.items())
        ran = [r for r in payload.get("rows", []) if r["status"] == "ok"]
        if ran:   # one stage ran (stage 01 on a machine without a GPU): its figure, and why the other did not
            # One clause per stage (its networks named when there are several), each reason said once.
            clauses = []
            for sid in dict.fromkeys(r["stage"] for r in payload["rows"]):
                rows = [r for r in payload["rows"] if r["stage"] == sid]
                named = len(rows) > 1 and all(r.get("layers") for r in rows)
                ok = [f"{tables.fmt_s(r['seconds'])} an epoch" + (f" ({r['layers']})" if named else "")
                      for r in rows if r["status"] == "ok"]
                if ok:
                    clauses.append(f"stage {sid[:2]}: " + ", ".join(ok))
                for status, reason in dict.fromkeys((r["status"], r.get("reason") or "?") for r in rows
                                                    if r["status"] != "ok"):
                    clauses.append(f"stage {sid[:2]} {status}: {tables.flags_as_code(short(reason))}")
            return "; ".join(clauses)
        return "not run: " + tables.flags_as_code(payload.get("reason") or next(
            (r["reason"] for r in payload.get("rows", []) if r.get("reason")), "?"))
    return ""


def faster_layers(layers):
    """'6 of 12 layers (1 of 6 conv, 5 of 6 pool)' from (name, cuDNN ms, CUDA ms) rows: where cuDNN took less,
    in all and by kind of layer (a name's first word)."""
    def faster(rows):
        return sum(1 for _, cudnn, cuda in rows if cuda > cudnn)

    by_kind = {}
    for layer in layers:
        by_kind.setdefault(layer[0].split(" ")[0], []).append(layer)
    split = ", ".join(f"{faster(rows)} of {len(rows)} {kind}" for kind, rows in by_kind.items())
    return f"{faster(layers)} of {len(layers)} layers" + (f" ({split})" if len(by_kind) > 1 else "")


LABELS = {"e1": "E1: thesis Figs 5.1-5.2", "e2": "E2: thesis Fig 5.3", "e3": "E3: thesis Fig 5.4",
          "e4": "E4: thesis Table 5.1", "e5": "E5: max-pooling study", "e6": "E6: CUDA practice"}
STUDY_HEADLINES = {
    "e1": "M0: 101 s an epoch sequential, 12.76 s with OpenMP on 8 threads (7.9x)",
    "e2": "OpenMP, CUDA, cuDNN per model (values not transcribed; M0's OpenMP 12.76 s)",
    "e3": studies.THESIS_FIG54,
    "e4": "cuDNN faster on " + faster_layers([(f"{k} {d} {i}", cudnn, cuda)
                                              for k, i, d, cudnn, cuda in studies.THESIS_TABLE51]),
    "e5": "serial 0.0004 s at 4, 5.18 s at 1024 (Xeon); GPU a transfer per window 0.86 s at 4, 396.7 s at 1024 (T4)",
    "e6": "a speedup over the CPU (not transcribed)",
}


def summary(figures=None):
    heads = ["experiment", "the study"] + [f"the course, {MACHINES[m]}" for m in MACHINES]
    body = []
    for exp in EXPERIMENTS:
        body.append([LABELS[exp], STUDY_HEADLINES[exp]] + [headline(exp, load(m, exp, figures)) for m in MACHINES])
    return tables.md_table(heads, body, right=())


# ---- writing the page --------------------------------------------------------------------------------------

def blocks(figures=None):
    """{marker name: Markdown} of every generated block."""
    out = {"summary": "\n".join(summary(figures))}
    for exp in EXPERIMENTS:
        for m in MACHINES:
            out[f"{exp}:{m}"] = "\n".join(block(exp, m, load(m, exp, figures), figures))
    return out


def rewrite(text, generated, page="docs/replication.md"):
    """`text` with every marked block replaced by its generated Markdown; raises ValueError for a marker
    pair that is missing."""
    for marker, body in generated.items():
        pattern = re.compile(rf"(<!-- replication:{re.escape(marker)} -->\n).*?(<!-- /replication:{re.escape(marker)} -->)",
                             re.S)
        if not pattern.search(text):
            raise ValueError(f"{page} has no block <!-- replication:{marker} --> ... <!-- /replication:{marker} -->")
        text = pattern.sub(lambda m: m.group(1) + "\n" + body + "\n\n" + m.group(2), text)
    return text


def write(check=False, doc=DOC, figures=None):
    """Rewrites the blocks (or, with check, says whether they differ); returns the exit code."""
    text = doc.read_text()
    try:
        new = rewrite(text, blocks(figures), page=doc.name)
    except ValueError as e:
        print(f"replication tables: {e}")
        return 1
    # The prose around the blocks is written by hand: its figures are checked, not rewritten (prose.py).
    misquoted = prose.problems(new, lambda exp, machine: load(machine, exp, figures))
    for line in misquoted:
        print(f"replication prose: {line}")
    prose_rc = 1 if misquoted else 0
    if misquoted:
        print(f"replication prose: {len(misquoted)} figure(s) of {doc.name}'s prose differ from the JSON they quote: "
              "edit the prose (tools/replicate_lib/prose.py says what each figure is)")
    if new == text:
        print(f"replication tables: {doc.name} is up to date with its JSON")
        return prose_rc
    if check:
        print(f"replication tables: {doc.name} differs from its JSON in docs/figures "
              "(python3 tools/replicate.py --tables rewrites it)")
        return 1
    doc.write_text(new)
    print(f"replication tables: {doc.name} rewritten")
    return prose_rc

