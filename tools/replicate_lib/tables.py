"""The experiments' tables, in Markdown, from their payloads alone (what replicate.py writes as JSON):
printed after a run, and written into docs/replication.md by doc.py from the committed JSON."""
import math

from compare_lib import machine

from . import pooling, studies

STAGE_NAMES = {"01_fc_softmax": "stage 01 (CPU, 1 thread)", "02_conv_pool": "stage 02 (CPU, 1 thread)",
               "03_openmp": "stage 03 (OpenMP)", "04_cuda_matmul": "stage 04 (CUDA matmul)",
               "05_im2col_gemm": "stage 05 (CUDA, im2col + GEMM)", "06_cudnn": "stage 06 (cuDNN)",
               "08_fused": "stage 08 (fused kernels)"}


def fmt_s(x):
    """Seconds as a person reads them: 101 s, 2.31 s, 0.456 s, 12.3 ms, 45.6 us, 27 ns."""
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f} s"
    if x >= 0.1:
        return f"{x:.3g} s"
    if x >= 1e-4:
        return f"{x * 1e3:.3g} ms"
    if x >= 1e-7:
        return f"{x * 1e6:.3g} us"
    return f"{x * 1e9:.3g} ns"


def sentence(text):
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def flags_as_code(text):
    """Command-line flags in a reason set as code (`--output`), so that Markdown keeps their two hyphens."""
    import re
    return re.sub(r"(?<![`\w])(--[a-z][a-z0-9-]*)", r"`\1`", text or "")


def study_s(x):
    """A study's own figure as it transcribed it: 0.0004 s, 396.7 s."""
    return "-" if x is None else f"{x:g} s"


def fmt_ms(x):
    return "-" if x is None else (f"{x:.3f}" if x >= 0.001 else f"{x:.4f}")


def fmt_x(x):
    if x is None:
        return "-"
    return f"{x:.2g}x" if x < 0.1 else (f"{x:.2f}x" if x < 100 else f"{x:,.0f}x")


def md_table(heads, rows, right=None):
    """A Markdown table, padded so that it reads as a table in a terminal too. `right`: the columns
    aligned right (by default every column but the first)."""
    right = set(range(1, len(heads))) if right is None else set(right)
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]

    def line(r):
        return "| " + " | ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                                 enumerate(zip(r, widths))) + " |"
    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return [line(heads), rule] + [line(r) for r in cells]


def header(payload):
    """The lines that say where and how the figures were measured."""
    info = payload.get("machine", {})
    lines = [f"- Measured on: {machine.machine_line(info)}."]
    load = info.get("load_average_at_start")
    if load is not None:
        end = info.get("load_average_at_end")
        lines.append(f"- Load average (1 min) at the start {load:g}, at the end "
                     f"{'?' if end is None else format(end, 'g')}, on {info.get('cores')} cores.")
    if info.get("other_cores_during") is not None:
        lines.append(f"- Other programs kept {info['other_cores_during']:g} cores busy on average during the run "
                     f"({info.get('watched_seconds', '?')} s).")
    lines.append(f"- Date: {payload.get('date', '?')}. Build: {info.get('build_dir', '?')} "
                 f"({info.get('build_type') or '?'}, git {info.get('git') or '?'}; source tree "
                 f"{info.get('source_tree') or 'not recorded'}).")
    lines.append(f"- Command: `{payload.get('command', '?')}`")
    return lines


def cell(row, with_speedup=None):
    if row is None:
        return "-"
    if row["status"] != "ok":
        return row["status"]
    text = fmt_s(row["seconds"])
    if with_speedup is not None and row.get(with_speedup):
        text += f" ({fmt_x(row[with_speedup])})"
    return text


def skipped_lines(rows):
    """One line per distinct reason of the rows not run."""
    seen, out = set(), []
    for r in rows:
        if r["status"] != "ok" and r.get("reason") and r["reason"] not in seen:
            seen.add(r["reason"])
            stages = sorted({x["stage"][:2] for x in rows if x.get("reason") == r["reason"]})
            out.append(f"Stage{'s' if len(stages) > 1 else ''} {', '.join(stages)} {r['status']}: "
                       f"{flags_as_code(r['reason'])}.")
    return out


def images_note(payload):
    scale = payload.get("settings", {}).get("images")
    if scale:
        return [f"Every model trained on the first {scale:,} images an epoch, not the thesis's "
                f"(1,000 for m0 and m1, 2,000 for m2 .. m4): the seconds are of those images, not scaled."]
    return []


