"""The experiments' charts, drawn with compare_lib/svg.py from their payloads alone: E1 the speedup
against threads with the Amdahl curves and the thesis's M0 point; E2 and E3 bars around 1x; E4 the
per-layer ratio of CUDA to cuDNN, the thesis's beside the course's; E5 the pooling time against the
size, log-log, one panel per setting, with the study's points. E6 has two rows and no chart."""
from compare_lib import machine, svg
from compare_lib.amdahl import amdahl_speedup

from . import pooling, studies
from .tables import STAGE_NAMES, fmt_s, fmt_x


def footnotes(payload, extra=()):
    return list(extra) + [f"Machine: {machine.machine_line(payload.get('machine', {}))}.",
                          f"Date: {payload.get('date', '?')}.  Command: {payload.get('command', '?')}"]


def _fine(lo, hi, n=40):
    import math
    a, b = math.log2(lo), math.log2(hi)
    return [2 ** (a + (b - a) * i / n) for i in range(n + 1)] if b > a else [lo]


def e1(payload):
    counts = list(payload.get("thread_counts") or [1])
    series = []
    hi = max(counts + [8])
    for i, fit in enumerate(payload["fits"]):
        colour = svg.PALETTE[i % len(svg.PALETTE)]
        pts = [(r["threads"], r["speedup_vs_1_thread"]) for r in payload["rows"]
               if r["model"] == fit["model"] and r["stage"] == "03_openmp" and r.get("speedup_vs_1_thread")]
        f = fit.get("fit")
        series.append({"name": f"{fit['model']}" + (f" (p = {f['p']:.3f})" if f else ""), "points": pts,
                       "colour": colour, "dash": "", "attrs": {"data_model": fit["model"]}})
        if f:
            series.append({"name": f"Amdahl fit, {fit['model']}", "colour": colour, "dash": "5,4", "markers": False,
                           "points": [(n, amdahl_speedup(f["p"], n)) for n in _fine(1, max(counts))],
                           "attrs": {"data_fit": f"{f['p']:.4f}"}})
        t = fit.get("thesis")
        if t:
            series.append({"name": f"the thesis, {fit['model']}: {fmt_x(t['speedup'])} on {t['threads']} threads "
                                   f"(over its sequential code)", "points": [(t["threads"], t["speedup"])],
                           "colour": svg.INK, "dash": "", "attrs": {"data_thesis": fit["model"]}})
            series.append({"name": f"Amdahl, the thesis's p = {t['p']:.3f}", "colour": svg.INK, "dash": "1,4",
                           "markers": False, "points": [(n, amdahl_speedup(t["p"], n)) for n in _fine(1, hi)]})
    series.append({"name": "ideal (S = n)", "points": [(n, n) for n in _fine(1, hi)], "colour": "#999999",
                   "dash": "2,3", "markers": False})
    ticks = sorted(set(counts + [8]))
    return svg.line_chart(series, title="E1 (thesis Figs 5.1-5.2): stage 03's speedup over one thread",
                          subtitle=["the thesis's models, its epoch (its images, batch 32); dashed: Amdahl's law with "
                                    "the fitted parallel fraction p"],
                          x_label="threads (log scale)", y_label="speedup over 1 thread", x_ticks=ticks, x_log2=True,
                          footnotes=footnotes(payload))


def _bars(groups, title, subtitle, y_label, legend, payload, notes=()):
    return svg.bar_chart(groups, title=title, subtitle=subtitle, y_label=y_label, legend=legend,
                         footnotes=footnotes(payload, notes))


def e2(payload):
    rows = payload["rows"]
    stages = [s for s in payload["stages"] if s != "02_conv_pool"]
    colours = {s: svg.PALETTE[i] for i, s in enumerate(stages)}
    groups = []
    for m in dict.fromkeys(r["model"] for r in rows):
        base = next((r for r in rows if r["model"] == m and r["stage"] == "02_conv_pool"), None)
        bars = []
        for s in stages:
            r = next((r for r in rows if r["model"] == m and r["stage"] == s), None)
            ok = r and r["status"] == "ok" and base and base["status"] == "ok"
            v = base["seconds"] / r["seconds"] if ok else None
            bars.append({"label": s[:2], "value": v, "text": fmt_x(v) if v else (r["status"] if r else "-"),
                         "note": fmt_s(r["seconds"]) if ok else "", "colour": colours[s],
                         "attrs": {"data_stage": s, "data_model": m}})
        groups.append({"label": m, "bars": bars})
    return _bars(groups, "E2 (thesis Fig 5.3): every stage per model, against stage 02",
                 ["speedup over stage 02 (one thread) of one epoch of the thesis; under each bar its seconds"],
                 "speedup over stage 02 (log scale)", [(colours[s], STAGE_NAMES[s], None) for s in stages], payload)


def e3(payload):
    groups = []
    colours = {"graph on": svg.PALETTE[0], "graph off": svg.PALETTE[1]}
    for m in payload["models"]:
        bars = []
        for label, c in payload["crossover"].items():
            v = next((x["ratio"] for x in c["ratios"] if x["model"] == m), None)
            bars.append({"label": label.replace("graph ", ""), "value": v, "text": fmt_x(v) if v else "not run",
                         "colour": colours[label], "attrs": {"data_variant": label, "data_model": m}})
        groups.append({"label": f"{m} ({studies.THESIS_MODELS[m]['flops'] / 1e6:.0f} MFLOP)", "bars": bars})
    return _bars(groups, "E3 (thesis Fig 5.4): stage 05 (CUDA) against stage 06 (cuDNN), five models",
                 ["seconds of stage 05 / seconds of stage 06 per epoch: above 1x cuDNN is faster, below it stage 05",
                  f"the thesis: {studies.THESIS_FIG54}"],
                 "stage 05 / stage 06 (log scale)",
                 [(colours[k], f"stage 06 {k}", None) for k in colours], payload)


def e4(payload):
    groups = []
    for t in payload["table"]:
        a, b = t["stage06_ms"], t["stage05_ms"]
        ours = b / a if a and b else None
        theirs = t["thesis_cuda_ms"] / t["thesis_cudnn_ms"]
        groups.append({"label": f"{t['layer'].replace('forward', 'fwd').replace('backward', 'back')}", "bars": [
            {"label": "thesis", "value": theirs, "text": f"{theirs:.2g}", "colour": svg.PALETTE[1],
             "attrs": {"data_layer": t["course_layer"], "data_who": "thesis"}},
            {"label": "course", "value": ours, "text": f"{ours:.2g}" if ours else "-", "colour": svg.PALETTE[0],
             "attrs": {"data_layer": t["course_layer"], "data_who": "course"}}]})
    return svg.bar_chart(groups, title=f"E4 (thesis Table 5.1): CUDA / cuDNN per layer of {payload['model']}",
                         subtitle=["ms of the hand-written CUDA layer / ms of cuDNN's: above 1x cuDNN is faster "
                                   "(the course: stage 05 / stage 06, --profile)"],
                         y_label="CUDA / cuDNN (log scale)",
                         legend=[(svg.PALETTE[1], "the thesis", None), (svg.PALETTE[0], "the course", None)],
                         footnotes=footnotes(payload), width=1200)


def e5(payload):
    panels = []
    sizes = sorted({r["N"] for r in payload.get("rows", [])})
    colours = {"serial": svg.INK, "study_serial": svg.PALETTE[5], "study_numpy": "#8B5A2B",
               "openmp": svg.PALETTE[2], "gpu_kernel": svg.PALETTE[0], "gpu_with_transfers": svg.PALETTE[1],
               "gpu_per_window": svg.PALETTE[4]}
    for s in payload.get("settings", []):
        if s["status"] != "ok":
            continue
        name, series = s["setting"], []
        for method in pooling.METHODS:
            if method == "openmp":
                pts = [(n, pooling.best_openmp(payload, name, n)[0]) for n in sizes]
                label = "OpenMP, the fastest thread count"
            else:
                pts = [(n, pooling.seconds(payload, name, method, n)) for n in sizes]
                label = pooling.METHOD_NAMES[method]
            pts = [(n, v) for n, v in pts if v]
            if pts:
                series.append({"name": label, "points": pts, "colour": colours[method], "dash": "",
                               "attrs": {"data_method": method, "data_setting": name}})
        if name == "k2s2p0":
            for kind, colour in (("serial", "#999999"), ("gpu", "#CC79A7")):
                series.append({"name": f"the study: {'serial, ' if kind == 'serial' else 'GPU, '}"
                                       f"{studies.POOL_STUDY[kind]['machine']}",
                               "points": pooling.study_points(kind), "colour": colour, "dash": "4,3",
                               "attrs": {"data_study": kind}})
        panels.append({"title": f"k{s['K']} s{s['S']} p{s['P']}", "series": series})
    refused = [s for s in payload.get("settings", []) if s["status"] != "ok"]
    notes = [f"k{s['K']} s{s['S']} p{s['P']}: refused by every stage (a window of padding only); its work is p0's "
             "plus a border (lesson 02)." for s in refused]
    return svg.line_panels(panels, title="E5: max-pooling one N x N image, seconds against N",
                           subtitle=["median seconds of one pooling; log-log; dashed: the study's figures (serial on "
                                     "n49 from N = 4 to 1,024; the T4 at 4 and 1,024, joined)"],
                           x_label="N (log scale)", y_label="seconds (log scale)", x_ticks=sizes or [4], x_log2=True,
                           y_log=True, footnotes=footnotes(payload, notes))


CHARTS = {"e1": e1, "e2": e2, "e3": e3, "e4": e4, "e5": e5}


def chart(name, payload):
    """The SVG of an experiment, or None where it has none or nothing was measured."""
    if name == "e4":
        return CHARTS[name](payload) if any(t["stage05_ms"] and t["stage06_ms"] for t in payload.get("table", [])) \
            else None
    if name not in CHARTS or not payload.get("rows"):
        return None
    if name == "e3" and not any(x["ratio"] for c in payload["crossover"].values() for x in c["ratios"]):
        return None
    if name == "e2" and not any(r["status"] == "ok" for r in payload["rows"]):
        return None
    return CHARTS[name](payload)