def input_text(model):
    c, h, w = studies.THESIS_MODELS[model]["input"]
    return f"{c}x{h}x{w}"


# ---- E1 ---------------------------------------------------------------------------------------------------

def e1(payload):
    rows, counts = payload["rows"], payload.get("thread_counts", [])
    heads = ["model", "images", "stage 02, 1 thread"] + [f"stage 03, {n} thr" for n in counts] + \
            ["stage 02 / stage 03 (most threads)", "Amdahl p (limit)", "test accuracy (stages 02 and 03)", "the thesis"]
    body = []
    for fit in payload["fits"]:
        m = fit["model"]
        mine = [r for r in rows if r["model"] == m]
        base = next((r for r in mine if r["stage"] == "02_conv_pool"), None)
        line = [f"{m} ({input_text(m)})", f"{base['images']:,}" if base and base.get("images") else "-", cell(base)]
        for n in counts:
            r = next((r for r in mine if r["stage"] == "03_openmp" and r["threads"] == n), None)
            line.append(cell(r, "speedup_vs_1_thread" if n > 1 else None))
        line.append(fmt_x(fit.get("speedup_at_most_threads")) + (f" ({fit['most_threads']} thr)"
                                                                 if fit.get("most_threads") else ""))
        f = fit.get("fit")
        line.append("-" if not f else f"{f['p']:.3f} ({'no limit' if math.isinf(f['max_speedup']) else fmt_x(f['max_speedup'])})")
        line.append(accuracy_range([base] + [r for r in mine if r["stage"] == "03_openmp"]))
        t = fit.get("thesis")
        line.append(f"{t['sequential_s']:g} s; {t['openmp_s']:g} s on {t['threads']} thr ({fmt_x(t['speedup'])}, "
                    f"p = {t['p']:.3f})" if t else "not transcribed")
        body.append(line)
    out = [f"Seconds of one epoch of the thesis (its images, batch 32, its learning rate), stage 03 "
           f"`--parallel {payload.get('parallel', 'data')}`; in brackets the speedup over stage 03's own 1-thread run."]
    out += [""] + md_table(heads, body, right=range(1, len(heads) - 1)) + [""]
    out += images_note(payload) + skipped_lines(rows)
    out.append(f"Amdahl's p: fitted to stage 03's speedups over its 1-thread run; the thesis's p is what its one "
               f"M0 point implies ({studies.THESIS_OPENMP_NOTE}).")
    return out


# ---- E2 ---------------------------------------------------------------------------------------------------

def e2(payload):
    rows = payload["rows"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    omp = next((r for r in rows if r["stage"] == "03_openmp" and r.get("threads")), None)
    heads = ["model"] + [STAGE_NAMES[s] + (f", {omp['threads']} thr" if s == "03_openmp" and omp else "")
                         for s in payload["stages"]] + ["the thesis"]
    def run(m, s):
        return next((r for r in rows if r["model"] == m and r["stage"] == s), None)

    body = []
    for m in models:
        line = [f"{m} ({input_text(m)})"]
        for s in payload["stages"]:
            line.append(cell(run(m, s), "speedup_vs_openmp" if s not in ("02_conv_pool", "03_openmp") else None))
        t = studies.THESIS_OPENMP.get(m)
        line.append(f"OpenMP {t['openmp_s']:g} s; the rest not transcribed" if t else "not transcribed")
        body.append(line)
    out = ["Seconds of one epoch of the thesis per model and stage; in brackets the speedup over stage 03 "
           "(OpenMP on every core). Stage 06 replays each step as a CUDA graph (its default), stage 08 too.",
           ""] + md_table(heads, body) + [""]
    reused = [r for r in rows if r.get("reused_from")]
    if reused:
        out.append("Stages 02 and 03: the runs of E1 (the same runs, not repeated).")
    out += ["", "Test accuracy after the last epoch of the same runs (in brackets: the epochs trained):", ""]
    out += md_table(heads[:-1], [[f"{m} ({input_text(m)})"] + [accuracy_cell(run(m, s)) for s in payload["stages"]]
                                 for m in models])
    out += ["", same_network_line(rows, models), ""]
    return out + images_note(payload) + skipped_lines(rows) + [sentence(studies.THESIS_FIG53_NOTE)]


def accuracy_cell(row):
    if row is None:
        return "-"
    if row["status"] != "ok" or row.get("test_accuracy") is None:
        return row["status"]
    return f"{100 * row['test_accuracy']:.2f}% ({len(row.get('epoch_seconds') or [])} ep)"


def accuracy_range(rows):
    """The test accuracy of the runs done among `rows`: one figure when they agree, else the range."""
    accs = sorted({r["test_accuracy"] for r in rows if r and r["status"] == "ok" and r.get("test_accuracy") is not None})
    if not accs:
        return "-"
    return f"{100 * accs[0]:.2f}%" if len(accs) == 1 else f"{100 * accs[0]:.2f}% to {100 * accs[-1]:.2f}%"


def same_network_line(rows, models):
    """Whether the stages that trained a model for as many epochs end at one test accuracy (the thesis's claim
    that every implementation computes the same network), model by model."""
    parts = []
    for m in models:
        groups = {}
        for r in rows:
            if r["model"] == m and r["status"] == "ok" and r.get("test_accuracy") is not None:
                groups.setdefault(len(r.get("epoch_seconds") or []), []).append(r)
        for epochs, rs in sorted(groups.items()):
            accs = sorted({r["test_accuracy"] for r in rs})
            stages = ", ".join(r["stage"][:2] for r in rs)
            if len(rs) < 2:
                continue
            parts.append(f"{m} after {epochs} epochs, stages {stages}: " +
                         (f"all {100 * accs[0]:.2f}%" if len(accs) == 1 else
                          f"{100 * accs[0]:.2f}% to {100 * accs[-1]:.2f}%"))
    if not parts:
        return "No two stages trained a model for as many epochs here: the same network is not checked."
    return ("The same network in every implementation (the thesis's claim), checked where stages trained a model "
            "for as many epochs: " + "; ".join(parts) + ". (Ten classes: 10% is chance.)")


# ---- E3 ---------------------------------------------------------------------------------------------------

def e3(payload):
    rows = payload["rows"]
    heads = ["model", "MFLOP an image", "stage 05", "stage 06, graph on", "stage 06, graph off",
             "05 / 06 (graph on)", "05 / 06 (graph off)", "test accuracy (05; 06 on; 06 off)"]
    cross = payload["crossover"]
    body = []
    for m in payload["models"]:
        def get(stage, variant=""):
            return next((r for r in rows if r["model"] == m and r["stage"] == stage and r.get("variant", "") == variant),
                        None)
        ratio = {k: next((x["ratio"] for x in v["ratios"] if x["model"] == m), None) for k, v in cross.items()}
        body.append([f"{m} ({input_text(m)})", f"{studies.THESIS_MODELS[m]['flops'] / 1e6:.1f}", cell(get("05_im2col_gemm")),
                     cell(get("06_cudnn", "graph on")), cell(get("06_cudnn", "graph off")),
                     fmt_x(ratio.get("graph on")), fmt_x(ratio.get("graph off")),
                     "; ".join(accuracy_cell(r) for r in (get("05_im2col_gemm"), get("06_cudnn", "graph on"),
                                                          get("06_cudnn", "graph off")))])
    out = ["Seconds of one epoch of the thesis (batch 32); 05 / 06 above 1x: cuDNN is faster. Stage 05 has no CUDA "
           "graph of its own (stage 06 brought the graph): its steps are launched call by call, as stage 06's with "
           "`--graph off`.", ""] + md_table(heads, body) + [""]
    out.append(f"Crossover, stage 05 against stage 06 with its graph: {cross['graph on']['verdict']}; against stage 06 "
               f"without it: {cross['graph off']['verdict']}. The thesis: {studies.THESIS_FIG54}.")
    return out + images_note(payload) + skipped_lines(rows)


# ---- E4 ---------------------------------------------------------------------------------------------------

def e4(payload):
    heads = ["layer (the thesis's numbering)", "thesis cuDNN", "thesis CUDA", "thesis CUDA / cuDNN", "stage 06",
             "stage 05", "stage 05 / stage 06"]
    body = []
    for t in payload["table"]:
        a, b = t["stage06_ms"], t["stage05_ms"]
        body.append([f"{t['layer']} ({t['course_layer']})", fmt_ms(t["thesis_cudnn_ms"]), fmt_ms(t["thesis_cuda_ms"]),
                     fmt_x(t["thesis_cuda_ms"] / t["thesis_cudnn_ms"]), fmt_ms(a), fmt_ms(b),
                     fmt_x(b / a if a and b else None)])
    out = [f"Milliseconds per call of each layer of {payload['model']} ({input_text(payload['model'])}, the course's "
           "stand-in for the thesis's unspecified model), forward and backward, averaged over the batches of 32 of the last epoch (`--profile`: "
           "CUDA events around each layer, stage 06 without its graph). The course's conv layer is the convolution "
           "and its bias; its ReLU is a layer of its own, not counted here.", ""]
    out += md_table(heads, body) + [""]
    return out + images_note(payload) + skipped_lines(payload["rows"])


# ---- E5 ---------------------------------------------------------------------------------------------------

def e5(payload):
    if payload.get("status") == "skipped" or not payload.get("rows"):
        return [f"Not run: {flags_as_code(payload.get('reason', 'no figures'))}."]
    out = []
    gpu = payload.get("gpu", {})
    out.append(f"Seconds to max-pool one N x N image of one channel (median of timed runs; {payload.get('cores')} cores"
               f"; OpenMP: the fastest of {', '.join(map(str, payload.get('threads', [])))} threads, in brackets). "
               + ("GPU: " + gpu.get("device", "") + f"; the first CUDA call of the program (creating its context) took "
                  f"{fmt_s(gpu.get('context_seconds'))}." if gpu.get("status") == "ok"
                  else f"GPU not timed: {gpu.get('reason', '')}."))
    sizes = sorted({r["N"] for r in payload["rows"]})
    on_gpu = gpu.get("status") == "ok"
    for s in payload.get("settings", []):
        name = s["setting"]
        title = f"k{s['K']} s{s['S']} p{s['P']}"
        if s["status"] != "ok":
            out += ["", f"**{title}**: refused by every stage ({s['reason']}). Its work is k{s['K']} s{s['S']} p0's "
                        "plus a border of all-padding windows (lesson 02): timed as k2 s2 p0, above."]
            continue
        study = name == "k2s2p0"
        with_numpy = study and any(r["method"] == "study_numpy" and r["status"] == "ok" for r in payload["rows"])
        heads = ["N", "serial (stage 02)", "the study's way, C++"] + (["the study's way, NumPy"] if with_numpy else []) \
            + ["OpenMP (threads)"] + (
            ["GPU kernel", "GPU kernel + copies", "serial / (GPU + copies)", "GPU, a copy per window"]
            if on_gpu else [])
        if study:
            heads += ["the study: serial (n49, NumPy)", "the study: GPU (T4, per window)"]
        body = []
        for n in sizes:
            serial = pooling.seconds(payload, name, "serial", n)
            if serial is None:
                continue
            best, t = pooling.best_openmp(payload, name, n)
            line = [f"{n:,}", fmt_s(serial), fmt_s(pooling.seconds(payload, name, "study_serial", n))]
            if with_numpy:
                line.append(fmt_s(pooling.seconds(payload, name, "study_numpy", n)))
            line.append(f"{fmt_s(best)} ({t})" if best else "-")
            if on_gpu:
                copies = pooling.seconds(payload, name, "gpu_with_transfers", n)
                line += [fmt_s(pooling.seconds(payload, name, "gpu_kernel", n)), fmt_s(copies),
                         fmt_x(serial / copies if copies else None),
                         fmt_s(pooling.seconds(payload, name, "gpu_per_window", n))]
            if study:
                line += [study_s(studies.POOL_STUDY["serial"]["seconds"].get(n)),
                         study_s(studies.POOL_STUDY["gpu"]["seconds"].get(n))]
            body.append(line)
        out += ["", f"**{title}**", ""] + md_table(heads, body)
    analysis = payload.get("analysis", {})
    if analysis:
        big = [n for n in (1024, 2048) if n in sizes]
        heads = ["setting"] + [f"Amdahl p at {n:,} (limit)" for n in big] + \
                ["OpenMP beats serial from"] + (["GPU kernel from", "GPU + copies from", "a copy per window from"]
                                                if on_gpu else [])
        body = []
        for name, a in analysis.items():
            line = [name]
            for n in big:
                f = a["amdahl"].get(str(n))
                line.append("-" if not f else f"{f['p']:.3f} ({'no limit' if math.isinf(f['max_speedup']) else fmt_x(f['max_speedup'])})")
            methods = ["openmp"] + (["gpu_kernel", "gpu_with_transfers", "gpu_per_window"] if on_gpu else [])
            for mth in methods:
                w = a["beats_serial"].get(mth, {})
                line.append(f"N = {w['from_size']:,}" if w.get("from_size") else ("never" if w.get("never") else "-"))
            body.append(line)
        out += ["", "Amdahl's law fitted to the OpenMP runs of one size (speedup over its own 1-thread run), and the "
                    "size from which each way is faster than the serial one at that size and every larger one:", ""]
        out += md_table(heads, body)
    wrong = [r for r in payload["rows"] if r["status"] == "ok" and not (r.get("matches_stage02", True) and
                                                                      r.get("matches_reference", True))]
    numpy = payload.get("numpy") or {}
    out += [""] + ([f"WRONG: {len(wrong)} figures whose output differs from stage 02's."] if wrong else
                   ["Every way's output equals stage 02's, bit for bit (the arg-max too, where kept)" +
                    ("; the NumPy way's equals NumPy's own vectorised max on its image." if numpy.get("status") == "ok"
                     else ".")])
    if numpy.get("status") == "ok":
        out.append(f"The study's way in NumPy: NumPy {numpy.get('numpy')} on Python {numpy.get('python')}, a loop over "
                   "the windows in Python as the study's program, k2 s2 p0 up to N = 1,024 (the study's largest).")
        out += study_steps(payload)
    elif numpy:
        out.append(f"The study's way in NumPy not timed: {numpy.get('reason', '')}.")
    out.append(sentence(studies.POOL_STUDY_NOTE))
    return out


def study_steps(payload, n=1024):
    """The step from the study's serial figure to the course's at N = n, split into its three factors, each a
    ratio of two figures of one machine (or the study's against the course's, for the machine)."""
    own = pooling.seconds(payload, "k2s2p0", "serial", n)
    cpp = pooling.seconds(payload, "k2s2p0", "study_serial", n)
    py = pooling.seconds(payload, "k2s2p0", "study_numpy", n)
    theirs = studies.POOL_STUDY["serial"]["seconds"].get(n)
    if not (own and cpp and py and theirs):
        return []
    return [f"At N = {n:,}, k2 s2 p0: the method, the study's way in C++ against stage 02's loop, {fmt_x(cpp / own)}; "
            f"the language, the study's way in NumPy against it in C++, {fmt_x(py / cpp)}; the machine and its "
            f"software, the study's {theirs:g} s on n49 against the course's NumPy figure, {fmt_x(theirs / py)}; "
            f"together {fmt_x(theirs / own)}."]


# ---- E6 ---------------------------------------------------------------------------------------------------

def e6(payload):
    if payload.get("status") in ("skipped", "error") and not any(r["status"] == "ok" for r in payload.get("rows", [])):
        return [f"Not run: {flags_as_code(payload.get('reason')) or '; '.join(skipped_lines(payload.get('rows', [])))}"]
    heads = ["network", "stage", "device", "seconds an epoch", "images", "test accuracy", "test MAE"]
    body = []
    for r in payload["rows"]:
        net = f"`{r.get('layers', payload.get('layers', '?'))}`"
        if r["status"] != "ok":
            body.append([net, STAGE_NAMES[r["stage"]], r.get("device") or "-", r["status"], "-", "-", "-"])
            continue
        body.append([net, STAGE_NAMES[r["stage"]], r["device"], f"{fmt_s(r['seconds'])} ({r['seconds_taken_as']})",
                     f"{r['images']:,}", f"{100 * r['test_accuracy']:.2f}%",
                     "-" if r.get("mae") is None else f"{r['mae']:.4f}"])
    networks = payload.get("networks") or [payload.get("layers", "?")]
    out = [f"The course's choice of a small network for the practice, `--layers {networks[0]}`," +
           (f" and a wider one, `--layers {networks[1]}`," if len(networks) > 1 else "") +
           f" with `{' '.join(payload['flags'])}` on the tabular set of tools/make_tabular.py (batch "
           f"{payload['batch']}, lr {payload['lr']:g}, {payload['epochs']} epochs).", ""] + \
        md_table(heads, body, right=(3, 4, 5, 6)) + [""]
    speedups = payload.get("speedups") or {networks[0]: payload.get("speedup")}
    said = [f"{fmt_x(x)} on `{net}`" for net, x in speedups.items() if x]
    if said:
        out.append("Stage 04 over stage 01: " + ", ".join(said) + ".")
    return out + skipped_lines(payload["rows"]) + [sentence(studies.PRACTICE_NOTE)]


TABLES = {"e1": e1, "e2": e2, "e3": e3, "e4": e4, "e5": e5, "e6": e6}


def experiment_lines(name, payload):
    """The block of one experiment: its status line when it was not run, else its table(s), then where and
    how it was measured."""
    body = TABLES[name](payload) if payload.get("status") != "skipped" or payload.get("rows") else \
        [f"Not run: {flags_as_code(payload.get('reason'))}."]
    return body + [""] + header(payload)
